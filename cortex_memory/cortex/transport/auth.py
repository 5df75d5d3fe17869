"""Turning a credential into an ``Authorization`` value, inside each attempt (engine.md §4).

Every failure is :class:`~cortex_memory.errors.UnauthorizedError`, raised
before anything is sent, and no message holds any part of the token:

1. static → the key; dynamic → ``source.bearer()`` (any exception: "the bearer
   source could not supply a credential", plus the exception's own text);
2. trimmed (Unicode White_Space); empty → "credential is empty";
3. ``Bearer <token>`` must be a valid header value (TAB or U+0020–U+007E), so
   CR, LF, NUL or any non-ASCII character is refused.
"""

from __future__ import annotations

from cortex_memory.cortex.transport.failure import DASH
from cortex_memory.cortex.transport.redact import scrub
from cortex_memory.cortex.transport.text import excerpt, is_header_value, trim
from cortex_memory.credential import EngineCredential
from cortex_memory.errors import UnauthorizedError

__all__ = ["authorization"]


def authorization(credential: EngineCredential) -> str:
    """Return ``"Bearer <token>"`` for ``credential`` now, or raise ``UnauthorizedError``."""
    try:
        raw = credential.bearer()
    except Exception as exc:
        # The source's own words may help the host ("signed out"); they are the
        # host's text, never ours, and are cut and scrubbed like backend text.
        detail = excerpt(scrub(str(exc)))
        message = "the bearer source could not supply a credential"
        raise UnauthorizedError(f"{message}{DASH}{detail}" if detail else message) from exc
    if not isinstance(raw, str):
        raise UnauthorizedError("the bearer source returned a credential that is not text")
    token = trim(raw)
    if not token:
        raise UnauthorizedError("credential is empty")
    value = f"Bearer {token}"
    if not is_header_value(value):
        raise UnauthorizedError("credential is not a valid HTTP header value")
    return value

"""Scrubbing echoed secrets out of backend text before it enters a message (README decision 18).

A server may echo what it was sent: ``{"message": "invalid token ctx_…"}``, a
``WWW-Authenticate`` value repeated in an error page, a proxy's dump of the
request headers. The transport copies backend text into exception messages
(after `` — ``), so it scrubs that text first: every occurrence of the
credential the attempt used (case-insensitively, and in its URL-encoded form),
and every ``Bearer <token>`` and ``Authorization: <value>`` (also
``Proxy-Authorization``) pattern, become ``[redacted]``. The patterns catch a
credential the attempt did not send (an older token, another user's).

:class:`Scrubber` carries one attempt's credential; it compiles its pattern on
first use, so an attempt that never fails costs one small object. Its ``repr``
never shows the credential.
"""

from __future__ import annotations

import re
from typing import Optional, Pattern
from urllib.parse import quote

__all__ = ["REDACTED", "Scrubber", "scrub"]

REDACTED = "[redacted]"
"""What a scrubbed secret reads as."""

# An Authorization header named in text (a header dump, JSON, a query-like "key=value"),
# its value up to the end of the line or the next separator; and a bearer token.
_AUTHORIZATION = (
    r"(?P<name>\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*)"
    r"(?P<value>\"[^\"\r\n]*\"?|'[^'\r\n]*'?|[^\r\n,;}\]]*)"
)
_BEARER = r"(?P<scheme>\bbearer\s+)(?P<token>[^\s\"'<>,;}\]]+)"
_PATTERNS_ONLY = re.compile(f"{_AUTHORIZATION}|{_BEARER}", re.IGNORECASE)


def _replace(match: re.Match[str]) -> str:
    if match.group("name") is not None:
        return match.group("name") + REDACTED
    if match.group("scheme") is not None:
        return match.group("scheme") + REDACTED
    return REDACTED


class Scrubber:
    """Scrubs the credential of one attempt, and every bearer or authorization pattern."""

    __slots__ = ("_pattern", "_secret")

    def __init__(self, secret: Optional[str] = None) -> None:
        self._secret = secret or None
        self._pattern: Optional[Pattern[str]] = None if self._secret else _PATTERNS_ONLY

    def _compiled(self) -> Pattern[str]:
        if self._pattern is None:
            secret = self._secret or ""
            forms = sorted({secret, quote(secret, safe="")}, key=len, reverse=True)
            literal = "|".join(re.escape(form) for form in forms)
            # The credential first, so a header dump holding it is cut at the
            # credential as well as by the patterns.
            self._pattern = re.compile(
                f"(?P<secret>{literal})|{_AUTHORIZATION}|{_BEARER}", re.IGNORECASE
            )
        return self._pattern

    def __call__(self, text: str) -> str:
        """``text`` with the credential and every bearer/authorization value replaced."""
        if not text:
            return text
        return self._compiled().sub(_replace, text)

    def __repr__(self) -> str:
        return "Scrubber(<redacted>)"


def scrub(text: str, secret: Optional[str] = None) -> str:
    """``text`` scrubbed of ``secret`` (when given) and of bearer/authorization patterns."""
    return Scrubber(secret)(text)

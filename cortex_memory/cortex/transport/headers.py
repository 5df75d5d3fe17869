"""Host default headers (engine.md §5.3), checked once when they are set.

A host may add its own headers to every request (``x-sdk-name``, a trace id).
Names are trimmed and must be RFC 7230 tokens; values must be valid header
values (TAB or U+0020–U+007E). Headers the transport owns are refused,
case-insensitively: ``authorization``, ``proxy-authorization``, ``cookie``,
``host``, ``content-length``, ``idempotency-key`` and ``x-cortex-actor``.
``Accept-Encoding`` and ``Content-Type`` are always set by the transport, so a
host value for them is overridden (they are dropped here).

A refusal never echoes a value: a host might pass a secret by mistake.
"""

from __future__ import annotations

import re
from typing import Dict, Mapping

from cortex_memory.cortex.transport.text import is_header_value, trim
from cortex_memory.errors import ConfigError

__all__ = ["REFUSED_HEADER_NAMES", "check_default_headers"]

REFUSED_HEADER_NAMES = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "host",
        "content-length",
        "idempotency-key",
        "x-cortex-actor",
    }
)

# Set by the transport on every request; a host value would be overridden.
_TRANSPORT_OWNED = frozenset({"accept-encoding", "content-type"})

# RFC 7230 token: 1*tchar.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_NAME_SHOWN = 64


def check_default_headers(headers: Mapping[str, str]) -> Dict[str, str]:
    """Return the checked header set (names trimmed, values trimmed) or raise ``ConfigError``.

    Names that differ only in case are one header; the later value wins.
    """
    if not isinstance(headers, Mapping):
        raise TypeError(f"headers must be a mapping, not {type(headers).__name__}")
    checked: Dict[str, str] = {}
    lowered: Dict[str, str] = {}
    for raw_name, raw_value in headers.items():
        if not isinstance(raw_name, str) or not isinstance(raw_value, str):
            raise TypeError("header names and values must be str")
        name = trim(raw_name)
        if _TOKEN.fullmatch(name) is None:
            raise ConfigError("a default header name is not a valid HTTP header name")
        key = name.lower()
        shown = name[:_NAME_SHOWN]
        if key in REFUSED_HEADER_NAMES:
            raise ConfigError(
                f"the default header {shown!r} is set by the engine and cannot be set"
            )
        value = trim(raw_value)
        if not is_header_value(value):
            raise ConfigError(
                f"the default header {shown!r} has a value that is not a valid HTTP header value"
            )
        if key in _TRANSPORT_OWNED:
            continue
        previous = lowered.get(key)
        if previous is not None:
            del checked[previous]
        lowered[key] = name
        checked[name] = value
    return checked

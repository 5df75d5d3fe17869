"""Small text rules the transport shares: Unicode trimming, excerpts, header values.

"Blank" and "trim" here mean Unicode White_Space, as the Rust original does:
Python's ``str.strip()`` also removes U+001C–U+001F, which are not white space,
so a token made of them would wrongly count as blank.
"""

from __future__ import annotations

import re

__all__ = [
    "EXCERPT_CHARS",
    "WHITE_SPACE",
    "excerpt",
    "is_header_value",
    "trim",
]

# The Unicode White_Space property (Unicode 15): what Rust's str::trim removes.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

EXCERPT_CHARS = 300
"""Backend text in a message is cut to this many characters (no ellipsis)."""

# A header value may carry TAB and the visible ASCII range plus space; nothing
# else (no CR, LF, NUL, DEL or non-ASCII) so no value can split a header.
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


def trim(text: str) -> str:
    """``text`` without leading and trailing Unicode White_Space."""
    return text.strip(WHITE_SPACE)


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` trimmed and cut to at most ``limit`` characters."""
    return trim(text)[:limit].rstrip(WHITE_SPACE)


def is_header_value(text: str) -> bool:
    """True when every character of ``text`` is TAB or U+0020–U+007E."""
    return _HEADER_VALUE.fullmatch(text) is not None

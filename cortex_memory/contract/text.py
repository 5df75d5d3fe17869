"""Blank and trim checks on Unicode White_Space, shared by every layer.

The contract says a text is *blank* when nothing but whitespace is left after
trimming, and "whitespace" means the Unicode ``White_Space`` property (what
Rust's ``str::trim`` uses). Python's ``str.isspace()`` and ``str.strip()`` also
treat the information separators U+001C..U+001F as whitespace, which would make
``"\\x1f"`` blank here while the Rust side keeps it. Every blank check in the
library goes through this module so all layers agree.
"""

from __future__ import annotations

__all__ = ["WHITE_SPACE", "is_blank", "trim"]

#: Every code point with the Unicode ``White_Space`` property (Unicode 6.3+).
WHITE_SPACE = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def trim(text: str) -> str:
    """Return ``text`` without leading and trailing Unicode White_Space."""
    return text.strip(WHITE_SPACE)


def is_blank(text: str) -> bool:
    """True when ``text`` is empty or holds only Unicode White_Space.

    ``str.isspace()`` stops at the first non-space character, so a long
    non-blank text is not copied; only an all-"space" text is checked again
    to rule out the U+001C..U+001F separators.
    """
    return not text or (text.isspace() and not text.strip(WHITE_SPACE))

"""Ids kept in redacted form: phone numbers never go to the server as they are.

A thread, source or agent id that holds a phone number (a run of seven or more
digits, UUIDs aside, with no ASCII letter touching it) is sent and labelled as
:func:`redacted_id` (``tm-redacted:`` and 32 hex of its SHA-256), and
:func:`same_id` matches a held id against the one a filter names in either
form. Re-exported by :mod:`cortex_memory.contract.meta`, where they used to live.
"""

from __future__ import annotations

import hashlib
import re
from typing import Optional

__all__ = ["REDACTED_PREFIX", "holds_phone_number", "redacted_id", "same_id"]

#: Prefix of an id stored in redacted form.
REDACTED_PREFIX = "tm-redacted:"

_UUID = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
)
# A run starts at a digit and continues over digits and the separators
# space - . ( ) +. Only ASCII matters, so scanning the str equals scanning its
# UTF-8 bytes (every non-ASCII byte ends a run and is not a letter).
_DIGIT_RUN = re.compile(r"[0-9][0-9 \-.()+]*")
_MIN_PHONE_DIGITS = 7


def redacted_id(value: str) -> str:
    """The redacted form of an id: the prefix plus 32 hex of SHA-256 over UTF-8 ``value``."""
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return REDACTED_PREFIX + digest[:32]


def same_id(held: Optional[str], wanted: str) -> bool:
    """True when ``held`` is ``wanted`` or the redacted form of it (``held`` None → False)."""
    if held is None:
        return False
    if held == wanted:
        return True
    return held.startswith(REDACTED_PREFIX) and held == redacted_id(wanted)


def _is_ascii_letter(ch: str) -> bool:
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z")


def holds_phone_number(value: str) -> bool:
    """True when ``value`` holds something that looks like a phone number.

    UUIDs are ignored; a run of at least 7 digits (spaces, ``-``, ``.``, ``(``,
    ``)`` and ``+`` may separate them) counts unless an ASCII letter touches it:
    right before its first digit, or right after its last digit.
    """
    if value.startswith(REDACTED_PREFIX):
        return False
    text = _UUID.sub("_", value)
    end_of_text = len(text)
    for match in _DIGIT_RUN.finditer(text):
        run = match.group()
        digits = sum(1 for ch in run if "0" <= ch <= "9")
        if digits < _MIN_PHONE_DIGITS:
            continue
        start, end = match.span()
        if start > 0 and _is_ascii_letter(text[start - 1]):
            continue
        if end < end_of_text and _is_ascii_letter(text[end]) and "0" <= run[-1] <= "9":
            continue
        return True
    return False

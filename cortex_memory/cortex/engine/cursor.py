"""Opaque page cursors of list (``l``) and fetch (``f``) (engine.md §9.5).

A cursor is a tag character plus the lowercase hex of compact JSON in member
order, e.g. ``l`` + hex of ``{"scope":"app:tinymemory/app:documents","engine":"c2",
"offset":3,"last":"evt_9"}``. Decoding accepts hex of either case; anything else
(a wrong tag included) is ``InvalidRequestError``.
"""

from __future__ import annotations

import binascii
import json
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from cortex_memory.contract.jsonfmt import dumps
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "FETCH_TAG",
    "LIST_TAG",
    "FetchCursor",
    "ListCursor",
    "decode_cursor",
    "encode_cursor",
]

LIST_TAG = "l"
FETCH_TAG = "f"

_MALFORMED = "the page cursor is malformed"


def encode_cursor(tag: str, value: Dict[str, Any]) -> str:
    """``tag`` + lowercase hex of ``value`` as compact JSON in member order."""
    return tag + dumps(value).encode("utf-8").hex()


def decode_cursor(tag: str, cursor: str) -> Dict[str, Any]:
    """The JSON object inside ``cursor``; ``InvalidRequestError`` unless it carries ``tag``."""
    if not isinstance(cursor, str) or not cursor.startswith(tag):
        raise InvalidRequestError(_MALFORMED)
    digits = cursor[len(tag) :]
    if len(digits) % 2 or not digits.isascii():
        raise InvalidRequestError(_MALFORMED)
    try:
        value = json.loads(binascii.unhexlify(digits).decode("utf-8"))
    except (ValueError, RecursionError, binascii.Error):
        raise InvalidRequestError(_MALFORMED) from None
    if not isinstance(value, dict):
        raise InvalidRequestError(_MALFORMED)
    return value


def _opt_str(o: Dict[str, Any], key: str) -> Optional[str]:
    value = o.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequestError(_MALFORMED)
    return value


def _offset(o: Dict[str, Any]) -> int:
    value = o.get("offset")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequestError(_MALFORMED)
    return value


@dataclass(frozen=True)
class ListCursor:
    """Where a listing resumes: the scope, the server's cursor in it, the offset into
    that page and the last event id admitted (to skip its doubled copy)."""

    scope: Optional[str] = None
    engine: Optional[str] = None
    offset: int = 0
    last: Optional[str] = None

    def encode(self) -> str:
        """The opaque ``l`` cursor."""
        out: Dict[str, Any] = {}
        if self.scope is not None:
            out["scope"] = self.scope
        if self.engine is not None:
            out["engine"] = self.engine
        out["offset"] = self.offset
        if self.last is not None:
            out["last"] = self.last
        return encode_cursor(LIST_TAG, out)

    @classmethod
    def decode(cls, cursor: str) -> ListCursor:
        """Read an ``l`` cursor."""
        o = decode_cursor(LIST_TAG, cursor)
        return cls(_opt_str(o, "scope"), _opt_str(o, "engine"), _offset(o), _opt_str(o, "last"))


@dataclass(frozen=True)
class FetchCursor:
    """Where a fetch resumes: the offset into the merged ranking, and the scope paths a
    capped first page chose (so later pages read the same scopes)."""

    offset: int = 0
    scopes: Tuple[str, ...] = ()

    def encode(self) -> str:
        """The opaque ``f`` cursor."""
        out: Dict[str, Any] = {"offset": self.offset}
        if self.scopes:
            out["scopes"] = list(self.scopes)
        return encode_cursor(FETCH_TAG, out)

    @classmethod
    def decode(cls, cursor: str) -> FetchCursor:
        """Read an ``f`` cursor."""
        o = decode_cursor(FETCH_TAG, cursor)
        scopes = o.get("scopes") or []
        if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
            raise InvalidRequestError(_MALFORMED)
        return cls(_offset(o), tuple(scopes))

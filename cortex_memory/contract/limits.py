"""The contract's constants and limits (contract.md §3.1)."""

from __future__ import annotations

from typing import Iterable, Optional

from cortex_memory.errors import InvalidRequestError

__all__ = [
    "DEFAULT_SCAN_LIMIT",
    "MAX_BUCKETS",
    "MAX_DEPTH",
    "MAX_GET_IDS",
    "MAX_ITEM_BYTES",
    "MAX_SCAN_LIMIT",
    "MAX_SEGMENT_ID_LEN",
    "MAX_STORE_MANY",
    "SCAN_PAGE",
    "check_size",
]

#: Items per ``store_many`` batch (1..=100).
MAX_STORE_MANY = 100
#: Ids per ``GetRequest`` (1..=200).
MAX_GET_IDS = 200
#: Largest ``ExploreRequest.limit`` (1..=500).
MAX_BUCKETS = 500
#: Largest ``ExploreRequest.scan_limit`` (1..=50 000).
MAX_SCAN_LIMIT = 50_000
#: ``ExploreRequest.scan_limit`` when none is given.
DEFAULT_SCAN_LIMIT = 5_000
#: Page size of the listing-based defaults (``explore_by_listing``, ``get_by_listing``).
SCAN_PAGE = 200
#: Most segments a namespace may hold.
MAX_DEPTH = 8
#: Longest namespace segment id (1..=128 of ``[A-Za-z0-9_-]``).
MAX_SEGMENT_ID_LEN = 128
#: Largest item: UTF-8 bytes of its text (a document's title and body, a
#: conversation's turns, a learning's text and evidence), 16 MiB.
MAX_ITEM_BYTES = 16 * 1024 * 1024


# Characters measured per slice when a text is not ASCII: its UTF-8 length is
# counted without holding a whole encoded copy.
_SLICE = 1 << 20


def _utf8_size(text: str, budget: int) -> int:
    """UTF-8 bytes of ``text``, counted up to a little past ``budget``."""
    if text.isascii() or len(text) > budget:  # every character is at least one byte
        return len(text)
    size = 0
    for at in range(0, len(text), _SLICE):
        size += len(text[at : at + _SLICE].encode("utf-8", "surrogatepass"))
        if size > budget:
            break
    return size


def check_size(texts: Iterable[Optional[str]]) -> None:
    """Refuse an item whose text passes :data:`MAX_ITEM_BYTES` of UTF-8."""
    left = MAX_ITEM_BYTES
    for text in texts:
        if text:
            left -= _utf8_size(text, left)
            if left < 0:
                raise InvalidRequestError(
                    f"an item's text may hold at most {MAX_ITEM_BYTES} bytes of UTF-8 "
                    "(16 MiB); split it into several items"
                )

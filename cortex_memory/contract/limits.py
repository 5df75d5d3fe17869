"""The contract's constants and limits (contract.md §3.1)."""

from __future__ import annotations

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

"""The log layer's fixed sizes: pages, batches, probes and pack budgets (engine.md §8.1).

How long the log layer waits, and how often it tries, lives in
:mod:`cortex_memory.cortex.timing` (the durations in :class:`~cortex_memory.cortex.timing.Timing`,
so tests can shorten them; the attempts and poll gaps in its policies).
"""

from __future__ import annotations

__all__ = [
    "EVENT_TOKENS",
    "FORGET_BATCH",
    "LABELS_PER_LISTING",
    "LISTED_LIMIT",
    "MAX_BULK_BYTES",
    "MAX_BULK_EVENTS",
    "MAX_PACK_TOKENS",
    "PAGE_LIMIT",
    "SCOPES_LIMIT",
    "SETTLE_EVENTS",
    "SETTLE_QUERY_CHARS",
    "WALK_PAGES",
    "whole_items_budget",
]

PAGE_LIMIT = 200
"""Events asked for per listing page."""

WALK_PAGES = 500
"""Pages a walk reads before refusing to answer from a truncated log."""

LABELS_PER_LISTING = 50
"""Labels one listing may carry (CortexDB refuses more with 422)."""

SCOPES_LIMIT = 1000
"""Entries a scopes listing asks for; an answer this long may be truncated."""

MAX_BULK_EVENTS = 1000
"""Events per Direct bulk request (CortexDB refuses a larger bulk with 422)."""

MAX_BULK_BYTES = 8 * 1024 * 1024
"""Body bytes a Direct bulk request grows to before the next event starts another one
(a long document's 256 KiB pieces go 32 at a time): a store holds one bulk body at a
time, not all of a 16 MiB document again."""

FORGET_BATCH = 100
"""Event ids per forget request."""

SETTLE_QUERY_CHARS = 256
"""Characters of the written text the settle probe asks recall for."""

LISTED_LIMIT = 4
"""Events asked for by the first listing of a listed wait (two events: the listing
shows each twice). Listings are newest first and the wait looks for the newest
event of its item, so this page holds it once it is readable; the answer never
grows with the scope (docs/flows.md, "What a store reads")."""

SETTLE_EVENTS = 4
"""Events the settle probe's pack may hold: it is narrowed to the item's own events,
so the written one ranks among these few."""

EVENT_TOKENS = 786_432
"""Tokens budgeted per event: one per byte of the largest event we write."""

MAX_PACK_TOKENS = 8_388_608
"""The most tokens a pack is asked to hold (8 Mi)."""


def whole_items_budget(n: int) -> int:
    """``min(max(n, 1) × 786432, 8388608)``: room for ``n`` whole events, capped.

    The cap is reached from ``n >= 11``.
    """
    return min(max(n, 1) * EVENT_TOKENS, MAX_PACK_TOKENS)


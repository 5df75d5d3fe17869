"""The log layer's fixed sizes and the visibility poll backoff (engine.md §8.1).

The durations themselves (visibility, settle, recovery, poll gap, backoff base)
live in :class:`~cortex_memory.cortex.timing.Timing`, so tests can shorten them.
"""

from __future__ import annotations

from cortex_memory.cortex.timing import Timing

__all__ = [
    "FORGET_ATTEMPTS",
    "FORGET_BATCH",
    "LABELS_PER_LISTING",
    "MAX_BULK_EVENTS",
    "PAGE_LIMIT",
    "SCOPES_LIMIT",
    "SETTLE_QUERY_CHARS",
    "WALK_PAGES",
    "WRITE_ATTEMPTS",
    "next_poll",
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

WRITE_ATTEMPTS = 3
"""Attempts of one hosted write under its claim."""

FORGET_ATTEMPTS = 3
"""Attempts of one hosted forget request."""

FORGET_BATCH = 100
"""Event ids per forget request."""

SETTLE_QUERY_CHARS = 256
"""Characters of the written text the settle probe asks recall for."""


def next_poll(gap: float, timing: Timing, hosted: bool) -> float:
    """The gap after ``gap``: Direct keeps it; hosted doubles it up to the ceiling.

    With the production timings the hosted gaps run 250, 500, 1000, 2000, 2000 ms…
    """
    if not hosted:
        return gap
    return min(gap * 2.0, timing.hosted_poll_ceiling)

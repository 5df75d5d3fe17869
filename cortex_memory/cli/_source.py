"""Reading every item of an engine, a bounded page at a time (``export`` and ``copy``).

Items come from the engine's ``export`` (whole items, under their ids) when
it offers one, else from its ``list`` (the CortexDB engines in this release),
each hit rebuilt into an item by :func:`~cortex_memory.cli._jsonl.item_from_hit`
and marked approximate. Pages are asked for 100 items at first; a page
holding more than about 8 MiB of text halves the next page's size (down to
one item) and a small one doubles it again, so memory holds about one page
of text whatever the items weigh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from cortex_memory.cli._jsonl import item_from_hit
from cortex_memory.cli._transfer import item_size
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import StoreItem
from cortex_memory.contract.requests import ListRequest
from cortex_memory.errors import EngineError, UnsupportedError

__all__ = ["PAGE_BYTES", "PAGE_ITEMS", "Read", "approximate_note", "read_items"]

#: Items asked for per page at most (and at first).
PAGE_ITEMS = 100
#: Text per page, roughly, above which the next page is smaller.
PAGE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Read:
    """One item read: the id the engine holds it under, the item (``None`` when the
    engine lists the id but cannot hand the item back whole), and whether it was
    rebuilt from a listing (``approximate``)."""

    id: str
    item: Optional[StoreItem]
    approximate: bool = False


def read_items(engine: MemoryEngine, flt: MetaFilter) -> Iterator[Read]:
    """Every item ``flt`` admits, page by page (an item the engine cannot hand
    back whole comes as a :class:`Read` without ``item``)."""
    limit = PAGE_ITEMS
    cursor: Optional[str] = None
    whole = True
    while True:
        request = ListRequest(flt, limit, cursor)
        if whole:
            try:
                page = engine.export(request)
            except UnsupportedError:
                whole = False
                continue
            reads = [Read(e.id, e.item) for e in page.items]
            reads += [Read(item_id, None) for item_id in page.incomplete]
            next_cursor = page.next_cursor
        else:
            listed = engine.list(request)
            reads = [Read(hit.id, item_from_hit(hit), True) for hit in listed.items]
            next_cursor = listed.next_cursor
        text = sum(item_size(r.item) for r in reads if r.item is not None)
        yield from reads
        reads = []  # let the page go before the next one is read
        if next_cursor is None:
            return
        if next_cursor == cursor:
            raise EngineError(f"engine `{engine.descriptor().id}` repeated a listing cursor")
        cursor = next_cursor
        limit = _next_limit(limit, text)


def approximate_note(engine_id: str) -> str:
    """What to say, once, when items come from a listing rather than whole."""
    return (
        f"engine `{engine_id}` cannot hand items back whole; they are rebuilt from its "
        "listing (a learning's kind, a document's media type and a conversation's turn "
        "details are not listed, so those items may get new ids)"
    )


def _next_limit(limit: int, text: int) -> int:
    if text > PAGE_BYTES:
        return max(limit // 2, 1)
    if text < PAGE_BYTES // 4:
        return min(limit * 2, PAGE_ITEMS)
    return limit

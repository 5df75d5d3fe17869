"""explore: count items by one facet without assembling them (engine.md §9.11).

Each scope the filter reads is walked page by page (four scopes at a time), and
every item is counted once, from the event that starts it (a whole item, turn 0
or piece 0). Nothing is rebuilt, so a chunked document missing a piece still
counts here (a listing would leave it out). The walk is bounded twice: by the
request's ``scan_limit`` and by the 500-page cap; either one ends the scan with
``truncated`` set instead of an error, because counts are a summary, not an
answer.
"""

from __future__ import annotations

import logging
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from cortex_memory.contract.defaults import explore_page_of
from cortex_memory.contract.explore import ExplorePage, ExploreRequest
from cortex_memory.contract.facet import Facet
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.fanout import SCOPE_WORKERS, fan_out
from cortex_memory.cortex.engine.scopes import KindScope, scopes_for
from cortex_memory.cortex.envelope import Keeper, decode_event, narrowing
from cortex_memory.cortex.log.read import event_id
from cortex_memory.cortex.log.sizes import PAGE_LIMIT, WALK_PAGES
from cortex_memory.cortex.timing import Deadline

__all__ = ["explore"]

logger = logging.getLogger(__name__)


class _Counted(NamedTuple):
    """One item as explore counts it: its id and the facet's values (``()`` = missing)."""

    id: str
    values: Tuple[str, ...]


class _Scan(NamedTuple):
    """What one scope's walk found: items in walk order, and whether it stopped early."""

    items: List[_Counted]
    truncated: bool


def explore(ctx: EngineContext, req: ExploreRequest, deadline: Deadline) -> ExplorePage:
    """Facet counts over what ``req.filter`` admits (the request is validated).

    Items are deduped across scopes (the first scope wins); at most
    ``scan_limit`` are counted, and ``truncated`` says whether more were left.
    """
    flt = req.filter
    scopes = scopes_for(ctx, flt, deadline)
    labels = narrowing(flt)
    keepers = {kind: Keeper(flt, kind) for kind in {scope.kind for scope in scopes}}
    facet = req.facet
    limit = req.scan_limit

    def scan(scope: KindScope) -> _Scan:
        return _scan_scope(ctx, scope, labels, keepers[scope.kind], facet, limit, deadline)

    scans = fan_out(scan, scopes, SCOPE_WORKERS)
    counts: Dict[str, int] = {}
    seen: Set[str] = set()
    total = missing = 0
    truncated = False
    for found in scans:
        truncated = truncated or found.truncated
        for item in found.items:
            if item.id in seen:
                continue
            if total >= limit:
                truncated = True
                break
            seen.add(item.id)
            total += 1
            if not item.values:
                missing += 1
            for value in item.values:
                counts[value] = counts.get(value, 0) + 1
    return explore_page_of(facet, counts, req.limit, total, missing, truncated)


def _scan_scope(
    ctx: EngineContext,
    scope: KindScope,
    labels: Sequence[str],
    keeper: Keeper,
    facet: Facet,
    limit: int,
    deadline: Deadline,
) -> _Scan:
    """Walk one scope counting each item once, up to ``limit`` items and 500 pages.

    Reaching ``limit`` finishes the current page only: one more new item there, or
    a page left to read, marks the scan truncated.
    """
    items: List[_Counted] = []
    seen: Set[str] = set()
    last: Optional[str] = None
    cursor: Optional[str] = None
    for _ in range(WALK_PAGES):
        page = ctx.log.page(scope.path, labels, cursor, PAGE_LIMIT, deadline)
        for event in page.items:
            key = event_id(event)
            # The listing may hand the same event twice in a row: count it once.
            if key is not None and key == last:
                continue
            last = key
            env = decode_event(event)
            if env is None or not keeper.keeps(env):
                continue
            part = env.part()
            if (part is not None and part != 0) or env.id in seen:
                continue
            if len(items) >= limit:
                return _Scan(items, True)
            seen.add(env.id)
            items.append(_Counted(env.id, facet.values(env.kind, env.meta)))
        if page.next_cursor is None:
            return _Scan(items, False)
        if len(items) >= limit:
            return _Scan(items, True)
        cursor = page.next_cursor
    logger.warning(
        "explore stopped reading scope %r after %d pages; the counts are truncated",
        scope.path,
        WALK_PAGES,
    )
    return _Scan(items, True)

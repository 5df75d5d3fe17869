"""fetch: ranked retrieval over every scope the filter reads (engine.md §9.8).

Each scope gets one granular recall pack (four in flight) asking for enough
events to fill the pages up to the one wanted; the per-scope rankings are then
interleaved round-robin (rank 0 of every scope, then rank 1, ...), each item
kept once at its best rank, and the page is cut from that merged ranking. A
ranked event stands for its item: a learning, a whole document or a one-turn
conversation is its own hit; a document piece is shown as the piece (with its
page and section tags); a longer conversation is assembled whole, and left out
when it cannot be.

Paging is by offset into the merged ranking (the ``f`` cursor). With
``max_scopes``, the first page picks the scopes (named by the query first, then
the most recent) and the cursor carries them, so later pages read the same set.
"""

from __future__ import annotations

import logging
from typing import Dict, List, NamedTuple, Optional, Tuple

from cortex_memory.contract.items import ItemId, ItemKind
from cortex_memory.contract.namespace import Namespace, admitted_by
from cortex_memory.contract.requests import FetchRequest
from cortex_memory.contract.responses import FetchPage, Hit
from cortex_memory.cortex.engine.belief_hits import belief_hits, merge_beliefs, rank_score
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.cursor import FetchCursor
from cortex_memory.cortex.engine.fanout import PACK_WORKERS, fan_out
from cortex_memory.cortex.engine.items import assembled
from cortex_memory.cortex.engine.packs import (
    EVENTS_PER_HIT,
    MAX_PACK_EVENTS,
    interleave,
    layer,
    pack_body,
    ranked,
    whole_items_budget,
)
from cortex_memory.cortex.engine.recency import pick_scopes
from cortex_memory.cortex.engine.scopes import KindScope, scopes_for
from cortex_memory.cortex.envelope import Envelope, Keeper, event_hit, hit, narrowing
from cortex_memory.cortex.envelope import one_turn_conversation as _one_turn
from cortex_memory.cortex.timing import Deadline

__all__ = ["fetch", "fetch_budget"]

logger = logging.getLogger(__name__)


class Budget(NamedTuple):
    """What each pack of one fetch asks for: ``events`` per scope within ``max_tokens``."""

    events: int
    max_tokens: int


def fetch_budget(end: int) -> Budget:
    """``n = min((end + 1) × 3, 1000)`` events and ``whole_items_budget(n)`` tokens.

    ``end`` is the offset just past the page wanted; the one extra hit tells
    whether a next page exists.
    """
    events = min((end + 1) * EVENTS_PER_HIT, MAX_PACK_EVENTS)
    return Budget(events, whole_items_budget(events))


class _ScopePack(NamedTuple):
    """One scope's contribution: its ranked envelopes and (first page) its belief hits."""

    envelopes: List[Envelope]
    beliefs: List[Hit]


def _start(cursor: Optional[str]) -> FetchCursor:
    return FetchCursor() if cursor is None else FetchCursor.decode(cursor)


def _chosen_scopes(
    ctx: EngineContext,
    req: FetchRequest,
    start: FetchCursor,
    scopes: List[KindScope],
    deadline: Deadline,
) -> Tuple[List[KindScope], Tuple[str, ...]]:
    """The scopes this page reads, and the paths a next cursor must carry."""
    if start.scopes:
        # A capped first page chose these; later pages read exactly the same set.
        kept = set(start.scopes)
        return [scope for scope in scopes if scope.path in kept], start.scopes
    if req.max_scopes is not None and len(scopes) > req.max_scopes:
        picked = pick_scopes(ctx, scopes, req.query, req.max_scopes, deadline)
        return picked, tuple(scope.path for scope in picked)
    return scopes, ()


def fetch(ctx: EngineContext, req: FetchRequest, deadline: Deadline) -> FetchPage:
    """One page of ranked hits for ``req`` (mode checked and request validated by the caller)."""
    start = _start(req.cursor)
    offset = start.offset
    end = offset + req.limit
    budget = fetch_budget(end)
    flt = req.filter
    scopes, chosen = _chosen_scopes(ctx, req, start, scopes_for(ctx, flt, deadline), deadline)
    if not scopes:
        return FetchPage(())
    labels = narrowing(flt)
    limits: Dict[str, int] = {"events": budget.events}
    include = ["events"]
    want_beliefs = offset == 0 and req.beliefs > 0
    if want_beliefs:
        include.append("beliefs")
        limits["beliefs"] = req.beliefs
    keepers = {kind: Keeper(flt, kind) for kind in {scope.kind for scope in scopes}}

    def read(scope: KindScope) -> _ScopePack:
        body = pack_body(
            scope.path, req.query, labels, limits=limits, max_tokens=budget.max_tokens,
            include=include,
        )
        pack = ctx.log.recall(body, deadline)
        found = ranked(pack, keepers[scope.kind]).envelopes
        return _ScopePack(found, belief_hits(layer(pack, "beliefs")) if want_beliefs else [])

    packs = fan_out(read, scopes, PACK_WORKERS)
    # One past the page is enough to know whether another page exists.
    merged = interleave([p.envelopes for p in packs], _item_id, end + 1)
    more = len(merged) > end
    hits = _hits(ctx, merged[offset:end], offset, deadline)
    beliefs: Tuple[Hit, ...] = ()
    if want_beliefs:
        cut = merge_beliefs([p.beliefs for p in packs], req.beliefs)
        beliefs = tuple(b for b in cut if admitted_by(flt.reach, b.meta.namespace))
    next_cursor = FetchCursor(end, chosen).encode() if more else None
    return FetchPage(tuple(hits), next_cursor, beliefs)


def _item_id(env: Envelope) -> str:
    return env.id


def _needs_assembly(env: Envelope) -> bool:
    """A conversation of more than one turn: one event does not hold it whole."""
    return env.kind is ItemKind.CONVERSATION and not _one_turn(env)


def _hits(
    ctx: EngineContext, page: List[Envelope], offset: int, deadline: Deadline
) -> List[Hit]:
    """The page's hits in rank order, scored by global rank; unassembled conversations dropped.

    A learning, a whole document or a one-turn conversation is its own event's hit; a
    document piece shows as the piece (with its location tags).
    """
    longer: List[Tuple[ItemId, Namespace]] = [
        (env.id, env.meta.namespace) for env in page if _needs_assembly(env)
    ]
    whole = assembled(ctx, ItemKind.CONVERSATION, longer, deadline) if longer else {}
    out: List[Hit] = []
    for position, env in enumerate(page):
        score = rank_score(offset + position)
        if not _needs_assembly(env):
            out.append(event_hit(env, score))
            continue
        item = whole.get(env.id)
        if item is None:
            logger.debug("fetch left out conversation %s: it could not be assembled", env.id)
            continue
        out.append(hit(env.id, item, score))
    return out

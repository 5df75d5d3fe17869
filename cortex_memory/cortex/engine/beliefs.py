"""beliefs: what CortexDB derived from the held events, as tagged learnings (engine.md §9.12).

With a query, each held scope under the reach is asked for a beliefs-only pack
(ranked by the query) and the answers are merged round-robin. Without one, the
Direct beliefs listing of each scope is read and the whole set is ordered most
confident first, then newest. The hosted API has no beliefs listing, so a hosted
engine without a query answers nothing (and sends nothing).
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List

from cortex_memory.contract.consolidation import BeliefsRequest
from cortex_memory.contract.responses import Hit
from cortex_memory.cortex.engine.belief_hits import belief_hits, by_confidence, merge_beliefs
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.fanout import SCOPE_WORKERS, fan_out
from cortex_memory.cortex.engine.packs import layer, pack_body, whole_items_budget
from cortex_memory.cortex.engine.scopes import ALL_KINDS, KindScope, held
from cortex_memory.cortex.timing import Deadline
from cortex_memory.cortex.transport.keys import urlencode
from cortex_memory.cortex.wire import Route
from cortex_memory.errors import NotFoundError

__all__ = ["beliefs", "beliefs_pack_body"]

logger = logging.getLogger(__name__)


def beliefs_pack_body(scope: str, query: str, limit: int) -> Dict[str, Any]:
    """A beliefs-only recall: every other layer's limit 0, ``limit`` beliefs."""
    return pack_body(
        scope,
        query,
        (),
        include=("beliefs",),
        limits={"events": 0, "facts": 0, "episodes": 0, "understanding": 0, "beliefs": limit},
        max_tokens=whole_items_budget(limit),
    )


def beliefs(ctx: EngineContext, req: BeliefsRequest, deadline: Deadline) -> List[Hit]:
    """Up to ``req.limit`` belief hits within ``req.reach`` (the request is validated)."""
    if req.query is None and ctx.hosted:
        return []
    scopes = held(ctx, req.reach, ALL_KINDS, deadline)
    if not scopes:
        return []
    if req.query is not None:
        query = req.query

        def ranked(scope: KindScope) -> List[Hit]:
            pack = ctx.log.recall(beliefs_pack_body(scope.path, query, req.limit), deadline)
            return _admitted(belief_hits(layer(pack, "beliefs")), req)

        return merge_beliefs(fan_out(ranked, scopes, SCOPE_WORKERS), req.limit)

    route = ctx.log.route(Route.BELIEFS)

    def listed(scope: KindScope) -> List[Hit]:
        try:
            answer = ctx.client.retry_transient(
                "GET",
                f"{route}?scope={urlencode(scope.path)}&limit={req.limit}",
                deadline=deadline,
            ).data
        except NotFoundError:
            # A server (or scope) without a beliefs listing has no beliefs to show.
            return []
        items = answer.get("items") if isinstance(answer, dict) else None
        return _admitted(belief_hits(items if isinstance(items, list) else []), req)

    merged = [found for hits in fan_out(listed, scopes, SCOPE_WORKERS) for found in hits]
    return by_confidence(merged)[: req.limit]


def _admitted(hits: List[Hit], req: BeliefsRequest) -> List[Hit]:
    """The hits whose node the reach admits (a server may answer wider than asked)."""
    kept = [found for found in hits if req.reach.admits(found.meta.namespace)]
    if len(kept) < len(hits):
        logger.debug("dropped %d beliefs outside the asked reach", len(hits) - len(kept))
    return kept

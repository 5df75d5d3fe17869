"""recall: a grounded answer from the best pack, with citations (engine.md §9.9).

A *round* packs every scope the request reads (one granular recall per scope,
four in flight) and asks CortexDB to answer once, from the pack holding the most
admitted events (ties go to the deepest scope, which comes first). Packs live
60 s and any forget drops them all, so an answer may find its pack gone
(``NotFoundError``): the whole round then runs again, up to three rounds. The
citations are the packs' events interleaved rank by rank.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, NamedTuple, Optional

from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import RecallRequest
from cortex_memory.contract.responses import Citation, RecallAnswer
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.fanout import PACK_WORKERS, fan_out
from cortex_memory.cortex.engine.packs import (
    Ranked,
    interleave,
    pack_body,
    ranked,
    whole_items_budget,
)
from cortex_memory.cortex.engine.scopes import KindScope, admitted_kinds, held, scopes_for
from cortex_memory.cortex.envelope import Envelope, Keeper, located_meta, narrowing
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import EngineError, NotFoundError

__all__ = ["ANSWER_LAYERS", "ANSWER_ROUNDS", "answer_body", "answer_pack_body", "recall"]

logger = logging.getLogger(__name__)

ANSWER_ROUNDS = 3
"""Rounds (pack every scope, answer once) before an expired pack is an error."""

ANSWER_LAYERS = ("events", "facts", "beliefs", "episodes", "understanding")
"""The layers an answer pack includes."""

# The layers sharing the quarter-limits, in the order the remainder goes to.
_SHARED_LAYERS = ("facts", "beliefs", "episodes", "understanding")


def answer_limits(limit: int) -> Dict[str, int]:
    """Per-layer limits of an answer pack: events ``2 × limit``; the four other layers
    ``limit // 4`` each, the first ``limit % 4`` of them (in order) one more.

    ``limit`` 6 gives facts 2, beliefs 2, episodes 1, understanding 1.
    """
    out = {"events": 2 * limit}
    base, extra = divmod(limit, len(_SHARED_LAYERS))
    for index, name in enumerate(_SHARED_LAYERS):
        out[name] = base + (1 if index < extra else 0)
    return out


def answer_pack_body(scope: str, req: RecallRequest, labels: List[str]) -> Dict[str, Any]:
    """The recall body of one answer pack for ``scope``."""
    return pack_body(
        scope,
        req.question,
        labels,
        include=ANSWER_LAYERS,
        limits=answer_limits(req.limit),
        max_tokens=whole_items_budget(3 * req.limit),
    )


def answer_body(
    ctx: EngineContext, scope: str, req: RecallRequest, pack_id: str
) -> Dict[str, Any]:
    """``{scope, question, use_pack_id, cite_sources, include_context, answer_instructions}``.

    Unset instructions are ``null`` on Direct and left out on the hosted wire,
    whose strict schema refuses ``null``.
    """
    body: Dict[str, Any] = {
        "scope": scope,
        "question": req.question,
        "use_pack_id": pack_id,
        "cite_sources": True,
        "include_context": True,
    }
    if req.instructions is not None or ctx.wire.sends_null_instructions:
        body["answer_instructions"] = req.instructions
    return body


def _scopes(ctx: EngineContext, req: RecallRequest, deadline: Deadline) -> List[KindScope]:
    """The scopes read, deepest first (stable): the filter's, or every held one."""
    flt = req.filter
    if flt.reach is not None:
        found = scopes_for(ctx, flt, deadline)
    else:
        found = held(ctx, Reach.subtree(Namespace.root()), admitted_kinds(flt), deadline)
    return sorted(found, key=lambda scope: -scope.namespace.depth())


def recall(ctx: EngineContext, req: RecallRequest, deadline: Deadline) -> RecallAnswer:
    """Answer ``req.question`` from the best pack of its scopes (the request is validated).

    Nothing held → an empty answer and no request.
    """
    scopes = _scopes(ctx, req, deadline)
    if not scopes:
        return RecallAnswer("", (), None)
    labels = narrowing(req.filter)
    keeper = Keeper(req.filter)

    def pack(scope: KindScope) -> _Pack:
        body = answer_pack_body(scope.path, req, labels)
        found = ctx.log.recall(body, deadline)
        return _Pack(scope, found.get("pack_id"), ranked(found, keeper))

    for round_number in range(1, ANSWER_ROUNDS + 1):
        packs = fan_out(pack, scopes, PACK_WORKERS)
        chosen = packs[0]
        for candidate in packs[1:]:
            if candidate.ranked.admitted > chosen.ranked.admitted:
                chosen = candidate
        if not isinstance(chosen.pack_id, str):
            raise EngineError(
                f"memory API recall on {ctx.client.host} answered without a pack_id"
            )
        try:
            answered = ctx.log.answer(
                answer_body(ctx, chosen.scope.path, req, chosen.pack_id), deadline
            )
        except NotFoundError:
            if round_number >= ANSWER_ROUNDS:
                raise
            logger.debug(
                "recall pack %r expired before its answer (round %d); packing again",
                chosen.pack_id,
                round_number,
            )
            continue
        return _answer(ctx, answered, packs, req.limit)
    raise AssertionError("unreachable: the last round returns or raises")  # pragma: no cover


class _Pack(NamedTuple):
    """One scope's pack in a round: the scope, the server's ``pack_id`` (unchecked) and
    what it ranked."""

    scope: KindScope
    pack_id: object
    ranked: Ranked


def _answer(
    ctx: EngineContext, answered: Dict[str, Any], packs: List[_Pack], limit: int
) -> RecallAnswer:
    text = answered.get("answer")
    if not isinstance(text, str):
        raise EngineError(f"memory API answer on {ctx.client.host} returned no answer text")
    diagnostics = answered.get("diagnostics")
    model_value = diagnostics.get("answer_model") if isinstance(diagnostics, dict) else None
    model: Optional[str] = model_value if isinstance(model_value, str) else None
    cited = interleave([p.ranked.envelopes for p in packs], _item_id, limit)
    citations = tuple(_citation(env) for env in cited)
    return RecallAnswer(text, citations, model)


def _item_id(env: Envelope) -> str:
    return env.id


def _citation(env: Envelope) -> Citation:
    """The event's own text (a turn, a piece, a statement or a body) and its located meta."""
    return Citation(env.id, env.kind, env.text, located_meta(env), None)

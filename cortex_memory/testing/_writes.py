"""Write handlers shared by both wires: experience, bulk, forget, and `?wait=` holds.

doubles.md §6 (experience, bulk, forget rows), §6.1 (the write pipeline, whose
order matters), §6.3 (`?wait=`) and §7 (the hosted differences).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from cortex_memory.testing._gate import check_grammar
from cortex_memory.testing._reply import RATE_LIMIT, UPSTREAM, Refusal, Reply, Request

if TYPE_CHECKING:
    from cortex_memory.testing._server import BaseDouble

__all__ = ["bulk", "experience", "forget", "run_pipeline"]

WAIT_STAGES = ("accepted", "captured", "indexed", "consolidated", "settled")
_HOLDING = frozenset({"indexed", "consolidated", "settled"})
_POLL = 0.005


def _wait_stage(double: BaseDouble, request: Request) -> Optional[str]:
    """Validate `?wait=` (Direct with `honour_wait`); return the stage when it holds."""
    if double.hosted or not double.state.honour_wait or "wait" not in request.params:
        return None
    stage = request.params["wait"]
    if stage not in WAIT_STAGES:
        raise Refusal(422, "INVALID_BODY")
    return stage if stage in _HOLDING else None


def _attributed(item: Any) -> bool:
    return isinstance(item, dict) and ("observed_actor" in item or "subject" in item)


def _hold(double: BaseDouble, event_ids: List[str]) -> bool:
    """Hold until every named event is indexed; False after `wait_timeout_seconds`."""
    state = double.state
    clock = state.clock
    deadline = clock() + float(state.wait_timeout_seconds)
    while True:
        if state.log.all_indexed(event_ids, clock()):
            return True
        if clock() >= deadline or double.sleep(_POLL):
            return False


def run_pipeline(double: BaseDouble, request: Request, item: Dict[str, Any]) -> Tuple[str, bool]:
    """The write pipeline (§6.1) for one experience body: `(event_id, replayed)`."""
    state = double.state
    with state.lock:
        if double.hosted:
            check_grammar(item.get("scope"))
        if state.take_one("rate_limit_experience"):
            raise Refusal(429, "RATE_LIMITED", kind=RATE_LIMIT)
        header = request.headers.get("idempotency-key")
        state.seen.idempotency.append((item.get("idempotency_key"), header))
        if double.hosted and header is not None:
            if header in state.log.claims:
                # A claimed key is a metering conflict; the retry is never applied.
                raise Refusal(409, "CONFLICT", kind=UPSTREAM)
            state.log.claims.add(header)
        if state.take_one("claim_then_fail"):
            raise Refusal(502, "BAD_GATEWAY")
        calls = state.bump("experience_calls")
        if state.fail_nth_experience and calls == state.fail_nth_experience:
            raise Refusal(400, "VALIDATION_ERROR")
        outcome: Optional[Tuple[str, bool]] = None
        failure: Optional[Refusal] = None
        try:
            outcome = state.log.append(
                item,
                indexed_at=state.clock() + float(state.index_delay_seconds),
                allowed_scope_types=state.allowed_scope_types,
                size_counts_role_prefix=state.size_counts_role_prefix,
            )
        except Refusal as refusal:
            failure = refusal
        armed = state.arm_after_write
        if armed is not None:
            # One-shot, and it overwrites: it aims at the reads after this write.
            state.arm_after_write = None
            state.rate_limit_events = armed[0]
            state.hide_listing_for = armed[1]
        if state.take_one("apply_then_fail"):
            raise Refusal(503, "UNAVAILABLE")
        if failure is not None:
            raise failure
        assert outcome is not None
        return outcome


def _write_body(event_id: str, replayed: bool, status: str) -> Dict[str, Any]:
    if replayed:
        return {"event_id": event_id, "replayed_from_idempotency": True}
    return {"event_id": event_id, "status": status, "replayed_from_idempotency": False}


def experience(double: BaseDouble, request: Request) -> Reply:
    """`POST /v1/experience`, `POST /memory/experience`."""
    state = double.state
    body = state.record(state.seen.writes, request.json)
    stage = _wait_stage(double, request)
    with state.lock:
        if state.refuse_attribution is not None and _attributed(body):
            raise Refusal.from_knob(state.refuse_attribution)
    event_id, replayed = run_pipeline(double, request, body)
    if stage is not None and _hold(double, [event_id]):
        return Reply(200, _write_body(event_id, replayed, "indexed"))
    return Reply(202, _write_body(event_id, replayed, "captured"))


def bulk(double: BaseDouble, request: Request) -> Reply:
    """`POST /v1/experience/bulk` (Direct only): items in order, the first failure returned."""
    state = double.state
    body = state.record(state.seen.writes, request.json)
    stage = _wait_stage(double, request)
    items = body.get("items")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise Refusal(422, "INVALID_BODY")
    with state.lock:
        cap = state.bulk_max_items
        if cap is not None and len(items) > cap:
            raise Refusal(422, "INVALID_BODY")
        if state.refuse_attribution is not None and any(_attributed(i) for i in items):
            raise Refusal.from_knob(state.refuse_attribution)
    results: List[Dict[str, Any]] = []
    applied: List[str] = []
    for index, item in enumerate(items):
        # A failing item answers as is; the items before it stay applied.
        event_id, replayed = run_pipeline(double, request, item)
        applied.append(event_id)
        results.append(
            {"index": index, "event_id": event_id, "replayed_from_idempotency": replayed}
        )
    if stage is not None:
        _hold(double, applied)
    return Reply(200, {"accepted": len(results), "results": results})


def forget(double: BaseDouble, request: Request) -> Reply:
    """`POST /v1/forget`, `POST /memory/forget` (§6.5)."""
    state = double.state
    body = request.json
    if double.hosted:
        check_grammar(body.get("scope"))
    with state.lock:
        if state.take_one("rate_limit_forget"):
            raise Refusal(429, "RATE_LIMITED", kind=RATE_LIMIT)
        state.seen.forgets.append(body)
        return Reply(200, state.log.forget(body))

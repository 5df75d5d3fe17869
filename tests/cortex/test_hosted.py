"""The hosted wire: claims, outcome-unknown recovery, rate limits, routes (engine.md §8.3)."""

from __future__ import annotations

import itertools
import json
import re
import threading
from typing import Any, List, Tuple

import pytest

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    ListRequest,
    MetaFilter,
    RecallRequest,
    StoreReceipt,
    WaitFor,
)
from cortex_memory.cortex import CortexEngine, StaticBearer, Timing
from cortex_memory.errors import ConflictError, UnauthorizedError, UnavailableError
from cortex_memory.testing import FOREVER, LoopbackServer, fault, sample_items
from cortex_memory.testing.hostile import RawRequest

FAST = Timing(poll_interval=0.005, read_backoff=0.005, visibility=2.0, settle=2.0, recovery=2.0)


class Rotating:
    """A bearer source handing out jwt-0, jwt-1, ... (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = itertools.count()

    def bearer(self) -> str:
        with self._lock:
            return f"jwt-{next(self._next)}"


class Failing:
    def __init__(self, value: Any = None) -> None:
        self.value = value

    def bearer(self) -> str:
        if self.value is None:
            raise RuntimeError("signed out")
        return str(self.value)


_ALLOWED = {
    "POST /memory/experience",
    "GET /memory/events?labels,limit,scope",
    "GET /memory/events?limit,scope",
    "GET /memory/events?cursor,labels,limit,scope",
    "GET /memory/events?cursor,limit,scope",
    "POST /memory/recall",
    "POST /memory/answer",
    "POST /memory/forget",
    "GET /memory/scopes?limit,prefix",
}


def _shape(line: str) -> str:
    method, _, target = line.partition(" ")
    path, _, query = target.partition("?")
    if not query:
        return f"{method} {path}"
    names = sorted(pair.partition("=")[0] for pair in query.split("&"))
    return f"{method} {path}?{','.join(names)}"


def test_hosted_sends_only_its_own_routes(hosted) -> None:
    engine = hosted.engine()
    receipts = engine.store_many(sample_items())
    engine.list(ListRequest(MetaFilter(), 2))
    engine.get(GetRequest(tuple(r.id for r in receipts)))
    engine.fetch(FetchRequest("helix", FetchMode.HYBRID, 3))
    engine.recall(RecallRequest("which editor?", 3))
    engine.forget(ForgetTarget.ids([receipts[0].id]))
    engine.forget(ForgetTarget.filter(MetaFilter(thread_id="t-learn")))
    lines = hosted.state.requests()
    assert {_shape(line) for line in lines} <= _ALLOWED
    assert not any("/v1/" in line or "wait=" in line for line in lines)
    assert set(hosted.state.seen.actors) == {None}
    assert hosted.state.counters["whoami_calls"] == 0


def test_health_probe_is_one_scope_listing(hosted) -> None:
    engine = hosted.engine()
    assert engine.health().state.value == "ok"
    assert hosted.state.requests() == ["GET /memory/scopes?prefix=tmh%3Aprobe&limit=1"]


def test_bearer_is_resolved_per_request(hosted) -> None:
    engine = hosted.engine(source=Rotating())
    engine.store(sample_items()[2], wait=WaitFor.ACCEPTED)
    engine.list(ListRequest(MetaFilter(), 1))
    auth = hosted.state.seen.auth
    assert auth == [f"Bearer jwt-{n}" for n in range(len(auth))]
    assert len(auth) >= 3


@pytest.mark.parametrize("value", [None, "   ", "jwt\r\nX-Injected: 1", "jw\nt"])
def test_unusable_bearer_sends_no_request(hosted, value: Any) -> None:
    engine = hosted.engine(source=Failing(value))
    with pytest.raises(UnauthorizedError) as info:
        engine.store(sample_items()[2])
    if value is not None:
        assert value.strip() not in str(info.value) or not value.strip()
    assert hosted.state.requests() == []


def test_claims_are_fresh_short_unique_and_not_the_body_key(hosted) -> None:
    engine = hosted.engine()
    engine.store_many(sample_items())
    pairs = hosted.state.seen.idempotency
    assert len(pairs) == 5
    claims = [header for _, header in pairs]
    assert len(set(claims)) == 5
    for body_key, claim in pairs:
        assert claim is not None
        assert re.fullmatch(r"tm-[0-9a-f]{16}-[0-9]+-[0-9]+", claim)
        assert len(claim) <= 128
        assert claim != body_key
        assert body_key is not None
        assert body_key.startswith("tm3:")


def test_answer_and_forget_carry_fresh_claims_recall_and_listings_none(hosted) -> None:
    engine = hosted.engine()
    receipts = engine.store_many(sample_items())
    engine.recall(RecallRequest("which editor?", 3))
    engine.forget(ForgetTarget.ids([receipts[1].id]))
    seen = hosted.state.seen
    keys = {}
    for line, headers in zip(seen.requests, seen.headers):
        keys.setdefault(line.split("?")[0], []).append(headers.get("idempotency-key"))
    assert all(k is not None for k in keys["POST /memory/answer"])
    assert all(k is not None for k in keys["POST /memory/forget"])
    assert set(keys["POST /memory/recall"]) == {None}
    assert set(keys["GET /memory/events"]) == {None}


@pytest.mark.parametrize("legacy", [False, True])
def test_lost_answer_is_recovered_by_listing(make_double, legacy: bool) -> None:
    double = make_double("hosted", apply_then_fail=1, legacy_conflict_400=legacy)
    engine = double.engine()
    item = sample_items()[2]
    assert engine.store(item) == StoreReceipt(item.fingerprint(), False)
    assert double.state.event_count() == 1
    claims = [claim for _, claim in double.state.seen.idempotency]
    assert len(claims) == 2
    assert claims[0] == claims[1]


def test_recovery_waits_out_a_rate_limit_and_a_slow_listing(make_double) -> None:
    double = make_double("hosted", apply_then_fail=1, arm_after_write=(3, 2))
    engine = double.engine()
    engine.store(sample_items()[2])
    assert double.state.event_count() == 1
    assert double.state.count("POST /memory/experience") == 2


def test_reset_after_an_applied_write_is_recovered(hosted) -> None:
    engine = hosted.engine()
    hosted.state.reset_after = fault("response", route="POST /memory/experience")
    engine.store(sample_items()[2])
    assert hosted.state.event_count() == 1
    assert hosted.state.counters["resets"] == 1
    assert hosted.state.count("POST /memory/experience") == 2


def test_claimed_write_that_never_landed_is_outcome_unknown(make_double) -> None:
    double = make_double("hosted", claim_then_fail=1)
    engine = double.engine(recovery=0.2)
    with pytest.raises(UnavailableError, match="unknown"):
        engine.store(sample_items()[2])
    assert double.state.event_count() == 0


def test_recovery_never_takes_an_identical_turn_for_the_lost_one(make_double, kit) -> None:
    double = make_double("hosted")
    engine = double.engine(recovery=0.2)
    chat = kit.conversation(2, "same")
    chat = type(chat)(tuple(type(t)(t.role, "same words") for t in chat.turns), chat.meta)
    engine.store(chat)
    assert double.state.event_count() == 2
    double.state.log.lose_last("app:tinymemory/app:conversations")
    double.state.claim_then_fail = 1
    with pytest.raises(UnavailableError, match="unknown"):
        engine.store(chat)
    assert double.state.event_count() == 1


def test_rate_limited_write_is_retried_under_its_claim(make_double) -> None:
    double = make_double("hosted", rate_limit_experience=2)
    engine = double.engine()
    engine.store(sample_items()[2])
    assert double.state.count("POST /memory/experience") == 3
    assert double.state.event_count() == 1


def test_write_gives_up_after_three_attempts(make_double) -> None:
    double = make_double("hosted", rate_limit_experience=3)
    engine = double.engine()
    with pytest.raises(UnavailableError):
        engine.store(sample_items()[2])
    assert double.state.count("POST /memory/experience") == 3
    assert double.state.event_count() == 0


def test_rate_limited_forget_is_retried(hosted) -> None:
    engine = hosted.engine()
    receipts = engine.store_many(sample_items())
    hosted.state.rate_limit_forget = 1
    assert engine.forget(ForgetTarget.ids([receipts[2].id])).forgotten == 1
    assert hosted.state.count("POST /memory/forget") == 2
    assert hosted.state.event_count() == 4


def _fake_hosted(answer_write: Tuple[int, Any]) -> LoopbackServer:
    def handler(request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        if request.path == "/memory/events":
            data = {"items": [], "has_more": False, "next_cursor": None}
            return 200, [], {"success": True, "data": data}
        if request.path == "/memory/experience":
            return answer_write[0], [], answer_write[1]
        return 404, [], b""

    return LoopbackServer(handler)


@pytest.mark.parametrize("status", [409, 400])
def test_conflict_on_a_first_attempt_is_a_conflict(status: int) -> None:
    body = {"success": False, "error": "already claimed", "errorCode": "CONFLICT"}
    with _fake_hosted((status, body)) as server:
        engine = CortexEngine.tinyhumans(server.url, StaticBearer("tok"), timing=FAST)
        with pytest.raises(ConflictError) as info:
            engine.store(sample_items()[2], wait=WaitFor.ACCEPTED)
        engine.close()
        posts = [r for r in server.raw_requests if r.startswith(b"POST")]
    assert len(posts) == 1
    assert info.value.code == "CONFLICT"


def test_write_receipt_without_event_id_is_an_engine_error() -> None:
    from cortex_memory.errors import EngineError

    with _fake_hosted((202, {"success": True, "data": {"status": "captured"}})) as server:
        engine = CortexEngine.tinyhumans(server.url, StaticBearer("tok"), timing=FAST)
        with pytest.raises(EngineError, match="event_id"):
            engine.store(sample_items()[2], wait=WaitFor.ACCEPTED)
        engine.close()


def test_insufficient_credits_is_an_engine_error_with_its_code(make_double) -> None:
    from cortex_memory.errors import EngineError, is_insufficient_credits

    double = make_double("hosted", fail_all=(402, "USER_INSUFFICIENT_CREDITS"))
    engine = double.engine()
    with pytest.raises(EngineError) as info:
        engine.store(sample_items()[2])
    assert is_insufficient_credits(info.value)
    assert info.value.message.startswith("[USER_INSUFFICIENT_CREDITS]")


def test_unwrapped_listing_is_an_engine_error() -> None:
    from cortex_memory.errors import EngineError

    def handler(request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        return 200, [], {"items": []}

    with LoopbackServer(handler) as server:
        engine = CortexEngine.tinyhumans(server.url, StaticBearer("tok"), timing=FAST)
        with pytest.raises(EngineError, match="success envelope"):
            engine.list(ListRequest(MetaFilter(), 5))
        engine.close()


def test_hosted_visibility_backoff_doubles_to_the_ceiling(make_double) -> None:
    from cortex_memory.cortex.timing import next_poll

    timing = Timing()
    gaps = [timing.poll_interval]
    for _ in range(5):
        gaps.append(next_poll(gaps[-1], timing, hosted=True))
    assert gaps == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert next_poll(0.25, timing, hosted=False) == 0.25
    double = make_double("hosted", hide_listing_for=FOREVER)
    engine = double.engine(visibility=0.3, poll_interval=0.02, hosted_poll_ceiling=0.08)
    with pytest.raises(UnavailableError, match="readable"):
        engine.store(sample_items()[2])
    # 0.3 s of polls 20, 40, 80, 80... ms apart: a handful, not the 15 a fixed gap gives.
    assert 3 <= double.state.count("GET /memory/events") <= 10


def test_scope_paths_under_a_tenant_prefix_are_understood() -> None:
    from cortex_memory.contract import Namespace, Reach

    def handler(request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        if request.path == "/memory/scopes":
            data = {
                "scopes": [
                    "oc:u-42/app:tinymemory/team:acme/app:learnings",
                    "oc:u-42/app:tinymemory/team:acme/agent:w/app:documents",
                    "oc:u-42/app:other/team:acme/app:learnings",
                ]
            }
            return 200, [], {"success": True, "data": data}
        if request.path == "/memory/events":
            return 200, [], {"success": True, "data": {"items": [], "has_more": False}}
        return 404, [], b""

    with LoopbackServer(handler) as server:
        engine = CortexEngine.tinyhumans(server.url, StaticBearer("tok"), timing=FAST)
        engine.list(ListRequest(MetaFilter(reach=Reach.subtree(Namespace.parse("team:acme"))), 5))
        engine.close()
        targets = [r.split(b" ")[1].decode() for r in server.raw_requests]
    listed = sorted(t for t in targets if t.startswith("/memory/events"))
    assert any("team%3Aacme%2Fagent%3Aw%2Fapp%3Adocuments" in t for t in listed)
    assert any("team%3Aacme%2Fapp%3Alearnings" in t for t in listed)
    assert not any("oc%3A" in t for t in listed)


def test_hosted_failures_keep_their_code(make_double) -> None:
    double = make_double("hosted", fail_all=(400, "VALIDATION_ERROR", "bad field"))
    engine = double.engine()
    from cortex_memory.errors import InvalidRequestError, error_code

    with pytest.raises(InvalidRequestError) as info:
        engine.list(ListRequest(MetaFilter(), 5))
    assert error_code(info.value) == "VALIDATION_ERROR"
    assert info.value.code == "VALIDATION_ERROR"
    assert json.dumps(info.value.message)


def test_a_conversation_is_three_posts_and_two_listings(hosted) -> None:
    engine = hosted.engine()
    engine.store(sample_items()[1])
    assert hosted.state.count("POST /memory/experience") == 3
    assert hosted.state.count("GET /memory/events") == 2
    assert hosted.state.count("POST /v1/") == 0

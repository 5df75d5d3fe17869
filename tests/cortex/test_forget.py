"""forget by ids and by filter, on both wires (engine.md §9.10, §8.5)."""

from __future__ import annotations

from typing import Any, List, Tuple

import pytest

from cortex_memory.contract import (
    ForgetTarget,
    GetRequest,
    ListRequest,
    MetaFilter,
    Namespace,
    Reach,
    StoreReceipt,
)
from cortex_memory.cortex import CortexEngine, StaticBearer, Timing
from cortex_memory.cortex.log import Log
from cortex_memory.cortex.log.forget import AUDIT_NOTE, forget_events
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import InvalidRequestError, NotFoundError, UnavailableError
from cortex_memory.testing import LoopbackServer, sample_items
from cortex_memory.testing.hostile import RawRequest


def _forget_line(double: Any) -> str:
    return "POST /memory/forget" if double.hosted else "POST /v1/forget"


def test_forget_by_ids_sends_batches_of_100(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    chat = kit.conversation(230, "long chat")
    receipt = engine.store(chat)
    double.state.clear_seen()
    assert engine.forget(ForgetTarget.ids([receipt.id])).forgotten == 1
    bodies = double.state.seen.forgets
    assert [len(body["selector"]["memory_ids"]) for body in bodies] == [100, 100, 30]
    for body in bodies:
        assert body["scope"] == "app:tinymemory/app:conversations"
        assert body["layers"] == ["events"]
        assert body["cascade"] == "redact_events"
        assert body["audit_note"] == AUDIT_NOTE
        assert "confirm_all" not in body
        assert set(body["selector"]) == {"memory_ids"}
    assert double.state.event_count() == 0


def test_nothing_to_remove_sends_no_forget(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    engine.store_many(sample_items())
    report = engine.forget(ForgetTarget.ids(["0" * 40, "f" * 40]))
    assert report.forgotten == 0
    assert double.state.count(_forget_line(double)) == 0
    report = engine.forget(ForgetTarget.filter(MetaFilter(thread_id="nobody")))
    assert report.forgotten == 0
    assert double.state.count(_forget_line(double)) == 0


def test_forget_counts_distinct_items_and_reaches_sandboxes(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    boxed = kit.learning("in a sandbox", namespace=Namespace.parse("agent:a/service:box"))
    ids = [r.id for r in engine.store_many([*sample_items(), boxed])]
    report = engine.forget(ForgetTarget.ids([ids[1], ids[3], ids[1], "0" * 40]))
    assert report.forgotten == 2
    assert double.state.event_count() == 2
    remaining = engine.get(GetRequest(tuple(ids), Reach.of(Namespace.parse("agent:a/service:box"))))
    assert [hit.id for hit in remaining] == [ids[0], ids[2]]


def test_forget_by_filter_stays_inside_its_reach(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    here = kit.learning("keep me", thread_id="t-1")
    there = kit.learning("drop me", thread_id="t-1", namespace=Namespace.parse("agent:x"))
    other = kit.learning("other thread", thread_id="t-2", namespace=Namespace.parse("agent:x"))
    ids = [r.id for r in engine.store_many([here, there, other])]
    flt = MetaFilter(reach=Reach.exact(Namespace.parse("agent:x")), thread_id="t-1")
    assert engine.forget(ForgetTarget.filter(flt)).forgotten == 1
    left = engine.list(ListRequest(MetaFilter(reach=Reach.subtree(Namespace.root())), 10))
    assert sorted(hit.id for hit in left.items) == sorted([ids[0], ids[2]])


def test_forget_then_store_again_is_not_a_replay(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    item = sample_items()[1]
    engine.store(item)
    engine.forget(ForgetTarget.ids([item.fingerprint()]))
    assert engine.store(item) == StoreReceipt(item.fingerprint(), False)
    assert double.state.event_count() == 3


def test_invalid_forgets_send_nothing(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    with pytest.raises(InvalidRequestError):
        engine.forget(ForgetTarget.ids([]))
    with pytest.raises(InvalidRequestError):
        engine.forget(ForgetTarget.filter(MetaFilter()))
    with pytest.raises(InvalidRequestError):
        engine.forget_within([], Reach.default())
    assert double.state.requests() == []


def test_forget_within_looks_only_inside_its_reach(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    inside = kit.learning("inside", namespace=Namespace.parse("agent:in"))
    outside = kit.learning("outside", namespace=Namespace.parse("agent:out"))
    ids = [r.id for r in engine.store_many([inside, outside])]
    report = engine.forget_within(ids, Reach.exact(Namespace.parse("agent:in")), deadline=10)
    assert report.forgotten == 1
    assert double.state.event_count() == 1
    double.state.clear_seen()
    assert engine.forget_within([ids[0]], Reach.exact(Namespace.parse("agent:in"))).forgotten == 0
    assert double.state.count(_forget_line(double)) == 0


def test_direct_forget_is_sent_once(direct) -> None:
    engine = direct.engine()
    ids = [r.id for r in engine.store_many(sample_items())]
    direct.state.rate_limit_forget = 1
    with pytest.raises(UnavailableError):
        engine.forget(ForgetTarget.ids([ids[2]]))
    assert direct.state.count("POST /v1/forget") == 1


def _hosted_forget_server(answers: List[Tuple[int, Any]]) -> Tuple[LoopbackServer, List[str]]:
    claims: List[str] = []

    def handler(request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        claims.append(request.header("idempotency-key") or "")
        status, body = answers.pop(0)
        return status, [], body

    return LoopbackServer(handler), claims


def _hosted_log(url: str) -> Tuple[CortexEngine, Log]:
    timing = Timing(read_backoff=0.005, poll_interval=0.005)
    engine = CortexEngine.tinyhumans(url, StaticBearer("tok"), timing=timing)
    return engine, engine.context.log


def test_hosted_forget_counts_a_404_on_a_retry_as_done() -> None:
    lost = {"success": False, "error": "upstream", "errorCode": "UPSTREAM_UNAVAILABLE"}
    gone = {"success": False, "error": "no such events", "errorCode": "NOT_FOUND"}
    server, claims = _hosted_forget_server([(503, lost), (404, gone)])
    with server:
        engine, log = _hosted_log(server.url)
        forget_events(log, "app:tinymemory/app:learnings", ["evt_1"], Deadline())
        engine.close()
    assert len(claims) == 2
    assert claims[0] != claims[1]
    assert all(claim.startswith("tm-") for claim in claims)


def test_hosted_forget_404_on_a_first_attempt_is_not_found() -> None:
    gone = {"success": False, "error": "no such scope", "errorCode": "NOT_FOUND"}
    server, claims = _hosted_forget_server([(404, gone)])
    with server:
        engine, log = _hosted_log(server.url)
        with pytest.raises(NotFoundError):
            forget_events(log, "app:tinymemory/app:learnings", ["evt_1"], Deadline())
        engine.close()
    assert len(claims) == 1


def test_hosted_forget_gives_up_after_three_attempts() -> None:
    lost = {"success": False, "error": "upstream", "errorCode": "UPSTREAM_UNAVAILABLE"}
    server, claims = _hosted_forget_server([(503, lost)] * 3)
    with server:
        engine, log = _hosted_log(server.url)
        with pytest.raises(UnavailableError):
            forget_events(log, "app:tinymemory/app:learnings", ["evt_1"], Deadline())
        engine.close()
    assert len(claims) == 3


def test_no_event_ids_send_nothing() -> None:
    server, claims = _hosted_forget_server([])
    with server:
        engine, log = _hosted_log(server.url)
        forget_events(log, "app:tinymemory/app:learnings", [], Deadline())
        engine.close()
    assert claims == []

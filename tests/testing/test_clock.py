"""Time-driven behaviour under a fake clock: indexing delay, ?wait= holds, packs, rate window."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict

import pytest


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.005)


def in_thread(call: Callable[[], Any]) -> Dict[str, Any]:
    """Run `call` in a thread; the dict gets `answer` when it returns."""
    box: Dict[str, Any] = {}

    def run() -> None:
        box["answer"] = call()

    thread = threading.Thread(target=run, daemon=True)
    box["thread"] = thread
    thread.start()
    return box


def test_indexing_delay_hides_then_shows(make_wire, clock) -> None:
    direct = make_wire(clock=clock, index_delay_seconds=2.0)
    direct.write("app:a", "hello world")
    assert direct.state.event_count() == 1
    assert direct.events("scope=app:a").json["items"] == []
    assert direct.recall({"scope": "app:a", "query": "hello"}).json["layers"]["events"] == []
    assert direct.answer({"scope": "app:a", "question": "q"}).status == 200
    assert direct.post("/v1/beliefs/build", {"scope": "app:a"}).json["events_scanned"] == 0
    assert [i["path"] for i in direct.scopes().json["items"]] == ["app:a"]
    clock.advance(1.999)
    assert direct.events("scope=app:a").json["items"] == []
    clock.advance(0.001)
    assert len(direct.events("scope=app:a").json["items"]) == 2
    assert len(direct.recall({"scope": "app:a", "query": "hello"}).json["layers"]["events"]) == 1
    assert direct.post("/v1/beliefs/build", {"scope": "app:a"}).json["built"] == 1


def test_indexing_delay_on_the_hosted_wire(make_wire, clock) -> None:
    hosted = make_wire("hosted", clock=clock, index_delay_seconds=0.5)
    hosted.write("app:a", "hello")
    assert hosted.events("scope=app:a").data["items"] == []
    clock.advance(0.5)
    assert len(hosted.events("scope=app:a").data["items"]) == 2


def test_wait_indexed_holds_then_answers_200(make_wire, clock) -> None:
    direct = make_wire(clock=clock, index_delay_seconds=10.0)
    box = in_thread(lambda: direct.write("app:a", "held", query="?wait=indexed"))
    wait_until(lambda: direct.state.event_count() == 1)
    time.sleep(0.05)
    assert box["thread"].is_alive()
    # The hold is outside the lock: other requests are served meanwhile.
    assert direct.events("scope=app:a").status == 200
    clock.advance(10.0)
    box["thread"].join(10)
    answer = box["answer"]
    assert answer.status == 200
    assert answer.json == {
        "event_id": "evt_1",
        "status": "indexed",
        "replayed_from_idempotency": False,
    }


def test_wait_gives_up_after_the_timeout(make_wire, clock) -> None:
    direct = make_wire(clock=clock, index_delay_seconds=100.0, wait_timeout_seconds=5.0)
    box = in_thread(lambda: direct.write("app:a", "slow", query="?wait=settled"))
    wait_until(lambda: direct.state.event_count() == 1)
    clock.advance(5.0)
    box["thread"].join(10)
    answer = box["answer"]
    assert answer.status == 202
    assert answer.json["status"] == "captured"


def test_bulk_wait_is_a_barrier(make_wire, clock) -> None:
    direct = make_wire(clock=clock, index_delay_seconds=1.0)
    items = [direct.body("app:a", f"t{i}") for i in range(3)]
    box = in_thread(lambda: direct.post("/v1/experience/bulk?wait=indexed", {"items": items}))
    wait_until(lambda: direct.state.event_count() == 3)
    time.sleep(0.05)
    assert box["thread"].is_alive()
    clock.advance(1.0)
    box["thread"].join(10)
    assert box["answer"].status == 200
    assert box["answer"].json["accepted"] == 3


def test_failed_write_answers_at_once_despite_wait(make_wire, clock) -> None:
    direct = make_wire(clock=clock, index_delay_seconds=100.0)
    direct.write("app:a", "one", key="k")
    answer = direct.write("app:a", "two", key="k", query="?wait=indexed")
    assert answer.status == 409


def test_a_pack_expires_at_its_lifetime(make_wire, clock) -> None:
    direct = make_wire(clock=clock, pack_ttl_seconds=60.0)
    direct.write("app:a", "hello")
    pack = direct.recall({"scope": "app:a", "query": "hello"}).json["pack_id"]
    clock.advance(59.9)
    assert direct.answer({"scope": "app:a", "question": "q", "use_pack_id": pack}).status == 200
    clock.advance(0.1)
    gone = direct.answer({"scope": "app:a", "question": "q", "use_pack_id": pack})
    assert (gone.status, gone.json["error_code"]) == (404, "NOT_FOUND")
    assert direct.state.log.packs == {}


@pytest.mark.parametrize(
    ("kind", "drop"),
    [
        (
            "direct",
            lambda w: w.forget({"scope": "app:elsewhere", "selector": {"memory_ids": ["x"]}}),
        ),
        ("direct", lambda w: w.forget({"scope": "app:elsewhere", "confirm_all": True})),
        (
            "direct",
            lambda w: w.post("/v1/erasures", {"scope": "app:elsewhere", "confirm_all": True}),
        ),
        ("hosted", lambda w: w.forget({"scope": "app:elsewhere", "confirm_all": True})),
        ("hosted", lambda w: w.post("/memory/v1/erasures", {"scope": "app:elsewhere"})),
        ("hosted", lambda w: w.call("DELETE", "/memory")),
    ],
)
def test_any_forget_or_erasure_drops_every_pack(make_wire, kind, drop) -> None:
    wire = make_wire(kind)
    wire.write("app:a", "hello")
    first = wire.recall({"scope": "app:a", "query": "hello"}).data["pack_id"]
    second = wire.recall({"scope": "app:a", "query": ""}).data["pack_id"]
    assert drop(wire).status in (200, 202)
    for pack in [first, second]:
        answer = wire.answer({"scope": "app:a", "question": "q", "use_pack_id": pack})
        assert (answer.status, answer.code) == (404, "NOT_FOUND")
    fresh = wire.recall({"scope": "app:a", "query": ""}).data["pack_id"]
    assert fresh not in (first, second)  # counters are never reused
    assert wire.answer({"scope": "app:a", "question": "q", "use_pack_id": fresh}).status == 200


def test_a_refused_forget_keeps_the_packs(direct) -> None:
    direct.write("app:a", "hello")
    pack = direct.recall({"scope": "app:a"}).json["pack_id"]
    assert direct.forget({"scope": "app:a"}).status == 422
    assert direct.answer({"scope": "app:a", "question": "q", "use_pack_id": pack}).status == 200


def test_rate_window_refuses_the_301st_and_slides(make_wire, clock) -> None:
    hosted = make_wire("hosted", clock=clock)
    for _ in range(150):
        assert hosted.scopes().status == 200
    clock.advance(30.0)
    for _ in range(150):
        assert hosted.scopes().status == 200
    refused = hosted.scopes()
    assert refused.status == 429
    assert refused.json == {
        "error": {
            "message": "Rate limit exceeded. Please retry after a brief wait.",
            "type": "rate_limit_error",
        }
    }
    # Another token has its own window; whoever hits the limit is recorded anyway.
    assert hosted.scopes(token="other-user").status == 200
    clock.advance(29.9)
    assert hosted.scopes().status == 429  # refused requests are not added
    clock.advance(0.1)
    # The first 150 slid out of the window.
    for _ in range(150):
        assert hosted.scopes().status == 200
    assert hosted.scopes().status == 429
    assert hosted.state.counters["rate_limited"] == 3
    assert hosted.state.count("GET /memory/scopes") == 454


def test_rate_window_counts_every_route_past_the_bearer(make_wire, clock) -> None:
    hosted = make_wire("hosted", clock=clock, rate_limit_requests=3, rate_limit_window_seconds=1.0)
    assert hosted.scopes(token=None).status == 401  # not counted: refused before the window
    hosted.write("app:a", "x")
    hosted.events("scope=app:a")
    hosted.recall({"scope": "app:a"})
    assert hosted.forget({"scope": "app:a", "confirm_all": True}).status == 429
    clock.advance(1.0)
    assert hosted.forget({"scope": "app:a", "confirm_all": True}).status == 200
    hosted.state.rate_limit_requests = None
    for _ in range(10):
        assert hosted.scopes().status == 200

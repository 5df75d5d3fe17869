"""Behaviour knobs over plain HTTP: each fires N times then stops; FOREVER never stops."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import pytest

from cortex_memory.testing import FOREVER


def _hidden(wire: Any) -> bool:
    page = wire.events("scope=app:seed").data
    return page["items"] == [] and page["has_more"] is False


def _answer_404(wire: Any) -> bool:
    pack = wire.recall({"scope": "app:seed", "query": "seed"}).data["pack_id"]
    return wire.answer({"scope": "app:seed", "question": "q", "use_pack_id": pack}).status == 404


def _write_status(status: int) -> Callable[[Any], bool]:
    counter = iter(range(10_000))

    def probe(wire: Any) -> bool:
        return wire.write("app:w", f"text {next(counter)}").status == status

    return probe


COUNT_KNOBS = [
    ("direct", "hide_listing_for", _hidden),
    ("hosted", "hide_listing_for", _hidden),
    ("direct", "rate_limit_events", lambda w: w.events("scope=app:seed").status == 429),
    ("hosted", "rate_limit_events", lambda w: w.events("scope=app:seed").status == 429),
    ("direct", "state_change_events", lambda w: w.events("scope=app:seed").status == 503),
    ("direct", "rate_limit_experience", _write_status(429)),
    ("hosted", "rate_limit_experience", _write_status(429)),
    ("direct", "apply_then_fail", _write_status(503)),
    ("direct", "claim_then_fail", _write_status(502)),
    ("hosted", "claim_then_fail", _write_status(502)),
    (
        "direct",
        "rate_limit_forget",
        lambda w: w.forget({"scope": "app:x", "confirm_all": True}).status == 429,
    ),
    ("direct", "expire_packs", _answer_404),
    ("hosted", "expire_packs", _answer_404),
    (
        "hosted",
        "erasure_incomplete_for",
        lambda w: w.post("/memory/v1/erasures", {"scope": "app:x"}).status == 502,
    ),
    (
        "direct",
        "erasure_running_for",
        lambda w: w.get("/v1/erasures/erasure_1").json["status"] == "running",
    ),
]


@pytest.mark.parametrize(("kind", "knob", "fired"), COUNT_KNOBS)
def test_count_knob_fires_n_times_then_stops(make_wire, kind, knob, fired) -> None:
    wire = make_wire(kind)
    wire.write("app:seed", "seed words")
    setattr(wire.state, knob, 2)
    assert [fired(wire) for _ in range(4)] == [True, True, False, False]
    assert getattr(wire.state, knob) == 0
    setattr(wire.state, knob, FOREVER)
    assert all(fired(wire) for _ in range(6))
    assert getattr(wire.state, knob) is FOREVER
    setattr(wire.state, knob, 0)
    assert fired(wire) is False


def test_rate_limited_experience_is_not_recorded_as_a_write_attempt(direct) -> None:
    direct.state.rate_limit_experience = 1
    answer = direct.write("app:a", "x")
    assert (answer.status, answer.json["error_code"]) == (429, "RATE_LIMITED")
    assert direct.state.seen.idempotency == []
    assert direct.state.counters["experience_calls"] == 0
    assert len(direct.state.seen.writes) == 1


def test_rate_limited_forget_is_not_recorded(direct) -> None:
    direct.state.rate_limit_forget = 1
    body = {"scope": "app:a", "confirm_all": True}
    assert direct.forget(body).status == 429
    assert direct.state.seen.forgets == []
    assert direct.forget(body).status == 200
    assert direct.state.seen.forgets == [body]


def test_fail_nth_experience_counts_bulk_items(direct) -> None:
    direct.state.fail_nth_experience = 3
    items = [direct.body("app:c", "one"), direct.body("app:c", "two")]
    assert direct.post("/v1/experience/bulk", {"items": items}).status == 200
    third = direct.write("app:c", "three")
    assert (third.status, third.json["error_code"]) == (400, "VALIDATION_ERROR")
    assert direct.state.event_count() == 2
    assert direct.write("app:c", "three").status == 202
    assert direct.state.counters["experience_calls"] == 4
    direct.state.fail_nth_experience = 0
    assert direct.write("app:c", "four").status == 202


def test_arm_after_write_is_one_shot_and_overwrites(direct) -> None:
    direct.write("app:a", "seed")
    direct.state.rate_limit_events = 7
    direct.state.arm_after_write = (2, 1)
    direct.write("app:a", "armed")
    assert direct.state.arm_after_write is None
    assert (direct.state.rate_limit_events, direct.state.hide_listing_for) == (2, 1)
    statuses = [direct.events("scope=app:a").status for _ in range(2)]
    assert statuses == [429, 429]
    assert direct.events("scope=app:a").json["items"] == []
    assert len(direct.events("scope=app:a").json["items"]) == 4
    direct.write("app:a", "unarmed")
    assert direct.state.hide_listing_for == 0


def test_arm_after_write_runs_even_when_the_append_fails(direct) -> None:
    direct.write("app:a", "one", key="k")
    direct.state.arm_after_write = (FOREVER, 0)
    assert direct.write("app:a", "two", key="k").status == 409
    assert direct.state.rate_limit_events is FOREVER


def test_apply_then_fail_on_direct_applies_the_write(direct) -> None:
    direct.state.apply_then_fail = 1
    answer = direct.write("app:a", "x")
    assert (answer.status, answer.json["error_code"]) == (503, "UNAVAILABLE")
    assert direct.state.event_count() == 1


def test_recall_down_and_refers_refused(either) -> None:
    either.state.recall_down = True
    answer = either.recall({"scope": "app:a"})
    assert (answer.status, answer.code) == (500, "INTERNAL")
    either.state.recall_down = False
    either.state.refers_refused = True
    hinted = either.recall({"scope": "app:a", "temporal": {"refers_during": {}}})
    assert (hinted.status, hinted.code) == (422, "INVALID_BODY")
    assert either.recall({"scope": "app:a"}).status == 200


def test_request_delay_holds_outside_the_lock(direct) -> None:
    direct.state.request_delay_ms = 300
    box = {}
    started = time.monotonic()

    def run() -> None:
        box["status"] = direct.events("scope=app:a").status
        box["elapsed"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.1)
    assert direct.state.lock.acquire(timeout=2)
    direct.state.lock.release()
    thread.join(10)
    assert box["status"] == 200
    assert box["elapsed"] >= 0.29
    direct.state.request_delay_ms = 0


def test_listing_delay_tracks_in_flight_and_releases(direct) -> None:
    direct.state.listing_delay_ms = 250
    threads = [threading.Thread(target=direct.events, args=("scope=app:a",)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    counters = direct.state.counters
    assert counters["listings_in_flight"] == 0
    assert 1 < counters["listings_peak"] <= 4

"""The rate-limit pause (engine.md §5.10): parsing, capping, sharing, deadlines."""

from __future__ import annotations

import time
from typing import Dict

import pytest
from urllib3 import HTTPHeaderDict

from cortex_memory.cortex import CortexWire, Deadline, Timing
from cortex_memory.cortex.transport import RateLimitPause
from cortex_memory.cortex.transport.pause import parse_pause_seconds
from cortex_memory.errors import UnavailableError
from cortex_memory.testing.hostile import CountingServer, LoopbackServer

from ._clock import FakeClock


def headers(**values: str) -> HTTPHeaderDict:
    found = HTTPHeaderDict()
    for name, value in values.items():
        found[name.replace("_", "-")] = value
    return found


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        ({"Retry_After": "5"}, 5),
        ({"retry_after": " 7 "}, 7),
        ({"Retry_After": "0"}, 0),
        ({"Retry_After": "0", "RateLimit_Reset": "9"}, 0),  # 0 parses, so the search stops
        ({"Retry_After": "3", "RateLimit_Reset": "9"}, 3),
        ({"Retry_After": "Wed, 21 Oct 2015 07:28:00 GMT"}, None),
        ({"Retry_After": "Wed, 21 Oct 2015 07:28:00 GMT", "RateLimit_Reset": "4"}, 4),
        ({"RateLimit_Reset": " 6\t"}, 6),
        ({"Retry_After": "-1"}, None),
        ({"Retry_After": "1.5"}, None),
        ({"Retry_After": "+3"}, None),
        ({"Retry_After": ""}, None),
        ({"Retry_After": "\u0663"}, None),  # a non-ASCII digit
        ({"Retry_After": "9" * 30}, None),
        ({}, None),
    ],
)
def test_parse_pause_seconds(given: Dict[str, str], seconds: object) -> None:
    assert parse_pause_seconds(headers(**given)) == seconds


def test_note_caps_and_keeps_the_later_until() -> None:
    clock = FakeClock(1000.0)
    pause = RateLimitPause(clock=clock, sleep=clock.sleep)
    assert pause.note(headers(Retry_After="60"), 10.0) == 10.0
    assert pause.remaining() == 10.0
    assert pause.note(headers(Retry_After="2"), 10.0) == 2.0
    assert pause.remaining() == 10.0  # an earlier until never replaces a later one
    assert pause.note(headers(Retry_After="0"), 10.0) == 0.0
    assert pause.note(headers(Retry_After="soon"), 10.0) == 0.0
    assert pause.remaining() == 10.0
    pause.clear()
    assert pause.remaining() == 0.0


def test_holding_is_true_exactly_while_a_noted_pause_lasts() -> None:
    clock = FakeClock(1000.0)
    pause = RateLimitPause(clock=clock, sleep=clock.sleep)
    assert not pause.holding()  # nothing noted
    pause.note(headers(Retry_After="soon"), 10.0)
    assert not pause.holding()  # nothing that parses
    pause.note(headers(Retry_After="2"), 10.0)
    assert pause.holding()
    clock.sleep(1.5)
    assert pause.holding()
    clock.sleep(0.5)
    assert not pause.holding()  # its end reached
    pause.note(headers(Retry_After="4"), 10.0)
    assert pause.holding()
    pause.clear()
    assert not pause.holding()


def test_wait_sleeps_until_the_pause_is_over_and_rereads() -> None:
    clock = FakeClock(1000.0)
    pause = RateLimitPause(clock=clock)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if len(clock.slept) == 1:  # a longer pause recorded while we slept
            pause.note(headers(Retry_After="3"), 10.0)

    pause._sleep = sleep  # type: ignore[assignment]
    pause.note(headers(Retry_After="2"), 10.0)
    pause.wait(Deadline(None), "w")
    assert clock.slept == [2.0, 3.0]
    pause.wait(Deadline(None), "w")  # nothing left: returns at once
    assert clock.slept == [2.0, 3.0]


def test_wait_respects_the_deadline() -> None:
    clock = FakeClock(1000.0)
    pause = RateLimitPause(clock=clock, sleep=clock.sleep)
    pause.note(headers(Retry_After="5"), 10.0)
    with pytest.raises(UnavailableError) as caught:
        pause.wait(Deadline(1.0, clock=clock), "memory API v1/x on h")
    assert caught.value.message == "memory API v1/x on h: deadline exceeded (1 s)"
    assert clock.slept == []


# -- over the wire -------------------------------------------------------------------------------


def test_a_429_holds_every_later_request_of_the_family(make_client) -> None:
    timing = Timing(request_timeout=5, max_pause=0.4)
    with CountingServer(429, headers={"Retry-After": "30"}) as limited:
        client = make_client(limited.url, timing=timing)
        with pytest.raises(UnavailableError):
            client.once("POST", "v1/experience", {})
        assert 0.2 < client.paused_for <= 0.4  # capped by Timing.max_pause
        copy = client.with_default_headers({"x-copy": "1"})
        started = time.monotonic()
        with pytest.raises(UnavailableError):
            copy.once("POST", "v1/experience", {})  # waits out the shared pause first
        assert time.monotonic() - started >= 0.2


def test_the_default_cap_is_ten_seconds(make_client) -> None:
    with CountingServer(429, headers={"Retry-After": "3600"}) as server:
        client = make_client(
            server.url, wire=CortexWire.TINYHUMANS, timing=Timing(request_timeout=5)
        )
        with pytest.raises(UnavailableError):
            client.once("GET", "memory/events")
        assert 9.0 < client.paused_for <= 10.0
        with pytest.raises(UnavailableError) as caught:
            client.once("GET", "memory/events", deadline=1.0)  # cannot wait 10 s
        assert "deadline exceeded" in caught.value.message
        assert server.hits == 1  # nothing was sent while paused


def test_ratelimit_reset_is_honoured_and_an_http_date_is_not(make_client) -> None:
    with CountingServer(429, headers={"RateLimit-Reset": " 1 "}) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(UnavailableError):
            client.once("GET", "memory/events")
        assert 0.3 < client.paused_for <= 0.5  # FAST caps it at 0.5 s
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    with CountingServer(429, headers={"Retry-After": date}) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(UnavailableError):
            client.once("GET", "memory/events")
        assert client.paused_for == 0.0


def test_reads_retry_after_the_pause(make_client) -> None:
    count = {"n": 0}

    def handler(request):  # type: ignore[no-untyped-def]
        if request.path == "/v1/auth/whoami":
            return 404, {}, b""
        count["n"] += 1
        if count["n"] == 1:
            return 429, {"Retry-After": "1"}, b"slow down"
        return 200, {}, {"ok": True}

    timing = Timing(request_timeout=5, read_backoff=0.005, max_pause=0.3)
    with LoopbackServer(handler) as server:
        client = make_client(server.url, timing=timing)
        started = time.monotonic()
        response = client.retry_transient("GET", "v1/events")
        assert time.monotonic() - started >= 0.25
    assert response.attempts == 2
    assert response.data == {"ok": True}


def test_whoami_waits_for_the_pause_too(make_client) -> None:
    timing = Timing(request_timeout=5, max_pause=0.3)
    with LoopbackServer(lambda request: (429, {"Retry-After": "1"}, b"")) as server:
        client = make_client(server.url, timing=timing)
        started = time.monotonic()
        with pytest.raises(UnavailableError):
            client.once("GET", "v1/events")  # whoami: 429 (pause noted), then the request
        assert time.monotonic() - started >= 0.25  # the request waited for the pause
        assert [r.path for r in server.requests] == ["/v1/auth/whoami", "/v1/events"]

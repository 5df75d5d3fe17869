"""Call modes and the attempt loop (engine.md §5.4-5.5), over real loopback sockets."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import List

import pytest

from cortex_memory.cortex import CortexWire, Deadline, Timing
from cortex_memory.cortex.transport import READ_ATTEMPTS, STATE_CHANGE_ATTEMPTS, backoff
from cortex_memory.errors import (
    EngineError,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
)
from cortex_memory.testing.hostile import CountingServer, LoopbackServer, RawRequest

CLAIM = re.compile(r"tm-[0-9a-f]{16}-[0-9]+-[0-9]+")


def test_backoff_doubles() -> None:
    assert [backoff(n, 0.25) for n in range(1, 6)] == [0.25, 0.5, 1.0, 2.0, 4.0]
    assert (READ_ATTEMPTS, STATE_CHANGE_ATTEMPTS) == (3, 6)


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_reads_retry_unavailable_three_times(make_client, status: int) -> None:
    with CountingServer(status) as server:
        client = make_client(server.url)
        with pytest.raises(UnavailableError):
            client.retry_transient("GET", "v1/events")
        assert server.hits == 3


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, UnauthorizedError),
        (404, NotFoundError),
        (400, InvalidRequestError),
        (501, EngineError),
    ],
)
def test_reads_do_not_retry_other_failures(make_client, status: int, error: type) -> None:
    with CountingServer(status) as server:
        client = make_client(server.url)
        with pytest.raises(error):
            client.retry_transient("GET", "v1/events")
        assert server.hits == 1


@pytest.mark.parametrize("wire", list(CortexWire))
def test_writes_are_sent_once(make_client, wire: CortexWire) -> None:
    with CountingServer(503) as server:
        client = make_client(server.url, wire=wire)
        with pytest.raises(UnavailableError):
            client.once("POST", "v1/experience", {"a": 1})
        with pytest.raises(UnavailableError):
            client.json_keyed("memory/experience", {"a": 1}, "tm-claim-1")
        assert server.hits == 2


def test_state_change_earns_the_longer_retry(make_client) -> None:
    body = {"error_code": "AUTHORIZATION_STATE_CHANGED", "retriable": True}
    with CountingServer(503, json=body) as server:
        client = make_client(server.url)
        with pytest.raises(UnavailableError) as caught:
            client.retry_transient("GET", "v1/events")
        assert server.hits == 6
    assert caught.value.code == "AUTHORIZATION_STATE_CHANGED"


def test_state_change_only_in_details_gets_three(make_client) -> None:
    body = {"error_code": "UNAVAILABLE", "details": "AUTHORIZATION_STATE_CHANGED"}
    with CountingServer(503, json=body) as server:
        client = make_client(server.url)
        with pytest.raises(UnavailableError):
            client.retry_transient("GET", "v1/events")
        assert server.hits == 3


def test_hosted_state_change_code_also_counts(make_client) -> None:
    body = {"success": False, "errorCode": "AUTHORIZATION_STATE_CHANGED", "error": "x"}
    with CountingServer(503, json=body) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(UnavailableError):
            client.retry_transient("GET", "memory/events")
        assert server.hits == 6


def test_state_change_stops_when_the_code_goes_away(make_client) -> None:
    # Three state-change answers, then plain 503s: the fourth failure ends the loop.
    count = {"n": 0}
    lock = threading.Lock()

    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        with lock:
            count["n"] += 1
            n = count["n"]
        code = "AUTHORIZATION_STATE_CHANGED" if n <= 3 else "OTHER"
        return 503, {}, {"success": False, "errorCode": code}

    with LoopbackServer(handler) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(UnavailableError):
            client.retry_transient("GET", "memory/events")
        assert server.hits == 4


def test_retry_sleeps_the_backoff(make_client) -> None:
    timing = Timing(request_timeout=2, read_backoff=0.1)
    with CountingServer(503) as server:
        client = make_client(server.url, timing=timing)
        started = time.monotonic()
        with pytest.raises(UnavailableError):
            client.retry_transient("GET", "v1/events")
        elapsed = time.monotonic() - started
        assert server.hits == 3
    assert elapsed >= 0.3 - 0.02  # 0.1 then 0.2


def test_a_retry_that_succeeds_counts_its_attempts(make_client) -> None:
    count = {"n": 0}

    def handler(request: RawRequest):  # type: ignore[no-untyped-def]
        if request.path == "/v1/auth/whoami":
            return 404, {}, b""
        count["n"] += 1
        return (503, {}, b"busy") if count["n"] < 3 else (200, {}, {"items": []})

    with LoopbackServer(handler) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(EngineError):  # the hosted envelope is missing
            client.retry_transient("GET", "memory/events")
    count["n"] = 0
    with LoopbackServer(handler) as server:
        client = make_client(server.url)
        response = client.retry_transient("GET", "v1/events")
    assert response.attempts == 3
    assert response.data == {"items": []}
    assert response.status == 200


def test_request_shape(make_client) -> None:
    with LoopbackServer(lambda request: (201, {"X-Reply": "yes"}, {"ok": True})) as server:
        client = make_client(server.url)
        response = client.once("POST", "v1/experience", {"b": [2, 1], "a": "caf\u00e9"})
        get = client.once("GET", "v1/events?scope=a%3Ab")
        post, read = server.requests[-2], server.requests[-1]
    assert response.status == 201
    assert response.data == {"ok": True}
    assert response.headers["x-reply"] == "yes"
    assert post.body == '{"a":"café","b":[2,1]}'.encode()  # compact, sorted keys, UTF-8
    assert post.header("content-type") == "application/json"
    assert post.header("accept-encoding") == "identity"
    assert post.header("idempotency-key") is None
    assert read.header("content-type") is None
    assert read.body == b""
    assert read.target == "/v1/events?scope=a%3Ab"
    assert get.data == {"ok": True}


def test_bytes_bodies_pass_through(make_client) -> None:
    with LoopbackServer(lambda request: (200, {}, {})) as server:
        make_client(server.url).once("POST", "v1/experience", b'{"z":1,"a":2}')
        assert server.requests[-1].body == b'{"z":1,"a":2}'


def test_hosted_claims(make_client) -> None:
    ok = {"success": True, "data": {"event_id": "e"}}
    with LoopbackServer(lambda request: (200, {}, ok)) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        client.once("POST", "memory/answer", {"q": 1})
        client.once("POST", "memory/forget", {"q": 1})
        client.once("GET", "memory/events")
        client.retry_transient("POST", "memory/recall", {"q": 1})
        client.retry_transient("GET", "memory/events")
        client.json_keyed("memory/experience", {"q": 1}, "tm-mine-1")
        client.json_keyed("memory/experience", {"q": 1}, "tm-mine-1")
        keys = [r.header("idempotency-key") for r in server.requests]
    assert keys[2:5] == [None, None, None]
    assert CLAIM.fullmatch(keys[0] or "")
    assert CLAIM.fullmatch(keys[1] or "")
    assert keys[0] != keys[1]  # a fresh claim for every POST sent once
    assert keys[5:] == ["tm-mine-1", "tm-mine-1"]  # the writer's claim, reused


def test_direct_never_sends_claims(make_client) -> None:
    with LoopbackServer(lambda request: (200, {}, {})) as server:
        client = make_client(server.url)
        client.once("POST", "v1/answer", {"q": 1})
        client.json_keyed("v1/experience", {"q": 1}, "tm-mine-1")
        assert all(r.header("idempotency-key") is None for r in server.requests)


def test_invalid_claims_are_refused_before_sending(make_client) -> None:
    with LoopbackServer(lambda request: (200, {}, {})) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(EngineError):
            client.json_keyed("memory/experience", {}, "bad\r\nclaim")
        with pytest.raises(TypeError):
            client.json_keyed("memory/experience", {}, None)  # type: ignore[arg-type]
        assert server.hits == 0


def test_probe_does_not_read_the_body(make_client) -> None:
    with LoopbackServer(lambda request: (200, {}, {"big": "x" * 100000})) as server:
        response = make_client(server.url).probe("v1/admin/health")
    assert response.status == 200
    assert response.data is None


@pytest.mark.parametrize(
    ("status", "error"), [(503, UnavailableError), (401, UnauthorizedError), (404, NotFoundError)]
)
def test_probe_maps_failures_once(make_client, status: int, error: type) -> None:
    with CountingServer(status, body=b"detail") as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        with pytest.raises(error) as caught:
            client.probe("memory/scopes?prefix=tmh%3Aprobe&limit=1")
        assert server.hits == 1
    assert caught.value.message.startswith("[")
    assert "prefix" not in caught.value.message


@pytest.mark.parametrize(
    "route", ["v1/events#frag", "v1/ev ents", "v1/\r\nX: 1", "v1/caf\u00e9", "v1/<x>", 'v1/"q"']
)
def test_invalid_routes_are_refused_before_sending(make_client, route: str) -> None:
    with CountingServer(200, json={}) as server:
        client = make_client(server.url)
        with pytest.raises(EngineError) as caught:
            client.once("GET", route)
        assert server.raw_requests == [] or all(
            r.path == "/v1/auth/whoami" for r in server.requests
        )
    assert caught.value.message.startswith("API path `")
    assert caught.value.message.endswith("` is invalid")


@pytest.mark.parametrize("body", [{"x": float("nan")}, {"x": {1, 2}}, {"x": "\ud800"}])
def test_unserializable_bodies_are_build_failures(make_client, body: object) -> None:
    with CountingServer(200, json={}) as server:
        client = make_client(server.url)
        with pytest.raises(EngineError) as caught:
            client.once("POST", "v1/experience", body)  # type: ignore[arg-type]
        assert server.raw_requests == []
    assert caught.value.message == "request to 127.0.0.1 could not be built"


def test_deadline_bounds_the_retries(make_client) -> None:
    timing = Timing(request_timeout=2, read_backoff=0.4)
    with CountingServer(503) as server:
        client = make_client(server.url, timing=timing)
        started = time.monotonic()
        with pytest.raises(UnavailableError) as caught:
            client.retry_transient("GET", "v1/events", deadline=0.6)
        elapsed = time.monotonic() - started
        # attempt 1, sleep 0.4, attempt 2; the 0.8 s sleep cannot fit, so it fails at once.
        assert server.hits == 2
    assert "deadline exceeded" in caught.value.message
    assert isinstance(caught.value.__cause__, UnavailableError)
    assert elapsed < 2.0


def test_one_deadline_can_span_several_calls(make_client) -> None:
    with CountingServer(200, json={}) as server:
        client = make_client(server.url)
        deadline = Deadline(5)
        for _ in range(3):
            client.once("GET", "v1/events", deadline=deadline)
        assert deadline.remaining() is not None
        assert 0 < (deadline.remaining() or 0) < 5


def test_copies_share_the_pool_and_close_reopens(make_client) -> None:
    with CountingServer(200, json={"n": 1}) as server:
        client = make_client(server.url)
        copy = client.with_timing(Timing(request_timeout=1))
        for _ in range(3):
            client.once("GET", "v1/events")
            copy.once("GET", "v1/events")
        assert server.connections == 1  # one keep-alive connection serves the whole family
        client.close()
        assert copy.once("GET", "v1/events").data == {"n": 1}
        assert server.connections == 2


def test_many_threads_share_one_client(make_client) -> None:
    errors: List[BaseException] = []
    with LoopbackServer(lambda request: (200, {}, json.loads(request.body or b"{}"))) as server:
        # Sharing is the point, not speed: 16 threads on a loaded machine may wait
        # longer than the fixture's half-second budget for their turn.
        client = make_client(server.url, timing=Timing(request_timeout=30))

        def work(n: int) -> None:
            try:
                for i in range(10):
                    assert client.once("POST", "v1/x", {"n": n, "i": i}).data == {"n": n, "i": i}
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.connections <= 16
    assert not errors

"""The X-Cortex-Actor cache: three states, resets, single flight, sharing (engine.md §5.9)."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

from cortex_memory.cortex import CortexWire, Timing
from cortex_memory.cortex.transport import ActorCache, ActorState
from cortex_memory.cortex.transport.actor import actor_from_whoami
from cortex_memory.errors import UnauthorizedError, UnavailableError
from cortex_memory.testing.hostile import HostileServer, LoopbackServer, RawRequest

WHOAMI = "/v1/auth/whoami"


class Backend:
    """A handler whose whoami answer and route status can be changed mid-test."""

    def __init__(self, whoami: Any = (200, {"caller": "user:alice"})) -> None:
        self.whoami = whoami
        self.status = 200
        self.whoami_delay = 0.0
        self.lock = threading.Lock()

    def __call__(self, request: RawRequest):  # type: ignore[no-untyped-def]
        if request.path == WHOAMI:
            if self.whoami_delay:
                time.sleep(self.whoami_delay)
            status, body = self.whoami
            return status, {}, body
        return self.status, {}, {"ok": True}


def whoamis(server: LoopbackServer) -> int:
    return sum(1 for r in server.requests if r.path == WHOAMI)


def actors(server: LoopbackServer) -> List[Optional[str]]:
    return [r.header("x-cortex-actor") for r in server.requests if r.path != WHOAMI]


# -- the whoami answer ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (200, b'{"caller":"user:local"}', (ActorState.KNOWN, "user:local")),
        (200, b'{"caller":"  user:alice \\t"}', (ActorState.KNOWN, "user:alice")),
        (201, b'{"caller":"svc:x","extra":1}', (ActorState.KNOWN, "svc:x")),
        (200, b'{"caller":""}', (ActorState.ABSENT, None)),
        (200, b'{"caller":"   "}', (ActorState.ABSENT, None)),
        (200, b'{"caller":42}', (ActorState.ABSENT, None)),
        (200, b'{"caller":"user:x\\r\\nX-Injected: 1"}', (ActorState.ABSENT, None)),
        (200, b'{"caller":"user:x\\nX-Injected: 1"}', (ActorState.ABSENT, None)),
        (200, b'{"caller":"user:\\u0000x"}', (ActorState.ABSENT, None)),
        (200, b'{"caller":"caf\\u00e9"}', (ActorState.ABSENT, None)),
        (200, b'{"who":"x"}', (ActorState.ABSENT, None)),
        (200, b"[]", (ActorState.ABSENT, None)),
        (200, b"not json", (ActorState.ABSENT, None)),
        (200, b"", (ActorState.ABSENT, None)),
        (404, b"", (ActorState.ABSENT, None)),
        (405, b"", (ActorState.ABSENT, None)),
        (401, b"", (ActorState.UNKNOWN, None)),
        (500, b'{"caller":"x"}', (ActorState.UNKNOWN, None)),
        (302, b"", (ActorState.UNKNOWN, None)),
    ],
)
def test_actor_from_whoami(status: int, body: bytes, outcome: object) -> None:
    assert actor_from_whoami(status, body) == outcome


# -- the three states over the wire --------------------------------------------------------------


def test_known_actor_is_sent_on_every_request(make_client) -> None:
    with LoopbackServer(Backend((200, {"caller": " user:alice "}))) as server:
        client = make_client(server.url)
        for _ in range(3):
            client.once("GET", "v1/events")
        assert whoamis(server) == 1
        assert actors(server) == ["user:alice"] * 3
        whoami_request = server.requests[0]
        assert whoami_request.path == WHOAMI
        assert whoami_request.header("x-cortex-actor") is None
    assert client.actor_state is ActorState.KNOWN


@pytest.mark.parametrize("status", [404, 405])
def test_absent_actor_is_never_asked_again(make_client, status: int) -> None:
    with LoopbackServer(Backend((status, b""))) as server:
        client = make_client(server.url)
        for _ in range(3):
            client.once("GET", "v1/events")
        assert whoamis(server) == 1
        assert actors(server) == [None] * 3
    assert client.actor_state is ActorState.ABSENT


def test_failed_lookup_is_not_cached(make_client) -> None:
    backend = Backend((503, b"busy"))
    with LoopbackServer(backend) as server:
        client = make_client(server.url)
        client.once("GET", "v1/events")
        client.once("GET", "v1/events")
        assert whoamis(server) == 2  # asked again each time
        assert actors(server) == [None, None]  # sent without the header
        assert client.actor_state is ActorState.UNKNOWN
        backend.whoami = (200, {"caller": "user:bob"})
        client.once("GET", "v1/events")
        assert actors(server)[-1] == "user:bob"


def test_a_lookup_that_times_out_is_not_cached(make_client) -> None:
    backend = Backend()
    backend.whoami_delay = 0.5
    with LoopbackServer(backend) as server:
        client = make_client(server.url, timing=Timing(request_timeout=0.25))
        assert client.once("GET", "v1/events").data == {"ok": True}
        assert actors(server) == [None]
        assert client.actor_state is ActorState.UNKNOWN


@pytest.mark.parametrize("status", [401, 403])
def test_rejection_anywhere_resets_the_cache(make_client, status: int) -> None:
    backend = Backend((200, {"caller": "user:old"}))
    with LoopbackServer(backend) as server:
        client = make_client(server.url)
        client.once("GET", "v1/events")
        backend.status = status
        with pytest.raises(UnauthorizedError):
            client.once("GET", "v1/events")
        assert client.actor_state is ActorState.UNKNOWN
        backend.status = 200
        backend.whoami = (200, {"caller": "user:new"})
        client.once("GET", "v1/events")
        assert whoamis(server) == 2
        assert actors(server) == ["user:old", "user:old", "user:new"]


def test_rejection_also_resets_an_absent_actor(make_client) -> None:
    backend = Backend((404, b""))
    with LoopbackServer(backend) as server:
        client = make_client(server.url)
        client.once("GET", "v1/events")
        backend.status = 401
        with pytest.raises(UnauthorizedError):
            client.once("GET", "v1/events")
        backend.status = 200
        client.once("GET", "v1/events")
        assert whoamis(server) == 2


def test_copies_share_one_lookup(make_client) -> None:
    with LoopbackServer(Backend()) as server:
        client = make_client(server.url)
        clones = [
            copy.copy(client),
            copy.deepcopy(client),
            client.with_timing(Timing(request_timeout=2)),
            client.with_default_headers({"x-sdk-name": "t"}),
        ]
        client.once("GET", "v1/events")
        for clone in clones:
            clone.once("GET", "v1/events")
        assert whoamis(server) == 1
        assert actors(server) == ["user:alice"] * 5


def test_32_threads_make_exactly_one_lookup(make_client) -> None:
    backend = Backend()
    backend.whoami_delay = 0.2  # every thread arrives while the lookup is in flight
    errors: List[BaseException] = []
    with LoopbackServer(backend) as server:
        client = make_client(server.url, timing=Timing(request_timeout=5))
        barrier = threading.Barrier(32)

        def work() -> None:
            try:
                barrier.wait()
                for _ in range(3):
                    client.once("GET", "v1/events")
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert whoamis(server) == 1
        assert actors(server) == ["user:alice"] * 96


def test_waiters_use_a_failed_outcome_instead_of_asking_again(make_client) -> None:
    backend = Backend((503, b"busy"))
    backend.whoami_delay = 0.3
    with LoopbackServer(backend) as server:
        client = make_client(server.url, timing=Timing(request_timeout=5))
        barrier = threading.Barrier(8)

        def work() -> None:
            barrier.wait()
            client.once("GET", "v1/events")

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert whoamis(server) == 1
        assert actors(server) == [None] * 8


def test_hosted_never_asks_and_never_sends(make_client) -> None:
    ok = {"success": True, "data": {}}
    with LoopbackServer(lambda request: (200, {}, ok)) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        client.once("GET", "memory/events")
        client.once("POST", "memory/experience", {})
        assert whoamis(server) == 0
        assert all(r.header("x-cortex-actor") is None for r in server.requests)


def test_injected_caller_is_never_sent(make_client) -> None:
    for caller in ("user:x\r\nX-Injected: 1", "user:x\nX-Injected: 1", "user:\x00x"):
        with HostileServer("header_injection", variant="caller", caller=caller) as server:
            client = make_client(server.url)
            client.once("GET", "v1/events")
            client.once("POST", "v1/experience", {})
            assert not any(b"X-Injected" in raw for raw in server.raw_requests)
            assert all(r.header("x-cortex-actor") is None for r in server.requests)
        assert client.actor_state is ActorState.ABSENT


def test_whoami_failure_does_not_hide_the_request_failure(make_client) -> None:
    with LoopbackServer(lambda request: (503, {}, b"down")) as server:
        client = make_client(server.url)
        with pytest.raises(UnavailableError) as caught:
            client.once("GET", "v1/events")
        assert caught.value.message.startswith("memory API v1/events on")
        assert whoamis(server) == 1


# -- the cache alone ---------------------------------------------------------------------------


def test_a_reset_during_a_lookup_discards_its_answer() -> None:
    cache = ActorCache()

    def lookup() -> Any:
        cache.reset()  # a 401 elsewhere while whoami is in flight
        return (ActorState.KNOWN, "user:stale")

    assert cache.header(lookup) == "user:stale"  # this request still uses what it learned
    assert cache.state is ActorState.UNKNOWN
    calls: Dict[str, int] = {"n": 0}

    def fresh() -> Any:
        calls["n"] += 1
        return (ActorState.KNOWN, "user:fresh")

    assert cache.header(fresh) == "user:fresh"
    assert cache.header(fresh) == "user:fresh"
    assert calls["n"] == 1

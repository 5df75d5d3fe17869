"""CortexEngine against hostile servers (quality.md "Hostile server", doubles.md §9).

tests/transport/ proves each behaviour against the bare ``HttpClient``; this file
proves the same through the public engine, on both wires where the behaviour means
something: every public call ends in the documented error within its time bound,
a body never costs more memory than the cap, a connection left with unread bytes
is never used again, and the bearer never follows a redirect.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from typing import Any, Callable, Dict, Iterator, List, Tuple, Type

import pytest

from cortex_memory import (
    Document,
    EngineError,
    Error,
    InvalidRequestError,
    ItemKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Reach,
    RecallRequest,
    Role,
    TextBody,
    Turn,
    UnauthorizedError,
    UnavailableError,
    WaitFor,
)
from cortex_memory.contract import Conversation
from cortex_memory.cortex import CortexEngine, EngineCredential, StaticBearer, Timing
from cortex_memory.cortex.transport import SUCCESS_CAP
from cortex_memory.testing import (
    CountingServer,
    DirectDouble,
    HostileServer,
    LoopbackServer,
    fault,
)
from cortex_memory.testing.hostile import RawRequest

from ._support import CANARY_TOKEN, engine_on, seed

REQUEST_TIMEOUT = 0.25
TIMING = Timing(
    request_timeout=REQUEST_TIMEOUT,
    connect_timeout=REQUEST_TIMEOUT,
    read_backoff=0.005,
    poll_interval=0.005,
    visibility=0.5,
    settle=0.2,
    recovery=0.5,
    max_pause=0.05,
)
WIRES = ("direct", "hosted")
DOCS = MetaFilter(kinds=(ItemKind.DOCUMENT,), reach=Reach.default())
ONE_TURN = Conversation((Turn(Role.USER, "hostile turn"),), MemoryMeta(thread_id="t-h"))


@pytest.fixture
def make_engine() -> Iterator[Callable[..., CortexEngine]]:
    """``make_engine(url, wire, timing=TIMING)``: an engine with the canary token."""
    made: List[CortexEngine] = []

    def make(url: str, wire: str, timing: Timing = TIMING) -> CortexEngine:
        if wire == "direct":
            engine = CortexEngine.direct(url, EngineCredential.static(CANARY_TOKEN), timing=timing)
        else:
            engine = CortexEngine.tinyhumans(url, StaticBearer(CANARY_TOKEN), timing=timing)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.close()


def read(engine: CortexEngine) -> Any:
    """A read touching one route: the root document listing (no scope discovery)."""
    return engine.list(ListRequest(DOCS, 5), deadline=10.0)


def write(engine: CortexEngine) -> Any:
    """A write sent once: a one-turn conversation, accepted (Direct: no lookup first)."""
    return engine.store(ONE_TURN, wait=WaitFor.ACCEPTED, deadline=10.0)


def outcome(call: Callable[[], Any]) -> Tuple[Any, float]:
    """The call's ``Error`` (or result) and how long it took; any other exception fails."""
    started = time.monotonic()
    try:
        result: Any = call()
    except Error as err:
        result = err
    return result, time.monotonic() - started


# Each exchange ends within the request timeout; a read makes up to 3 attempts, and a
# Direct attempt may first ask whoami (which meets the same behaviour). Generous margin.
READ_BOUND = 3 * 2 * REQUEST_TIMEOUT + 2.0
WRITE_BOUND = 2 * REQUEST_TIMEOUT + 2.0

CUT = b'{"items":'
SLOW_CASES = [
    ("slow_headers", {"interval": 1.0}, UnavailableError),
    ("slow_body", {"rate": 20, "size": 2000}, UnavailableError),
    ("chunk_cut", {"declared": 100, "sent": 10}, UnavailableError),
    ("length_overstated", {"declared": 100, "body": CUT, "then": "close"}, UnavailableError),
    ("length_overstated", {"declared": 100, "body": CUT, "then": "hold"}, UnavailableError),
    ("invalid_json", {}, EngineError),
    ("invalid_json", {"body": b'{"items": [1, 2'}, EngineError),
]


def _alternate(cases: List[Any]) -> List[Any]:
    """Each case on both wires: one wire in every run, the other only in the slow sweep."""
    out = []
    for n, case in enumerate(cases):
        for w, wire in enumerate(WIRES):
            marks = [pytest.mark.slow] if (n + w) % 2 else []
            out.append(pytest.param(wire, *case, marks=marks, id=f"{wire}-{case[0]}-{n}"))
    return out


@pytest.mark.parametrize(("wire", "behaviour", "params", "error"), _alternate(SLOW_CASES))
def test_misbehaving_answers_end_in_the_documented_error_in_time(
    make_engine, wire: str, behaviour: str, params: dict, error: Type[Error]
) -> None:
    with HostileServer(behaviour, **params) as server:
        engine = make_engine(server.url, wire)
        for call, bound in ((read, READ_BOUND), (write, WRITE_BOUND)):
            result, seconds = outcome(lambda call=call: call(engine))
            assert isinstance(result, error), (call.__name__, result)
            assert seconds < bound, (call.__name__, seconds)
            assert CANARY_TOKEN not in str(result) + repr(result)


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    ("behaviour", "params"),
    [
        ("endless_chunked", {"chunk": 65536}),
        ("length_omitted", {}),
        ("gzip_body", {"size": SUCCESS_CAP + 1}),
    ],
    ids=["endless_chunked", "endless_without_length", "gzip_bomb"],
)
def test_bodies_stop_at_the_cap_and_memory_stays_bounded(
    make_engine, wire: str, behaviour: str, params: dict
) -> None:
    # A request timeout long enough that the cap, not the clock, ends the read.
    roomy = Timing(request_timeout=30.0, connect_timeout=2.0, read_backoff=0.005)
    with HostileServer(behaviour, spare_whoami=True, **params) as server:
        engine = make_engine(server.url, wire, roomy)
        tracemalloc.start()
        try:
            result, seconds = outcome(lambda: read(engine))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert isinstance(result, EngineError), result
    assert f"exceeds the limit of {SUCCESS_CAP} bytes" in result.message
    # The cap counts decoded bytes as they are kept; nothing past it is ever held.
    # The body is gathered in a buffer reserved at the cap outside the Python heap
    # (a memory map, fixed in size: tests/transport/test_body_memory.py measures
    # its resident pages), so the heap holds only pieces in flight.
    assert peak < 8 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"
    assert seconds < 35.0


@pytest.mark.parametrize("wire", WIRES)
def test_endless_error_body_is_read_lossily_then_mapped(make_engine, wire: str) -> None:
    with HostileServer("endless_chunked", status=400, fill=b"busy ") as server:
        engine = make_engine(server.url, wire)
        for call in (read, write):
            result, seconds = outcome(lambda call=call: call(engine))
            assert isinstance(result, InvalidRequestError), result
            assert seconds < 30.0
            excerpt = result.message.partition(" — ")[2]
            assert 0 < len(excerpt) <= 300


def test_a_small_gzip_body_is_decoded_and_used(make_engine) -> None:
    body = json.dumps({"items": [], "has_more": False}).encode()
    with HostileServer("gzip_body", body=body) as server:
        page = read(make_engine(server.url, "direct"))
    assert page.items == ()


@pytest.mark.parametrize(
    "caller", ["user:x\r\nX-Injected: 1", "user:x\x00X-Injected: 1", "user:x\nX-Injected: 1"]
)
def test_an_injected_whoami_caller_is_never_sent(make_engine, caller: str) -> None:
    with HostileServer("header_injection", caller=caller) as server:
        engine = make_engine(server.url, "direct")
        assert read(engine).items == ()
        receipt, _ = outcome(lambda: write(engine))  # `{}` is no receipt: EngineError
        assert isinstance(receipt, EngineError)
        raw = server.raw_requests
    assert len(raw) >= 3  # whoami, the listing, the write
    for request in raw:
        assert b"X-Injected" not in request
        assert b"x-cortex-actor" not in request.lower()


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("form", ["bare_lf", "obs_fold", "nul", "long_line", "many_headers"])
def test_malformed_response_headers_never_hang(make_engine, wire: str, form: str) -> None:
    with HostileServer("header_injection", variant="response", form=form) as server:
        engine = make_engine(server.url, wire)
        for call, bound in ((read, READ_BOUND), (write, WRITE_BOUND)):
            result, seconds = outcome(lambda call=call: call(engine))
            assert seconds < bound
            if isinstance(result, Error):
                assert isinstance(result, (UnavailableError, EngineError)), result


@pytest.mark.parametrize("wire", WIRES)
def test_redirects_are_not_followed_and_the_bearer_stays_home(make_engine, wire: str) -> None:
    with CountingServer(200, json={"items": []}) as elsewhere:
        target = elsewhere.url + "/v1/events"
        with HostileServer("redirect_elsewhere", location=target) as server:
            engine = make_engine(server.url, wire)
            for call in (read, write):
                result, _ = outcome(lambda call=call: call(engine))
                assert isinstance(result, EngineError), result
                assert "307" in result.message
        assert elsewhere.hits == 0
        assert elsewhere.raw_requests == []


# -- connections left in a bad state are never reused ----------------------------------------


def _smuggling_server(wire: str) -> Tuple[HostileServer, str]:
    """A server whose every answer is complete but followed by a smuggled second answer.

    The smuggled answer lists a document; if a request ever read it (by reusing the
    connection), that document would appear in a listing.
    """
    with DirectDouble() as donor:
        (doc_id,) = seed(donor, [Document(TextBody("smuggled note"), "S", None, MemoryMeta())])
        with donor.state.lock:
            event = dict(donor.state.log.events[0])
    page = {"items": [event, event], "has_more": False}
    empty: Any = {"items": [], "has_more": False}
    if wire == "hosted":
        page, empty = {"success": True, "data": page}, {"success": True, "data": empty}
    honest = json.dumps(empty).encode()
    smuggled = json.dumps(page).encode()
    surplus = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(smuggled)}\r\n\r\n".encode()
        + smuggled
    )
    server = HostileServer("length_understated", declared=len(honest), body=honest + surplus)
    return server, doc_id


@pytest.mark.parametrize("wire", WIRES)
def test_surplus_bytes_never_surface_as_a_later_answer(make_engine, wire: str) -> None:
    server, doc_id = _smuggling_server(wire)
    with server:
        engine = make_engine(server.url, wire)
        for _ in range(4):
            page = engine.list(ListRequest(MetaFilter(kinds=(ItemKind.DOCUMENT,)), 5))
            assert doc_id not in [hit.id for hit in page.items]
            assert page.items == ()
        # Every request was answered by the server itself, none by leftover bytes.
        assert server.hits >= 4


@pytest.mark.parametrize(
    ("knob", "value"),
    [
        ("oversize_body_bytes", SUCCESS_CAP + 1),  # refused from its length: bytes left unread
        ("slow_body_bytes_per_second", 40),  # timed out mid-body
        ("drop_connection_after_bytes", 5),  # cut off mid-body
    ],
)
def test_a_connection_abandoned_mid_answer_is_replaced(knob: str, value: Any) -> None:
    with DirectDouble() as double:
        seed(double)
        engine = engine_on(double)
        engine.list(ListRequest(DOCS, 5))  # warm: one pooled connection
        warm = double.state.counters["connections"]
        engine.list(ListRequest(DOCS, 5))
        assert double.state.counters["connections"] == warm  # a clean answer is reused
        double.state.set_knobs(**{knob: fault(value, times=1, route="GET /v1/events")})
        try:  # a transient fault is retried (on a new connection); an oversize one is not
            page = engine.list(ListRequest(DOCS, 5))
            assert len(page.items) == 1
        except EngineError:
            assert knob == "oversize_body_bytes"
        assert double.state.counters["connections"] <= warm + 1
        engine.list(ListRequest(DOCS, 5))
        assert double.state.counters["connections"] == warm + 1


# -- JSON nested deeper than the parser's recursion ------------------------------------------

NESTED = b"[" * 100_000 + b"]" * 100_000  # 200 KB, far under the cap, far over the recursion


@pytest.mark.parametrize("wire", WIRES)
def test_deeply_nested_success_body_is_an_engine_error(make_engine, wire: str) -> None:
    with HostileServer("invalid_json", body=NESTED, spare_whoami=True) as server:
        engine = make_engine(server.url, wire)
        for call in (read, write):
            result, _ = outcome(lambda call=call: call(engine))
            assert isinstance(result, EngineError), result
            assert "invalid JSON" in result.message


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("status", [400, 401, 500])
def test_deeply_nested_error_body_keeps_the_status_mapping(
    make_engine, wire: str, status: int
) -> None:
    expected = {400: InvalidRequestError, 401: UnauthorizedError, 500: UnavailableError}[status]
    with HostileServer("invalid_json", status=status, body=NESTED[:60_000]) as server:
        engine = make_engine(server.url, wire)
        for call in (read, write):
            result, _ = outcome(lambda call=call: call(engine))
            assert isinstance(result, expected), result
            assert len(result.message.partition(" — ")[2]) <= 300


def test_deeply_nested_whoami_answer_means_no_actor(make_engine) -> None:
    def answer(request: RawRequest) -> Tuple[int, Dict[str, str], Any]:
        if request.path == "/v1/auth/whoami":
            return 200, {}, NESTED
        return 200, {}, {"items": [], "has_more": False}

    with LoopbackServer(answer) as server:
        engine = make_engine(server.url, "direct")
        assert read(engine).items == ()
        assert read(engine).items == ()
        asked = [r for r in server.requests if r.path == "/v1/auth/whoami"]
        assert len(asked) == 1  # an unusable answer: absent, never asked again
        assert all(r.header("x-cortex-actor") is None for r in server.requests)


# -- malformed envelopes ----------------------------------------------------------------------

MALFORMED = [
    ("hosted", {"items": [], "has_more": False}),  # a Direct body where the envelope belongs
    ("hosted", {"success": True}),  # no data
    ("hosted", {"success": "true", "data": {"items": []}}),  # success is not a boolean
    ("hosted", [{"success": True, "data": {}}]),  # not an object
    ("hosted", None),
    ("direct", {"event_id": 7}),  # a receipt whose id is not text
    ("direct", {"items": [], "results": "all good", "pack_id": None, "answer": 5}),
]


@pytest.mark.parametrize(("wire", "body"), MALFORMED)
def test_malformed_envelopes_are_engine_errors(make_engine, wire: str, body: Any) -> None:
    def answer(request: RawRequest) -> Tuple[int, Dict[str, str], Any]:
        if request.path == "/v1/auth/whoami":
            return 404, {}, b""
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    with LoopbackServer(answer) as server:
        engine = make_engine(server.url, wire)
        calls: List[Callable[[], Any]] = [
            lambda: write(engine),
            lambda: engine.recall(RecallRequest("which tea", 3, DOCS), deadline=10.0),
        ]
        if wire == "hosted":
            calls.append(lambda: read(engine))
        for call in calls:
            result, _ = outcome(call)
            assert isinstance(result, EngineError), result

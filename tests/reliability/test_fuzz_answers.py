"""Every engine operation against arbitrary server answers (quality.md "Fuzzing", "Hostile server").

A loopback server answers each route with a status and a body drawn by
hypothesis: real events, scopes and beliefs (as the doubles write them),
the same with one member replaced by arbitrary JSON, near-miss shapes
(``items`` that is not a list, a ``pack_id`` that is a number, bulk
``results`` of the wrong length) and plain junk, with or without the hosted
envelope. Whatever the answers, each public operation on both wires returns a
value or raises a ``cortex_memory.Error`` within its deadline: never a
``TypeError``, ``KeyError``, ``AttributeError`` or ``RecursionError``.
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory import Error
from cortex_memory.cortex import CortexEngine, EngineCredential, StaticBearer, Timing
from cortex_memory.testing import DirectDouble, LoopbackServer
from cortex_memory.testing.hostile import RawRequest

from ._ops import OPS, SEED, prepare
from ._support import CANARY_TOKEN, new_items, seed

TIMING = Timing(
    request_timeout=2.0,
    connect_timeout=2.0,
    read_backoff=0.001,
    poll_interval=0.005,
    hosted_poll_ceiling=0.01,
    visibility=0.1,
    settle=0.05,
    recovery=0.1,
    max_pause=0.01,
)
DEADLINE = 10.0
CHECKS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]


def _real() -> Tuple[List[Any], List[str], List[Any]]:
    """Events, scope paths and beliefs exactly as the doubles hold them."""
    with DirectDouble() as double:
        prepare(double)
        seed(double, new_items())
        state = double.state
        with state.lock:
            for scope in state.log.scopes_holding_events():
                state.log.build_beliefs(scope, state.clock())
            return (
                [dict(e) for e in state.log.events],
                state.log.scopes_holding_events(),
                [dict(b) for b in state.log.beliefs],
            )


EVENTS, SCOPES, BELIEFS = _real()

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
TEXT = st.text(max_size=12)


@st.composite
def mutated(draw: st.DrawFn, originals: List[Any]) -> Any:
    """A real record with one member (or one nested member) replaced by arbitrary JSON."""
    record = json.loads(json.dumps(draw(st.sampled_from(originals))))
    holder = record
    while True:
        key = draw(st.sampled_from(sorted(holder)))
        inner = holder[key]
        if isinstance(inner, dict) and inner and draw(st.booleans()):
            holder = inner
            continue
        holder[key] = draw(JSON)
        return record


def records(originals: List[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(originals), mutated(originals), JSON)


EVENT = records(EVENTS)
BELIEF = records(BELIEFS)
LISTING = st.one_of(
    st.fixed_dictionaries(
        {"items": st.lists(EVENT, max_size=4)},
        optional={
            "has_more": st.booleans() | JSON,
            "next_cursor": st.none() | TEXT | st.integers(),
        },
    ),
    st.fixed_dictionaries({"items": JSON}),
    JSON,
)
SCOPES_LIST = st.one_of(
    st.fixed_dictionaries(
        {
            "items": st.lists(
                st.one_of(
                    st.sampled_from(SCOPES),
                    st.builds(lambda p: {"path": p}, st.sampled_from(SCOPES) | JSON),
                    JSON,
                ),
                max_size=5,
            )
        }
    ),
    st.fixed_dictionaries({"scopes": st.lists(st.sampled_from(SCOPES) | JSON, max_size=5)}),
    JSON,
)
RECALL = st.one_of(
    st.fixed_dictionaries(
        {"pack_id": TEXT | JSON},
        optional={
            "layers": st.fixed_dictionaries(
                {},
                optional={
                    "events": st.lists(EVENT, max_size=4),
                    "beliefs": st.lists(BELIEF, max_size=3),
                },
            )
            | JSON,
            "context_block": JSON,
            "warnings": st.lists(TEXT | JSON, max_size=3),
            "diagnostics": JSON,
            "provenance": JSON,
        },
    ),
    JSON,
)
ANSWER = (
    st.fixed_dictionaries(
        {},
        optional={
            "answer": TEXT | JSON,
            "diagnostics": st.fixed_dictionaries({"answer_model": JSON}) | JSON,
        },
    )
    | JSON
)
RESULT = st.fixed_dictionaries(
    {}, optional={"index": JSON, "event_id": TEXT | JSON, "replayed_from_idempotency": JSON}
)
WRITE = (
    st.fixed_dictionaries(
        {},
        optional={
            "event_id": TEXT | JSON,
            "replayed_from_idempotency": JSON,
            "status": JSON,
            "results": st.lists(RESULT, max_size=6) | JSON,
        },
    )
    | JSON
)
BELIEFS_LIST = st.fixed_dictionaries({"items": st.lists(BELIEF, max_size=4) | JSON}) | JSON
BUILD = (
    st.fixed_dictionaries(
        {}, optional={"built": JSON, "job_id": JSON, "build_id": JSON, "id": JSON}
    )
    | JSON
)
WHOAMI = st.fixed_dictionaries({"caller": TEXT | JSON}) | JSON

ROUTES = {
    "/v1/auth/whoami": WHOAMI,
    "/v1/events": LISTING,
    "/memory/events": LISTING,
    "/v1/scopes/list": SCOPES_LIST,
    "/memory/scopes": SCOPES_LIST,
    "/v1/experience": WRITE,
    "/v1/experience/bulk": WRITE,
    "/memory/experience": WRITE,
    "/v1/recall": RECALL,
    "/memory/recall": RECALL,
    "/v1/answer": ANSWER,
    "/memory/answer": ANSWER,
    "/v1/forget": JSON,
    "/memory/forget": JSON,
    "/v1/beliefs": BELIEFS_LIST,
    "/v1/beliefs/build": BUILD,
    "/v1/admin/health": JSON,
}
STATUS = st.sampled_from([200] * 10 + [202, 204, 302, 400, 401, 402, 404, 409, 429, 500, 503])


@st.composite
def answers(draw: st.DrawFn, hosted: bool) -> Dict[str, Tuple[int, bytes]]:
    """A status and a body for every route."""
    out = {}
    for path, strategy in ROUTES.items():
        status = draw(STATUS)
        body: Any = draw(strategy)
        if hosted and 200 <= status < 300:
            body = draw(
                st.sampled_from(["wrapped"] * 6 + ["failure", "bare"]).map(
                    lambda how, body=body: (
                        {"success": True, "data": body}
                        if how == "wrapped"
                        else {"success": False, "errorCode": "X_Y", "error": body}
                        if how == "failure"
                        else body
                    )
                )
            )
        out[path] = (status, b"" if status == 204 else json.dumps(body).encode())
    return out


class Answering:
    """A loopback server whose answers the current example sets."""

    def __init__(self) -> None:
        self.current: Dict[str, Tuple[int, bytes]] = {}
        self.server = LoopbackServer(self.answer)

    def answer(self, request: RawRequest) -> Tuple[int, Dict[str, str], bytes]:
        status, body = self.current.get(request.path, (404, b""))
        return status, {"Content-Type": "application/json"}, body


@pytest.fixture(scope="module")
def answering() -> Iterator[Answering]:
    server = Answering()
    with server.server:
        yield server


def run(answering: Answering, hosted: bool, op: Any, current: Dict[str, Tuple[int, bytes]]) -> None:
    answering.current = current
    url = answering.server.url
    if hosted:
        engine = CortexEngine.tinyhumans(url, StaticBearer(CANARY_TOKEN), timing=TIMING)
    else:
        engine = CortexEngine.direct(url, EngineCredential.static(CANARY_TOKEN), timing=TIMING)
    started = time.monotonic()
    try:
        op.call(engine, DEADLINE)
    except Error:
        pass
    finally:
        engine.close()
    assert time.monotonic() - started < DEADLINE + 2.0


def _property(hosted: bool) -> Any:
    def check(answering: Answering, op: Any, current: Dict[str, Tuple[int, bytes]]) -> None:
        run(answering, hosted, op, current)

    return given(op=st.sampled_from(OPS), current=answers(hosted))(check)


@pytest.mark.parametrize("hosted", [False, True], ids=["direct", "hosted"])
def test_any_answers_give_a_value_or_an_error(answering: Answering, hosted: bool) -> None:
    settings(max_examples=60, deadline=None, suppress_health_check=CHECKS)(_property(hosted))(
        answering
    )


@pytest.mark.slow
@pytest.mark.parametrize("hosted", [False, True], ids=["direct", "hosted"])
def test_any_answers_give_a_value_or_an_error_heavy(answering: Answering, hosted: bool) -> None:
    settings(max_examples=1500, deadline=None, suppress_health_check=CHECKS)(_property(hosted))(
        answering
    )


def test_the_answers_reach_the_engine(answering: Answering) -> None:
    # The harness itself: a well-formed answer set gives real results.
    page = {"items": [e for e in EVENTS for _ in (0, 1)], "has_more": False}
    current = dict.fromkeys(ROUTES, (200, b"{}"))
    current["/v1/events"] = (200, json.dumps(page).encode())
    current["/v1/auth/whoami"] = (404, b"")
    answering.current = current
    engine = CortexEngine.direct(
        answering.server.url, EngineCredential.static(CANARY_TOKEN), timing=TIMING
    )
    listing = next(op for op in OPS if op.name == "get")
    found = op_ids = listing.normal(listing.call(engine, DEADLINE))
    engine.close()
    assert set(found) == {item.fingerprint() for item in SEED}
    assert op_ids

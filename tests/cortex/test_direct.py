"""The Direct wire: actor lookups, failure mapping, the rate-limit pause, health."""

from __future__ import annotations

import copy
import threading
import time

import pytest

from cortex_memory.contract import (
    HealthState,
    ItemKind,
    ListRequest,
    MetaFilter,
    Namespace,
    Reach,
    WaitFor,
)
from cortex_memory.cortex import CortexEngine, EngineCredential, Timing
from cortex_memory.errors import (
    ConflictError,
    EngineError,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    error_code,
)
from cortex_memory.testing import TEST_TOKEN, sample_items, unused_url

# An exact reach needs no scope discovery: each call is one listing.
LEARNINGS = ListRequest(
    MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.LEARNING,)), 5
)


def test_actor_is_asked_once_across_clones_and_again_after_a_401(make_double) -> None:
    double = make_double("direct", whoami_caller="user:local")
    engine = double.engine()
    clones = [copy.copy(engine), engine.with_default_headers({"x-sdk-name": "t"})]
    engine.store(sample_items()[2])
    for clone in clones:
        clone.list(LEARNINGS)
    assert double.state.counters["whoami_calls"] == 1
    assert set(double.state.seen.actors) == {"user:local"}
    double.state.accept_token = "someone-else"
    with pytest.raises(UnauthorizedError, match="API key"):
        clones[0].list(LEARNINGS)
    double.state.accept_token = None
    engine.list(LEARNINGS)
    assert double.state.counters["whoami_calls"] == 2


def test_pre_actor_server_is_never_asked_again(direct) -> None:
    engine = direct.engine()
    engine.store(sample_items()[2])
    engine.list(LEARNINGS)
    copy.copy(engine).list(LEARNINGS)
    assert direct.state.counters["whoami_calls"] == 1
    assert set(direct.state.seen.actors) == {None}


def test_direct_never_sends_an_idempotency_header(direct) -> None:
    engine = direct.engine()
    engine.store_many(sample_items())
    assert all("idempotency-key" not in headers for headers in direct.state.seen.headers)
    assert all(header is None for _, header in direct.state.seen.idempotency)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, UnauthorizedError),
        (403, UnauthorizedError),
        (404, NotFoundError),
        (422, InvalidRequestError),
        (409, ConflictError),
        (402, EngineError),
    ],
)
def test_direct_statuses_map_onto_the_contract(make_double, status: int, error: type) -> None:
    double = make_double("direct", fail_all=(status, "X"))
    engine = double.engine()
    with pytest.raises(error) as info:
        engine.list(LEARNINGS)
    assert info.value.status == status
    assert info.value.code == "X"
    assert error_code(info.value) is None
    assert len(double.state.requests()) == 1


def test_rate_limit_pause_is_shared_by_clones(make_double) -> None:
    double = make_double("direct", retry_after_seconds=1)
    engine = double.engine()
    clone = copy.copy(engine)
    double.state.rate_limit_events = 1
    done = threading.Event()
    errors = []

    def read() -> None:
        try:
            engine.list(LEARNINGS)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        done.set()

    started = time.monotonic()
    worker = threading.Thread(target=read)
    worker.start()
    # The double counts the 429 before the client has read it, so wait for the
    # pause itself (seen through the clone), bounded; it lasts about a second.
    give_up = time.monotonic() + 5
    while clone.context.client.paused_for == 0 and not done.is_set() and time.monotonic() < give_up:
        time.sleep(0.005)
    assert double.state.counters["rate_limited"] == 1
    assert clone.context.client.paused_for > 0
    worker.join(10)
    assert not errors
    assert time.monotonic() - started >= 0.9
    assert double.state.count("GET /v1/events") == 2


def test_health_states(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    assert engine.health().state is HealthState.OK
    double.state.fail_all = (503, "UNAVAILABLE", "backend detail that must not show")
    health = engine.health()
    assert health.state is HealthState.DEGRADED
    assert "backend detail" not in (health.reason or "")
    # The probe never reads the body, so no backend text can reach the reason.
    assert (health.reason or "").startswith("unavailable: ")
    double.state.fail_all = (401, "UNAUTHORIZED", "secret detail")
    health = engine.health()
    assert health.state is HealthState.DOWN
    assert "secret detail" not in (health.reason or "")
    assert TEST_TOKEN not in (health.reason or "")
    # One probe each, never retried.
    assert len(double.state.requests()) == 3


def test_direct_health_proves_the_key_with_whoami(make_double) -> None:
    double = make_double("direct", whoami_caller="user:local", accept_token=TEST_TOKEN)
    engine = double.engine()
    assert engine.health().state is HealthState.OK
    # One request, not recorded by the gate: whoami. It also taught the actor.
    assert double.state.counters["whoami_calls"] == 1
    assert double.state.requests() == []
    engine.list(LEARNINGS)
    assert double.state.counters["whoami_calls"] == 1  # no lookup of its own
    assert double.state.seen.actors == ["user:local"]
    assert engine.health().state is HealthState.OK
    assert double.state.counters["whoami_calls"] == 2  # every health call proves the key


def test_direct_health_without_whoami_probes_a_listing_once_known(direct) -> None:
    engine = direct.engine()
    assert engine.health().state is HealthState.OK
    assert direct.state.counters["whoami_calls"] == 1  # 404: a server before the actor model
    assert direct.state.requests() == ["GET /v1/scopes/list?prefix=tmh%3Aprobe&limit=1"]
    assert engine.health().state is HealthState.OK
    assert direct.state.counters["whoami_calls"] == 1  # the cache remembers: listing only
    assert len(direct.state.requests()) == 2


@pytest.mark.parametrize("caller", [None, "user:local"], ids=["pre-actor", "actor"])
def test_direct_health_of_a_wrong_key_is_down_unauthorized(make_double, caller) -> None:
    double = make_double("direct", whoami_caller=caller, accept_token="the-right-key")
    wrong = "ctx_wrong_key_canary_41"
    engine = double.engine(token=wrong)
    health = engine.health()
    assert health.state is HealthState.DOWN
    assert (health.reason or "").startswith("unauthorized: ")
    assert "check the API key" in (health.reason or "")
    assert wrong not in (health.reason or "")
    assert double.state.counters["whoami_calls"] == 1
    assert double.state.requests() == []  # one call: whoami refused the key
    right = double.engine(token="the-right-key")
    assert right.health().state is HealthState.OK


def test_direct_health_falls_back_when_whoami_proves_nothing(make_double) -> None:
    # A broken whoami (500): the listing decides, as any request would.
    double = make_double("direct", whoami_fails=(500, "INTERNAL"))
    assert double.engine().health().state is HealthState.OK
    assert double.state.requests() == ["GET /v1/scopes/list?prefix=tmh%3Aprobe&limit=1"]
    # A whoami naming no usable caller while the server wants one: down, not ok.
    strict = make_double("direct", whoami_caller="user:local", whoami_answer={"caller": 5})
    health = strict.engine().health()
    assert health.state is HealthState.DOWN
    assert (health.reason or "").startswith("unauthorized: ")


def test_health_of_an_unreachable_endpoint_is_degraded() -> None:
    timing = Timing(request_timeout=1.0, connect_timeout=1.0)
    key = "ctx_unreachable_canary"
    engine = CortexEngine.direct(unused_url(), EngineCredential.static(key), timing=timing)
    health = engine.health(deadline=5)
    engine.close()
    assert health.state is HealthState.DEGRADED
    assert key not in (health.reason or "")


@pytest.mark.parametrize("code", ["INVALID_TOKEN_SIGNATURE", "EXPIRED_TOKEN", "REVOKED_TOKEN"])
def test_each_rejection_code_is_unauthorized(make_double, code: str) -> None:
    double = make_double("direct", accept_token="another", token_rejection_code=code)
    engine = double.engine()
    with pytest.raises(UnauthorizedError, match="check the API key") as info:
        engine.list(LEARNINGS)
    assert info.value.code == code
    assert TEST_TOKEN not in str(info.value)


def test_hosted_rejected_token_is_unauthorized_with_its_code(make_double) -> None:
    double = make_double("hosted", accept_token="another")
    engine = double.engine()
    with pytest.raises(UnauthorizedError, match="re-authenticate") as info:
        engine.list(LEARNINGS)
    assert info.value.code == "UNAUTHORIZED"
    assert error_code(info.value) == "UNAUTHORIZED"
    assert len(double.state.requests()) == 1


def test_assembly_lookups_run_a_few_at_a_time(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    chats = [
        kit.conversation(2, f"chat {n}", namespace=Namespace.parse(f"agent:c{n}")) for n in range(6)
    ]
    engine.store_many(chats, wait=WaitFor.ACCEPTED)
    double.state.listing_delay_ms = 40
    page = engine.list(ListRequest(MetaFilter(reach=Reach.subtree(Namespace.root())), 10))
    assert len(page.items) == 6
    assert 1 < double.state.counters["listings_peak"] <= 4

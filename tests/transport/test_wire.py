"""The two wires: ids, routes, per-wire rules and the hosted unwrap (engine.md §6.1-6.2)."""

from __future__ import annotations

import pytest

from cortex_memory.cortex import (
    CORTEX_API_ENDPOINT,
    CORTEXDB_ENGINE_ID,
    TINYHUMANS_API_ENDPOINT,
    TINYHUMANS_ENGINE_ID,
    CortexWire,
)
from cortex_memory.cortex.wire import Route, Unwrapped, unwrap_hosted
from cortex_memory.errors import EngineError, UnsupportedError

DIRECT, HOSTED = CortexWire.DIRECT, CortexWire.TINYHUMANS


def test_ids_and_endpoints() -> None:
    assert (CORTEXDB_ENGINE_ID, TINYHUMANS_ENGINE_ID) == ("cortexdb", "tinyhumans")
    assert DIRECT.id == "cortexdb"
    assert HOSTED.id == "tinyhumans"
    assert CortexWire("tinyhumans") is HOSTED
    assert DIRECT.default_endpoint == CORTEX_API_ENDPOINT == "https://api-v1.cortexdb.ai"
    assert HOSTED.default_endpoint == TINYHUMANS_API_ENDPOINT == "https://api.tinyhumans.ai"
    assert repr(DIRECT) == "CortexWire.DIRECT"


def test_per_wire_rules() -> None:
    assert not DIRECT.hosted
    assert HOSTED.hosted
    assert DIRECT.sends_actor
    assert not HOSTED.sends_actor
    assert not DIRECT.claims_posts
    assert HOSTED.claims_posts
    assert DIRECT.writes_bulk
    assert not HOSTED.writes_bulk
    assert DIRECT.sends_null_instructions
    assert not HOSTED.sends_null_instructions


@pytest.mark.parametrize(
    ("route", "direct", "hosted"),
    [
        (Route.EXPERIENCE, "v1/experience", "memory/experience"),
        (Route.BULK, "v1/experience/bulk", None),
        (Route.EVENTS, "v1/events", "memory/events"),
        (Route.RECALL, "v1/recall", "memory/recall"),
        (Route.FORGET, "v1/forget", "memory/forget"),
        (Route.ANSWER, "v1/answer", "memory/answer"),
        (Route.HEALTH, "v1/admin/health", "memory/scopes"),
        (Route.SCOPES, "v1/scopes/list", "memory/scopes"),
        (Route.WHOAMI, "v1/auth/whoami", None),
        (Route.BELIEFS_BUILD, "v1/beliefs/build", None),
        (Route.BELIEFS, "v1/beliefs", None),
        (Route.REGISTER_SCOPE, "v1/scopes", None),
        (Route.SCOPE_MEMBERS, "v1/scopes/members", None),
        (Route.ERASURES, "v1/erasures", "memory/v1/erasures"),
        (Route.ERASE_ALL, None, "memory"),
        (Route.VERSION, "v1/admin/version", None),
    ],
)
def test_route_table(route: Route, direct: str, hosted: str) -> None:
    for wire, path in ((DIRECT, direct), (HOSTED, hosted)):
        assert wire.has_route(route) is (path is not None)
        if path is None:
            with pytest.raises(UnsupportedError) as caught:
                wire.route(route)
            assert wire.id in caught.value.message
        else:
            assert wire.route(route) == path
            assert not path.startswith("/")


def test_health_routes() -> None:
    assert DIRECT.health_route() == "v1/scopes/list?prefix=tmh%3Aprobe&limit=1"
    assert HOSTED.health_route() == "memory/scopes?prefix=tmh%3Aprobe&limit=1"


def test_unwrap_success() -> None:
    assert unwrap_hosted({"success": True, "data": {"a": 1}}, "w") == Unwrapped(True, {"a": 1})
    assert unwrap_hosted({"success": True, "data": None}, "w") == Unwrapped(True, None)


def test_unwrap_refusal_is_returned_for_the_failure_mapper() -> None:
    body = {"success": False, "error": "nope", "errorCode": "X"}
    assert unwrap_hosted(body, "w") == Unwrapped(False, body)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"success": True}, "w answered success without a data field"),
        ({"data": 1}, "w answered without the success envelope"),
        ({"success": "true", "data": 1}, "w answered without the success envelope"),
        ({"success": 1, "data": 1}, "w answered without the success envelope"),
        ([1, 2], "w answered without the success envelope"),
        (None, "w answered without the success envelope"),
    ],
)
def test_malformed_envelopes_are_engine_errors(body: object, message: str) -> None:
    with pytest.raises(EngineError) as caught:
        unwrap_hosted(body, "w")
    assert caught.value.message == message

"""HttpClient construction, copies and lifecycle (engine.md §3.2, §5.1)."""

from __future__ import annotations

import copy

import pytest

from cortex_memory.cortex import CortexWire, EngineCredential, Timing
from cortex_memory.cortex.transport import HttpClient, Response
from cortex_memory.testing.hostile import CountingServer

KEY = EngineCredential.static("ctx_client_test")


def test_constructor_argument_types() -> None:
    with pytest.raises(TypeError):
        HttpClient("cortexdb", "https://h", KEY)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        HttpClient(CortexWire.DIRECT, "https://h", "key")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        HttpClient(CortexWire.DIRECT, "https://h", KEY, timing={"request_timeout": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        HttpClient(CortexWire.DIRECT, 42, KEY)  # type: ignore[arg-type]
    client = HttpClient(CortexWire.DIRECT, "https://h", KEY)
    with pytest.raises(TypeError):
        client.with_timing(1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.once("GET", None)  # type: ignore[arg-type]


def test_properties_and_repr() -> None:
    client = HttpClient(
        CortexWire.TINYHUMANS, "https://api.tinyhumans.ai/base", KEY, timing=Timing(settle=1)
    )
    assert client.wire is CortexWire.TINYHUMANS
    assert client.endpoint == "https://api.tinyhumans.ai/base/"
    assert client.origin == "https://api.tinyhumans.ai"
    assert client.host == "api.tinyhumans.ai"
    assert client.timing == Timing(settle=1)
    assert client.paused_for == 0.0
    assert repr(client) == "HttpClient(wire='tinyhumans', endpoint='https://api.tinyhumans.ai')"


def test_copies_share_the_family_but_not_their_settings() -> None:
    client = HttpClient(CortexWire.DIRECT, "https://h", KEY)
    for other in (
        copy.copy(client),
        copy.deepcopy(client),
        client.with_timing(Timing(request_timeout=1)),
        client.with_default_headers({"x-a": "1"}),
    ):
        assert other is not client
        assert other._family is client._family
    assert client.with_timing(Timing(request_timeout=1)).timing.request_timeout == 1.0
    assert client.timing.request_timeout == 60.0
    assert client.default_headers == {}


def test_context_manager_closes_and_calls_reopen(make_client) -> None:
    with CountingServer(200, json={"n": 1}) as server:
        with make_client(server.url) as client:
            assert client.once("GET", "v1/events").data == {"n": 1}
        assert client.once("GET", "v1/events").data == {"n": 1}
        assert server.connections == 2


def test_response_repr_hides_the_body() -> None:
    response = Response(200, {"secret": "content"}, {"x": "y"})
    assert repr(response) == "Response(status=200, attempts=1)"

"""Endpoint security and header injection through every public constructor (quality.md).

tests/transport/test_endpoint.py checks the table against ``HttpClient``; here the
same table goes through what a host actually calls: ``CortexEngine.direct``,
``CortexEngine.tinyhumans``, ``build_engine`` and ``MemoryConfig.build``, on both
wires. Where a refused URL would in fact reach this machine (``0.0.0.0``,
``127.1``, ``2130706433``, an IPv4-mapped address, a userinfo trick naming the
local server), a ``CountingServer`` listens there and must accept no connection.
A token carrying CR, LF, NUL, DEL or a non-ASCII character is ``UnauthorizedError``
on every operation, and the server sees nothing at all.
"""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

import pytest

from cortex_memory import (
    ConfigError,
    EngineCredential,
    EngineSettings,
    GetRequest,
    ListRequest,
    MemoryConfig,
    MemoryEngine,
    MetaFilter,
    RecallRequest,
    UnauthorizedError,
    build_engine,
)
from cortex_memory.cortex import CortexEngine, StaticBearer, Timing
from cortex_memory.testing import CountingServer, DirectDouble, HostedDouble

from ._support import CANARY_TOKEN, new_items

FAST = Timing(request_timeout=0.5, connect_timeout=0.5, read_backoff=0.005, poll_interval=0.005)
Build = Callable[[str, str], MemoryEngine]


def _direct(url: str, token: str) -> MemoryEngine:
    return CortexEngine.direct(url, EngineCredential.static(token), timing=FAST)


def _tinyhumans(url: str, token: str) -> MemoryEngine:
    return CortexEngine.tinyhumans(url, StaticBearer(token), timing=FAST)


def _registry(engine_id: str, dynamic: bool = False) -> Build:
    def build(url: str, token: str) -> MemoryEngine:
        credential = (
            EngineCredential.dynamic(StaticBearer(token))
            if dynamic
            else EngineCredential.static(token)
        )
        return build_engine(engine_id, EngineSettings(endpoint=url), credential)

    return build


def _config(engine_id: str) -> Build:
    def build(url: str, token: str) -> MemoryEngine:
        config = MemoryConfig.from_dict(
            {"engine": engine_id, "engines": {engine_id: {"endpoint": url}}}
        )
        return config.build(EngineCredential.static(token))

    return build


CONSTRUCTORS: List[Tuple[str, Build]] = [
    ("CortexEngine.direct", _direct),
    ("CortexEngine.tinyhumans", _tinyhumans),
    ("build_engine(cortexdb)", _registry("cortexdb")),
    ("build_engine(tinyhumans)", _registry("tinyhumans", dynamic=True)),
    ("MemoryConfig.build(cortexdb)", _config("cortexdb")),
    ("MemoryConfig.build(tinyhumans)", _config("tinyhumans")),
]
IDS = [name for name, _ in CONSTRUCTORS]

# {port}: the CountingServer's port, so a URL that slipped through would reach it.
REFUSED = [
    "http://localhost.example.com:{port}",
    "http://127.0.0.1.nip.io:{port}",
    "http://0.0.0.0:{port}",
    "http://[::]:{port}",
    "http://[::ffff:127.0.0.1]:{port}",
    "http://127.1:{port}",
    "http://2130706433:{port}",
    "http://0x7f.0.0.1:{port}",
    "http://127.0.0.1:{port}@evil.example.com",
    "http://localhost@evil.example.com:{port}",
    "http://evil.example.com#@127.0.0.1:{port}",
    "http://evil.example.com?@127.0.0.1:{port}",
    "http://evil.example.com\\@127.0.0.1:{port}",
    "http://user:pw@127.0.0.1:{port}",
    "http://example.com:{port}",
    "http://10.0.0.1:{port}",
    "ftp://127.0.0.1:{port}",
    "127.0.0.1:{port}",
    "file:///etc/hosts",
    "http://",
]


@pytest.mark.parametrize(("name", "build"), CONSTRUCTORS, ids=IDS)
def test_cleartext_off_loopback_is_refused_and_nothing_connects(name: str, build: Build) -> None:
    with CountingServer(200, json={}) as server:
        for pattern in REFUSED:
            url = pattern.format(port=server.port)
            with pytest.raises(ConfigError) as caught:
                build(url, CANARY_TOKEN)
            text = str(caught.value) + repr(caught.value)
            assert CANARY_TOKEN not in text, url
            assert "evil" not in text, url
            assert ":pw@" not in text, url
        assert server.connections == 0
        assert server.raw_requests == []


@pytest.mark.parametrize(("name", "build"), CONSTRUCTORS, ids=IDS)
def test_loopback_http_is_allowed_and_reaches_the_local_server(name: str, build: Build) -> None:
    for host in ("127.0.0.1", "127.8.9.10", "localhost", "LOCALHOST", "[::1]"):
        engine = build(f"http://{host}:9/base", CANARY_TOKEN)
        assert repr(engine).endswith(f"endpoint='http://{host.lower()}:9')")
        engine.close()
    hosted = "tinyhumans" in name
    double = (HostedDouble(rate_limit_requests=None) if hosted else DirectDouble()).start()
    try:
        for host in ("127.0.0.1", "localhost"):
            url = double.url.replace("127.0.0.1", host)
            engine = build(url, CANARY_TOKEN)
            assert engine.health().state.value == "ok"
            engine.close()
        assert double.state.counters["connections"] >= 2
    finally:
        double.close()


BAD_TOKENS = [
    CANARY_TOKEN + "\r\nX-Injected: 1",
    CANARY_TOKEN[:9] + "\nX-Injected: 1" + CANARY_TOKEN[9:],
    CANARY_TOKEN[:9] + "\r" + CANARY_TOKEN[9:],
    CANARY_TOKEN + "\x00",
    CANARY_TOKEN[:9] + "\x7f" + CANARY_TOKEN[9:],
    CANARY_TOKEN + "\u00e9",
    "\u2028" + CANARY_TOKEN[:9] + "\u2028" + CANARY_TOKEN[9:],
]
BAD_IDS = ["crlf", "lf", "cr", "nul", "del", "non-ascii", "line-separator"]


def _operations(engine: MemoryEngine) -> List[Callable[[], Any]]:
    items = new_items()
    return [
        lambda: engine.store(items[0]),
        lambda: engine.store_many(items),
        lambda: engine.list(ListRequest(MetaFilter(), 5)),
        lambda: engine.get(GetRequest((items[0].fingerprint(),))),
        lambda: engine.recall(RecallRequest("tea", 3)),
    ]


@pytest.mark.parametrize(("name", "build"), CONSTRUCTORS, ids=IDS)
@pytest.mark.parametrize("token", BAD_TOKENS, ids=BAD_IDS)
def test_invalid_header_bytes_in_a_token_send_nothing(name: str, build: Build, token: str) -> None:
    with CountingServer(200, json={}) as server:
        engine = build(server.url, token)
        for call in _operations(engine):
            with pytest.raises(UnauthorizedError) as caught:
                call()
            assert caught.value.message == "credential is not a valid HTTP header value"
            assert CANARY_TOKEN[9:] not in str(caught.value) + repr(caught.value)
        health = engine.health()
        assert health.state.value == "down"
        assert CANARY_TOKEN[9:] not in str(health)
        engine.close()
        assert server.connections == 0
        assert server.raw_requests == []

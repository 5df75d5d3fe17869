"""Proxies through real sockets: loopback proxies that record what they saw (docs/transport.md).

The endpoint is ``https://memory.test:<port>``: a name only the test proxy can
resolve (to a TLS front of a double), as a company proxy resolves hosts the
client cannot; the front's certificate is trusted with ``ca_certs=``. A plain
``http`` endpoint (loopback only) goes through the forwarding proxy.
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Any, Iterator, Tuple

import pytest

from cortex_memory import ListRequest, MemoryMeta, MetaFilter, RecallRequest, StoreItem
from cortex_memory.config import EngineSettings, MemoryConfig
from cortex_memory.cortex import (
    CortexEngine,
    Network,
    Timing,
)
from cortex_memory.errors import (
    ConfigError,
    EngineError,
    InvalidRequestError,
    UnavailableError,
)
from cortex_memory.registry import EngineCredential, build_engine
from cortex_memory.testing import (
    TEST_TOKEN,
    HostileServer,
    LoopbackServer,
    unused_url,
)
from cortex_memory.testing._server import BaseDouble

from ._network import TIMING, engine, hosted_client, port_of, start_double
from ._relays import ProxyOptions, RecordingProxy, TlsFront, basic
from .conftest import FAST, REMOTE_HOST

pytestmark = pytest.mark.usefixtures("clean_network_env")

PASSWORD = "pr0xy-s3cret-9d1"


def remote_url(front: TlsFront) -> str:
    return f"https://{REMOTE_HOST}:{front.port}"


def session(eng: CortexEngine) -> None:
    """A store (a write, then visibility reads), a list and a recall."""
    receipt = eng.store(StoreItem.document("Releases ship on Tuesday.", MemoryMeta(tags=("p",))))
    assert receipt.id
    assert eng.list(ListRequest(MetaFilter(), 5)).items
    eng.recall(RecallRequest("When do releases ship?", limit=3))


def proxy_for(front: TlsFront, **options: Any) -> RecordingProxy:
    return RecordingProxy(ProxyOptions(hosts={REMOTE_HOST: front.port}, **options))


# --- CONNECT: an https endpoint --------------------------------------------------------


def test_https_goes_through_a_connect_tunnel_and_the_bearer_only_inside_it(
    served: Tuple[BaseDouble, TlsFront], ca_file: str
) -> None:
    double, front = served
    with proxy_for(front) as proxy:
        eng = engine(double, remote_url(front), Network(proxy=proxy.url, ca_certs=ca_file))
        session(eng)
        eng.close()
    assert proxy.methods
    assert set(proxy.methods) == {"CONNECT"}
    for head in proxy.heads:
        assert head.target == f"{REMOTE_HOST}:{front.port}"
        assert "authorization" not in head.headers
        assert TEST_TOKEN.encode() not in head.raw
    # What crossed the tunnel is TLS: the bearer is not readable there...
    assert proxy.tunnelled
    assert TEST_TOKEN.encode() not in proxy.tunnelled
    # ...and the server, past the TLS, got it (and no proxy header).
    assert f"Bearer {TEST_TOKEN}".encode() in front.decrypted
    assert b"proxy-authorization" not in front.decrypted.lower()


def test_copies_share_the_tunnel_and_the_pool(
    served: Tuple[BaseDouble, TlsFront], ca_file: str
) -> None:
    double, front = served
    with proxy_for(front) as proxy:
        eng = engine(double, remote_url(front), Network(proxy=proxy.url, ca_certs=ca_file))
        clone = copy.copy(eng).with_timing(TIMING)
        eng.list(ListRequest(MetaFilter(), 1))
        clone.list(ListRequest(MetaFilter(), 1))
        eng.list(ListRequest(MetaFilter(), 1))
        assert clone.context.client._family is eng.context.client._family
        assert proxy.methods == ["CONNECT"]  # one tunnel, kept alive and reused
        eng.close()


def test_proxy_credentials_go_to_the_proxy_only_and_never_show(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, caplog: pytest.LogCaptureFixture
) -> None:
    double, front = served
    expected = basic("ada", PASSWORD)
    caplog.set_level(logging.DEBUG)
    with proxy_for(front, auth=expected) as proxy:
        network = Network(proxy=proxy.url_with("ada", PASSWORD), ca_certs=ca_file)
        eng = engine(double, remote_url(front), network)
        session(eng)
        shown = [repr(network), str(network), repr(eng), str(eng.proxy), repr(eng.context.client)]
        eng.close()
    assert all(head.headers.get("proxy-authorization") == expected for head in proxy.heads)
    assert b"proxy-authorization" not in front.decrypted.lower()
    secrets = (PASSWORD, expected.split()[1])
    for text in [*shown, *(r.getMessage() for r in caplog.records)]:
        assert not any(secret in text for secret in secrets), text


@pytest.mark.parametrize("with_password", [False, True])
def test_a_407_is_an_engine_error_naming_the_proxy(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, with_password: bool
) -> None:
    double, front = served
    with proxy_for(front, auth=basic("ada", "the-right-one")) as proxy:
        url = proxy.url_with("ada", PASSWORD) if with_password else proxy.url
        eng = engine(double, remote_url(front), Network(proxy=url, ca_certs=ca_file))
        with pytest.raises(EngineError) as caught:
            eng.list(ListRequest(MetaFilter(), 1))
        eng.close()
    err = caught.value
    assert err.status == 407
    assert f"through the proxy 127.0.0.1:{proxy.port}" in err.message
    assert "HTTP 407 Proxy Authentication Required" in err.message
    hint = "check the user name and password" if with_password else "give them as user:password@"
    assert hint in err.message
    assert PASSWORD not in repr(err)
    assert PASSWORD not in str(err.__cause__)
    assert front.handshakes == 0


@pytest.mark.parametrize(("status", "variant"), [(403, EngineError), (502, UnavailableError)])
def test_a_refused_tunnel_keeps_the_proxys_status(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, status: int, variant: type
) -> None:
    double, front = served
    with proxy_for(front, refuse=status) as proxy:
        eng = engine(double, remote_url(front), Network(proxy=proxy.url, ca_certs=ca_file))
        with pytest.raises(variant) as caught:
            eng.list(ListRequest(MetaFilter(), 1))
        eng.close()
    assert caught.value.status == status
    assert "the proxy refused to open a tunnel" in caught.value.message
    assert front.handshakes == 0


def test_an_unreachable_proxy_is_unavailable_naming_the_proxy(
    served: Tuple[BaseDouble, TlsFront], ca_file: str
) -> None:
    double, front = served
    dead = unused_url()
    eng = engine(double, remote_url(front), Network(proxy=dead, ca_certs=ca_file))
    with pytest.raises(UnavailableError) as caught:
        eng.list(ListRequest(MetaFilter(), 1))
    eng.close()
    message = caught.value.message
    assert "could not connect to the proxy" in message
    assert dead.split("://")[1] in message
    assert caught.value.status is None


def test_a_proxy_host_that_does_not_resolve_is_unavailable(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, clean_network_env: pytest.MonkeyPatch
) -> None:
    double, front = served
    clean_network_env.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    eng = engine(double, remote_url(front), Network(ca_certs=ca_file))
    with pytest.raises(UnavailableError, match="the proxy host could not be resolved") as caught:
        eng.list(ListRequest(MetaFilter(), 1))
    eng.close()
    assert "(HTTPS_PROXY)" in caught.value.message


@pytest.mark.parametrize("stall", ["connect", "tunnel", "drip-connect", "drip-tunnel"])
def test_a_stalled_proxy_ends_at_the_request_timeout(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, stall: str
) -> None:
    """One attempt ends at the 0.6 s request timeout, not the 5 s connect timeout: the
    watchdog covers the CONNECT exchange (a proxy dripping its answer never trips a
    socket timeout: without the watchdog, drip-connect hangs) and the handshake behind it."""
    _, front = served
    timing = Timing(request_timeout=0.6, connect_timeout=5.0)
    with proxy_for(front, stall=stall) as proxy:
        network = Network(proxy=proxy.url, ca_certs=ca_file)
        client = hosted_client(remote_url(front), network, timing)
        started = time.monotonic()
        with pytest.raises(UnavailableError, match="timed out"):
            client.once("GET", "memory/events")
        elapsed = time.monotonic() - started
        client.close()
    assert elapsed < 4.0
    assert proxy.methods == ["CONNECT"]


def test_a_deadline_bounds_a_proxied_call(
    served: Tuple[BaseDouble, TlsFront], ca_file: str
) -> None:
    double, front = served
    with proxy_for(front, stall="connect") as proxy:
        eng = engine(double, remote_url(front), Network(proxy=proxy.url, ca_certs=ca_file))
        started = time.monotonic()
        with pytest.raises(UnavailableError, match="deadline exceeded"):
            eng.list(ListRequest(MetaFilter(), 1), deadline=0.5)
        assert time.monotonic() - started < 2.0
        eng.close()


def test_an_https_proxy_tunnels_tls_inside_tls(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, server_context: Any
) -> None:
    double, front = served
    with proxy_for(front, tls=server_context) as proxy:
        assert proxy.url.startswith("https://")
        proxy_url = proxy.url.replace("127.0.0.1", "localhost")
        eng = engine(double, remote_url(front), Network(proxy=proxy_url, ca_certs=ca_file))
        session(eng)
        eng.close()
    assert set(proxy.methods) == {"CONNECT"}
    assert TEST_TOKEN.encode() not in proxy.tunnelled


def test_an_https_proxy_must_present_a_trusted_certificate(
    served: Tuple[BaseDouble, TlsFront], server_context: Any
) -> None:
    double, front = served
    with proxy_for(front, tls=server_context) as proxy:
        eng = engine(double, remote_url(front), Network(proxy=proxy.url))
        with pytest.raises(UnavailableError, match="TLS with the proxy failed"):
            eng.list(ListRequest(MetaFilter(), 1))
        eng.close()
    assert proxy.heads == []


# --- the environment ----------------------------------------------------------------


def test_the_environment_proxy_is_used_and_lowercase_wins(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, clean_network_env: pytest.MonkeyPatch
) -> None:
    double, front = served
    with proxy_for(front) as upper, proxy_for(front) as lower:
        clean_network_env.setenv("HTTPS_PROXY", upper.url)
        clean_network_env.setenv("https_proxy", lower.url)
        eng = engine(double, remote_url(front), Network(ca_certs=ca_file))
        assert eng.proxy == lower.url
        eng.list(ListRequest(MetaFilter(), 1))
        eng.close()
    assert lower.methods == ["CONNECT"]
    assert upper.heads == []


def test_environment_credentials_reach_the_proxy(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, clean_network_env: pytest.MonkeyPatch
) -> None:
    double, front = served
    with proxy_for(front, auth=basic("ada", PASSWORD)) as proxy:
        clean_network_env.setenv("ALL_PROXY", proxy.url_with("ada", PASSWORD))
        eng = engine(double, remote_url(front), Network(ca_certs=ca_file))
        session(eng)
        assert PASSWORD not in repr(eng)
        assert eng.proxy == proxy.url
        eng.close()


def test_no_proxy_bypasses_the_environment_proxy(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, clean_network_env: pytest.MonkeyPatch
) -> None:
    """Exempted, the client connects directly, so the proxy sees nothing (and the
    name, which only the proxy resolves, fails to resolve)."""
    double, front = served
    with proxy_for(front) as proxy:
        clean_network_env.setenv("HTTPS_PROXY", proxy.url)
        clean_network_env.setenv("NO_PROXY", f"localhost, .{REMOTE_HOST.split('.')[-1]}")
        eng = engine(double, remote_url(front), Network(ca_certs=ca_file))
        assert eng.proxy is None
        with pytest.raises(UnavailableError) as caught:
            eng.list(ListRequest(MetaFilter(), 1), deadline=3.0)
        eng.close()
        assert "proxy" not in caught.value.message
        assert proxy.connections == 0


def test_explicit_settings_beat_the_environment(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, clean_network_env: pytest.MonkeyPatch
) -> None:
    double, front = served
    with proxy_for(front) as from_env, proxy_for(front) as explicit:
        clean_network_env.setenv("HTTPS_PROXY", from_env.url)
        clean_network_env.setenv("NO_PROXY", REMOTE_HOST)
        eng = engine(double, remote_url(front), Network(proxy=explicit.url, ca_certs=ca_file))
        eng.list(ListRequest(MetaFilter(), 1))
        eng.close()
        # No proxy at all, even though the environment names one: a direct attempt.
        direct = engine(double, front.url("localhost"), Network(proxy=None, ca_certs=ca_file))
        clean_network_env.delenv("NO_PROXY")
        direct.list(ListRequest(MetaFilter(), 1))
        direct.close()
    assert explicit.methods == ["CONNECT"]
    assert from_env.connections == 0


def test_config_and_registry_carry_the_proxy_and_the_ca_bundle(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, clean_network_env: pytest.MonkeyPatch
) -> None:
    double, front = served
    engine_id = "tinyhumans" if double.hosted else "cortexdb"
    credential = EngineCredential.static(TEST_TOKEN)
    with proxy_for(front) as proxy, proxy_for(front) as from_env:
        config = MemoryConfig.from_toml(
            f'engine = "{engine_id}"\n[engines.{engine_id}]\n'
            f'endpoint = "{remote_url(front)}"\nproxy = "{proxy.url}"\nca_certs = "{ca_file}"\n'
        )
        eng = config.build(credential)
        assert isinstance(eng, CortexEngine)
        assert eng.proxy == proxy.url
        eng.with_timing(TIMING).list(ListRequest(MetaFilter(), 1))
        eng.close()
        # proxy = "" means none, even with one in the environment.
        clean_network_env.setenv("HTTPS_PROXY", from_env.url)
        none = build_engine(
            engine_id, EngineSettings(endpoint=remote_url(front), proxy=""), credential
        )
        assert isinstance(none, CortexEngine)
        assert none.proxy is None
        none.close()
        # Absent: the environment's.
        envd = build_engine(engine_id, EngineSettings(endpoint=remote_url(front)), credential)
        assert isinstance(envd, CortexEngine)
        assert envd.proxy == from_env.url
        envd.close()
    assert proxy.methods == ["CONNECT"]


# --- forwarding: a plain-http (loopback) endpoint -----------------------------------


@pytest.fixture(params=["direct", "hosted"])
def plain(request: pytest.FixtureRequest) -> Iterator[BaseDouble]:
    double = start_double(str(request.param))
    yield double
    double.close()


def test_plain_http_goes_through_a_forwarding_loopback_proxy(plain: BaseDouble) -> None:
    with RecordingProxy(ProxyOptions(auth=basic("ada", PASSWORD))) as proxy:
        eng = engine(plain, plain.url, Network(proxy=proxy.url_with("ada", PASSWORD)))
        session(eng)
        eng.close()
    assert proxy.heads
    assert all(head.method in ("GET", "POST") for head in proxy.heads)
    for head in proxy.heads:
        # Absolute-form targets to the endpoint's origin, the Host header the endpoint's.
        assert head.target.startswith(plain.url + "/")
        assert head.headers["host"] == plain.url.split("://")[1]
        assert head.headers["proxy-authorization"] == basic("ada", PASSWORD)
        assert head.headers["authorization"] == f"Bearer {TEST_TOKEN}"
    # The proxy took its header off; the endpoint never saw it.
    assert b"proxy-authorization" not in proxy.forwarded.lower()


def test_a_forwarding_proxys_407_is_an_engine_error(plain: BaseDouble) -> None:
    with RecordingProxy(ProxyOptions(auth=basic("ada", "the-right-one"))) as proxy:
        eng = engine(plain, plain.url, Network(proxy=proxy.url))
        with pytest.raises(EngineError) as caught:
            eng.list(ListRequest(MetaFilter(), 1))
        eng.close()
    assert caught.value.status == 407
    assert "the proxy asked for credentials" in caught.value.message
    assert proxy.forwarded == b""


def test_a_cleartext_endpoint_never_goes_through_a_remote_proxy(plain: BaseDouble) -> None:
    served_before = plain.state.count("GET /v1/events") + plain.state.count("GET /memory/events")
    with pytest.raises(ConfigError, match="only go through a loopback proxy"):
        engine(plain, plain.url, Network(proxy="http://192.0.2.7:3128"))
    assert (
        plain.state.count("GET /v1/events") + plain.state.count("GET /memory/events")
        == served_before
    )


# --- the transport's own guarantees hold through a proxy ----------------------------


def test_reads_retry_and_writes_do_not_through_a_proxy(
    served: Tuple[BaseDouble, TlsFront], ca_file: str
) -> None:
    double, front = served
    with proxy_for(front) as proxy:
        eng = engine(double, remote_url(front), Network(proxy=proxy.url, ca_certs=ca_file))
        client = eng.context.client
        events = "memory/events" if double.hosted else "v1/events"
        write = "memory/experience" if double.hosted else "v1/experience"
        double.state.fail_all = (503, "UNAVAILABLE")
        before = front.decrypted.count(f"GET /{events}".encode())
        with pytest.raises(UnavailableError, match="HTTP 503"):
            client.retry_transient("GET", events)
        assert front.decrypted.count(f"GET /{events}".encode()) - before == 3
        with pytest.raises(UnavailableError, match="HTTP 503"):
            client.once("POST", write, {"scope": "app:demo"})
        assert front.decrypted.count(f"POST /{write}".encode()) == 1
        assert proxy.methods == ["CONNECT"]  # the failures did not cost the tunnel
        eng.close()


def test_fast_timings_still_apply(clean_network_env: pytest.MonkeyPatch) -> None:
    """A proxied client keeps the request timeout: a silent forwarding proxy times out."""
    with RecordingProxy(ProxyOptions(stall="connect")) as proxy:
        started = time.monotonic()
        client = hosted_client("http://127.0.0.1:9", Network(proxy=proxy.url), FAST)
        with pytest.raises(UnavailableError, match="timed out"):
            client.once("GET", "memory/events")
        client.close()
        assert time.monotonic() - started < 3.0
        assert [head.method for head in proxy.heads] == ["GET"]



def _hostile_behind(front_context: Any, behaviour: str, **params: Any) -> Tuple[Any, TlsFront]:
    server = HostileServer(behaviour, spare_whoami=True, **params)
    server.__enter__()
    return server, TlsFront(front_context, port_of(server.url))


def test_caps_and_timeouts_hold_through_the_tunnel(server_context: Any, ca_file: str) -> None:
    """A slow body ends at the request timeout; an endless error body is read to its cap."""
    for behaviour, params, expected in (
        ("slow_body", {"rate": 200, "size": 5000}, "timed out while reading the response body"),
        ("endless_chunked", {"status": 400, "chunk": 65536}, "returned HTTP 400 Bad Request"),
    ):
        server, front = _hostile_behind(server_context, behaviour, **params)
        try:
            with proxy_for(front) as proxy:
                network = Network(proxy=proxy.url, ca_certs=ca_file)
                client = hosted_client(remote_url(front), network, FAST)
                started = time.monotonic()
                with pytest.raises((UnavailableError, InvalidRequestError)) as caught:
                    client.once("GET", "memory/events")
                elapsed = time.monotonic() - started
                client.close()
        finally:
            front.close()
            server.__exit__(None, None, None)
        assert expected in caught.value.message
        assert elapsed < 3.0
        assert proxy.methods == ["CONNECT"]


def test_a_407_from_the_endpoint_inside_a_tunnel_is_the_endpoints(
    server_context: Any, ca_file: str
) -> None:
    """Only a forwarding proxy's 407 is the proxy's: past a tunnel it is the server's status."""
    with LoopbackServer(lambda request: (407, [], b"")) as server:
        front = TlsFront(server_context, port_of(server.url))
        try:
            with proxy_for(front) as proxy:
                network = Network(proxy=proxy.url, ca_certs=ca_file)
                client = hosted_client(remote_url(front), network, FAST)
                with pytest.raises(EngineError) as caught:
                    client.once("GET", "memory/events")
                client.close()
        finally:
            front.close()
    assert caught.value.status == 407
    assert "proxy" not in caught.value.message
    assert "returned HTTP 407 Proxy Authentication Required" in caught.value.message

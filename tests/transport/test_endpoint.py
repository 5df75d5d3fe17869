"""Endpoint security, URL joining and host default headers (engine.md §5.1, §5.3)."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from cortex_memory.cortex import CortexWire, EngineCredential
from cortex_memory.cortex.transport import CLEARTEXT_REFUSED, HttpClient, is_loopback_host
from cortex_memory.errors import ConfigError, EngineError
from cortex_memory.testing.hostile import LoopbackServer

KEY = EngineCredential.static("ctx_endpoint_test")


def build(endpoint: str, **kwargs: object) -> HttpClient:
    return HttpClient(CortexWire.DIRECT, endpoint, KEY, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://localhost.example.com",
        "http://127.0.0.1.nip.io",
        "http://127.0.0.1.nip.io:8080/v1",
        "http://0.0.0.0",
        "http://0.0.0.0:8080",
        "http://127.0.0.1@evil.com",
        "http://127.0.0.1:80@evil.com",
        "http://localhost@evil.com",
        "http://evil.com#@127.0.0.1",
        "http://evil.com?@127.0.0.1",
        "http://evil.com\\@127.0.0.1",
        "http://evil.com/@127.0.0.1",
        "http://example.com",
        "http://10.0.0.1",
        "http://192.168.1.10:8080",
        "http://[::ffff:127.0.0.1]",
        "http://[::]",
        "http://[fe80::1]",
        "http://127.1",
        "http://2130706433",
        "http://0x7f.0.0.1",
        "http://localhost.",
        "http://local",
        "http://127.0.0.1%2eevil.com",
    ],
)
def test_cleartext_to_a_non_loopback_host_is_refused(endpoint: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build(endpoint)
    assert caught.value.message == CLEARTEXT_REFUSED
    assert str(caught.value) == f"configuration error: {CLEARTEXT_REFUSED}"


@pytest.mark.parametrize(
    ("endpoint", "host", "origin"),
    [
        ("http://127.0.0.1:8080", "127.0.0.1", "http://127.0.0.1:8080"),
        ("http://127.8.9.10", "127.8.9.10", "http://127.8.9.10"),
        ("http://127.255.255.254:1/", "127.255.255.254", "http://127.255.255.254:1"),
        ("http://localhost:9", "localhost", "http://localhost:9"),
        ("HTTP://LOCALHOST", "localhost", "http://localhost"),
        ("http://[::1]:8080/base", "[::1]", "http://[::1]:8080"),
        ("https://api-v1.cortexdb.ai", "api-v1.cortexdb.ai", "https://api-v1.cortexdb.ai"),
        ("https://api-v1.cortexdb.ai:443/", "api-v1.cortexdb.ai", "https://api-v1.cortexdb.ai"),
        ("https://10.0.0.1:8443/x", "10.0.0.1", "https://10.0.0.1:8443"),
        ("  https://example.com  ", "example.com", "https://example.com"),
    ],
)
def test_loopback_http_and_any_https_are_allowed(endpoint: str, host: str, origin: str) -> None:
    client = build(endpoint)
    assert client.host == host
    assert client.origin == origin
    assert client.endpoint.endswith("/")
    assert repr(client) == f"HttpClient(wire='cortexdb', endpoint={origin!r})"


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        ("", "the memory endpoint must be an http or https URL"),
        ("ftp://example.com", "the memory endpoint must be an http or https URL"),
        ("file:///etc/passwd", "the memory endpoint must be an http or https URL"),
        ("localhost:8080", "the memory endpoint must be an http or https URL"),
        ("127.0.0.1:8080", "the memory endpoint must be an http or https URL"),
        ("https://", "the memory endpoint has no host"),
        ("http://", "the memory endpoint has no host"),
        ("http://[::1", "the memory endpoint is not a valid URL"),
        ("http://127.0.0.1:99999", "the memory endpoint is not a valid URL"),
    ],
)
def test_unusable_endpoints_are_refused(endpoint: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build(endpoint)
    assert caught.value.message == message


def test_a_space_in_the_host_is_refused() -> None:
    # urllib3 versions differ on whether this parses; either way it is refused.
    with pytest.raises(ConfigError):
        build("http://a b")


def test_user_information_is_refused_and_never_echoed() -> None:
    for endpoint in ("https://user:S3CRET-pw@example.com", "http://me:S3CRET-pw@127.0.0.1:9"):
        with pytest.raises(ConfigError) as caught:
            build(endpoint)
        assert "S3CRET" not in str(caught.value)
        assert caught.value.message == "the memory endpoint must not contain user information"


def test_endpoint_messages_never_echo_the_url() -> None:
    with pytest.raises(ConfigError) as caught:
        build("http://secret-host-name.example.com/S3CRET")
    assert "S3CRET" not in str(caught.value)
    assert "secret-host" not in str(caught.value)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("localhost", True),
        ("LocalHost", True),
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("[::1]", True),
        ("::1", True),
        ("[::ffff:127.0.0.1]", False),
        ("0.0.0.0", False),
        ("localhost.example.com", False),
        ("128.0.0.1", False),
    ],
)
def test_is_loopback_host(host: str, expected: bool) -> None:
    assert is_loopback_host(host) is expected


def test_base_path_is_kept_and_query_and_fragment_dropped(make_client) -> None:
    with LoopbackServer(lambda request: (200, {}, {"path": request.target})) as server:
        client = make_client(f"{server.url}/prefix/inner?drop=1#frag")
        assert client.endpoint == f"{server.url}/prefix/inner/"
        assert client.once("GET", "v1/events?scope=a%3Ab").data == {
            "path": "/prefix/inner/v1/events?scope=a%3Ab"
        }
        assert client.once("GET", "/v1/events").data == {"path": "/prefix/inner/v1/events"}


def test_ipv6_loopback_works_end_to_end(make_client) -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = b'{"ok":1}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6

    try:
        server = Server(("::1", 0), Handler)
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = make_client(f"http://[::1]:{server.server_address[1]}", wire=CortexWire.TINYHUMANS)
        with pytest.raises(EngineError):  # reached it: {"ok":1} is not the hosted envelope
            client.once("GET", "memory/events")
        client.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- host default headers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "authorization",
        " AUTHORIZATION ",
        "Proxy-Authorization",
        "Cookie",
        "Host",
        "Content-Length",
        "Idempotency-Key",
        "X-Cortex-Actor",
        "x-cortex-actor",
    ],
)
def test_engine_owned_header_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build("https://example.com", default_headers={name: "S3CRET-VALUE"})
    assert "S3CRET" not in str(caught.value)
    assert "set by the engine" in caught.value.message


@pytest.mark.parametrize("name", ["", "   ", "x sdk", "x:sdk", "x-\r\nsdk", "é", "(x)", "a/b"])
def test_invalid_header_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build("https://example.com", default_headers={name: "S3CRET-VALUE"})
    assert caught.value.message == "a default header name is not a valid HTTP header name"


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\x00", "caf\u00e9", "a\x7f"])
def test_invalid_header_values_are_refused_without_echo(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build("https://example.com", default_headers={"x-sdk-name": value + "S3CRET"})
    assert "S3CRET" not in str(caught.value)
    assert "not a valid HTTP header value" in caught.value.message


def test_header_arguments_must_be_strings() -> None:
    with pytest.raises(TypeError):
        build("https://example.com", default_headers={"x-n": 1})
    with pytest.raises(TypeError):
        build("https://example.com", default_headers=[("x-n", "1")])


def test_default_headers_are_sent_and_a_later_set_replaces_them(make_client) -> None:
    with LoopbackServer(lambda request: (200, {}, {})) as server:
        client = make_client(
            server.url,
            default_headers={" x-sdk-name ": " cortex-test ", "X-Trace": "t1", "x-trace": "t2"},
        )
        assert client.default_headers == {"x-sdk-name": "cortex-test", "x-trace": "t2"}
        client.once("GET", "v1/events")
        first = server.requests[-1]
        assert first.header("x-sdk-name") == "cortex-test"
        assert first.header("x-trace") == "t2"

        replaced = client.with_default_headers({"x-other": "1"})
        replaced.once("GET", "v1/events")
        second = server.requests[-1]
        assert second.header("x-other") == "1"
        assert second.header("x-sdk-name") is None
        assert client.default_headers == {"x-sdk-name": "cortex-test", "x-trace": "t2"}


def test_transport_owned_headers_cannot_be_overridden(make_client) -> None:
    with LoopbackServer(lambda request: (200, {}, {})) as server:
        client = make_client(
            server.url,
            default_headers={"Accept-Encoding": "gzip", "content-type": "text/plain"},
        )
        client.once("POST", "v1/experience", {"a": 1})
        sent = server.requests[-1]
        assert sent.header("accept-encoding") == "identity"
        assert sent.header("content-type") == "application/json"
        assert sent.raw.lower().count(b"accept-encoding") == 1

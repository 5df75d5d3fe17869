"""Self-tests of the raw-socket helpers (doubles.md §9): the bytes they put on the wire."""

from __future__ import annotations

import gzip
import json
import socket
import time
from typing import Optional

import pytest

from cortex_memory.testing.hostile import (
    BEHAVIOURS,
    CountingServer,
    HostileServer,
    LoopbackServer,
    RawRequest,
    unused_url,
)

REQUEST = b"GET /v1/events?scope=x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Test: 1\r\n\r\n"


def connect(url: str, timeout: float = 5.0) -> socket.socket:
    host, port = url.rsplit("//", 1)[1].split(":")
    return socket.create_connection((host, int(port)), timeout=timeout)


def read_all(sock: socket.socket, limit: int = 1 << 20) -> bytes:
    data = b""
    while len(data) < limit:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
    return data


def exchange(url: str, request: bytes = REQUEST, limit: int = 1 << 20) -> bytes:
    with connect(url) as sock:
        sock.sendall(request)
        return read_all(sock, limit)


def test_requests_are_recorded_exactly() -> None:
    body = b'{"a":1}'
    request = (
        b"POST /v1/experience HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
        b"Content-Length: 7\r\n\r\n" + body
    )
    with LoopbackServer(lambda r: (200, {"Connection": "close"}, {"got": r.json()})) as server:
        answer = exchange(server.url, request)
        assert server.raw_requests == [request]
        parsed = server.requests[0]
        assert (parsed.method, parsed.target, parsed.path) == (
            "POST",
            "/v1/experience",
            "/v1/experience",
        )
        assert parsed.header("content-type") == "application/json"
        assert parsed.body == body
        assert server.hits == 1
        assert server.connections == 1
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b'{"got":{"a":1}}')


def test_loopback_handler_failures_answer_500() -> None:
    def broken(request: RawRequest):  # type: ignore[no-untyped-def]
        raise KeyError("boom")

    with LoopbackServer(broken) as server:
        answer = exchange(
            server.url, REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
        )
    assert answer.startswith(b"HTTP/1.1 500 ")
    assert b"handler failed: KeyError" in answer


def test_counting_server_spares_whoami() -> None:
    with CountingServer(503, body=b"busy", headers={"Retry-After": "2"}) as server:
        close = b"\r\nConnection: close\r\n\r\n"
        busy = exchange(server.url, REQUEST.replace(b"\r\n\r\n", close))
        whoami = exchange(server.url, b"GET /v1/auth/whoami HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert server.hits == 1
        assert len(server.raw_requests) == 2
    assert busy.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"Retry-After: 2\r\n" in busy
    assert busy.endswith(b"\r\n\r\nbusy")
    assert whoami.startswith(b"HTTP/1.1 404 ")


def test_counting_server_json_body() -> None:
    with CountingServer(503, json={"error_code": "X"}) as server:
        answer = exchange(
            server.url, REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
        )
    assert answer.endswith(b'{"error_code":"X"}')
    assert b"Content-Type: application/json" in answer


def test_slow_headers_drip() -> None:
    with HostileServer("slow_headers", interval=0.2) as server, connect(server.url) as sock:
        sock.sendall(REQUEST)
        sock.settimeout(1.0)
        first = sock.recv(100)
        time.sleep(0.5)
        sock.setblocking(False)
        try:
            more = sock.recv(100)
        except BlockingIOError:
            more = b""
    assert first == b"H"
    assert 1 <= len(more) <= 5  # a byte per interval, never the whole head


def test_slow_body_drips_after_honest_headers() -> None:
    with HostileServer("slow_body", rate=100, size=50) as server, connect(server.url) as sock:
        sock.sendall(REQUEST)
        started = time.monotonic()
        data = read_all_until(sock, b'"}')
        elapsed = time.monotonic() - started
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Content-Length: 50" in head
    assert body == b'{"pad":"' + b"x" * 40 + b'"}'
    assert elapsed >= 0.3  # 50 bytes at 100 B/s, sent every 50 ms


def read_all_until(sock: socket.socket, end: bytes) -> bytes:
    data = b""
    while not data.endswith(end):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_endless_chunked_keeps_going() -> None:
    with HostileServer("endless_chunked", chunk=4, fill=b"ab") as server:
        data = exchange(server.url, limit=100_000)
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head
    assert body.startswith(b"4\r\nabab\r\n4\r\nabab\r\n")
    assert len(data) >= 100_000


def test_chunk_cut_bytes() -> None:
    with HostileServer("chunk_cut", declared=100, sent=10) as server:
        data = exchange(server.url)
    assert data.split(b"\r\n\r\n", 1)[1] == b"64\r\n" + b"x" * 10


def test_length_understated_keeps_the_surplus_on_the_connection() -> None:
    with HostileServer("length_understated", declared=2, body=b"{}EXTRA") as server:
        with connect(server.url, timeout=0.2) as sock:
            sock.sendall(REQUEST)
            data = read_all(sock)
            sock.sendall(REQUEST)  # the connection stays open for the next request
            again = read_all(sock)
        assert server.hits == 2
    assert b"Content-Length: 2\r\n" in data
    assert data.endswith(b"\r\n\r\n{}EXTRA")
    assert again.endswith(b"{}EXTRA")


@pytest.mark.parametrize("then", ["close", "hold"])
def test_length_overstated(then: str) -> None:
    with HostileServer("length_overstated", declared=10, body=b"{}", then=then) as server:
        with connect(server.url, timeout=0.5) as sock:
            sock.sendall(REQUEST)
            started = time.monotonic()
            data = read_all(sock)
            waited = time.monotonic() - started
    assert b"Content-Length: 10\r\n" in data
    assert data.endswith(b"\r\n\r\n{}")
    if then == "hold":
        assert waited >= 0.4  # only our own timeout ended the read
    else:
        assert waited < 0.4


def test_length_omitted_ends_at_close() -> None:
    with HostileServer("length_omitted", size=20) as server:
        data = exchange(server.url)
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Content-Length" not in head
    assert b"Transfer-Encoding" not in head
    assert body == b'{"pad":"' + b"x" * 10 + b'"}'


def test_invalid_json_default() -> None:
    with HostileServer("invalid_json") as server:
        data = exchange(server.url, REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert data.endswith(b'\r\n\r\n{"items": [')


@pytest.mark.parametrize(
    ("form", "marker"),
    [
        ("bare_lf", b"HTTP/1.1 200 OK\nConnection: close\n"),
        ("obs_fold", b"X-Folded: one\r\n two\r\n"),
        ("nul", b"X-Nul: a\x00b\r\n"),
        ("long_line", b"X-Long: " + b"a" * 1000),
        ("many_headers", b"X-H199: 199\r\n"),
    ],
)
def test_header_injection_response_forms(form: str, marker: bytes) -> None:
    with HostileServer("header_injection", variant="response", form=form) as server:
        data = exchange(server.url)
    assert marker in data
    assert data.endswith(b"{}")


def test_header_injection_caller() -> None:
    with HostileServer("header_injection") as server:
        whoami = b"GET /v1/auth/whoami HTTP/1.1\r\nConnection: close\r\n\r\n"
        data = exchange(server.url, whoami)
        other = exchange(server.url, REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert json.loads(data.split(b"\r\n\r\n", 1)[1]) == {"caller": "user:x\r\nX-Injected: 1"}
    assert other.endswith(b"\r\n\r\n{}")


def test_redirect_elsewhere() -> None:
    with HostileServer("redirect_elsewhere", location="http://127.0.0.1:9/x") as server:
        data = exchange(server.url, REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert data.startswith(b"HTTP/1.1 307 Temporary Redirect\r\n")
    assert b"Location: http://127.0.0.1:9/x\r\n" in data


def test_gzip_body() -> None:
    with HostileServer("gzip_body", size=100) as server:
        data = exchange(server.url, REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"Content-Encoding: gzip" in head
    assert f"Content-Length: {len(body)}".encode() in head
    assert gzip.decompress(body) == b'{"pad":"' + b"x" * 90 + b'"}'


def test_non_http_bytes_get_a_400() -> None:
    with CountingServer(200) as server:
        data = exchange(server.url, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        assert server.hits == 0
    assert data.startswith(b"HTTP/1.1 400 ")


def test_unknown_behaviours_and_missing_parameters() -> None:
    assert "slow_headers" in BEHAVIOURS
    assert len(BEHAVIOURS) == 12
    with pytest.raises(ValueError):
        HostileServer("teapot")
    with pytest.raises(TypeError):
        HostileServer("chunk_cut", declared=3)
    with pytest.raises(ValueError):
        HostileServer("header_injection", variant="sideways")
    with pytest.raises(ValueError):
        HostileServer("echo_credential", form="morse")
    with pytest.raises(ValueError):
        HostileServer("header_injection", variant="response", form="other")


def test_unused_url_refuses_connections() -> None:
    url = unused_url()
    assert url.startswith("http://127.0.0.1:")
    with pytest.raises(OSError):
        connect(url, timeout=1.0).close()


def test_close_is_prompt_with_a_slow_answer_and_an_idle_connection() -> None:
    server = HostileServer("slow_body", rate=1, size=10_000)
    server.start()
    slow: Optional[socket.socket] = connect(server.url)
    idle: Optional[socket.socket] = connect(server.url)
    try:
        assert slow is not None
        slow.sendall(REQUEST)  # an answer that would take hours is now in flight
        slow.recv(10)
        time.sleep(0.1)
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 5.0
    finally:
        for sock in (slow, idle):
            if sock is not None:
                sock.close()
    server.close()  # closing twice is harmless


def test_servers_bind_only_loopback() -> None:
    with CountingServer(200) as server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.port > 0

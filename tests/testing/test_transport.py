"""HTTP-level behaviour and the transport knobs, checked byte by byte with raw sockets."""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import threading
import time
from typing import Dict, List, Tuple

import pytest

from cortex_memory.testing import DirectDouble, HostedDouble, fault

HEALTH = b'{"status":"healthy","version":"v0.10.5"}'


class Raw:
    """A raw client socket speaking just enough HTTP/1.1 to check bytes."""

    def __init__(self, url: str) -> None:
        host, port = url.rsplit("/", 1)[-1].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.buffer = b""
        self.last_head = b""

    def close(self) -> None:
        self.sock.close()

    def send(self, method: str, target: str, body: bytes = b"", **headers: str) -> None:
        lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
        lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
        if body:
            lines.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buffer += chunk
        return bool(chunk)

    def head(self) -> Tuple[int, Dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buffer:
            assert self._fill(), f"closed before the head: {self.buffer!r}"
        raw_head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = raw_head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.lower()] = value[1:] if value.startswith(" ") else value
        return status, headers, raw_head

    def response(self) -> Tuple[int, Dict[str, str], bytes]:
        status, headers, self.last_head = self.head()
        length = int(headers["content-length"])
        while len(self.buffer) < length:
            assert self._fill(), "closed mid-body"
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, headers, body

    def rest(self) -> bytes:
        """Everything until the server closes."""
        while self._fill():
            pass
        data, self.buffer = self.buffer, b""
        return data


@pytest.fixture
def double():
    with DirectDouble() as made:
        yield made


@pytest.fixture
def raw(double):
    client = Raw(double.url)
    yield client
    client.close()


def test_keep_alive_and_nodelay(double, raw) -> None:
    for _ in range(3):
        raw.send("GET", "/v1/admin/health")
        status, headers, body = raw.response()
        assert (status, body) == (200, HEALTH)
        assert headers["content-type"] == "application/json"
        assert "connection" not in headers
    assert double.state.counters["connections"] == 1
    server_side = list(double._server._connections)
    assert len(server_side) == 1
    assert server_side[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_each_response_is_one_socket_write(double, raw, monkeypatch) -> None:
    port = int(double.url.rsplit(":", 1)[1])
    writes: List[int] = []
    original = socket.socket.sendall

    def counting(self, data, *args):
        if self.getsockname()[1] == port:
            writes.append(len(data))
        return original(self, data, *args)

    monkeypatch.setattr(socket.socket, "sendall", counting)
    raw.send("GET", "/v1/admin/health")
    status, _, body = raw.response()
    raw.send("GET", "/v1/nothing")
    assert raw.response()[0] == 404
    monkeypatch.undo()
    assert status == 200
    assert len(writes) == 2
    assert writes[0] > len(body)


def test_connection_close_is_honoured(raw) -> None:
    raw.send("GET", "/v1/admin/health", Connection="close")
    _, headers, body = raw.response()
    assert headers["connection"] == "close"
    assert body == HEALTH
    assert raw.rest() == b""


def test_405_names_the_allowed_methods(raw) -> None:
    raw.send("DELETE", "/v1/scopes")
    status, headers, body = raw.response()
    assert (status, body, headers["content-length"]) == (405, b"", "0")
    assert headers["allow"] == "GET, POST"
    assert "content-type" not in headers


def test_chunked_request_body_is_read(double, raw) -> None:
    body = b'{"scope":"app:a","content":{"text":"chunky"}}'
    head = (
        "POST /v1/experience HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunks = f"{len(body[:10]):x}\r\n".encode() + body[:10] + b"\r\n"
    chunks += f"{len(body[10:]):x}\r\n".encode() + body[10:] + b"\r\n0\r\n\r\n"
    raw.sock.sendall(head.encode() + chunks)
    assert raw.response()[0] == 202
    assert double.state.log.events[0]["content"]["text"] == "chunky"


def test_drop_connection_after_bytes(double, raw) -> None:
    double.state.drop_connection_after_bytes = fault(5)
    raw.send("GET", "/v1/admin/health")
    status, headers, _ = raw.head()
    assert status == 200
    assert headers["content-length"] == str(len(HEALTH))
    assert "connection" not in headers
    assert raw.rest() == HEALTH[:5]


def test_truncate_body_is_a_complete_message(double, raw) -> None:
    double.state.truncate_body = fault(7)
    raw.send("GET", "/v1/admin/health")
    assert raw.response()[2] == HEALTH[:7]
    raw.send("GET", "/v1/admin/health")
    assert raw.response()[2] == HEALTH  # same connection, fault used up


def test_slow_body(double, raw) -> None:
    double.state.slow_body_bytes_per_second = 200  # 10 bytes every 50 ms: 4 pieces
    started = time.monotonic()
    raw.send("GET", "/v1/admin/health")
    status, headers, body = raw.response()
    assert (status, body) == (200, HEALTH)
    assert headers["content-length"] == str(len(HEALTH))
    assert time.monotonic() - started >= 0.1


def test_oversize_body_is_exact_valid_json(double, raw) -> None:
    double.state.oversize_body_bytes = 200_000
    raw.send("GET", "/v1/admin/health")
    _, headers, body = raw.response()
    assert headers["content-length"] == "200000"
    assert len(body) == 200_000
    assert json.loads(body) == {"pad": "x" * 199_990}


def test_tiny_oversize_is_still_json(double, raw) -> None:
    double.state.oversize_body_bytes = 4
    raw.send("GET", "/v1/admin/health")
    body = raw.response()[2]
    assert len(body) == 4
    assert json.loads(body) == 0


def test_gzip_body(double, raw) -> None:
    double.state.gzip_body = True
    raw.send("GET", "/v1/admin/health", Accept_Encoding="identity")
    _, headers, body = raw.response()
    assert headers["content-encoding"] == "gzip"
    assert int(headers["content-length"]) == len(body)
    assert gzip.decompress(body) == HEALTH


def test_gzip_of_an_oversize_body_stays_small(double, raw) -> None:
    double.state.oversize_body_bytes = 5_000_000
    double.state.gzip_body = True
    raw.send("GET", "/v1/admin/health")
    body = raw.response()[2]
    assert len(body) < 100_000
    inflated = gzip.decompress(body)
    assert len(inflated) == 5_000_000
    assert inflated.startswith(b'{"pad":"xxx')
    assert inflated.endswith(b'x"}')


def test_malformed_json_even_on_failures(double, raw) -> None:
    double.state.malformed_json = True
    raw.send("GET", "/v1/auth/whoami")  # no bearer: whoami refuses it with 401
    status, headers, body = raw.response()
    assert (status, body) == (401, b'{"truncated": ')
    assert headers["content-type"] == "application/json"


def test_order_malformed_then_truncate(double, raw) -> None:
    double.state.malformed_json = True
    double.state.truncate_body = 5
    raw.send("GET", "/v1/admin/health")
    _, headers, body = raw.response()
    assert (headers["content-length"], body) == ("5", b'{"tru')


def test_order_oversize_then_gzip_then_truncate(double, raw) -> None:
    double.state.oversize_body_bytes = 100_000
    double.state.gzip_body = True
    double.state.truncate_body = 12
    raw.send("GET", "/v1/admin/health")
    body = raw.response()[2]
    assert len(body) == 12
    assert body.startswith(b"\x1f\x8b")  # the gzip magic: compressed before the cut


def test_rate_limit_headers_only_on_429(double, raw) -> None:
    double.state.retry_after_seconds = 3
    double.state.ratelimit_reset_seconds = " 7 "
    raw.send("GET", "/v1/admin/health")
    _, headers, _ = raw.response()
    assert "retry-after" not in headers
    assert "ratelimit-reset" not in headers
    double.state.fail_all = (429, "RATE_LIMITED")
    raw.send("GET", "/v1/admin/health")
    status, headers, _ = raw.response()
    assert status == 429
    assert b"\r\nRetry-After: 3\r\n" in raw.last_head + b"\r\n"
    assert b"\r\nRateLimit-Reset:  7 " in raw.last_head
    double.state.retry_after_seconds = "Wed, 21 Oct 2015 07:28:00 GMT"
    raw.send("GET", "/v1/admin/health")
    assert raw.response()[1]["retry-after"] == "Wed, 21 Oct 2015 07:28:00 GMT"


def test_hosted_out_of_envelope_429_with_retry_after() -> None:
    with HostedDouble(rate_limit_events=1, retry_after_seconds=2) as hosted:
        client = Raw(hosted.url)
        try:
            client.send("GET", "/memory/events?scope=app:a", Authorization="Bearer t")
            status, headers, body = client.response()
        finally:
            client.close()
    assert (status, headers["retry-after"]) == (429, "2")
    assert json.loads(body) == {
        "error": {
            "message": "Rate limit exceeded. Please retry after a brief wait.",
            "type": "rate_limit_error",
        }
    }


def _experience(raw: Raw, text: str = "x") -> None:
    body = json.dumps({"scope": "app:a", "content": {"text": text}}).encode()
    raw.send(
        "POST",
        "/v1/experience",
        body,
        Authorization="Bearer t",
        Content_Type="application/json",
    )


def test_reset_after_request_records_nothing(double, raw) -> None:
    double.state.reset_after = fault("request")
    _experience(raw)
    with pytest.raises(ConnectionResetError):
        raw.rest()
    assert double.state.requests() == []
    assert double.state.event_count() == 0
    assert double.state.counters["resets"] == 1
    again = Raw(double.url)
    try:
        _experience(again)
        assert again.response()[0] == 202
    finally:
        again.close()


def test_reset_after_response_applies_the_write(double, raw) -> None:
    double.state.reset_after = fault("response", route="POST /v1/experience")
    _experience(raw)
    with pytest.raises(ConnectionResetError):
        raw.rest()
    assert double.state.event_count() == 1
    assert double.state.counters["resets"] == 1


def test_a_routed_fault_is_consumed_only_by_matching_responses(double, raw) -> None:
    double.state.truncate_body = fault(3, times=2, route="GET /v1/admin/version")
    for _ in range(3):
        raw.send("GET", "/v1/admin/health")
        assert raw.response()[2] == HEALTH
    bodies = []
    for _ in range(3):
        raw.send("GET", "/v1/admin/version")
        bodies.append(raw.response()[2])
    assert bodies[0] == bodies[1] == b'{"v'
    assert json.loads(bodies[2])["version"] == "v0.10.5"


def test_a_bare_reset_value_fires_on_every_response(double) -> None:
    double.state.reset_after = "response"
    for _ in range(2):
        client = Raw(double.url)
        try:
            client.send("GET", "/v1/admin/health")
            with pytest.raises(ConnectionResetError):
                client.rest()
        finally:
            client.close()
    assert double.state.counters["resets"] == 2


def _held_open(double: DirectDouble) -> List[Raw]:
    """One slow body in flight, one idle keep-alive connection, one ?wait= hold."""
    idle = Raw(double.url)
    idle.send("GET", "/v1/admin/health")
    idle.response()
    slow = Raw(double.url)
    double.state.slow_body_bytes_per_second = fault(10, route="GET /v1/admin/version")
    slow.send("GET", "/v1/admin/version")
    slow.head()
    held = Raw(double.url)
    double.state.index_delay_seconds = 3600.0
    body = json.dumps({"scope": "app:a", "content": {"text": "wait"}}).encode()
    held.send(
        "POST",
        "/v1/experience?wait=indexed",
        body,
        Authorization="Bearer t",
        Content_Type="application/json",
    )
    deadline = time.monotonic() + 10
    while double.state.event_count() == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return [idle, slow, held]


def test_close_is_prompt_with_connections_open() -> None:
    double = DirectDouble().start()
    clients = _held_open(double)
    before = threading.active_count()
    started = time.monotonic()
    double.close()
    elapsed = time.monotonic() - started
    try:
        assert elapsed < 5.0
        for client in clients:
            with contextlib.suppress(ConnectionResetError):
                client.rest()
        assert threading.active_count() < before
        double.close()  # idempotent
    finally:
        for client in clients:
            client.close()
    with pytest.raises(RuntimeError):
        double.start()


def test_url_needs_a_started_double() -> None:
    double = DirectDouble()
    with pytest.raises(RuntimeError):
        _ = double.url
    assert "not started" in repr(double)
    double.close()


def test_start_on_a_port_in_use_raises_and_leaks_nothing() -> None:
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        double = DirectDouble()
        with pytest.raises(OSError):
            double.start(port=taken.getsockname()[1])
        double.close()
    finally:
        taken.close()

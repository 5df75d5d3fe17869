"""The pool's connections write a request with a body in one socket write (pool.py).

A recorder wraps each connection's real socket (127.0.0.1) and notes every
``sendall``; the server on the other end checks the bytes arrive unchanged.
"""

from __future__ import annotations

import socket
from typing import Any, Iterator, List, Optional, Tuple

import pytest

from cortex_memory.cortex.transport.pool import JOINED_BODY, new_pool_manager
from cortex_memory.testing.hostile import LoopbackServer, RawRequest


class Recorder:
    """A real socket that notes the bytes of every ``sendall``."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.writes: List[bytes] = []

    def sendall(self, data: Any) -> None:
        self.writes.append(bytes(data))
        self._sock.sendall(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def echo(request: RawRequest) -> Tuple[int, dict, object]:
    return 200, {}, {"got": len(request.body)}


def recorded_connection(url: str) -> Tuple[Any, Any, Recorder]:
    """A connected connection of the engine's pool class, its pool, and its recorder."""
    manager = new_pool_manager()
    port = int(url.rsplit(":", 1)[1].strip("/"))
    pool = manager.connection_from_host("127.0.0.1", port=port, scheme="http")
    conn = pool._get_conn()
    conn.connect()
    recorder = Recorder(conn.sock)
    conn.sock = recorder
    return conn, manager, recorder


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(echo) as running:
        yield running


def exchange(
    server: LoopbackServer, method: str, body: Optional[bytes], **options: Any
) -> Tuple[List[bytes], bytes]:
    conn, manager, recorder = recorded_connection(server.url)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, "/v1/experience", body=body, headers=headers, **options)
        response = conn.getresponse()
        assert response.status == 200
        response.read()
    finally:
        conn.close()
        manager.clear()
    [raw] = server.raw_requests
    return recorder.writes, raw


def test_a_small_body_goes_out_with_the_head_in_one_write(server: LoopbackServer) -> None:
    body = b'{"scope":"s","text":"hello"}'
    writes, raw = exchange(server, "POST", body)
    assert len(writes) == 1
    assert writes[0] == raw
    assert raw.endswith(b"\r\n\r\n" + body)
    assert b"Content-Length: %d\r\n" % len(body) in raw


def test_a_large_body_keeps_its_own_write(server: LoopbackServer) -> None:
    body = b"[" + b"1," * (JOINED_BODY // 2) + b"1]"
    writes, raw = exchange(server, "POST", body)
    assert len(writes) == 2
    assert writes[1] == body
    assert writes[0] + writes[1] == raw


def test_an_empty_body_is_one_write(server: LoopbackServer) -> None:
    writes, raw = exchange(server, "POST", b"")
    assert writes == [raw]
    assert b"Content-Length: 0\r\n" in raw


def test_a_get_is_one_write(server: LoopbackServer) -> None:
    writes, raw = exchange(server, "GET", None)
    assert writes == [raw]
    assert raw.startswith(b"GET /v1/experience HTTP/1.1\r\n")


def test_a_chunked_body_sends_its_first_chunk_with_the_head() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        conn, manager, recorder = recorded_connection(url)
        accepted, _ = listener.accept()
        try:
            conn.request("POST", "/bulk", body=iter([b"ab", b"cde"]), chunked=True)
            expected = b"2\r\nab\r\n", b"3\r\ncde\r\n", b"0\r\n\r\n"
            assert len(recorder.writes) == 3
            assert recorder.writes[0].endswith(b"\r\n\r\n" + expected[0])
            assert b"Transfer-Encoding: chunked\r\n" in recorder.writes[0]
            assert tuple(recorder.writes[1:]) == expected[1:]
            accepted.settimeout(5)
            received = b""
            while not received.endswith(b"0\r\n\r\n"):
                received += accepted.recv(65536)
            assert received == b"".join(recorder.writes)
        finally:
            accepted.close()
            conn.close()
            manager.clear()


def test_the_connection_is_reused_for_the_next_request(server: LoopbackServer) -> None:
    conn, manager, recorder = recorded_connection(server.url)
    try:
        for text in (b'{"n":1}', b'{"n":22}'):
            conn.request("POST", "/v1/experience", body=text, headers={})
            response = conn.getresponse()
            assert response.status == 200
            response.read()
    finally:
        conn.close()
        manager.clear()
    assert len(recorder.writes) == 2
    assert recorder.writes == server.raw_requests
    assert [request.body for request in server.requests] == [b'{"n":1}', b'{"n":22}']

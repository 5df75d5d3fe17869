"""Loopback proxies and a TLS front for the proxy and TLS tests: real sockets, recorded.

* :class:`RecordingProxy` is an HTTP proxy on ``127.0.0.1``: ``CONNECT`` opens a
  tunnel (a raw byte pipe), any other method is forwarded (absolute-form target,
  one request per connection). It records every request head it reads and the
  bytes that crossed its tunnels, and can ask for ``Proxy-Authorization``,
  refuse tunnels with a status, stall, speak TLS itself (an ``https://`` proxy)
  and resolve test host names (``memory.test``) to loopback ports, as a
  company proxy resolves names the client cannot.
* :class:`TlsFront` terminates TLS on ``127.0.0.1`` with a test certificate and
  pipes the plain bytes to a plain server (a double), recording what it
  decrypted and whether the client showed a certificate.

Every socket is closed by ``close()`` (or leaving the ``with`` block).
"""

from __future__ import annotations

import base64
import contextlib
import socket
import ssl
import threading
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

_MAX_HEAD = 64 * 1024
_RECORD_CAP = 4 * 1024 * 1024


@dataclass
class Head:
    """One request head a proxy read: method, target and headers (names lowercased)."""

    method: str
    target: str
    headers: Dict[str, str]
    raw: bytes


class _Acceptor:
    """A threaded loopback acceptor; ``serve(conn)`` runs on its own thread per connection."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: List[socket.socket] = []
        self._threads: List[threading.Thread] = []
        self._closed = threading.Event()
        self.connections = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def track(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self._sockets.append(sock)
        return sock

    def spawn(self, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            self.track(conn)
            self.spawn(lambda conn=conn: self._guard(conn))

    def _guard(self, conn: socket.socket) -> None:
        try:
            self.serve(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            # Wakes the accept() blocked in the acceptor thread (close alone does not).
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._thread.join(5)
        for thread in threads:
            thread.join(5)


def _pipe(source: socket.socket, sink: socket.socket, record: Optional[bytearray]) -> None:
    """Copy ``source`` to ``sink`` until EOF, keeping up to 4 MiB in ``record``."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            if record is not None and len(record) < _RECORD_CAP:
                record.extend(data)
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            # A TLS socket cannot half-close: end it both ways so the peer sees the end.
            sink.shutdown(socket.SHUT_RDWR if isinstance(sink, ssl.SSLSocket) else socket.SHUT_WR)


def _read_head(conn: socket.socket) -> Tuple[bytes, bytes]:
    """The bytes up to and including the blank line, and any that followed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a full head")
        data += chunk
        if len(data) > _MAX_HEAD:
            raise ConnectionError("head too large")
    end = data.index(b"\r\n\r\n") + 4
    return data[:end], data[end:]


def _parse_head(raw: bytes) -> Head:
    lines = raw.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return Head(method, target, headers, raw)


def basic(user: str, password: str) -> str:
    """The ``Proxy-Authorization`` value for ``user:password``."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


@dataclass
class ProxyOptions:
    """How a :class:`RecordingProxy` behaves."""

    auth: Optional[str] = None  # the Proxy-Authorization value it requires
    refuse: Optional[int] = None  # answer every CONNECT with this status
    # "connect": never answer a CONNECT; "tunnel": 200, then silence; "drip-connect": the
    # answer's head one byte every 50 ms, forever; "drip-tunnel": 200, then the start of a
    # TLS record that never ends, one byte every 50 ms.
    stall: Optional[str] = None
    hosts: Mapping[str, int] = field(default_factory=dict)  # name -> loopback port
    tls: Optional[ssl.SSLContext] = None  # speak TLS to clients (an https:// proxy)


class RecordingProxy(_Acceptor):
    """A loopback HTTP proxy that records what it saw (see the module docs)."""

    def __init__(self, options: Optional[ProxyOptions] = None) -> None:
        self.options = options or ProxyOptions()
        self.heads: List[Head] = []
        self.tunnelled = bytearray()  # client-to-server bytes that crossed a tunnel
        self.forwarded = bytearray()  # what a forwarded request sent on, head and body
        super().__init__()
        scheme = "https" if self.options.tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"

    def __enter__(self) -> RecordingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url_with(self, user: str, password: str) -> str:
        scheme, rest = self.url.split("://")
        return f"{scheme}://{user}:{password}@{rest}"

    @property
    def methods(self) -> List[str]:
        with self._lock:
            return [head.method for head in self.heads]

    def _upstream(self, host: str, port: int) -> socket.socket:
        mapped = self.options.hosts.get(host.lower())
        if mapped is not None:
            return self.track(socket.create_connection(("127.0.0.1", mapped), timeout=5))
        if host.strip("[]") in ("127.0.0.1", "localhost", "::1"):
            return self.track(socket.create_connection((host.strip("[]"), port), timeout=5))
        raise ConnectionError("not a test host")

    def serve(self, conn: socket.socket) -> None:
        if self.options.tls is not None:
            conn = self.track(self.options.tls.wrap_socket(conn, server_side=True))
        raw, rest = _read_head(conn)
        head = _parse_head(raw)
        with self._lock:
            self.heads.append(head)
        options = self.options
        if options.stall == "connect":
            self._closed.wait(30)
            return
        if options.stall == "drip-connect":
            conn.sendall(b"HTTP/1.1 200 Connection established\r\nX-Drip: ")
            self._drip(conn)
            return
        if options.auth is not None and head.headers.get("proxy-authorization") != options.auth:
            conn.sendall(
                b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n'
                b"Connection: close\r\n\r\n"
            )
            return
        if head.method == "CONNECT":
            self._tunnel(conn, head, rest)
        else:
            self._forward(conn, head, rest)

    def _drip(self, conn: socket.socket) -> None:
        while not self._closed.wait(0.05):
            conn.sendall(b"a")

    def _tunnel(self, conn: socket.socket, head: Head, rest: bytes) -> None:
        if self.options.refuse is not None:
            conn.sendall(
                f"HTTP/1.1 {self.options.refuse} Refused\r\nContent-Length: 0\r\n\r\n".encode()
            )
            return
        host, _, port = head.target.rpartition(":")
        try:
            upstream = self._upstream(host, int(port))
        except (OSError, ValueError):
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if self.options.stall == "tunnel":
            self._closed.wait(30)
            return
        if self.options.stall == "drip-tunnel":
            conn.recv(65536)  # the client's hello
            conn.sendall(b"\x16\x03\x03\x40\x00")  # a handshake record of 16 KiB...
            self._drip(conn)  # ...that never arrives
            return
        if rest:
            self.tunnelled.extend(rest)
            upstream.sendall(rest)
        back = threading.Thread(target=_pipe, args=(upstream, conn, None), daemon=True)
        back.start()
        _pipe(conn, upstream, self.tunnelled)
        back.join(10)
        upstream.close()

    def _forward(self, conn: socket.socket, head: Head, rest: bytes) -> None:
        target = urlsplit(head.target)
        length = int(head.headers.get("content-length", "0"))
        body = rest
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return
            body += chunk
        try:
            upstream = self._upstream(target.hostname or "", target.port or 80)
        except (OSError, ConnectionError):
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        path = target.path + (f"?{target.query}" if target.query else "")
        kept = [
            f"{name}: {value}"
            for name, value in head.headers.items()
            if name not in ("proxy-authorization", "proxy-connection", "connection")
        ]
        out = "\r\n".join([f"{head.method} {path} HTTP/1.1", *kept, "Connection: close", "", ""])
        sent = out.encode("latin-1") + body[:length]
        with self._lock:
            self.forwarded.extend(sent)
        upstream.sendall(sent)
        answer_head, answer_rest = _read_head(upstream)
        lines = [
            line
            for line in answer_head.decode("latin-1").split("\r\n")
            if line and not line.lower().startswith("connection:")
        ]
        conn.sendall("\r\n".join([*lines, "Connection: close", "", ""]).encode("latin-1"))
        conn.sendall(answer_rest)
        _pipe(upstream, conn, None)
        upstream.close()


class TlsFront(_Acceptor):
    """TLS on ``127.0.0.1`` in front of a plain server on ``upstream_port`` (module docs)."""

    def __init__(self, context: ssl.SSLContext, upstream_port: int) -> None:
        self.context = context
        self.upstream_port = upstream_port
        self.decrypted = bytearray()
        self.handshakes = 0
        self.failed_handshakes = 0
        self.client_certs: List[Optional[dict]] = []  # type: ignore[type-arg]
        super().__init__()

    def __enter__(self) -> TlsFront:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}"

    def serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            tls = self.track(self.context.wrap_socket(conn, server_side=True))
        except (ssl.SSLError, OSError):
            with self._lock:
                self.failed_handshakes += 1
            return
        tls.settimeout(None)
        with self._lock:
            self.handshakes += 1
            self.client_certs.append(tls.getpeercert() or None)
        upstream = self.track(socket.create_connection(("127.0.0.1", self.upstream_port)))
        back = threading.Thread(target=_pipe, args=(upstream, tls, None), daemon=True)
        back.start()
        _pipe(tls, upstream, self.decrypted)
        back.join(10)
        upstream.close()

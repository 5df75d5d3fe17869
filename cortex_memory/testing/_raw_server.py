"""The threaded raw-socket server under every server in :mod:`cortex_memory.testing.hostile`.

:class:`RawServer` listens on ``127.0.0.1`` (an ephemeral port), reads each
request's bytes itself and records them (``.requests``, ``.raw_requests``,
``.hits``, ``.connections``); a subclass answers through :meth:`RawServer._respond`,
writing whatever bytes it likes. Each connection gets a daemon thread;
``close()`` cuts every connection and joins the threads, so it returns promptly
even with a slow answer in flight or an idle keep-alive connection open.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from typing import Any, Callable, Dict, List, Optional, Set

from cortex_memory.testing._raw_http import CLOSE, RawRequest, complete

__all__ = ["HOST", "RawServer", "unused_url"]

HOST = "127.0.0.1"
_MAX_HEAD = 1024 * 1024
_MAX_BODY = 256 * 1024 * 1024
# What the start of an HTTP request can look like: a method token, then a space.
_HTTP_START = re.compile(rb"[A-Z]{0,16}(?: |$)")
_JOIN = 5.0  # seconds close() waits for each thread


class RawServer:
    """A threaded raw-socket server; subclasses implement :meth:`_respond`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener: Optional[socket.socket] = None
        self._threads: List[threading.Thread] = []
        self._conns: Set[socket.socket] = set()
        self._requests: List[RawRequest] = []
        self._hits = 0
        self._accepted = 0
        self._port = 0

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> RawServer:
        """Bind ``127.0.0.1:0`` and start serving (``with`` does this)."""
        if self._listener is not None:
            return self
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((HOST, 0))
        listener.listen(64)
        listener.settimeout(0.2)  # the accept loop looks at the stop flag this often
        self._listener = listener
        self._port = listener.getsockname()[1]
        self._spawn(self._accept_loop, "accept")
        return self

    def close(self) -> None:
        """Stop serving: cut every connection and wait for the threads (a few seconds at most)."""
        self._stop.set()
        if self._listener is not None:
            # Wakes the accept loop at once on Linux; elsewhere its timeout does.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
        with self._lock:
            conns = list(self._conns)
            threads = list(self._threads)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        # A connection accepted while we were stopping may have started a thread
        # after the snapshot; look again until every thread is done.
        while threads:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join(_JOIN)
            with self._lock:
                late = [c for c in self._conns if c not in conns]
                threads = [t for t in self._threads if t.is_alive() and t not in threads]
            for conn in late:
                conns.append(conn)
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- what tests read -------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port listened on."""
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{HOST}:{self._port}"

    @property
    def hits(self) -> int:
        """Requests read (a :class:`CountingServer` does not count whoami)."""
        with self._lock:
            return self._hits

    @property
    def connections(self) -> int:
        """Connections accepted so far (keep-alive reuse shows as fewer connections than hits)."""
        with self._lock:
            return self._accepted

    @property
    def requests(self) -> List[RawRequest]:
        """Every request read, parsed, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def raw_requests(self) -> List[bytes]:
        """Every request's bytes, exactly as received."""
        with self._lock:
            return [r.raw for r in self._requests]

    # -- machinery ---------------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], name: str, *args: Any) -> None:
        thread = threading.Thread(
            target=target, args=args, name=f"{type(self).__name__}-{name}", daemon=True
        )
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with self._lock:
                if self._stop.is_set():
                    conn.close()
                    return
                self._conns.add(conn)
                self._accepted += 1
            self._spawn(self._serve, "conn", conn)

    def _serve(self, conn: socket.socket) -> None:
        buffer = bytearray()
        try:
            while not self._stop.is_set():
                request = self._read_request(conn, buffer)
                if request is None:
                    return
                self._record(request)
                keep = self._respond(conn, request)
                if not keep or (request.header("connection") or "").lower() == "close":
                    return
        except OSError:
            return
        finally:
            with self._lock:
                self._conns.discard(conn)
            with contextlib.suppress(OSError):
                conn.close()

    def _record(self, request: RawRequest) -> None:
        with self._lock:
            self._requests.append(request)
            if self._counts(request):
                self._hits += 1

    def _counts(self, request: RawRequest) -> bool:
        return True

    def _read_request(self, conn: socket.socket, buffer: bytearray) -> Optional[RawRequest]:
        while b"\r\n\r\n" not in buffer:
            if len(buffer) > _MAX_HEAD:
                return None
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buffer += chunk
            if _HTTP_START.match(buffer) is None:
                # Not HTTP (a TLS ClientHello, say): answer like a plain HTTP
                # server would, so the client fails fast instead of waiting.
                self._send(conn, complete(400, [CLOSE], b"", None))
                return None
        end = buffer.index(b"\r\n\r\n") + 4
        head = bytes(buffer[:end])
        lines = head[:-4].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            return None
        headers: Dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            return None
        if length < 0 or length > _MAX_BODY:
            return None
        while len(buffer) < end + length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buffer += chunk
        raw = bytes(buffer[: end + length])
        del buffer[: end + length]
        return RawRequest(parts[0], parts[1], headers, raw[end:], raw)

    def _send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)

    def _drip(self, conn: socket.socket, data: bytes, piece: int, gap: float) -> bool:
        """Send ``data`` ``piece`` bytes every ``gap`` seconds; False when stopped or cut."""
        for start in range(0, len(data), piece):
            if self._stop.is_set():
                return False
            try:
                conn.sendall(data[start : start + piece])
            except OSError:
                return False
            if start + piece < len(data) and self._stop.wait(gap):
                return False
        return True

    def _flood(self, conn: socket.socket, data: bytes) -> None:
        """Send ``data`` over and over until the peer leaves or we stop."""
        while not self._stop.is_set():
            try:
                conn.sendall(data)
            except OSError:
                return

    def _hold(self, conn: socket.socket) -> None:
        """Keep the connection open, reading nothing, until the peer closes or we stop."""
        while not self._stop.is_set():
            try:
                if not conn.recv(65536):
                    return
            except OSError:
                return

    def _respond(self, conn: socket.socket, request: RawRequest) -> bool:
        raise NotImplementedError


def unused_url() -> str:
    """A loopback URL nothing listens on (an ephemeral port, bound and released)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    finally:
        probe.close()
    return f"http://{HOST}:{port}"

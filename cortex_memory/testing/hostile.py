"""Raw-socket HTTP servers for transport tests (doubles.md §9).

Each server is a context manager listening on ``127.0.0.1`` (an ephemeral
port), with ``.url``, ``.hits`` (requests read) and ``.raw_requests`` (every
request's bytes, exactly as received; ``.requests`` has them parsed). They
write their answers byte by byte with plain sockets, so they can misbehave in
ways a real HTTP server library never would:

* :class:`HostileServer` answers every request with one *behaviour*: slow
  headers, slow body, an endless chunked body, a chunk cut short, an
  understated, overstated or omitted ``Content-Length``, invalid JSON, header
  injection, a redirect to another host, or a gzip body;
* :class:`CountingServer` answers every route with one status and counts the
  requests (``/v1/auth/whoami`` answers a bare 404 and is not counted);
* :class:`LoopbackServer` answers with a handler function;
* :func:`unused_url` is a URL nothing listens on.

Standard library only. Nothing happens at import; ``close()`` returns promptly
even with a slow answer in flight or an idle keep-alive connection open.
"""

from __future__ import annotations

import contextlib
import gzip as _gzip
import json as _json
import re
import socket
import threading
import zlib
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)
from urllib.parse import urlsplit

__all__ = [
    "BEHAVIOURS",
    "CountingServer",
    "HostileServer",
    "LoopbackServer",
    "RawRequest",
    "unused_url",
]

_HOST = "127.0.0.1"
_MAX_HEAD = 1024 * 1024
_MAX_BODY = 256 * 1024 * 1024
_CLOSE = ("Connection", "close")
# What the start of an HTTP request can look like: a method token, then a space.
_HTTP_START = re.compile(rb"[A-Z]{0,16}(?: |$)")
_DRIP_GAP = 0.05  # seconds between the pieces of a slow body
_JOIN = 5.0  # seconds close() waits for each thread


@dataclass(frozen=True)
class RawRequest:
    """One request as a raw server read it."""

    method: str
    target: str
    headers: Dict[str, str] = field(repr=False)
    body: bytes = field(repr=False)
    raw: bytes = field(repr=False)

    @property
    def path(self) -> str:
        """The target without its query."""
        return urlsplit(self.target).path

    @property
    def query(self) -> str:
        """The raw query string (without ``?``)."""
        return urlsplit(self.target).query

    def header(self, name: str) -> Optional[str]:
        """A header's value (names are case-insensitive), ``None`` when absent."""
        return self.headers.get(name.lower())

    def json(self) -> Any:
        """The body parsed as JSON."""
        return _json.loads(self.body)


HandlerResult = Tuple[int, Union[Mapping[str, str], Sequence[Tuple[str, str]]], Any]
"""What a :class:`LoopbackServer` handler returns: ``(status, headers, body)``."""


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _head(status: int, headers: Iterable[Tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_reason(status)}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _json_bytes(value: Any) -> bytes:
    return _json.dumps(value, separators=(",", ":")).encode("utf-8")


def _padded_json(size: int) -> bytes:
    """A valid JSON document of exactly ``size`` bytes (``{"pad":"xxx…"}``), or filler if tiny."""
    frame = len(b'{"pad":""}')
    if size < frame:
        return b" " * size
    return b'{"pad":"' + b"x" * (size - frame) + b'"}'


def _gzip_json(size: int) -> bytes:
    """``_padded_json(size)`` gzip-compressed, built in 64 KiB pieces (never held whole)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    frame = len(b'{"pad":""}')
    if size < frame:
        return packer.compress(b" " * size) + packer.flush()
    out = [packer.compress(b'{"pad":"')]
    left = size - frame
    piece = b"x" * 65536
    while left > 0:
        out.append(packer.compress(piece[: min(left, len(piece))]))
        left -= len(piece)
    out.append(packer.compress(b'"}'))
    out.append(packer.flush())
    return b"".join(out)


class _RawServer:
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

    def start(self) -> _RawServer:
        """Bind ``127.0.0.1:0`` and start serving (``with`` does this)."""
        if self._listener is not None:
            return self
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((_HOST, 0))
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
        return f"http://{_HOST}:{self._port}"

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
                self._send(conn, _complete(400, [_CLOSE], b"", None))
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


def _normalise_headers(
    headers: Union[Mapping[str, str], Sequence[Tuple[str, str]], None],
) -> List[Tuple[str, str]]:
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return [(str(k), str(v)) for k, v in headers.items()]
    return [(str(k), str(v)) for k, v in headers]


def _says_close(headers: Iterable[Tuple[str, str]]) -> bool:
    return any(n.lower() == "connection" and v.lower() == "close" for n, v in headers)


def _body_bytes(body: Any) -> Tuple[bytes, Optional[str]]:
    if body is None:
        return b"", None
    if isinstance(body, bytes):
        return body, None
    if isinstance(body, str):
        return body.encode("utf-8"), "text/plain; charset=utf-8"
    return _json_bytes(body), "application/json"


def _complete(
    status: int, headers: Iterable[Tuple[str, str]], body: bytes, content_type: Optional[str]
) -> bytes:
    listed = list(headers)
    names = {name.lower() for name, _ in listed}
    if content_type and "content-type" not in names:
        listed.append(("Content-Type", content_type))
    if "content-length" not in names and "transfer-encoding" not in names:
        listed.append(("Content-Length", str(len(body))))
    return _head(status, listed) + body


class LoopbackServer(_RawServer):
    """A one-off server: ``handler(request) -> (status, headers, body)`` answers every request.

    ``body`` may be bytes, a str (sent as UTF-8 text) or a JSON value.
    ``Content-Length`` is added unless the handler sets it (or chunking).
    """

    def __init__(self, handler: Callable[[RawRequest], HandlerResult]) -> None:
        super().__init__()
        self._handler = handler

    def _respond(self, conn: socket.socket, request: RawRequest) -> bool:
        try:
            status, headers, body = self._handler(request)
        except Exception as exc:  # a broken handler answers 500 instead of killing the thread
            status, headers, body = 500, {}, f"handler failed: {type(exc).__name__}: {exc}"
        data, content_type = _body_bytes(body)
        listed = _normalise_headers(headers)
        self._send(conn, _complete(status, listed, data, content_type))
        return not _says_close(listed)


class CountingServer(_RawServer):
    """Answers every route with ``status`` and counts the requests in ``.hits``.

    The body is ``json`` (as JSON) when given, else ``body``. ``headers`` are
    added to every answer (``Retry-After`` for a 429, say). ``/v1/auth/whoami``
    answers a bare 404 and is not counted, so a Direct client learns "no actor".
    """

    def __init__(
        self,
        status: int,
        body: bytes = b"busy",
        json: Any = None,
        *,
        headers: Union[Mapping[str, str], Sequence[Tuple[str, str]], None] = None,
    ) -> None:
        super().__init__()
        self._status = status
        if json is not None:
            self._body, self._type = _json_bytes(json), "application/json"
        else:
            self._body, self._type = body, "text/plain"
        self._extra = _normalise_headers(headers)

    def _counts(self, request: RawRequest) -> bool:
        return request.path != "/v1/auth/whoami"

    def _respond(self, conn: socket.socket, request: RawRequest) -> bool:
        if request.path == "/v1/auth/whoami":
            self._send(conn, _complete(404, [], b"", None))
        else:
            self._send(conn, _complete(self._status, self._extra, self._body, self._type))
            return not _says_close(self._extra)
        return True


BEHAVIOURS = (
    "slow_headers",
    "slow_body",
    "endless_chunked",
    "chunk_cut",
    "length_understated",
    "length_overstated",
    "length_omitted",
    "invalid_json",
    "header_injection",
    "redirect_elsewhere",
    "gzip_body",
)
"""Every behaviour :class:`HostileServer` knows."""

_RESPONSE_FORMS = ("bare_lf", "obs_fold", "nul", "long_line", "many_headers")


class HostileServer(_RawServer):
    """Answers every request with one misbehaviour (doubles.md §9).

    ========================  =================================================================
    behaviour                 parameters (defaults)
    ========================  =================================================================
    ``slow_headers``          ``interval=1.0``: the head, one byte per interval
    ``slow_body``             ``rate`` bytes/s, ``size`` (a JSON document of that size)
    ``endless_chunked``       ``chunk=8192``, ``fill=b"x"``: chunks until the client leaves
    ``chunk_cut``             ``declared``, ``sent``: a chunk announcing more than it carries
    ``length_understated``    ``declared``, ``body``: the surplus stays on the connection
    ``length_overstated``     ``declared``, ``body``, ``then="close"`` or ``"hold"``
    ``length_omitted``        ``size`` (``None``: endless) or ``body``; ends at close
    ``invalid_json``          ``body=b'{"items": ['``
    ``header_injection``      ``variant="caller"`` (whoami's ``caller`` is ``caller=``) or
                              ``variant="response"`` with ``form=`` one of ``bare_lf``,
                              ``obs_fold``, ``nul``, ``long_line``, ``many_headers``
    ``redirect_elsewhere``    ``location``: a 307 pointing there
    ``gzip_body``             ``size`` decoded bytes (a JSON document), gzip-compressed,
                              whatever ``Accept-Encoding`` said
    ========================  =================================================================

    ``status`` (default 200) is the status of every answer that has one.
    ``spare_whoami=True`` (an addition for transport tests) answers
    ``/v1/auth/whoami`` with a bare 404 instead, so a Direct client's actor
    lookup does not meet the misbehaviour too.
    """

    def __init__(self, behaviour: str, *, status: int = 200, **params: Any) -> None:
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"unknown behaviour {behaviour!r}; known: {', '.join(BEHAVIOURS)}")
        super().__init__()
        self.behaviour = behaviour
        self.status = status
        self.spare_whoami = bool(params.pop("spare_whoami", False))
        self.params = params
        self._check(behaviour, params)

    @staticmethod
    def _check(behaviour: str, params: Mapping[str, Any]) -> None:
        required = {
            "slow_body": ("rate", "size"),
            "chunk_cut": ("declared", "sent"),
            "length_understated": ("declared", "body"),
            "length_overstated": ("declared", "body"),
            "redirect_elsewhere": ("location",),
        }.get(behaviour, ())
        missing = [name for name in required if name not in params]
        if missing:
            raise TypeError(f"{behaviour} needs {', '.join(missing)}")
        if behaviour == "header_injection":
            variant = params.get("variant", "caller")
            if variant not in ("caller", "response"):
                raise ValueError("header_injection variant must be 'caller' or 'response'")
            if variant == "response" and params.get("form", "long_line") not in _RESPONSE_FORMS:
                raise ValueError(f"header_injection form must be one of {_RESPONSE_FORMS}")

    def _json_head(self, *extra: Tuple[str, str]) -> bytes:
        return _head(self.status, [("Content-Type", "application/json"), *extra])

    def _respond(self, conn: socket.socket, request: RawRequest) -> bool:
        if self.spare_whoami and request.path == "/v1/auth/whoami":
            self._send(conn, _complete(404, [], b"", None))
            return True
        method = getattr(self, "_b_" + self.behaviour)
        return bool(method(conn, request, **self.params))

    # -- behaviours (each returns True to keep the connection for another request) ---

    def _b_slow_headers(
        self, conn: socket.socket, request: RawRequest, interval: float = 1.0
    ) -> bool:
        data = _complete(self.status, [_CLOSE], b"{}", "application/json")
        self._drip(conn, data, 1, interval)
        return False

    def _b_slow_body(
        self,
        conn: socket.socket,
        request: RawRequest,
        rate: int,
        size: int,
        body: Optional[bytes] = None,
    ) -> bool:
        payload = body if body is not None else _padded_json(size)
        self._send(conn, self._json_head(("Content-Length", str(len(payload)))))
        piece = max(1, int(rate * _DRIP_GAP))
        return self._drip(conn, payload, piece, _DRIP_GAP)

    def _b_endless_chunked(
        self, conn: socket.socket, request: RawRequest, chunk: int = 8192, fill: bytes = b"x"
    ) -> bool:
        self._send(conn, self._json_head(("Transfer-Encoding", "chunked"), _CLOSE))
        data = (fill * (chunk // max(1, len(fill)) + 1))[:chunk]
        frame = f"{len(data):x}\r\n".encode() + data + b"\r\n"
        while not self._stop.is_set():
            try:
                conn.sendall(frame)
            except OSError:
                break
        return False

    def _b_chunk_cut(
        self, conn: socket.socket, request: RawRequest, declared: int, sent: int
    ) -> bool:
        self._send(conn, self._json_head(("Transfer-Encoding", "chunked"), _CLOSE))
        self._send(conn, f"{declared:x}\r\n".encode() + b"x" * sent)
        return False

    def _b_length_understated(
        self, conn: socket.socket, request: RawRequest, declared: int, body: bytes
    ) -> bool:
        self._send(conn, self._json_head(("Content-Length", str(declared))) + body)
        return True  # the surplus stays on this connection, which stays open

    def _b_length_overstated(
        self,
        conn: socket.socket,
        request: RawRequest,
        declared: int,
        body: bytes,
        then: str = "close",
    ) -> bool:
        self._send(conn, self._json_head(("Content-Length", str(declared)), _CLOSE) + body)
        if then == "hold":
            self._hold(conn)
        return False

    def _b_length_omitted(
        self,
        conn: socket.socket,
        request: RawRequest,
        size: Optional[int] = None,
        body: Optional[bytes] = None,
    ) -> bool:
        self._send(conn, self._json_head(_CLOSE))
        if body is not None or size is not None:
            self._send(conn, body if body is not None else _padded_json(size or 0))
            return False
        piece = b"x" * 65536
        while not self._stop.is_set():
            try:
                conn.sendall(piece)
            except OSError:
                break
        return False

    def _b_invalid_json(
        self, conn: socket.socket, request: RawRequest, body: bytes = b'{"items": ['
    ) -> bool:
        self._send(conn, _complete(self.status, [], body, "application/json"))
        return True

    def _b_header_injection(
        self,
        conn: socket.socket,
        request: RawRequest,
        variant: str = "caller",
        caller: str = "user:x\r\nX-Injected: 1",
        form: str = "long_line",
    ) -> bool:
        if variant == "caller":
            body = _json_bytes({"caller": caller}) if request.path == "/v1/auth/whoami" else b"{}"
            self._send(conn, _complete(self.status, [], body, "application/json"))
            return True
        # Each malformed head also says "Connection: close" (where it can still be
        # parsed), so the client never races the close with a second request.
        status_line = f"HTTP/1.1 {self.status} {_reason(self.status)}\r\nConnection: close"
        if form == "bare_lf":
            status_line = status_line.replace("\r\n", "\n")
            head = f"{status_line}\nContent-Type: application/json\nContent-Length: 2\n\n"
        elif form == "obs_fold":
            head = (f"{status_line}\r\nContent-Type: application/json\r\nX-Folded: one\r\n"
                    " two\r\nContent-Length: 2\r\n\r\n")  # fmt: skip
        elif form == "nul":
            head = (f"{status_line}\r\nContent-Type: application/json\r\nX-Nul: a\x00b\r\n"
                    "Content-Length: 2\r\n\r\n")  # fmt: skip
        elif form == "many_headers":
            extra = "".join(f"X-H{i}: {i}\r\n" for i in range(200))
            head = f"{status_line}\r\n{extra}Content-Length: 2\r\n\r\n"
        else:  # long_line
            head = f"{status_line}\r\nX-Long: {'a' * (70 * 1024)}\r\nContent-Length: 2\r\n\r\n"
        self._send(conn, head.encode("latin-1") + b"{}")
        return False

    def _b_redirect_elsewhere(
        self, conn: socket.socket, request: RawRequest, location: str
    ) -> bool:
        self._send(conn, _complete(307, [("Location", location)], b"", None))
        return True

    def _b_gzip_body(
        self,
        conn: socket.socket,
        request: RawRequest,
        size: int = 1024,
        body: Optional[bytes] = None,
    ) -> bool:
        packed = _gzip_json(size) if body is None else _gzip.compress(body)
        answer = _complete(self.status, [("Content-Encoding", "gzip")], packed, "application/json")
        self._send(conn, answer)
        return True


def unused_url() -> str:
    """A loopback URL nothing listens on (an ephemeral port, bound and released)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.bind((_HOST, 0))
        port = probe.getsockname()[1]
    finally:
        probe.close()
    return f"http://{_HOST}:{port}"

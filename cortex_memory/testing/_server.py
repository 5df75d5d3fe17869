"""The threaded HTTP/1.1 server behind both doubles, and their common base class.

Each accepted connection gets its own daemon thread, tracked so `close()` can
wake it (idle keep-alive reads, slow bodies, `?wait=` holds) and join it within
5 s. Requests are parsed here, routed (`_routing`), gated (`_gate`), handed to
a wire's handler, and the outcome rendered and written (`_transport`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import selectors
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Set,
    Tuple,
    TypeVar,
    Union,
)

from cortex_memory.testing._engines import TEST_TOKEN, TEST_VISIBILITY
from cortex_memory.testing._gate import gate, render
from cortex_memory.testing._reply import NO_BODY, Refusal, Reply, Request
from cortex_memory.testing._routing import Route, RouteTable, body_refusal
from cortex_memory.testing._state import DoubleState
from cortex_memory.testing._transport import reset_connection, write_response

if TYPE_CHECKING:  # pragma: no cover - the engine is imported only when asked for
    from cortex_memory.cortex.engine.core import CortexEngine
    from cortex_memory.credential import BearerSource

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["BaseDouble"]

logger = logging.getLogger(__name__)

_JOIN_BUDGET = 5.0
_MAX_LINE = 65536

RequestLog = Callable[[int, str], None]


def _dump(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class _RequestHandler(BaseHTTPRequestHandler):
    """Parses requests and hands them to the double; the stdlib request log is silenced."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def handle_one_request(self) -> None:
        try:
            self.raw_requestline = self.rfile.readline(_MAX_LINE + 1)
            if not self.raw_requestline or len(self.raw_requestline) > _MAX_LINE:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            body = self._read_body()
            if body is None:
                self.close_connection = True
                return
            self.server.double._serve(self, body)
        except (OSError, ValueError):
            # A client that vanished mid-request, or a socket closed by close().
            self.close_connection = True

    def _read_body(self) -> Optional[bytes]:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            return b""
        try:
            length = int(length_text)
        except ValueError:
            return None
        if length < 0:
            return None
        body = self.rfile.read(length)
        return body if len(body) == length else None

    def _read_chunked(self) -> Optional[bytes]:
        parts: List[bytes] = []
        while True:
            size_line = self.rfile.readline(_MAX_LINE + 1)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                return None
            if size == 0:
                # Skip trailers up to the blank line.
                while self.rfile.readline(_MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline(_MAX_LINE + 1)


class _HTTPServer(ThreadingHTTPServer):
    """A threading server that tracks its connections and worker threads."""

    daemon_threads = True
    block_on_close = False
    # Many client threads connect at once; the stdlib default backlog of 5 makes
    # the kernel reset some of them.
    request_queue_size = 128
    # handle_request() is only called once the listener is readable; a zero
    # timeout keeps it from blocking if that connection vanished meanwhile.
    timeout = 0.0

    def __init__(self, address: Tuple[str, int], double: BaseDouble) -> None:
        self.double = double
        self._tracked = threading.Lock()
        self._connections: Set[socket.socket] = set()
        self._workers: Set[threading.Thread] = set()
        self._stopped = threading.Event()
        # A socket pair wakes the accept loop at once on close (serve_forever
        # would poll, costing up to its interval on every close). Made first:
        # a failed bind calls server_close(), which closes it.
        self._wake_read, self._wake_write = socket.socketpair()
        super().__init__(address, _RequestHandler)

    def serve_until_stopped(self) -> None:
        """Accept connections until `stop_serving()` is called."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.socket, selectors.EVENT_READ)
            selector.register(self._wake_read, selectors.EVENT_READ)
            while not self._stopped.is_set():
                ready = selector.select()
                if self._stopped.is_set():
                    break
                if any(key.fileobj is self.socket for key, _ in ready):
                    self.handle_request()

    def stop_serving(self) -> None:
        """Make the accept loop return now."""
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")

    def server_close(self) -> None:
        super().server_close()
        self._wake_read.close()
        self._wake_write.close()

    def process_request(self, request: Any, client_address: Any) -> None:
        worker = threading.Thread(
            target=self._work, args=(request, client_address), name="cortex-double-conn"
        )
        worker.daemon = True
        with self._tracked:
            self._connections.add(request)
            self._workers.add(worker)
        self.double.state.bump("connections")
        worker.start()

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            logger.debug("double connection ended with an error", exc_info=True)
        finally:
            self.shutdown_request(request)
            with self._tracked:
                self._connections.discard(request)
                self._workers.discard(threading.current_thread())

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("double failed to accept a connection", exc_info=True)

    def abort_connections(self) -> None:
        """Wake every worker: shut down every open connection, idle or busy."""
        with self._tracked:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def join_workers(self, deadline: float) -> None:
        """Join the worker threads until `deadline` (a `time.monotonic` value)."""
        with self._tracked:
            workers = list(self._workers)
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))


# A double's own class (PEP 673's spelling): start() gives a DirectDouble a DirectDouble.
Self = TypeVar("Self", bound="BaseDouble")


class BaseDouble:
    """What both doubles share: lifecycle, URL, state and request dispatch."""

    wire = ""
    routes: RouteTable

    def __init__(self, *, legacy: bool = False, **knobs: Any) -> None:
        state = DoubleState(self.wire)
        if legacy:
            state.apply_legacy_profile()
        state.set_knobs(**knobs)
        self.state = state
        self.stopping = threading.Event()
        self.request_log: Optional[RequestLog] = None
        # Closers run first by close() (engines built by `.engine()` register here).
        self._on_close: List[Callable[[], None]] = []
        self._server: Optional[_HTTPServer] = None
        self._thread: Optional[threading.Thread] = None
        self._lifecycle = threading.Lock()
        self._closed = False

    @property
    def hosted(self) -> bool:
        """True for the hosted (`/memory/*`) double."""
        return self.wire == "hosted"

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`, no trailing slash (the double must be started)."""
        if self._server is None:
            raise RuntimeError("the double is not started; use start() or a with block")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "not started"
        return f"{type(self).__name__}({where})"

    def start(self: Self, *, port: int = 0) -> Self:
        """Bind `127.0.0.1:port` (0: a free port) and serve from a daemon thread."""
        with self._lifecycle:
            if self._closed:
                raise RuntimeError("a closed double cannot be started again")
            if self._server is not None:
                return self
            server = _HTTPServer(("127.0.0.1", port), self)
            thread = threading.Thread(
                target=server.serve_until_stopped,
                name=f"cortex-{self.wire}-double",
            )
            thread.daemon = True
            self._server, self._thread = server, thread
            thread.start()
            return self

    def close(self) -> None:
        """Stop serving, close every connection and join the threads within 5 s. Idempotent."""
        with self._lifecycle:
            if self._closed:
                return
            self._closed = True
            server, thread = self._server, self._thread
        deadline = time.monotonic() + _JOIN_BUDGET
        for closer in reversed(self._on_close):
            try:
                closer()
            except Exception:
                logger.debug("a double closer failed", exc_info=True)
        self.stopping.set()
        if server is None or thread is None:
            return
        server.stop_serving()
        thread.join(max(0.0, deadline - time.monotonic()))
        server.server_close()
        server.abort_connections()
        server.join_workers(deadline)

    def engine(
        self,
        *,
        visibility: float = TEST_VISIBILITY,
        token: str = TEST_TOKEN,
        source: Optional[BearerSource] = None,
        **options: Any,
    ) -> CortexEngine:
        """An engine wired to this double with test timings (doubles.md §2.2).

        5 ms polls and read backoff; ``visibility`` seconds of visibility, settle and
        recovery budget; ``token`` (or, hosted, ``source``) as the bearer; ``options``
        set any other ``Timing`` field. The engine is closed with the double.
        """
        from cortex_memory.testing._engines import engine_for

        return engine_for(self, visibility=visibility, token=token, source=source, **options)

    def __enter__(self: Self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: Optional[type],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    # -- dispatch ------------------------------------------------------------------------

    def _serve(self, handler: _RequestHandler, body: bytes) -> None:
        state = self.state
        headers: Dict[str, str] = {}
        for name, value in handler.headers.items():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        request = Request(
            method=handler.command,
            target=handler.path,
            headers=headers,
            body=body,
            number=state.next_request_number(),
        )
        if state.transport("reset_after", request.line, lambda v: v == "request"):
            state.bump("resets")
            handler.close_connection = True
            reset_connection(handler.connection, (handler.rfile,))
            self._log(0, request.line)
            return
        status, payload, content_type, extra = self._answer(request)
        if status == 429:
            state.bump("rate_limited")
        # Logged before sending, so a client's next request never logs first.
        self._log(status, request.line)
        keep = write_response(
            handler.connection,
            state,
            self.stopping,
            request_line=request.line,
            status=status,
            body=payload,
            content_type=content_type,
            headers=extra,
            close=handler.close_connection,
            files=(handler.rfile,),
        )
        if not keep:
            handler.close_connection = True

    def _answer(self, request: Request) -> Tuple[int, bytes, Optional[str], Dict[str, str]]:
        route = self.routes.match(request.method, request.path)
        if not isinstance(route, Route):
            if isinstance(route, tuple):
                return 405, b"", None, {"Allow": route[1]}
            return 404, b"", None, {}
        if route.json_body:
            refused = body_refusal(request)
            if refused is not None:
                return refused[0], refused[1].encode("utf-8"), "text/plain; charset=utf-8", {}
        outcome: Union[Reply, Refusal]
        try:
            if route.gated:
                gate(self.state, request, hosted=self.hosted, public=route.public)
                self._delay(self.state.request_delay_ms)
            outcome = route.handler(self, request)
        except Refusal as refusal:
            outcome = refusal
        except Exception:
            logger.exception("double handler failed for %s %s", request.method, request.path)
            outcome = Refusal(500, "INTERNAL")
        status, body = render(self.state, outcome, hosted=self.hosted, number=request.number)
        extra = dict(outcome.headers) if isinstance(outcome, Reply) else {}
        if body is NO_BODY:
            return status, b"", None, extra
        return status, _dump(body), "application/json", extra

    def _delay(self, milliseconds: Any) -> None:
        if isinstance(milliseconds, (int, float)) and milliseconds > 0:
            self.stopping.wait(milliseconds / 1000.0)

    def sleep(self, seconds: float) -> bool:
        """Sleep outside the lock; True when the double is closing."""
        return self.stopping.wait(seconds)

    def _log(self, status: int, line: str) -> None:
        callback = self.request_log
        if callback is not None:
            try:
                callback(status, line)
            except Exception:
                logger.debug("request_log callback failed", exc_info=True)

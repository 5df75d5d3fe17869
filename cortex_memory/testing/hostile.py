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

This module is the public face; the machinery lives in ``_raw_server`` (the
threaded server and request reading), ``_raw_http`` (:class:`RawRequest` and
answer bytes) and ``_hostile_server`` (the behaviours).
"""

from __future__ import annotations

import socket
from typing import Any, Callable, Optional

from cortex_memory.testing._hostile_server import BEHAVIOURS, HostileServer
from cortex_memory.testing._raw_http import (
    HandlerResult,
    HeaderList,
    RawRequest,
    body_bytes,
    complete,
    json_bytes,
    normalise_headers,
    says_close,
)
from cortex_memory.testing._raw_server import RawServer, unused_url

__all__ = [
    "BEHAVIOURS",
    "CountingServer",
    "HostileServer",
    "LoopbackServer",
    "RawRequest",
    "unused_url",
]


class LoopbackServer(RawServer):
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
        data, content_type = body_bytes(body)
        listed = normalise_headers(headers)
        self._send(conn, complete(status, listed, data, content_type))
        return not says_close(listed)


class CountingServer(RawServer):
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
        headers: Optional[HeaderList] = None,
    ) -> None:
        super().__init__()
        self._status = status
        if json is not None:
            self._body, self._type = json_bytes(json), "application/json"
        else:
            self._body, self._type = body, "text/plain"
        self._extra = normalise_headers(headers)

    def _counts(self, request: RawRequest) -> bool:
        return request.path != "/v1/auth/whoami"

    def _respond(self, conn: socket.socket, request: RawRequest) -> bool:
        if request.path == "/v1/auth/whoami":
            self._send(conn, complete(404, [], b"", None))
        else:
            self._send(conn, complete(self._status, self._extra, self._body, self._type))
            return not says_close(self._extra)
        return True

"""The misbehaving server: :class:`HostileServer` and its :data:`BEHAVIOURS` (doubles.md §9).

Each behaviour is one method, ``_b_<name>``, that writes its answer (or its
failure to answer) byte by byte and says whether the connection may carry
another request.
"""

from __future__ import annotations

import gzip as _gzip
import socket
from typing import Any, Mapping, Optional, Tuple

from cortex_memory.testing._raw_http import (
    CLOSE,
    RawRequest,
    complete,
    gzip_json,
    head,
    json_bytes,
    padded_json,
    reason,
)
from cortex_memory.testing._raw_server import RawServer

__all__ = ["BEHAVIOURS", "HostileServer"]

_DRIP_GAP = 0.05  # seconds between the pieces of a slow body


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
    "echo_credential",
)
"""Every behaviour :class:`HostileServer` knows."""

_RESPONSE_FORMS = ("bare_lf", "obs_fold", "nul", "long_line", "many_headers")
_ECHO_FORMS = ("json", "text", "upper")


class HostileServer(RawServer):
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
    ``echo_credential``       ``form="json"``: the request's bearer echoed back in the headers
                              (``WWW-Authenticate``, ``X-Echo-Authorization``) and in the body:
                              ``json`` an error object in the shape of the path's wire
                              (``/memory/``: ``{success: false, error, errorCode}``, else
                              ``{error_code, message, request_id}``), every text field
                              holding the token; ``text`` a plain-text page; ``upper`` the
                              JSON with the token upper-cased
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
        if behaviour == "echo_credential" and params.get("form", "json") not in _ECHO_FORMS:
            raise ValueError(f"echo_credential form must be one of {_ECHO_FORMS}")

    def _json_head(self, *extra: Tuple[str, str]) -> bytes:
        return head(self.status, [("Content-Type", "application/json"), *extra])

    def _respond(self, conn: socket.socket, request: RawRequest) -> bool:
        if self.spare_whoami and request.path == "/v1/auth/whoami":
            self._send(conn, complete(404, [], b"", None))
            return True
        method = getattr(self, "_b_" + self.behaviour)
        return bool(method(conn, request, **self.params))

    # -- behaviours (each returns True to keep the connection for another request) ---

    def _b_slow_headers(
        self, conn: socket.socket, request: RawRequest, interval: float = 1.0
    ) -> bool:
        data = complete(self.status, [CLOSE], b"{}", "application/json")
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
        payload = body if body is not None else padded_json(size)
        self._send(conn, self._json_head(("Content-Length", str(len(payload)))))
        piece = max(1, int(rate * _DRIP_GAP))
        return self._drip(conn, payload, piece, _DRIP_GAP)

    def _b_endless_chunked(
        self, conn: socket.socket, request: RawRequest, chunk: int = 8192, fill: bytes = b"x"
    ) -> bool:
        self._send(conn, self._json_head(("Transfer-Encoding", "chunked"), CLOSE))
        data = (fill * (chunk // max(1, len(fill)) + 1))[:chunk]
        self._flood(conn, f"{len(data):x}\r\n".encode() + data + b"\r\n")
        return False

    def _b_chunk_cut(
        self, conn: socket.socket, request: RawRequest, declared: int, sent: int
    ) -> bool:
        self._send(conn, self._json_head(("Transfer-Encoding", "chunked"), CLOSE))
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
        self._send(conn, self._json_head(("Content-Length", str(declared)), CLOSE) + body)
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
        self._send(conn, self._json_head(CLOSE))
        if body is not None or size is not None:
            self._send(conn, body if body is not None else padded_json(size or 0))
            return False
        self._flood(conn, b"x" * 65536)
        return False

    def _b_invalid_json(
        self, conn: socket.socket, request: RawRequest, body: bytes = b'{"items": ['
    ) -> bool:
        self._send(conn, complete(self.status, [], body, "application/json"))
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
            body = json_bytes({"caller": caller}) if request.path == "/v1/auth/whoami" else b"{}"
            self._send(conn, complete(self.status, [], body, "application/json"))
            return True
        # Each malformed head also says "Connection: close" (where it can still be
        # parsed), so the client never races the close with a second request.
        status_line = f"HTTP/1.1 {self.status} {reason(self.status)}\r\nConnection: close"
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
        self._send(conn, complete(307, [("Location", location)], b"", None))
        return True

    def _b_gzip_body(
        self,
        conn: socket.socket,
        request: RawRequest,
        size: int = 1024,
        body: Optional[bytes] = None,
    ) -> bool:
        packed = gzip_json(size) if body is None else _gzip.compress(body)
        answer = complete(self.status, [("Content-Encoding", "gzip")], packed, "application/json")
        self._send(conn, answer)
        return True

    def _b_echo_credential(
        self, conn: socket.socket, request: RawRequest, form: str = "json"
    ) -> bool:
        sent = request.header("authorization") or ""
        token = sent[len("Bearer ") :] if sent.startswith("Bearer ") else sent
        if form == "upper":
            token, sent = token.upper(), sent.upper()
        echoed = [
            ("WWW-Authenticate", f'Bearer realm="memory", error="invalid_token", token="{token}"'),
            ("X-Echo-Authorization", sent),
        ]
        if form == "text":
            body = (
                f"invalid token {token}\nrequest headers:\nAuthorization: {sent}\n"
                f"Proxy-Authorization: Basic {token}\n"
            ).encode("utf-8", "replace")
            self._send(conn, complete(self.status, echoed, body, "text/plain"))
            return True
        message = f"invalid token {token}; the request said Authorization: {sent}"
        if request.path.startswith("/memory/"):
            error: Any = {
                "success": False,
                "error": {"message": message, "token": token, "header": sent},
                "errorCode": f"BAD_TOKEN_{token}",
            }
        else:
            error = {
                "error_code": f"INVALID_{token}",
                "message": message,
                "request_id": token,
                "details": {"authorization": sent},
            }
        self._send(conn, complete(self.status, echoed, json_bytes(error), "application/json"))
        return True

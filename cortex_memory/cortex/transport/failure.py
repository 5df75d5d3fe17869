"""Failure mapping: HTTP statuses and transport faults to the error tree (engine.md §5.7–5.8).

Status failures (:func:`status_failure`) become the contract variant of the
status table, with a message naming the route (never its query) and the host
name, the backend's own words after a spaced em dash cut to 300 characters,
and the facts as attributes: ``err.status`` and ``err.code``. Hosted failures
start their message with ``[CODE] ``, the backend's ``errorCode`` cleaned (or a
default per status), which :func:`cortex_memory.errors.error_code` reads back.

Faults with no response (:func:`transport_failure`) are ``UnavailableError``
named by class (timed out, name resolution, TLS, connect, anything else), plus
the texts of the underlying causes with any URL cut out. A request that could
not be built is ``EngineError`` (:func:`build_failure`): no retry can help.

:func:`health_reason` shortens a failure for a health report, withholding the
backend's text.

Backend text never enters a message as it came: the credential the attempt
used, and any ``Bearer …`` or ``Authorization: …`` value, are scrubbed to
``[redacted]`` first (:mod:`.redact`), in the excerpt and in the error code
alike, so a server that echoes the token cannot put it in a message, a repr,
a traceback or a log line.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
from http import HTTPStatus
from typing import Dict, Iterable, List, Optional, Tuple, Type

from cortex_memory.cortex.timing import AUTHORIZATION_STATE_CHANGED
from cortex_memory.cortex.transport.redact import Scrubber
from cortex_memory.cortex.transport.text import excerpt
from cortex_memory.errors import (
    ConflictError,
    EngineError,
    Error,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
)

__all__ = [
    "AUTHORIZATION_STATE_CHANGED",
    "DASH",
    "build_failure",
    "clean_code",
    "health_reason",
    "is_body_fault",
    "route_name",
    "status_failure",
    "status_text",
    "strip_query",
    "transport_failure",
    "variant_for",
]

DASH = " \u2014 "
"""Separates a message's head from the backend's text: space, em dash, space."""

# The classic reason phrases (RFC 7231 era), as the Rust http crate prints them.
# Newer Pythons spell some differently (413 "Content Too Large", 422
# "Unprocessable Content"), so the messages do not depend on the Python version.
_REASONS: Dict[int, str] = {
    100: "Continue", 101: "Switching Protocols", 102: "Processing",
    200: "OK", 201: "Created", 202: "Accepted", 203: "Non Authoritative Information",
    204: "No Content", 205: "Reset Content", 206: "Partial Content", 207: "Multi-Status",
    208: "Already Reported", 226: "IM Used",
    300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other",
    304: "Not Modified", 305: "Use Proxy", 307: "Temporary Redirect", 308: "Permanent Redirect",
    400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
    407: "Proxy Authentication Required", 408: "Request Timeout", 409: "Conflict", 410: "Gone",
    411: "Length Required", 412: "Precondition Failed", 413: "Payload Too Large",
    414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable",
    417: "Expectation Failed", 418: "I'm a teapot", 421: "Misdirected Request",
    422: "Unprocessable Entity", 423: "Locked", 424: "Failed Dependency", 426: "Upgrade Required",
    428: "Precondition Required", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 451: "Unavailable For Legal Reasons",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    506: "Variant Also Negotiates", 507: "Insufficient Storage", 508: "Loop Detected",
    510: "Not Extended", 511: "Network Authentication Required",
}  # fmt: skip

_VARIANTS: Dict[int, Type[Error]] = {
    400: InvalidRequestError, 413: InvalidRequestError, 422: InvalidRequestError,
    401: UnauthorizedError, 403: UnauthorizedError,
    402: EngineError,
    404: NotFoundError,
    409: ConflictError,
    408: UnavailableError, 429: UnavailableError, 500: UnavailableError,
    502: UnavailableError, 503: UnavailableError, 504: UnavailableError,
}  # fmt: skip

_HOSTED_DEFAULT_CODES = {401: "UNAUTHORIZED", 403: "UNAUTHORIZED", 402: "USER_INSUFFICIENT_CREDITS",
                         429: "RATE_LIMITED"}  # fmt: skip

_CODE_DROP = re.compile(r"[^A-Za-z0-9_]")
_MAX_CODE = 64


def status_text(status: int) -> str:
    """``"503 Service Unavailable"``: the code and its classic reason phrase."""
    reason = _REASONS.get(status)
    if reason is None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "<unknown status code>"
    return f"{status} {reason}"


def variant_for(status: int) -> Type[Error]:
    """The error class the status table maps ``status`` to (3xx and others: ``EngineError``)."""
    return _VARIANTS.get(status, EngineError)


def clean_code(raw: object) -> Optional[str]:
    """A backend error code: ``[A-Za-z0-9_]`` only, first 64, uppercased; ``None`` if empty."""
    if not isinstance(raw, str):
        return None
    code = _CODE_DROP.sub("", raw)[:_MAX_CODE].upper()
    return code or None


def strip_query(route: str) -> str:
    """The route without its query string or fragment (queries carry scopes and cursors)."""
    for mark in ("?", "#"):
        cut = route.find(mark)
        if cut >= 0:
            route = route[:cut]
    return route


def route_name(route: str, host: str) -> str:
    """How messages name ``route`` on ``host``: ``memory API <path> on <host>`` (no query)."""
    return f"memory API {strip_query(route)} on {host}"


def _parse_object(body: bytes) -> Optional[Dict[str, object]]:
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the recursion limit
        return None
    return parsed if isinstance(parsed, dict) else None


def _lossy(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


def _with_excerpt(head: str, text: str) -> str:
    detail = excerpt(text)
    return f"{head}{DASH}{detail}" if detail else head


def _field(fields: Optional[Dict[str, object]], name: str, scrubbed: Scrubber) -> object:
    value = fields.get(name) if fields else None
    return scrubbed(value) if isinstance(value, str) else value


def status_failure(
    status: int,
    body: bytes,
    *,
    route: str,
    host: str,
    hosted: bool,
    scrubbed: Optional[Scrubber] = None,
) -> Error:
    """Map a status failure (or a hosted 2xx ``success: false``) to its error.

    ``body`` is the (capped) error body; ``route`` may carry a query, which is
    dropped from the message. ``scrubbed`` holds the attempt's credential: the
    backend's text and codes are scrubbed of it (and of any bearer or
    authorization value) before they enter the message.
    """
    scrubbed = scrubbed if scrubbed is not None else Scrubber()
    where = route_name(route, host)
    shown = status_text(status)
    fields = _parse_object(body) if body else None
    variant_status = status
    if hosted:
        code = clean_code(_field(fields, "errorCode", scrubbed))
        if code is None:
            code = _HOSTED_DEFAULT_CODES.get(status, f"HTTP_{status}")
        if status == 400 and code == "CONFLICT":
            # Older backends relay an already-claimed key as 400 CONFLICT.
            variant_status = 409
        if fields is not None and "error" in fields:
            detail_raw = fields["error"]
            detail = (
                detail_raw
                if isinstance(detail_raw, str)
                else json.dumps(detail_raw, separators=(",", ":"), ensure_ascii=False)
            )
        else:
            detail = _lossy(body)
        detail = scrubbed(detail)
        if status in (401, 403):
            head = (
                f"[{code}] {where}: the session expired or the API key was rejected "
                f"(HTTP {shown}); re-authenticate"
            )
        elif status == 402:
            head = f"[{code}] {where}: the account has insufficient credits (HTTP {shown})"
        else:
            head = f"[{code}] {where} returned HTTP {shown}"
        message = _with_excerpt(head, detail)
        return variant_for(variant_status)(message, status=status, code=code)

    direct_code = clean_code(_field(fields, "error_code", scrubbed))
    if status in (401, 403):
        head = f"{where}: the credential was rejected (HTTP {shown}); check the API key"
    else:
        head = f"{where} returned HTTP {shown}"
    message = _with_excerpt(head, scrubbed(_lossy(body)))
    return variant_for(status)(message, status=status, code=direct_code)


def build_failure(host: str) -> EngineError:
    """A request that could not be built: ``EngineError``, no retry can help."""
    return EngineError(f"request to {host} could not be built")


# --- transport faults -------------------------------------------------------------

_TIMED_OUT = "timed out"
_DNS = "the host could not be resolved; check the URL"
_TLS = (
    "TLS failed: the endpoint answered but could not set up a secure connection; "
    "check it is the real API host"
)
_CONNECT = "could not connect; check the URL and that the service is reachable"
_OTHER = "the request did not complete"

_DNS_WORDS = ("dns", "name or service", "failed to lookup", "name resolution",
              "nodename nor servname", "getaddrinfo failed")  # fmt: skip
_TLS_WORDS = ("tls", "handshake", "certificate", "fatal alert", "invalid peer", "unknown issuer")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")
_MAX_CHAIN = 8


def _causes(exc: BaseException) -> List[BaseException]:
    """The exceptions below ``exc``: its cause (or unsuppressed context), recursively."""
    found: List[BaseException] = []
    seen = {id(exc)}
    current: Optional[BaseException] = exc
    while current is not None and len(found) < _MAX_CHAIN:
        nxt = current.__cause__
        if nxt is None and not current.__suppress_context__:
            nxt = current.__context__
        if nxt is None:
            # urllib3's ProtocolError carries the broken-connection error as an argument.
            nxt = next((a for a in current.args if isinstance(a, BaseException)), None)
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        found.append(nxt)
        current = nxt
    return found


def _scrub(text: str, secrets_: Iterable[str], scrubbed: Scrubber) -> str:
    for value in secrets_:
        if value:
            text = text.replace(value, "<request>")
    return scrubbed(_URL.sub("<url>", text))


def _classify(exc: BaseException, chain: Tuple[BaseException, ...], lowered: str) -> str:
    import urllib3.exceptions as u3  # loaded by then: only a request can fail

    everything = (exc, *chain)
    if any(
        isinstance(e, (u3.ConnectTimeoutError, u3.ReadTimeoutError, socket.timeout))
        and not isinstance(e, u3.NewConnectionError)
        for e in everything
    ):
        return _TIMED_OUT
    if any(isinstance(e, (u3.NameResolutionError, socket.gaierror)) for e in everything) or any(
        word in lowered for word in _DNS_WORDS
    ):
        return _DNS
    if any(
        isinstance(e, (u3.SSLError, ssl.SSLError, ssl.CertificateError)) for e in everything
    ) or any(word in lowered for word in _TLS_WORDS):
        return _TLS
    if any(isinstance(e, (u3.NewConnectionError, ConnectionRefusedError)) for e in everything):
        return _CONNECT
    return _OTHER


def transport_failure(
    exc: BaseException,
    *,
    host: str,
    timed_out: bool = False,
    hide: Iterable[str] = (),
    scrubbed: Optional[Scrubber] = None,
) -> UnavailableError:
    """Map a fault with no response to ``UnavailableError`` named by its class.

    ``timed_out`` marks our own deadline (the watchdog fired), whatever error
    the cut socket produced. ``hide`` lists texts (the request URL, its path and
    query) to cut out of the cause chain; ``scrubbed`` the attempt's credential.
    """
    head = f"memory API request to {host}"
    if timed_out:
        return UnavailableError(f"{head}: {_TIMED_OUT}")
    chain = tuple(_causes(exc))
    scrubbed = scrubbed if scrubbed is not None else Scrubber()
    texts = [_scrub(str(e), hide, scrubbed) for e in chain]
    # Only the causes are searched for words: the top text names the host, and a
    # host called "tls.example.com" must not turn a refused connection into TLS.
    lowered = " ".join(texts).lower()
    kind = _classify(exc, chain, lowered)
    joined = ": ".join(t for t in (excerpt(x) for x in texts) if t)
    return UnavailableError(_with_excerpt(f"{head}: {kind}", joined))


def is_body_fault(exc: BaseException) -> bool:
    """True for the errors a body read raises when the connection breaks or stalls."""
    import urllib3.exceptions as u3  # loaded by then: only a request can fail

    return isinstance(exc, (u3.HTTPError, OSError, http.client.HTTPException))


def health_reason(err: BaseException) -> str:
    """``str(err)``, with anything after the first spaced em dash withheld."""
    text = str(err)
    cut = text.find(DASH)
    if cut < 0:
        return text
    return text[:cut] + " (detail withheld)"

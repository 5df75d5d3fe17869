"""``HttpClient``: the one HTTP client both CortexDB wires use (engine.md §5).

Construction (:class:`HttpClient`) parses and checks the endpoint, the
credential and the host's default headers, each failure its own
``ConfigError``. A client and its copies (``copy.copy``, :meth:`HttpClient.with_timing`,
:meth:`HttpClient.with_default_headers`) form a *family* that shares the
urllib3 pool, the actor cache and the rate-limit pause.

Call modes (each takes an optional ``deadline``: seconds, or a
:class:`~cortex_memory.cortex.timing.Deadline` shared by a whole operation):

======================== ======== ======================== ==============================
mode                     attempts retried on               hosted ``Idempotency-Key``
======================== ======== ======================== ==============================
``once``                 1        —                        a fresh claim on every POST
``retry_transient``      3 (6)    ``UnavailableError``     none
``json_keyed``           1        —                        the caller's claim
``probe``                1 GET    — (the body is not read) none
======================== ======== ======================== ==============================

A read retries only on ``UnavailableError``, sleeping ``read_backoff × 2^(n−1)``
between attempts, and keeps going to 6 attempts while the backend says
``AUTHORIZATION_STATE_CHANGED``. Every attempt waits out the rate-limit pause,
resolves the credential again, and (Direct) sends the cached actor.

Each call returns a :class:`Response` (status, parsed JSON ``data`` with the
hosted envelope already unwrapped, headers) or raises an
:class:`~cortex_memory.errors.Error`. Nothing here logs a header, a body or a
query string.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Union

from cortex_memory.cortex.credential import CortexCredential
from cortex_memory.cortex.timing import Deadline, DeadlineLike, Timing
from cortex_memory.cortex.transport.actor import (
    ActorCache,
    ActorState,
    LookupOutcome,
    actor_from_whoami,
)
from cortex_memory.cortex.transport.auth import authorization
from cortex_memory.cortex.transport.body import (
    BodyCut,
    BodyTimeout,
    BodyTooLarge,
    BodyUndecodable,
    discard,
    read_error_body,
    read_success_body,
)
from cortex_memory.cortex.transport.endpoint import Endpoint, parse_endpoint
from cortex_memory.cortex.transport.failure import (
    AUTHORIZATION_STATE_CHANGED,
    build_failure,
    is_body_fault,
    status_failure,
    strip_query,
    transport_failure,
)
from cortex_memory.cortex.transport.headers import check_default_headers
from cortex_memory.cortex.transport.keys import fresh_claim
from cortex_memory.cortex.transport.pause import RateLimitPause
from cortex_memory.cortex.transport.pool import new_pool_manager, no_retries
from cortex_memory.cortex.transport.text import is_header_value, trim
from cortex_memory.cortex.transport.watchdog import WATCHDOG, Watch
from cortex_memory.cortex.wire import CortexWire, Route, unwrap_hosted
from cortex_memory.errors import ConfigError, EngineError, Error, UnavailableError

__all__ = [
    "Body",
    "HttpClient",
    "READ_ATTEMPTS",
    "Response",
    "STATE_CHANGE_ATTEMPTS",
    "backoff",
    "encode_body",
]

logger = logging.getLogger(__name__)

READ_ATTEMPTS = 3
STATE_CHANGE_ATTEMPTS = 6

Body = Union[None, bytes, Mapping[str, Any], List[Any]]
"""A request body: ``None``, a JSON value (sent compact with sorted keys) or ready bytes."""

# A route: a relative path (and query) of URL-safe characters only, so nothing
# can add a header, a fragment or another host.
_ROUTE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*(\?[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*)?")
_SHOWN_ROUTE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@%/]")


def _urllib3() -> Any:
    """urllib3, imported on first use (importing it opens a probe socket; see pool.py)."""
    global _URLLIB3
    if _URLLIB3 is None:
        import urllib3
        import urllib3.exceptions

        _URLLIB3 = urllib3
    return _URLLIB3


_URLLIB3: Any = None


def backoff(attempt: int, base: float) -> float:
    """Seconds to sleep after failed attempt ``attempt`` (1-based): ``base × 2^(attempt−1)``."""
    return base * (1 << (attempt - 1))


def encode_body(body: Body) -> Optional[bytes]:
    """Serialize a request body: compact JSON with **sorted keys**, UTF-8; bytes pass through.

    Raises ``TypeError`` / ``ValueError`` for a value JSON cannot carry.
    """
    if body is None:
        return None
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    return json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _parse_json(raw: bytes) -> object:
    return json.loads(raw, parse_constant=_reject_constant)


@dataclass(frozen=True)
class Response:
    """A 2xx answer: its status, the parsed body and the headers.

    ``data`` is the JSON value (hosted: the unwrapped ``data``; Direct: ``None``
    for an empty body); a :meth:`HttpClient.probe` leaves it ``None``.
    ``attempts`` counts the attempts the call made. The repr shows neither
    the body nor the headers.
    """

    status: int
    data: object = field(repr=False)
    headers: Mapping[str, str] = field(repr=False)
    attempts: int = 1


class _Family:
    """What a client shares with its copies."""

    __slots__ = ("actor", "pause", "pool")

    def __init__(self) -> None:
        self.pool = new_pool_manager()
        self.actor = ActorCache()
        self.pause = RateLimitPause()


class HttpClient:
    """The HTTP client of one CortexDB engine family (see the module docs)."""

    __slots__ = ("_credential", "_defaults", "_endpoint", "_family", "_timing", "_wire")

    _wire: CortexWire
    _endpoint: Endpoint
    _credential: CortexCredential
    _timing: Timing
    _defaults: Dict[str, str]
    _family: _Family

    def __init__(
        self,
        wire: CortexWire,
        endpoint: str,
        credential: CortexCredential,
        *,
        timing: Optional[Timing] = None,
        default_headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        if not isinstance(wire, CortexWire):
            raise TypeError(f"wire must be a CortexWire, not {type(wire).__name__}")
        if not isinstance(credential, CortexCredential):
            raise TypeError(
                f"credential must be a CortexCredential, not {type(credential).__name__}"
            )
        if timing is not None and not isinstance(timing, Timing):
            raise TypeError(f"timing must be a Timing, not {type(timing).__name__}")
        self._wire = wire
        self._endpoint = parse_endpoint(endpoint)
        if credential.is_static and not trim(credential.bearer()):
            raise ConfigError("the API key must not be empty")
        self._credential = credential
        self._timing = timing if timing is not None else Timing()
        self._defaults = check_default_headers(default_headers or {})
        try:
            self._family = _Family()
        except Exception as exc:
            raise ConfigError("HTTP client could not be built") from exc

    # -- identity, copies, lifecycle -------------------------------------------------

    @property
    def wire(self) -> CortexWire:
        """The HTTP surface this client talks to."""
        return self._wire

    @property
    def endpoint(self) -> str:
        """The base URL routes are joined to (always ends in ``/``)."""
        return self._endpoint.base

    @property
    def origin(self) -> str:
        """Scheme, host and non-default port of the endpoint."""
        return self._endpoint.origin

    @property
    def host(self) -> str:
        """The endpoint's host name, as messages show it."""
        return self._endpoint.host

    @property
    def timing(self) -> Timing:
        """The timings in use."""
        return self._timing

    @property
    def default_headers(self) -> Dict[str, str]:
        """A copy of the host's default headers."""
        return dict(self._defaults)

    @property
    def actor_state(self) -> ActorState:
        """The shared actor cache's state (Direct; always unknown on hosted)."""
        return self._family.actor.state

    @property
    def paused_for(self) -> float:
        """Seconds the shared rate-limit pause still holds requests back."""
        return self._family.pause.remaining()

    def _copy(self, **changes: Any) -> HttpClient:
        clone = object.__new__(HttpClient)
        for name in HttpClient.__slots__:
            object.__setattr__(clone, name, changes.get(name, getattr(self, name)))
        return clone

    def __copy__(self) -> HttpClient:
        return self._copy()

    def __deepcopy__(self, memo: Dict[int, object]) -> HttpClient:
        # A deep copy is still a member of the family: locks and sockets are shared.
        return self._copy()

    def with_timing(self, timing: Timing) -> HttpClient:
        """A copy with other timings, sharing this client's family."""
        if not isinstance(timing, Timing):
            raise TypeError(f"timing must be a Timing, not {type(timing).__name__}")
        return self._copy(_timing=timing)

    def with_default_headers(self, headers: Mapping[str, str]) -> HttpClient:
        """A copy whose default headers are exactly ``headers`` (the whole set is replaced)."""
        return self._copy(_defaults=check_default_headers(headers))

    def close(self) -> None:
        """Close the family's pooled connections; later calls open new ones."""
        self._family.pool.clear()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HttpClient(wire={self._wire.id!r}, endpoint={self._endpoint.origin!r})"

    # -- call modes ----------------------------------------------------------------------

    def once(
        self, method: str, route: str, body: Body = None, *, deadline: DeadlineLike = None
    ) -> Response:
        """One attempt. On the hosted wire a POST carries a fresh ``Idempotency-Key``."""
        claim = fresh_claim() if self._wire.claims_posts and method == "POST" else None
        return self._attempt(method, route, self._encode(body), Deadline.of(deadline), claim=claim)

    def json_keyed(
        self, route: str, body: Body, claim: str, *, deadline: DeadlineLike = None
    ) -> Response:
        """One POST under the caller's claim (hosted writes reuse it across their own retries).

        The claim is sent as ``Idempotency-Key`` on the hosted wire only.
        """
        if not isinstance(claim, str):
            raise TypeError(f"claim must be a str, not {type(claim).__name__}")
        if not claim or not is_header_value(claim):
            raise build_failure(self._endpoint.host)
        sent = claim if self._wire.claims_posts else None
        return self._attempt("POST", route, self._encode(body), Deadline.of(deadline), claim=sent)

    def retry_transient(
        self, method: str, route: str, body: Body = None, *, deadline: DeadlineLike = None
    ) -> Response:
        """A read: up to 3 attempts on ``UnavailableError`` (6 while the state is changing)."""
        bound = Deadline.of(deadline)
        payload = self._encode(body)
        attempt = 1
        while True:
            try:
                response = self._attempt(method, route, payload, bound, claim=None)
            except UnavailableError as err:
                limit = (
                    STATE_CHANGE_ATTEMPTS
                    if err.code == AUTHORIZATION_STATE_CHANGED
                    else READ_ATTEMPTS
                )
                if attempt >= limit:
                    raise
                delay = backoff(attempt, self._timing.read_backoff)
                logger.debug(
                    "%s %s on %s: attempt %d unavailable, retrying in %.3f s",
                    method, strip_query(route), self._endpoint.host, attempt, delay,
                )  # fmt: skip
                try:
                    bound.sleep(delay, self._where(route))
                except UnavailableError as exceeded:
                    raise exceeded from err
                attempt += 1
                continue
            return response if attempt == 1 else replace(response, attempts=attempt)

    def probe(self, route: str, *, deadline: DeadlineLike = None) -> Response:
        """One GET whose body is not read (the response is closed); failures map as usual."""
        return self._attempt("GET", route, None, Deadline.of(deadline), claim=None, read=False)

    # -- one attempt -------------------------------------------------------------------------

    def _where(self, route: str) -> str:
        return f"memory API {strip_query(route)} on {self._endpoint.host}"

    def _encode(self, body: Body) -> Optional[bytes]:
        try:
            return encode_body(body)
        except (TypeError, ValueError) as exc:
            raise build_failure(self._endpoint.host) from exc

    def _url(self, route: str) -> str:
        relative = route.lstrip("/")
        if _ROUTE.fullmatch(relative) is None:
            shown = _SHOWN_ROUTE.sub("?", strip_query(relative))[:100]
            raise EngineError(f"API path `{shown}` is invalid")
        return self._endpoint.base + relative

    def _attempt(
        self,
        method: str,
        route: str,
        payload: Optional[bytes],
        deadline: Deadline,
        *,
        claim: Optional[str],
        read: bool = True,
        parse: bool = True,
        actor: bool = True,
    ) -> Response:
        """Build and send one request, then read and map its answer (engine.md §5.4–5.6)."""
        if not isinstance(route, str):
            raise TypeError(f"route must be a str, not {type(route).__name__}")
        where = self._where(route)
        self._family.pause.wait(deadline, where)
        url = self._url(route)
        headers = {"Authorization": authorization(self._credential)}
        headers.update(self._defaults)
        headers["Accept-Encoding"] = "identity"
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if actor and self._wire.sends_actor:
            settled, value = self._family.actor.settled()
            if not settled:
                value = self._family.actor.header(lambda: self._whoami(deadline))
                # The lookup may have met a 429; this request comes later, so it waits too.
                self._family.pause.wait(deadline, where)
            if value is not None:
                headers["X-Cortex-Actor"] = value
        if claim is not None:
            headers["Idempotency-Key"] = claim

        limit = self._timing.request_timeout
        left = deadline.remaining()
        by_deadline = left is not None and left < limit
        seconds = left if left is not None and by_deadline else limit
        if seconds <= 0:
            raise deadline.error(where)
        connect = min(self._timing.connect_timeout, seconds)
        timeout = _urllib3().Timeout(connect=connect, read=seconds)

        endpoint = self._endpoint
        watch = WATCHDOG.arm(seconds)
        try:
            try:
                # The pool for our one origin, then the request target: this skips
                # PoolManager.urlopen parsing the whole URL again on every request.
                pool = self._family.pool.connection_from_host(
                    endpoint.host, port=endpoint.port, scheme=endpoint.scheme
                )
                response = pool.urlopen(
                    method,
                    endpoint.path + url[len(endpoint.base) :],
                    body=payload,
                    headers=headers,
                    retries=no_retries(),
                    redirect=False,
                    timeout=timeout,
                    preload_content=False,
                    decode_content=False,
                    assert_same_host=False,
                )
            except Exception as exc:
                u3 = _urllib3().exceptions
                if isinstance(exc, u3.LocationValueError) or (
                    isinstance(exc, ValueError) and not isinstance(exc, u3.HTTPError)
                ):
                    # http.client refuses a header or URL it cannot send.
                    raise build_failure(self._endpoint.host) from exc
                if not is_body_fault(exc):
                    raise
                if watch.expired():
                    raise self._timed_out(deadline, by_deadline, where, None) from exc
                relative = url[len(endpoint.base) :]
                hide = (url, endpoint.path + relative, relative)
                raise transport_failure(exc, host=endpoint.host, hide=hide) from exc
            WATCHDOG.follow(watch, response)
            return self._answer(response, watch, route, where, deadline, by_deadline, read, parse)
        finally:
            WATCHDOG.disarm(watch)

    def _timed_out(
        self, deadline: Deadline, by_deadline: bool, where: str, phase: Optional[str]
    ) -> UnavailableError:
        if by_deadline:
            return deadline.error(where)
        if phase is None:
            return transport_failure(TimeoutError(), host=self._endpoint.host, timed_out=True)
        return UnavailableError(f"{where}: timed out {phase}")

    def _answer(
        self,
        response: Any,
        watch: Watch,
        route: str,
        where: str,
        deadline: Deadline,
        by_deadline: bool,
        read: bool,
        parse: bool,
    ) -> Response:
        status = int(response.status)
        ok = 200 <= status < 300
        if not ok:
            if status in (401, 403):
                self._family.actor.reset()
            elif status == 429:
                self._family.pause.note(response.headers, self._timing.max_pause)
        if not read:
            discard(response)
            raw = b""
        elif not ok:
            raw = read_error_body(response, watch)
        else:
            try:
                raw = read_success_body(response, watch)
            except BodyTooLarge as exc:
                if exc.declared is not None:
                    raise EngineError(
                        f"{where}: the response declares {exc.declared} bytes, "
                        f"over the limit of {exc.limit} bytes"
                    ) from None
                raise EngineError(
                    f"{where}: the response body exceeds the limit of {exc.limit} bytes"
                ) from None
            except BodyTimeout:
                raise self._timed_out(
                    deadline, by_deadline, where, "while reading the response body"
                ) from None
            except BodyCut as exc:
                raise UnavailableError(
                    f"{where}: the response body was cut off while reading"
                ) from exc
            except BodyUndecodable as exc:
                raise EngineError(
                    f"{where}: the response body could not be decoded ({exc})"
                ) from None
        if not ok:
            logger.debug("%s answered HTTP %d", where, status)
            raise status_failure(
                status, raw, route=route, host=self._endpoint.host, hosted=self._wire.hosted
            )
        if not read or not parse:
            return Response(status, raw if read else None, response.headers)
        return Response(status, self._decode(status, raw, route, where), response.headers)

    def _decode(self, status: int, raw: bytes, route: str, where: str) -> object:
        if not raw and not self._wire.hosted:
            return None
        try:
            value = _parse_json(raw)
        except ValueError:
            raise EngineError(f"{where} returned invalid JSON") from None
        if not self._wire.hosted:
            return value
        unwrapped = unwrap_hosted(value, where)
        if unwrapped.ok:
            return unwrapped.data
        raise status_failure(status, raw, route=route, host=self._endpoint.host, hosted=True)

    def _whoami(self, deadline: Deadline) -> LookupOutcome:
        """Ask ``v1/auth/whoami`` once (no actor header); never raises for a failed lookup."""
        route = self._wire.route(Route.WHOAMI)
        try:
            response = self._attempt(
                "GET", route, None, deadline, claim=None, parse=False, actor=False
            )
        except Error as err:
            if err.status in (404, 405):
                return actor_from_whoami(err.status, b"")
            logger.debug("the actor lookup on %s failed; sending no actor header", self.host)
            return (ActorState.UNKNOWN, None)
        raw = response.data if isinstance(response.data, bytes) else b""
        return actor_from_whoami(response.status, raw)

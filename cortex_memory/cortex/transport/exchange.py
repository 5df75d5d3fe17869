"""One attempt: build the request, send it, read and map the answer (engine.md §5.4–5.6).

An :class:`Exchange` holds one client's settings (the surface, endpoint,
credential, timings, default headers) and the :class:`Family` it shares with
its copies, and makes exactly one attempt per :meth:`Exchange.attempt` call,
for a :class:`Request` (method, route, body, claim, how to :class:`Read` the
answer). :class:`~cortex_memory.cortex.transport.client.HttpClient` holds one
exchange; retrying, claims and copies belong to the client.

An attempt waits out the rate-limit pause, resolves the credential, sends the
cached actor (when the surface sends one; looked up once through its whoami
route), bounds the exchange by the request timeout or the caller's deadline
(whichever ends first), reads the body under its cap and maps every failure to
the error tree. Nothing here logs a header, a body or a query string.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Dict, Optional, Tuple

from cortex_memory.cortex.timing import Deadline, Timing
from cortex_memory.cortex.transport.actor import (
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
    RawBody,
    discard,
    read_error_body,
    read_success_body,
)
from cortex_memory.cortex.transport.endpoint import Endpoint
from cortex_memory.cortex.transport.failure import (
    build_failure,
    is_body_fault,
    route_name,
    status_failure,
    strip_query,
    transport_failure,
)
from cortex_memory.cortex.transport.family import Family
from cortex_memory.cortex.transport.lazy import Lazy
from cortex_memory.cortex.transport.pool import no_retries
from cortex_memory.cortex.transport.proxy import proxy_auth_failure, proxy_failure
from cortex_memory.cortex.transport.redact import Scrubber
from cortex_memory.cortex.transport.request import Read, Request
from cortex_memory.cortex.transport.response import Body, Response, answer, decode_data, encode_body
from cortex_memory.cortex.transport.surface import Surface
from cortex_memory.cortex.transport.watchdog import Watch, current_watchdog
from cortex_memory.credential import EngineCredential
from cortex_memory.errors import (
    EngineError,
    Error,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
)

__all__ = ["Exchange", "Family", "Read", "Request"]

# The modes by name once: an Enum member looked up on its class costs a few
# attribute lookups, and an attempt compares its mode up to four times.
_NOTHING = Read.NOTHING
_BYTES = Read.BYTES
_LISTING = Read.LISTING

logger = logging.getLogger(__name__)

# A route: a relative path (and query) of URL-safe characters only, so nothing
# can add a header, a fragment or another host.
_ROUTE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*(\?[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*)?")
_SHOWN_ROUTE = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@%/]")

def _import_urllib3() -> Any:
    import urllib3
    import urllib3.exceptions

    return urllib3


# urllib3, imported on first use (importing it opens a probe socket; see pool.py).
_URLLIB3: Lazy[Any] = Lazy(_import_urllib3)


def _urllib3() -> Any:
    """urllib3, imported on first use (importing it opens a probe socket; see pool.py)."""
    return _URLLIB3.get()


def _scrubber(bearer: str) -> Scrubber:
    """The scrubber of an attempt that sent ``Authorization: bearer``."""
    return Scrubber(bearer[len("Bearer ") :])


def _base_headers(bearer: str, defaults: Dict[str, str]) -> Dict[str, str]:
    """The headers every attempt sends: the bearer, the host's defaults, no compression."""
    headers = {"Authorization": bearer}
    headers.update(defaults)
    headers["Accept-Encoding"] = "identity"
    return headers


class Exchange:
    """One client's settings and its one-attempt machinery (see the module docs).

    Immutable but for a cache of the timing's own ``Timeout`` (built on first
    use: building it imports urllib3). Two threads may build it at once; both
    build the same value and either may be kept.
    """

    __slots__ = (
        "_signed", "_timeout", "credential", "defaults", "endpoint", "family", "surface", "timing",
    )  # fmt: skip

    def __init__(
        self,
        surface: Surface,
        endpoint: Endpoint,
        credential: EngineCredential,
        *,
        timing: Timing,
        defaults: Dict[str, str],
        family: Family,
    ) -> None:
        self.surface = surface
        self.endpoint = endpoint
        self.credential = credential
        self.timing = timing
        self.defaults = defaults
        self.family = family
        self._timeout: Any = None
        # A static credential's scrubber and the headers every attempt starts from
        # (Authorization, the defaults, Accept-Encoding), worked out once: None for a
        # dynamic credential, or a key that is not a valid header value (those are
        # resolved, and refused, on every attempt).
        self._signed: Optional[Tuple[Scrubber, Dict[str, str]]] = None
        if credential.is_static:
            try:
                bearer = authorization(credential)
            except UnauthorizedError:
                return
            self._signed = (_scrubber(bearer), _base_headers(bearer, defaults))

    def with_changes(
        self, *, timing: Optional[Timing] = None, defaults: Optional[Dict[str, str]] = None
    ) -> Exchange:
        """A new exchange over the same family with other timings or default headers."""
        return Exchange(
            self.surface,
            self.endpoint,
            self.credential,
            timing=self.timing if timing is None else timing,
            defaults=self.defaults if defaults is None else defaults,
            family=self.family,
        )

    def where(self, route: str) -> str:
        """How messages name ``route`` on this endpoint."""
        return route_name(route, self.endpoint.host)

    def encode(self, body: Body) -> Optional[bytes]:
        """The body as sent; a value JSON cannot carry is the build failure."""
        try:
            return encode_body(body)
        except (TypeError, ValueError) as exc:
            raise build_failure(self.endpoint.host) from exc

    def whoami_route(self) -> str:
        """The surface's actor lookup route; ``UnsupportedError`` when it has none."""
        route = self.surface.whoami
        if route is None:
            raise UnsupportedError(f"the {self.surface.name} API has no whoami route")
        return route

    @staticmethod
    def _invalid_route(relative: str) -> EngineError:
        """The error for a route that is not a plain relative reference (its query not shown)."""
        shown = _SHOWN_ROUTE.sub("?", strip_query(relative))[:100]
        return EngineError(f"API path `{shown}` is invalid")

    def attempt(self, request: Request, deadline: Deadline) -> Response:
        """Build and send one request, then read and map its answer (engine.md §5.4–5.6)."""
        route = request.route
        if not isinstance(route, str):
            raise TypeError(f"route must be a str, not {type(route).__name__}")
        family = self.family
        pause = family.pause
        if pause.holding():
            pause.wait(deadline, self.where(route))
        # The route as a checked relative reference (joined to the endpoint's base).
        relative = route.lstrip("/")
        if _ROUTE.fullmatch(relative) is None:
            raise self._invalid_route(relative)
        signed = self._signed
        if signed is None:
            bearer = authorization(self.credential)
            scrubbed = _scrubber(bearer)
            headers = _base_headers(bearer, self.defaults)
        else:
            scrubbed, base = signed
            headers = base.copy()
        payload = request.payload
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if request.actor and self.surface.sends_actor:
            settled, value = family.actor.settled()
            if not settled:
                value = family.actor.header(lambda: self._whoami(deadline))
                # The lookup may have met a 429; this request comes later, so it waits too.
                if pause.holding():
                    pause.wait(deadline, self.where(route))
            if value is not None:
                headers["X-Cortex-Actor"] = value
        if request.claim is not None:
            headers["Idempotency-Key"] = request.claim

        limit = self.timing.request_timeout
        left = deadline.remaining()
        by_deadline = left is not None and left < limit
        seconds = left if left is not None and by_deadline else limit
        if seconds <= 0:
            raise deadline.error(self.where(route))
        if by_deadline or self._timeout is None:
            connect = min(self.timing.connect_timeout, seconds)
            timeout = _urllib3().Timeout(connect=connect, read=seconds)
            if not by_deadline:
                # The timing's own bound: the same for every attempt of this exchange.
                # (urllib3 copies a Timeout before using it.)
                self._timeout = timeout
        else:
            timeout = self._timeout

        watchdog = current_watchdog()
        watch = watchdog.arm(seconds)
        try:
            try:
                # The pool for our one origin, then the request target: this skips
                # PoolManager.urlopen parsing the whole URL again on every request.
                response = family.connections().urlopen(
                    request.method,
                    family.prefix + relative,
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
                    raise build_failure(self.endpoint.host) from exc
                if not is_body_fault(exc):
                    raise
                if watch.expired():
                    raise self._timed_out(deadline, by_deadline, route, None) from exc
                endpoint = self.endpoint
                hide = (endpoint.base + relative, endpoint.path + relative, relative)
                if family.proxy is not None and isinstance(exc, u3.ProxyError):
                    raise proxy_failure(exc, family.proxy, host=endpoint.host, hide=hide) from exc
                raise transport_failure(
                    exc, host=endpoint.host, hide=hide, scrubbed=scrubbed
                ) from exc
            watchdog.follow(watch, response)
            return self._answer(
                response,
                request,
                watch=watch,
                deadline=deadline,
                by_deadline=by_deadline,
                scrubbed=scrubbed,
            )
        finally:
            watchdog.disarm(watch)

    def _timed_out(
        self, deadline: Deadline, by_deadline: bool, route: str, phase: Optional[str]
    ) -> UnavailableError:
        if by_deadline:
            return deadline.error(self.where(route))
        if phase is None:
            return transport_failure(TimeoutError(), host=self.endpoint.host, timed_out=True)
        return UnavailableError(f"{self.where(route)}: timed out {phase}")

    def _answer(
        self,
        response: Any,
        request: Request,
        *,
        watch: Watch,
        deadline: Deadline,
        by_deadline: bool,
        scrubbed: Scrubber,
    ) -> Response:
        # How messages name the request is built only on a failure path.
        status = int(response.status)
        read = request.read
        ok = 200 <= status < 300
        if not ok:
            if status == 407 and self.family.forwarding is not None:
                # A forwarding proxy wants credentials. (Through a tunnel, a CONNECT 407
                # is a ProxyError, and a 407 is the endpoint's own answer.)
                discard(response)
                raise proxy_auth_failure(self.family.forwarding, self.endpoint.host)
            if status in (401, 403):
                self.family.actor.reset()
            elif status == 429:
                self.family.pause.note(response.headers, self.timing.max_pause)
        raw: RawBody
        if read is _NOTHING:
            discard(response)
            raw = b""
        elif not ok:
            raw = read_error_body(response, watch)
        else:
            try:
                raw = read_success_body(response, watch)
            except BodyTooLarge as exc:
                where = self.where(request.route)
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
                    deadline, by_deadline, request.route, "while reading the response body"
                ) from None
            except BodyCut as exc:
                raise UnavailableError(
                    f"{self.where(request.route)}: the response body was cut off while reading"
                ) from exc
            except BodyUndecodable as exc:
                raise EngineError(
                    f"{self.where(request.route)}: the response body could not be decoded ({exc})"
                ) from None
        if not ok:
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("%s answered HTTP %d", self.where(request.route), status)
            raise status_failure(
                status,
                bytes(raw),
                route=request.route,
                host=self.endpoint.host,
                hosted=self.surface.hosted,
                scrubbed=scrubbed,
            )
        if read is _NOTHING:
            return answer(status, None, response.headers, scrubbed)
        if read is _BYTES:
            # bytes(b) of a bytes object is that object.
            return answer(status, bytes(raw), response.headers, scrubbed)
        data = decode_data(
            status,
            raw,
            hosted=self.surface.hosted,
            route=request.route,
            host=self.endpoint.host,
            scrubbed=scrubbed,
            listing=read is _LISTING,
        )
        return answer(status, data, response.headers, scrubbed)

    def _whoami(self, deadline: Deadline) -> LookupOutcome:
        """Ask ``v1/auth/whoami`` once (no actor header); never raises for a failed lookup."""
        request = Request("GET", self.whoami_route(), read=Read.BYTES, actor=False)
        try:
            response = self.attempt(request, deadline)
        except Error as err:
            if err.status in (404, 405):
                return actor_from_whoami(err.status, b"")
            logger.debug(
                "the actor lookup on %s failed; sending no actor header", self.endpoint.host
            )
            return (ActorState.UNKNOWN, None)
        raw = response.data if isinstance(response.data, bytes) else b""
        return actor_from_whoami(response.status, raw)

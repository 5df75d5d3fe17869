"""One attempt: build the request, send it, read and map the answer (engine.md §5.4–5.6).

:class:`Exchange` is the layer :class:`~cortex_memory.cortex.transport.client.HttpClient`
is built on: it holds a client's settings (wire, endpoint, credential, timings,
default headers) and the :class:`Family` it shares with its copies, and makes
exactly one attempt per :meth:`Exchange._attempt` call. Retrying, claims and
copies belong to the client.

An attempt waits out the rate-limit pause, resolves the credential, sends the
cached actor (Direct; looked up once through ``v1/auth/whoami``), bounds the
exchange by the request timeout or the caller's deadline (whichever ends
first), reads the body under its cap and maps every failure to the error tree.
Nothing here logs a header, a body or a query string.
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
    status_failure,
    strip_query,
    transport_failure,
)
from cortex_memory.cortex.transport.family import Family
from cortex_memory.cortex.transport.pool import no_retries
from cortex_memory.cortex.transport.proxy import proxy_auth_failure, proxy_failure
from cortex_memory.cortex.transport.redact import Scrubber
from cortex_memory.cortex.transport.response import Body, Response, answer, decode_data, encode_body
from cortex_memory.cortex.transport.watchdog import WATCHDOG, Watch
from cortex_memory.cortex.wire import CortexWire, Route
from cortex_memory.credential import EngineCredential as CortexCredential
from cortex_memory.errors import EngineError, Error, UnauthorizedError, UnavailableError

__all__ = ["Exchange", "Family"]

logger = logging.getLogger(__name__)

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


def _scrubber(bearer: str) -> Scrubber:
    """The scrubber of an attempt that sent ``Authorization: bearer``."""
    return Scrubber(bearer[len("Bearer ") :])


class Exchange:
    """A client's settings and its one-attempt machinery (not used on its own).

    The subclass sets every slot; :data:`Exchange.__slots__` is the whole
    state a copy carries over.
    """

    __slots__ = (
        "_credential", "_defaults", "_endpoint", "_family", "_signed", "_timeout", "_timing",
        "_wire",
    )  # fmt: skip

    _wire: CortexWire
    _endpoint: Endpoint
    _credential: CortexCredential
    _timing: Timing
    _defaults: Dict[str, str]
    _family: Family
    # A static credential's Authorization value and its scrubber, worked out once
    # (None for a dynamic credential, or a key that is not a valid header value:
    # those are resolved, and refused, on every attempt as before).
    _signed: Optional[Tuple[str, Scrubber]]
    # The Timeout of an attempt bounded by the timing alone, built on first use.
    _timeout: Any

    def _sign(self) -> None:
        """Set ``_signed`` for the credential (see above) and clear ``_timeout``."""
        self._timeout = None
        self._signed = None
        if self._credential.is_static:
            try:
                bearer = authorization(self._credential)
            except UnauthorizedError:
                return
            self._signed = (bearer, _scrubber(bearer))

    def _where(self, route: str) -> str:
        return f"memory API {strip_query(route)} on {self._endpoint.host}"

    def _encode(self, body: Body) -> Optional[bytes]:
        try:
            return encode_body(body)
        except (TypeError, ValueError) as exc:
            raise build_failure(self._endpoint.host) from exc

    def _relative(self, route: str) -> str:
        """The route as a checked relative reference (joined to the endpoint's base)."""
        relative = route.lstrip("/")
        if _ROUTE.fullmatch(relative) is None:
            shown = _SHOWN_ROUTE.sub("?", strip_query(relative))[:100]
            raise EngineError(f"API path `{shown}` is invalid")
        return relative

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
        listing: bool = False,
    ) -> Response:
        """Build and send one request, then read and map its answer (engine.md §5.4–5.6).

        ``listing``: the answer is a listing (its repeated elements are parsed once).
        """
        if not isinstance(route, str):
            raise TypeError(f"route must be a str, not {type(route).__name__}")
        where = self._where(route)
        family = self._family
        family.pause.wait(deadline, where)
        relative = self._relative(route)
        signed = self._signed
        if signed is None:
            bearer = authorization(self._credential)
            scrubbed = _scrubber(bearer)
        else:
            bearer, scrubbed = signed
        headers = {"Authorization": bearer}
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
        if by_deadline or self._timeout is None:
            connect = min(self._timing.connect_timeout, seconds)
            timeout = _urllib3().Timeout(connect=connect, read=seconds)
            if not by_deadline:
                # The timing's own bound: the same for every attempt of this client.
                # (urllib3 copies a Timeout before using it.)
                self._timeout = timeout
        else:
            timeout = self._timeout

        watch = WATCHDOG.arm(seconds)
        try:
            try:
                # The pool for our one origin, then the request target: this skips
                # PoolManager.urlopen parsing the whole URL again on every request.
                response = family.connections().urlopen(
                    method,
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
                    raise build_failure(self._endpoint.host) from exc
                if not is_body_fault(exc):
                    raise
                if watch.expired():
                    raise self._timed_out(deadline, by_deadline, where, None) from exc
                endpoint = self._endpoint
                hide = (endpoint.base + relative, endpoint.path + relative, relative)
                if family.proxy is not None and isinstance(exc, _urllib3().exceptions.ProxyError):
                    raise proxy_failure(
                        exc, family.proxy, host=endpoint.host, hide=hide
                    ) from exc
                raise transport_failure(
                    exc, host=endpoint.host, hide=hide, scrubbed=scrubbed
                ) from exc
            WATCHDOG.follow(watch, response)
            return self._answer(
                response, watch, route, where, deadline, by_deadline, read, parse, scrubbed,
                listing,
            )  # fmt: skip
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
        scrubbed: Scrubber,
        listing: bool = False,
    ) -> Response:
        status = int(response.status)
        ok = 200 <= status < 300
        if not ok:
            if status == 407 and self._family.forwarding is not None:
                # A forwarding proxy wants credentials. (Through a tunnel, a CONNECT 407
                # is a ProxyError, and a 407 is the endpoint's own answer.)
                discard(response)
                raise proxy_auth_failure(self._family.forwarding, self._endpoint.host)
            if status in (401, 403):
                self._family.actor.reset()
            elif status == 429:
                self._family.pause.note(response.headers, self._timing.max_pause)
        raw: RawBody
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
                status,
                bytes(raw),
                route=route,
                host=self._endpoint.host,
                hosted=self._wire.hosted,
                scrubbed=scrubbed,
            )
        if not read or not parse:
            # Unparsed data is bytes (bytes(b) of a bytes object is that object).
            return answer(status, bytes(raw) if read else None, response.headers, scrubbed)
        data = decode_data(
            status,
            raw,
            hosted=self._wire.hosted,
            route=route,
            host=self._endpoint.host,
            where=where,
            scrubbed=scrubbed,
            listing=listing,
        )
        return answer(status, data, response.headers, scrubbed)

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
            logger.debug(
                "the actor lookup on %s failed; sending no actor header", self._endpoint.host
            )
            return (ActorState.UNKNOWN, None)
        raw = response.data if isinstance(response.data, bytes) else b""
        return actor_from_whoami(response.status, raw)

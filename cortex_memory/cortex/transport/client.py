"""``HttpClient``: the one HTTP client both CortexDB wires use (engine.md §5).

Construction (:class:`HttpClient`) parses and checks the endpoint, the
credential, the host's default headers and the network options (the proxy,
from ``network=`` or the environment, and the TLS settings; see :mod:`.proxy`
and :mod:`.tls`), each failure its own ``ConfigError``. A client and its
copies (``copy.copy``, :meth:`HttpClient.with_timing`,
:meth:`HttpClient.with_default_headers`) form a *family* that shares the
urllib3 pool (and so the proxy and TLS settings), the actor cache and the
rate-limit pause.

Call modes (each takes an optional ``deadline``: seconds, or a
:class:`~cortex_memory.cortex.timing.Deadline` shared by a whole operation):

======================== ======== ======================== ==============================
mode                     attempts retried on               hosted ``Idempotency-Key``
======================== ======== ======================== ==============================
``once``                 1        —                        a fresh claim on every POST
``retry_transient``      3 (6)    ``UnavailableError``     none
``json_keyed``           1        —                        the caller's claim
``probe``                1 GET    — (the body is not read) none
``whoami``               1 GET    — (no actor header)      none (Direct only)
======================== ======== ======================== ==============================

A read is retried under :data:`~cortex_memory.cortex.timing.READS`: only on
``UnavailableError``, sleeping ``read_backoff × 2^(n−1)`` between attempts, and
up to 6 attempts while the backend says ``AUTHORIZATION_STATE_CHANGED``. Every
attempt waits out the rate-limit pause, resolves the credential again, and
(Direct) sends the cached actor.

Each call returns a :class:`Response` (status, parsed JSON ``data`` with the
hosted envelope already unwrapped, headers) or raises an
:class:`~cortex_memory.errors.Error`. Nothing here logs a header, a body or a
query string. One attempt is built, sent and answered in :mod:`.exchange`;
:class:`Response` and the JSON body codec live in :mod:`.response` (and are
importable from here too).

The client holds its wire (any object with an ``id`` and a
:class:`~cortex_memory.cortex.transport.surface.Surface`, such as
:class:`~cortex_memory.cortex.wire.CortexWire`) and an
:class:`~cortex_memory.cortex.transport.exchange.Exchange`; a copy holds a
new exchange over the same family. The transport never imports the wires.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from functools import partial
from typing import Dict, Mapping, Optional, Tuple

from cortex_memory.cortex.network import DEFAULT_NETWORK, Network, PathSetting
from cortex_memory.cortex.timing import READS, Deadline, DeadlineLike, Timing
from cortex_memory.cortex.transport.actor import ActorState, actor_from_whoami
from cortex_memory.cortex.transport.endpoint import Endpoint, is_loopback_host, parse_endpoint
from cortex_memory.cortex.transport.exchange import Exchange, Family
from cortex_memory.cortex.transport.failure import build_failure
from cortex_memory.cortex.transport.headers import check_default_headers
from cortex_memory.cortex.transport.keys import fresh_claim
from cortex_memory.cortex.transport.proxy import (
    Proxy,
    parse_proxy,
    proxy_from_environment,
    proxy_route_check,
)
from cortex_memory.cortex.transport.request import Read, Request
from cortex_memory.cortex.transport.response import Body, Response, encode_body
from cortex_memory.cortex.transport.surface import Surface, Wire
from cortex_memory.cortex.transport.text import is_header_value, trim
from cortex_memory.cortex.transport.tls import Tls, tls_settings
from cortex_memory.credential import EngineCredential
from cortex_memory.errors import ConfigError, Error

__all__ = ["Body", "HttpClient", "Response", "encode_body"]

logger = logging.getLogger(__name__)

# The read modes by name once (an Enum member looked up on its class costs a few
# attribute lookups, on every read).
_JSON = Read.JSON
_LISTING = Read.LISTING


def _route(endpoint: Endpoint, network: Network) -> Tuple[Optional[Proxy], Optional[Tls]]:
    """The proxy and TLS settings of a new client (the environment is read now)."""
    env = os.environ
    proxy: Optional[Proxy]
    if network.proxy_from_environment:
        proxy = proxy_from_environment(endpoint, env)
    elif isinstance(network.proxy, str):
        proxy = parse_proxy(network.proxy, "Network.proxy")
    else:
        proxy = None
    proxy_route_check(proxy, endpoint)
    if proxy is not None:
        # Host and port only: the proxy URL may carry a password.
        logger.debug(
            "requests to %s go through the proxy %s (%s)", endpoint.host, proxy.shown, proxy.source
        )
    local_only = is_loopback_host(endpoint.host) and (proxy is None or proxy.loopback)
    tls = tls_settings(
        ca_certs=_text(network.ca_certs),
        client_cert=_text(network.client_cert),
        client_key=_text(network.client_key),
        ssl_context=network.ssl_context,
        uses_tls=endpoint.scheme == "https" or (proxy is not None and proxy.scheme == "https"),
        local_only=local_only,
        env=env,
    )
    return proxy, tls


def _text(path: PathSetting) -> Optional[str]:
    return None if path is None else os.fspath(path)


class HttpClient:
    """The HTTP client of one CortexDB engine family (see the module docs).

    One attempt is the work of the
    :class:`~cortex_memory.cortex.transport.exchange.Exchange` it holds; this
    class adds construction, copies and the call modes.
    """

    __slots__ = ("_exchange", "_wire")

    def __init__(
        self,
        wire: Wire,
        endpoint: str,
        credential: EngineCredential,
        *,
        timing: Optional[Timing] = None,
        default_headers: Optional[Mapping[str, str]] = None,
        network: Optional[Network] = None,
    ) -> None:
        surface = getattr(wire, "surface", None)
        if not isinstance(surface, Surface):
            raise TypeError(f"wire must be a CortexWire, not {type(wire).__name__}")
        if not isinstance(credential, EngineCredential):
            raise TypeError(
                f"credential must be an EngineCredential, not {type(credential).__name__}"
            )
        if timing is not None and not isinstance(timing, Timing):
            raise TypeError(f"timing must be a Timing, not {type(timing).__name__}")
        parsed = parse_endpoint(endpoint)
        if credential.is_static and not trim(credential.bearer()):
            raise ConfigError("the API key must not be empty")
        if network is not None and not isinstance(network, Network):
            raise TypeError(f"network must be a Network, not {type(network).__name__}")
        defaults = check_default_headers(default_headers or {})
        proxy, tls = _route(parsed, network if network is not None else DEFAULT_NETWORK)
        try:
            family = Family(parsed, proxy, tls)
        except Exception as exc:
            raise ConfigError("HTTP client could not be built") from exc
        self._wire = wire
        self._exchange = Exchange(
            surface,
            parsed,
            credential,
            timing=timing if timing is not None else Timing(),
            defaults=defaults,
            family=family,
        )

    @classmethod
    def _holding(cls, wire: Wire, exchange: Exchange) -> HttpClient:
        """A client over ``exchange`` (a copy: construction checked everything already)."""
        client = cls.__new__(cls)
        client._wire = wire
        client._exchange = exchange
        return client

    # -- identity, copies, lifecycle -------------------------------------------------

    @property
    def wire(self) -> Wire:
        """The HTTP surface this client talks to (the wire it was built with)."""
        return self._wire

    @property
    def endpoint(self) -> str:
        """The base URL routes are joined to (always ends in ``/``)."""
        return self._exchange.endpoint.base

    @property
    def origin(self) -> str:
        """Scheme, host and non-default port of the endpoint."""
        return self._exchange.endpoint.origin

    @property
    def host(self) -> str:
        """The endpoint's host name, as messages show it."""
        return self._exchange.endpoint.host

    @property
    def timing(self) -> Timing:
        """The timings in use."""
        return self._exchange.timing

    @property
    def proxy(self) -> Optional[str]:
        """The proxy in use (``scheme://host:port``, never credentials), or ``None``."""
        proxy = self._exchange.family.proxy
        return None if proxy is None else proxy.url

    @property
    def default_headers(self) -> Dict[str, str]:
        """A copy of the host's default headers."""
        return dict(self._exchange.defaults)

    @property
    def actor_state(self) -> ActorState:
        """The shared actor cache's state (Direct; always unknown on hosted)."""
        return self._exchange.family.actor.state

    @property
    def paused_for(self) -> float:
        """Seconds the shared rate-limit pause still holds requests back."""
        return self._exchange.family.pause.remaining()

    @property
    def _family(self) -> Family:
        """The family this client shares with its copies (pool, actor cache, pause)."""
        return self._exchange.family

    def __copy__(self) -> HttpClient:
        return HttpClient._holding(self._wire, self._exchange.with_changes())

    def __deepcopy__(self, memo: Dict[int, object]) -> HttpClient:
        # A deep copy is still a member of the family: locks and sockets are shared.
        return self.__copy__()

    def with_timing(self, timing: Timing) -> HttpClient:
        """A copy with other timings, sharing this client's family."""
        if not isinstance(timing, Timing):
            raise TypeError(f"timing must be a Timing, not {type(timing).__name__}")
        return HttpClient._holding(self._wire, self._exchange.with_changes(timing=timing))

    def with_default_headers(self, headers: Mapping[str, str]) -> HttpClient:
        """A copy whose default headers are exactly ``headers`` (the whole set is replaced)."""
        defaults = check_default_headers(headers)
        return HttpClient._holding(self._wire, self._exchange.with_changes(defaults=defaults))

    def close(self) -> None:
        """Close the family's pooled connections; later calls open new ones."""
        self._exchange.family.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        shown = f"HttpClient(wire={self._wire.id!r}, endpoint={self._exchange.endpoint.origin!r}"
        proxy = self._exchange.family.proxy
        return shown + (")" if proxy is None else f", proxy={proxy.url!r})")

    # -- call modes ----------------------------------------------------------------------

    def once(
        self, method: str, route: str, body: Body = None, *, deadline: DeadlineLike = None
    ) -> Response:
        """One attempt. On the hosted wire a POST carries a fresh ``Idempotency-Key``."""
        exchange = self._exchange
        claim = fresh_claim() if exchange.surface.claims_posts and method == "POST" else None
        request = Request(method, route, exchange.encode(body), claim)
        return exchange.attempt(request, Deadline.of(deadline))

    def json_keyed(
        self, route: str, body: Body, claim: str, *, deadline: DeadlineLike = None
    ) -> Response:
        """One POST under the caller's claim (hosted writes reuse it across their own retries).

        The claim is sent as ``Idempotency-Key`` on the hosted wire only.
        """
        if not isinstance(claim, str):
            raise TypeError(f"claim must be a str, not {type(claim).__name__}")
        exchange = self._exchange
        if not claim or not is_header_value(claim):
            raise build_failure(exchange.endpoint.host)
        sent = claim if exchange.surface.claims_posts else None
        request = Request("POST", route, exchange.encode(body), sent)
        return exchange.attempt(request, Deadline.of(deadline))

    def retry_transient(
        self,
        method: str,
        route: str,
        body: Body = None,
        *,
        deadline: DeadlineLike = None,
        listing: bool = False,
    ) -> Response:
        """A read: up to 3 attempts on ``UnavailableError`` (6 while the state is changing).

        ``listing=True`` for an answer that lists events: a run of identical
        elements in its arrays is parsed once, and ``data`` holds that one
        value for each of them (the same object), which is what a listing
        reader needs and about half the parsing when the server sends every
        event twice. The value is otherwise what a plain parse gives.
        """
        exchange = self._exchange
        bound = Deadline.of(deadline)
        payload = None if body is None else exchange.encode(body)
        request = Request(method, route, payload, None, _LISTING if listing else _JSON)
        response, attempts = READS.run(
            partial(exchange.attempt, request, bound),  # no Python frame of its own
            bound,
            lambda: exchange.where(route),
            backoff=exchange.timing.read_backoff,
        )
        return response if attempts == 1 else replace(response, attempts=attempts)

    def whoami(self, *, deadline: DeadlineLike = None) -> Optional[str]:
        """One ``GET v1/auth/whoami`` without an actor header (Direct): the caller it names.

        Returns the usable caller, or ``None`` when a 2xx answer names none. The answer
        also teaches the shared actor cache, as the lookup before a first request would
        (a 404 or 405: a server from before the actor model, no header). Failures raise
        as usual; a 401 or 403 resets the cache.
        """
        exchange = self._exchange
        request = Request("GET", exchange.whoami_route(), read=Read.BYTES, actor=False)
        try:
            response = exchange.attempt(request, Deadline.of(deadline))
        except Error as err:
            if err.status in (404, 405):
                self._exchange.family.actor.learn(actor_from_whoami(err.status, b""))
            raise
        raw = response.data if isinstance(response.data, bytes) else b""
        outcome = actor_from_whoami(response.status, raw)
        self._exchange.family.actor.learn(outcome)
        return outcome[1] if outcome[0] is ActorState.KNOWN else None

    def probe(self, route: str, *, deadline: DeadlineLike = None) -> Response:
        """One GET whose body is not read (the response is closed); failures map as usual."""
        return self._exchange.attempt(
            Request("GET", route, read=Read.NOTHING), Deadline.of(deadline)
        )

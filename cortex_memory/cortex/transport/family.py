"""What a client shares with its copies: the pool, its TLS context, the actor cache, the pause.

A :class:`Family` serves one endpoint (copies never change it). Its urllib3
pool manager is built on first use, not with the client: building one imports
urllib3 (which opens an IPv6 probe socket) and, for TLS, loads a trust store,
and a client that never sends a request should cost neither.

**One TLS context per family.** Given no TLS options, urllib3 builds a new
``SSLContext`` and loads the system's trust store for every new connection
(about 35 ms of CPU on a small VM, for every connection a pool opens). The
family builds that same context once, the way urllib3 builds it
(``create_urllib3_context()`` then ``load_default_certs()``: TLS 1.2 or later,
certificates and host names verified), and every connection of the family and
its copies uses it; ``cert_reqs`` stays forced to ``CERT_REQUIRED``. With TLS
options (:mod:`.tls`) their context is used, as before.

**One pool lookup.** A family has one origin, so the pool key of that origin is
computed once: building the key is most of the cost of
``connection_from_host``. The origin is the endpoint's, or the proxy's when an
``http`` endpoint goes through a forwarding proxy; ``prefix`` is what a
request target starts with (the endpoint's path, or its whole base URL for a
forwarding proxy). The pool found is kept until :meth:`Family.close` clears
the manager: the next request then looks it up again, and the manager builds
a new one, as ``connection_from_host`` would. (Nothing else evicts it: the
manager holds up to 10 pools and a family uses one.)
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, Optional

from cortex_memory.cortex.transport.actor import ActorCache
from cortex_memory.cortex.transport.endpoint import Endpoint
from cortex_memory.cortex.transport.pause import RateLimitPause
from cortex_memory.cortex.transport.pool import new_pool_manager
from cortex_memory.cortex.transport.proxy import Proxy
from cortex_memory.cortex.transport.tls import Tls, system_tls
from cortex_memory.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    import urllib3

__all__ = ["Family"]


class Family:
    """What a client shares with its copies (see the module docs)."""

    __slots__ = (
        "_connections", "_context", "_host", "_key", "_lock", "_manager", "_port", "_scheme",
        "_tls", "_uses_tls", "actor", "forwarding", "pause", "prefix", "proxy",
    )  # fmt: skip

    def __init__(
        self, endpoint: Endpoint, proxy: Optional[Proxy] = None, tls: Optional[Tls] = None
    ) -> None:
        self.proxy = proxy
        self.actor = ActorCache()
        self.pause = RateLimitPause()
        self._tls = tls
        self._uses_tls = endpoint.scheme == "https" or (
            proxy is not None and proxy.scheme == "https"
        )
        self._lock = threading.Lock()
        self._manager: Optional[urllib3.PoolManager] = None
        self._connections: Any = None
        self._key: Any = None
        self._context: Dict[str, Any] = {}
        # A plain-http endpoint's requests are forwarded: the proxy is their origin.
        self.forwarding = proxy if endpoint.scheme == "http" else None
        if self.forwarding is not None:
            origin = self.forwarding
            self._scheme, self._host, self._port = origin.scheme, origin.host, origin.port
            self.prefix = endpoint.base
        else:
            self._scheme, self._host, self._port = endpoint.scheme, endpoint.host, endpoint.port
            self.prefix = endpoint.path

    @property
    def pool(self) -> urllib3.PoolManager:
        """The family's urllib3 pool manager (built on first use)."""
        manager = self._manager
        return manager if manager is not None else self._start()

    @property
    def tls(self) -> Optional[Tls]:
        """The TLS settings in use: None before the first request, or without TLS."""
        return self._tls

    def _start(self) -> urllib3.PoolManager:
        with self._lock:
            if self._manager is None:
                try:
                    if self._tls is None and self._uses_tls:
                        self._tls = system_tls()
                    manager = new_pool_manager(self.proxy, self._tls)
                    # What connection_from_host puts in its request context.
                    context = dict(manager.connection_pool_kw)
                    context.update(scheme=self._scheme, port=self._port, host=self._host)
                    self._key = manager.key_fn_by_scheme[self._scheme](context)
                except Exception as exc:
                    raise ConfigError("HTTP client could not be built") from exc
                self._context = context
                self._manager = manager
            return self._manager

    def connections(self) -> Any:
        """urllib3's connection pool for the family's origin (``connection_from_host``'s)."""
        pool = self._connections
        if pool is None:  # not looked up yet, or the family was closed since
            manager = self.pool
            # A missing pool is built from a copy: building one alters the context.
            pool = manager.connection_from_pool_key(self._key, request_context=dict(self._context))
            self._connections = pool
        return pool

    def close(self) -> None:
        """Close the pooled connections (nothing to do before the first request)."""
        manager = self._manager
        if manager is not None:
            self._connections = None
            manager.clear()

"""The urllib3 pool of an engine family, with connections the watchdog can cut.

One ``urllib3.PoolManager(retries=False, maxsize=8, block=False)`` serves an
engine and all its copies. Its connection classes differ from urllib3's in two
ways, both inside ``request()``:

- they tell the :mod:`watchdog <.watchdog>` which connection the current
  thread's exchange uses, so a stalled exchange can be ended by shutting that
  connection's socket down;
- a request with a body goes out in one write: urllib3 sends the head, then
  the body, in two socket writes (two TCP segments, as ``TCP_NODELAY`` is set);
  here the head is held back and sent with the first piece of the body (up to
  :data:`JOINED_BODY` bytes), which spares a system call and a segment per
  write. The bytes on the wire are the same.

A connection is also attached to the watchdog when it connects, so a stalled
TLS handshake or proxy ``CONNECT`` ends with the exchange too. Its responses read
their head without the e-mail parser (:mod:`.head`).

With a proxy the manager is a ``urllib3.ProxyManager`` (``CONNECT`` tunnels for
``https`` endpoints, forwarding for ``http`` ones; :mod:`.proxy`), with the same
connection classes. TLS is urllib3's default (verification on) unless the
client has TLS settings (:mod:`.tls`): then their context serves the endpoint
and an ``https`` proxy, and ``cert_reqs`` is forced to ``CERT_REQUIRED`` unless
every hop is loopback.

urllib3 is imported when the first pool is built, not when this module is:
importing urllib3 probes for IPv6 with a socket, and importing
``cortex_memory`` must open none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from cortex_memory.cortex.transport.lazy import Lazy
from cortex_memory.cortex.transport.watchdog import current_watchdog

if TYPE_CHECKING:  # pragma: no cover
    import urllib3
    from urllib3.connection import HTTPConnection as _Connection

    from cortex_memory.cortex.transport.proxy import Proxy
    from cortex_memory.cortex.transport.tls import Tls
else:
    # urllib3 is not imported here (see above); the mixin's methods reach
    # urllib3's through super() once it is mixed into urllib3's classes.
    _Connection = object

__all__ = ["JOINED_BODY", "POOL_MAXSIZE", "new_pool_manager", "no_retries"]

POOL_MAXSIZE = 8
"""Connections kept per host; fan-out uses 4 to 8 workers, so none churn."""

JOINED_BODY = 64 * 1024
"""The largest first piece of a body sent in one write with the request head."""



class _JoinedWrites(_Connection):
    """Mixed into urllib3's connection classes (see the module docs).

    urllib3's ``request()`` writes the head with one ``send()`` (from
    ``endheaders()``), then each piece of the body with one ``send()`` more.
    While a request with a body is being written, the first ``send()`` (the
    head) is held, and the next one writes both; a head still held when
    ``request()`` returns (nothing followed it) is written then. Every byte is
    written once, in order, whatever pieces urllib3 makes. A connection is used
    by one thread at a time (the pool hands it out), so the state is per
    connection and needs no lock.
    """

    _holding = False
    _head: Optional[bytes] = None

    def request(
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: Optional[Mapping[str, Any]] = None,
        **options: Any,
    ) -> None:
        current_watchdog().attach(self)
        if body is None:
            super().request(method, url, body, headers, **options)
            return
        self._holding = True
        try:
            super().request(method, url, body, headers, **options)
            head = self._head
            if head is not None:
                self._head = None
                super().send(head)
        finally:
            self._holding = False
            self._head = None

    def connect(self) -> None:
        # Covers the TCP connect, a proxy CONNECT and the TLS handshake.
        current_watchdog().attach(self)
        super().connect()

    def send(self, data: Any) -> None:
        if self._holding:
            head = self._head
            if head is None and type(data) is bytes:
                self._head = data
                return
            self._holding = False
            self._head = None
            if head is not None:
                if type(data) is bytes and len(data) <= JOINED_BODY:
                    data = head + data
                else:
                    super().send(head)
        super().send(data)


def _define_pool_classes() -> Dict[str, Any]:
    """The pool classes by scheme (they subclass urllib3's, so are defined on first use)."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    from cortex_memory.cortex.transport.head import HeadResponse

    class WatchedHTTPConnection(_JoinedWrites, HTTPConnection):
        response_class = HeadResponse

    class WatchedHTTPSConnection(_JoinedWrites, HTTPSConnection):
        response_class = HeadResponse

    class WatchedHTTPPool(HTTPConnectionPool):
        ConnectionCls = WatchedHTTPConnection

    class WatchedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = WatchedHTTPSConnection

    return {"http": WatchedHTTPPool, "https": WatchedHTTPSPool}


_POOL_CLASSES: Lazy[Dict[str, Any]] = Lazy(_define_pool_classes)


def _watched_pool_classes() -> Dict[str, Any]:
    """The pool classes by scheme, defined once on first use."""
    return _POOL_CLASSES.get()


def _make_no_retries() -> Any:
    from urllib3.util import Retry

    return Retry(total=False, redirect=False, raise_on_redirect=False)


_NO_RETRIES: Lazy[Any] = Lazy(_make_no_retries)


def no_retries() -> Any:
    """``urllib3.Retry(total=False)``, built once on first use (one object for every thread).

    Passing a ``Retry`` (rather than ``False``) spares urllib3 a conversion,
    and its debug log line, on every request. With ``total=False`` urllib3
    raises the original error, follows no redirect and retries nothing.
    """
    return _NO_RETRIES.get()


def new_pool_manager(
    proxy: Optional[Proxy] = None, tls: Optional[Tls] = None
) -> urllib3.PoolManager:
    """A pool manager with our retry policy (none), no redirects and watched connections.

    ``proxy`` makes it a ``ProxyManager`` (the URL without credentials; any
    ``Proxy-Authorization`` goes in the proxy headers); ``tls`` sets the context.
    """
    import urllib3

    options: Dict[str, Any] = {}
    if tls is not None:
        options["ssl_context"] = tls.context
        if tls.enforce:
            options["cert_reqs"] = "CERT_REQUIRED"
    manager: urllib3.PoolManager
    if proxy is None:
        manager = urllib3.PoolManager(
            num_pools=10, maxsize=POOL_MAXSIZE, block=False, retries=no_retries(), **options
        )
    else:
        manager = urllib3.ProxyManager(
            proxy.url,
            num_pools=10,
            proxy_headers=dict(proxy.headers),
            proxy_ssl_context=tls.context if tls is not None else None,
            maxsize=POOL_MAXSIZE,
            block=False,
            retries=no_retries(),
            **options,
        )
    manager.pool_classes_by_scheme = _watched_pool_classes()
    return manager

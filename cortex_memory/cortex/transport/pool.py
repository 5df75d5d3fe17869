"""The urllib3 pool of an engine family, with connections the watchdog can cut.

One ``urllib3.PoolManager(retries=False, maxsize=8, block=False)`` serves an
engine and all its copies. Its connection classes differ from urllib3's only
in telling the :mod:`watchdog <.watchdog>` which connection the current
thread's exchange uses, from inside ``request()``, so a stalled exchange can be
ended by shutting that connection's socket down. TLS is urllib3's default
(verification on); nothing here can turn it off.

urllib3 is imported when the first pool is built, not when this module is:
importing urllib3 probes for IPv6 with a socket, and importing
``cortex_memory`` must open none.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, Optional

from cortex_memory.cortex.transport.watchdog import WATCHDOG

if TYPE_CHECKING:  # pragma: no cover
    import urllib3

__all__ = ["POOL_MAXSIZE", "new_pool_manager", "no_retries"]

POOL_MAXSIZE = 8
"""Connections kept per host; fan-out uses 4 to 8 workers, so none churn."""

_lock = threading.Lock()
_pool_classes: Optional[Dict[str, Any]] = None


def _watched_pool_classes() -> Dict[str, Any]:
    """The pool classes by scheme, defined once on first use."""
    global _pool_classes
    with _lock:
        if _pool_classes is not None:
            return _pool_classes
        from urllib3.connection import HTTPConnection, HTTPSConnection
        from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

        class WatchedHTTPConnection(HTTPConnection):
            def request(self, *args: Any, **kwargs: Any) -> None:
                WATCHDOG.attach(self)
                super().request(*args, **kwargs)

        class WatchedHTTPSConnection(HTTPSConnection):
            def request(self, *args: Any, **kwargs: Any) -> None:
                WATCHDOG.attach(self)
                super().request(*args, **kwargs)

        class WatchedHTTPPool(HTTPConnectionPool):
            ConnectionCls = WatchedHTTPConnection

        class WatchedHTTPSPool(HTTPSConnectionPool):
            ConnectionCls = WatchedHTTPSConnection

        _pool_classes = {"http": WatchedHTTPPool, "https": WatchedHTTPSPool}
        return _pool_classes


_no_retries: Any = None


def no_retries() -> Any:
    """``urllib3.Retry(total=False)``, built once on first use.

    Passing a ``Retry`` (rather than ``False``) spares urllib3 a conversion,
    and its debug log line, on every request. With ``total=False`` urllib3
    raises the original error, follows no redirect and retries nothing.
    """
    global _no_retries
    if _no_retries is None:
        from urllib3.util import Retry

        _no_retries = Retry(total=False, redirect=False, raise_on_redirect=False)
    return _no_retries


def new_pool_manager() -> urllib3.PoolManager:
    """A pool manager with our retry policy (none), no redirects and watched connections."""
    import urllib3

    manager = urllib3.PoolManager(
        num_pools=10, maxsize=POOL_MAXSIZE, block=False, retries=no_retries()
    )
    manager.pool_classes_by_scheme = _watched_pool_classes()
    return manager

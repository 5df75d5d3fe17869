"""The urllib3 pool of an engine family, with connections the watchdog can cut.

One ``urllib3.PoolManager(retries=False, maxsize=8, block=False)`` serves an
engine and all its copies. Its connection classes differ from urllib3's only
in telling the :mod:`watchdog <.watchdog>` which connection the current
thread's exchange uses, from inside ``request()``, so a stalled exchange can be
ended by shutting that connection's socket down. TLS is urllib3's default
(verification on); nothing here can turn it off.
"""

from __future__ import annotations

from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from cortex_memory.cortex.transport.watchdog import WATCHDOG

__all__ = ["POOL_MAXSIZE", "new_pool_manager"]

POOL_MAXSIZE = 8
"""Connections kept per host; fan-out uses 4 to 8 workers, so none churn."""


class _WatchedHTTPConnection(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        WATCHDOG.attach(self)
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        WATCHDOG.attach(self)
        super().request(*args, **kwargs)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


def new_pool_manager() -> urllib3.PoolManager:
    """A pool manager with our retry policy (none), no redirects and watched connections."""
    manager = urllib3.PoolManager(num_pools=10, maxsize=POOL_MAXSIZE, block=False, retries=False)
    manager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}
    return manager

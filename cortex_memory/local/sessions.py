"""The lifecycle half of ``LocalEngine``: options, connections, sessions, snapshots.

:class:`EngineSessions` checks the engine's options, keeps its connection pool,
sets the file up on first use (schema, WAL, FTS5, the embedder's vectors), lends
a connection for the length of one call (bounded by the call's deadline) and
runs ranked reads in one snapshot, rebuilding a keyword index that another
connection left stale. :class:`~cortex_memory.local.engine.LocalEngine` adds
the contract's operations on top.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from typing import Callable, Iterator, Optional, TypeVar, Union

from cortex_memory.contract import Deadline
from cortex_memory.errors import InvalidRequestError, UnavailableError
from cortex_memory.local.bounded import bounded
from cortex_memory.local.connections import (
    ConnectionPool,
    open_connection,
    sqlite_errors,
    write_transaction,
)
from cortex_memory.local.embedders import Embedder
from cortex_memory.local.files import MEMORY, check_path, rollback, shown, warn_if_shared
from cortex_memory.local.lexical import StaleIndex
from cortex_memory.local.schema import (
    ensure_schema,
    fts5_available,
    rebuild_fts,
    refresh_statistics,
)
from cortex_memory.local.space import Vectors

__all__ = ["EngineSessions", "refresh_statistics_quietly"]

_log = logging.getLogger(__name__)

#: New items between two checks of the planner statistics.
STATS_EVERY = 2000
#: Times a read rebuilds a keyword index that keeps going stale under it.
REBUILDS = 3

_T = TypeVar("_T")


class EngineSessions:
    """Options, connection pool and sessions of one local engine (see the module docs).

    The constructor's arguments are ``LocalEngine``'s (documented there).
    """

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        tenant: str = "default",
        timeout: float = 10.0,
        use_fts: bool = True,
        pool_size: int = 4,
        embedder: Union[Embedder, str, None] = None,
        vector_backend: str = "auto",
    ) -> None:
        fspath = check_path(path, "LocalEngine")
        if not isinstance(tenant, str):
            raise TypeError(f"LocalEngine tenant must be a str, not {type(tenant).__name__}")
        if not tenant.strip():
            raise InvalidRequestError("a local tenant must not be blank")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"LocalEngine timeout must be a number, not {type(timeout).__name__}")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int):
            raise TypeError(f"LocalEngine pool_size must be an int, not {type(pool_size).__name__}")
        if not timeout >= 0:
            raise InvalidRequestError("a local busy timeout must be zero or more seconds")
        if pool_size < 1:
            raise InvalidRequestError("a local connection pool holds at least one connection")
        if not fspath:
            raise InvalidRequestError("a local database path must not be empty")
        self._vectors = Vectors(embedder, vector_backend, tenant)
        self._path = fspath
        self._tenant = tenant
        self._timeout = float(timeout)
        self._want_fts = bool(use_fts)
        self._memory = self._path == MEMORY
        self._pool = ConnectionPool(self._connect, 1 if self._memory else pool_size)
        self._init_lock = threading.Lock()
        self._ready = False
        self._fts = False
        self._written = 0  # items written since statistics were last checked

    def __repr__(self) -> str:
        return f"LocalEngine({self._path!r})"

    # -- connections -----------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return open_connection(self._path, self._timeout)

    def _ensure_ready(self, conn: sqlite3.Connection) -> None:
        # The first call sets the file up (schema, WAL, FTS5, vectors of this
        # engine's model); later calls only take the lock to read the flag.
        with self._init_lock:
            if self._ready:
                return
            fts = self._want_fts and fts5_available(conn)
            ensure_schema(
                conn, use_fts=fts, memory=self._memory, name=shown(self._path),
                timeout=self._timeout,
            )
            warn_if_shared(self._path, "local database")
            self._vectors.ready(conn, write_transaction)
            refresh_statistics_quietly(conn)
            self._fts = fts
            self._ready = True
            _log.debug("local database ready (fts5: %s, vectors: %s)", fts,
                       self._vectors.embedder.model_id)

    @property
    def embedder(self) -> Embedder:
        """The embedder that makes this engine's vectors."""
        return self._vectors.embedder

    @contextlib.contextmanager
    def _session(
        self, action: str, deadline: Optional[Deadline] = None
    ) -> Iterator[sqlite3.Connection]:
        with sqlite_errors(action), self._pool.connection(deadline) as conn:
            if deadline is not None and deadline.bounded:
                with bounded(conn, deadline, action, self._timeout):
                    self._ensure_ready(conn)
                    yield conn
            else:  # the common case sets nothing on the connection
                self._ensure_ready(conn)
                yield conn

    def _ranked_call(
        self, action: str, deadline: Deadline, read: Callable[[sqlite3.Connection, bool], _T]
    ) -> _T:
        """:meth:`_ranked_read` in a session of its own (what ``with self._session(action,
        deadline) as conn`` around it does).

        The session's context managers are entered in one ``with`` statement,
        not through the generator of :meth:`_session`: fetch and beliefs run
        here, and a generator's context manager costs a few µs a call.
        """
        with sqlite_errors(action), self._pool.connection(deadline) as conn:
            if deadline.bounded:
                with bounded(conn, deadline, action, self._timeout):
                    self._ensure_ready(conn)
                    return self._ranked_read(conn, read)
            self._ensure_ready(conn)
            return self._ranked_read(conn, read)

    def _ranked_read(
        self, conn: sqlite3.Connection, read: Callable[[sqlite3.Connection, bool], _T]
    ) -> _T:
        """``read(conn, use_fts)`` in one read transaction (one snapshot).

        The keyword index is checked in the same statement that reads its
        statistics; when another connection wrote without it (``use_fts=False``
        or a build without FTS5), the read stops, the index is rebuilt and the
        read runs again.
        """
        with self._init_lock:
            use_fts = self._fts
        for _attempt in range(REBUILDS):
            # A deferred transaction (one snapshot for every statement of the
            # read), written out rather than through a generator's context
            # manager (a few µs, and every fetch runs here); it is rolled back
            # before a rebuild.
            conn.execute("BEGIN")
            try:
                return read(conn, use_fts)
            except StaleIndex:
                pass
            finally:
                rollback(conn)
            rebuild_fts(conn)
        raise UnavailableError(
            "the local keyword index kept being written without (rebuilt "
            f"{REBUILDS} times while reading); try again"
        )

    @property
    def uses_fts(self) -> bool:
        """True when keyword ranking runs on FTS5 (known once the database is open)."""
        with self._init_lock:
            return self._fts

    def _count_writes(self, created: int) -> bool:
        """Count new items; True every :data:`STATS_EVERY` (time to check statistics)."""
        with self._init_lock:
            self._written += created
            if self._written < STATS_EVERY:
                return False
            self._written = 0
            return True

    def close(self) -> None:
        """Close every connection (busy ones as their calls finish); later calls fail."""
        self._pool.close()


def refresh_statistics_quietly(conn: sqlite3.Connection) -> None:
    """Refresh the planner statistics; a busy or failing ANALYZE is only logged."""
    # Maintenance, not the caller's business: a busy or failing ANALYZE is
    # tried again later and never fails the call that triggered it.
    try:
        refresh_statistics(conn)
    except sqlite3.Error as exc:
        _log.info("planner statistics not refreshed: %s", exc)

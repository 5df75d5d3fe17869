"""SQLite connections for the local engine: a small pool, transactions, error mapping.

One :class:`LocalEngine` is shared by many threads. A ``sqlite3`` connection
must not be used by two threads at once, so the engine borrows a connection
from a :class:`ConnectionPool` for the length of one call and gives it back:

- a database **file** gets up to ``size`` connections (WAL mode lets readers
  run side by side with one writer; writers queue on SQLite's own lock, up to
  the busy timeout);
- ``":memory:"`` gets exactly **one** connection, guarded by the pool: a
  private in-memory database lives and dies with its connection, and
  shared-cache mode would trade that for table-level ``SQLITE_LOCKED`` errors
  that no busy timeout waits out.

Every ``sqlite3`` failure leaves through :func:`sqlite_errors` as an
``EngineError`` (or ``UnavailableError`` when the database stayed locked past
the busy timeout), with the original exception as ``__cause__``.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from types import TracebackType
from typing import Callable, Iterator, List, Optional

from cortex_memory.contract.deadline import Deadline
from cortex_memory.errors import EngineError, InvalidRequestError, UnavailableError
from cortex_memory.local.files import (
    MEMORY,
    header_errors,
    is_busy,
    prepare_file,
    rollback,
    shown,
    write_transaction,
)

__all__ = [
    "CACHE_KIB",
    "ConnectionPool",
    "LARGE_WRITE_CHARS",
    "SMALL_CACHE_KIB",
    "open_connection",
    "small_cache",
    "sqlite_errors",
    "write_transaction",
]

_log = logging.getLogger(__name__)

#: What the local engine's file is called in messages.
WHAT = "local database"

#: Each connection's page cache (SQLite's default is 2 MiB): ranked reads fetch
#: scattered rows, and a warm page costs no system call. It fills only as pages
#: are read or written.
CACHE_KIB = 8192
#: A write of at least this many characters of text runs with a page cache of
#: :data:`SMALL_CACHE_KIB`: a long document's own pages would otherwise fill the
#: whole cache (half its size again in memory, for pages no read wants next);
#: SQLite spills them to the WAL as the smaller cache fills.
LARGE_WRITE_CHARS = 1 << 20
SMALL_CACHE_KIB = 1024


class sqlite_errors:  # lower case: it reads as a function, ``with sqlite_errors(action):``
    """Translate ``sqlite3`` failures met while doing ``action`` into the error tree.

    A lock held past the busy timeout is transient (``UnavailableError``);
    every other database failure is the engine's own (``EngineError``). Text
    that cannot be encoded as UTF-8 (a lone surrogate) is a bad request.
    SQLite's messages name tables and conditions, never the data bound to a
    statement, so they are safe to pass on. (A class, not a generator: every
    engine call enters one, and a generator's context manager costs a few
    microseconds more.)
    """

    __slots__ = ("_action",)

    def __init__(self, action: str) -> None:
        self._action = action

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: Optional[type], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        if exc is None:
            return
        action = self._action
        if isinstance(exc, sqlite3.Error):
            if is_busy(exc):
                raise UnavailableError(
                    f"the local database stayed locked by another writer while {action}"
                ) from exc
            raise EngineError(f"local database failure while {action}: {exc}") from exc
        if isinstance(exc, UnicodeEncodeError):
            raise InvalidRequestError(
                "text must be valid Unicode (it holds a lone surrogate)"
            ) from exc
        if isinstance(exc, OSError):
            # Only opening touches the file system directly (making the folder).
            raise EngineError(
                f"local database failure while {action}: {exc.strerror or type(exc).__name__}"
            ) from exc


def open_connection(path: str, timeout: float) -> sqlite3.Connection:
    """Open one connection in autocommit mode (transactions are explicit).

    ``timeout`` is SQLite's busy timeout in seconds: how long a statement waits
    for another connection's lock before failing with "database is locked".
    A file and its folder are created owner-only, never through a symbolic
    link (:func:`~cortex_memory.local.files.prepare_file`).
    """
    if path != MEMORY:
        prepare_file(path, WHAT)
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        # The first statement reads the file's header: a file that is not a
        # database is refused here, naming it, before anything writes to it.
        with header_errors(WHAT, shown(path)):
            conn.execute("PRAGMA temp_store = MEMORY")
            conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
            if path != MEMORY:
                # WAL + NORMAL: a commit survives a crash of the application; only
                # a power loss can take the last transactions back.
                conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def small_cache(conn: sqlite3.Connection, large: bool) -> Iterator[sqlite3.Connection]:
    """Run the block with a :data:`SMALL_CACHE_KIB` page cache when ``large``.

    The cache is shrunk before the block (outside any transaction) and given
    back its :data:`CACHE_KIB` after it, whatever happens inside.
    """
    if not large:
        yield conn
        return
    conn.execute(f"PRAGMA cache_size = {-SMALL_CACHE_KIB}")
    try:
        yield conn
    finally:
        conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")


class ConnectionPool:
    """Hands out connections to one database, each to one caller at a time.

    ``size`` caps how many connections exist; a caller that finds them all in
    use waits for one (no longer than its deadline, when it has one).
    :meth:`close` closes idle connections at once and busy ones as they come
    back; borrowing after it raises ``EngineError``.
    """

    def __init__(self, opener: Callable[[], sqlite3.Connection], size: int) -> None:
        self._opener = opener
        self._size = size
        # Every call borrows and returns a connection, so the common path takes
        # the plain lock (entered in C) and signals the condition only when a
        # caller waits on it (``_waiting``); Condition's own methods are Python.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0
        self._idle: List[sqlite3.Connection] = []
        self._count = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        with self._lock:
            return self._closed

    def connection(self, deadline: Optional[Deadline] = None) -> _Lease:
        """Borrow a connection for a ``with`` block (opening one when the pool has room).

        Waiting for a free one ends with the deadline's ``UnavailableError``.
        """
        return _Lease(self, deadline)

    def _acquire(self, deadline: Optional[Deadline]) -> sqlite3.Connection:
        with self._lock:
            while True:
                if self._closed:
                    raise EngineError("the local engine is closed")
                if self._idle:
                    return self._idle.pop()
                if self._count < self._size:
                    self._count += 1
                    break
                left = None if deadline is None else deadline.remaining()
                if deadline is not None and left is not None and left <= 0:
                    raise deadline.error("the local engine while waiting for a free connection")
                self._waiting += 1
                try:
                    self._cond.wait(left)
                finally:
                    self._waiting -= 1
        # Open outside the lock: it touches the file system.
        try:
            return self._opener()
        except BaseException:
            with self._lock:
                self._count -= 1
                if self._waiting:
                    self._cond.notify()
            raise

    def _release(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            rollback(conn)  # a call that failed half-way never leaks its transaction
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                if self._waiting:
                    self._cond.notify()
                return
            self._count -= 1
        conn.close()

    def close(self) -> None:
        """Close idle connections now and the others when they come back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        for conn in idle:
            try:
                conn.close()
            except sqlite3.Error:
                _log.debug("closing a connection failed", exc_info=True)


class _Lease:
    """A connection borrowed from a :class:`ConnectionPool` for one ``with`` block."""

    __slots__ = ("_conn", "_deadline", "_pool")

    def __init__(self, pool: ConnectionPool, deadline: Optional[Deadline]) -> None:
        self._pool = pool
        self._deadline = deadline
        self._conn: Optional[sqlite3.Connection] = None

    def __enter__(self) -> sqlite3.Connection:
        conn = self._conn = self._pool._acquire(self._deadline)
        return conn

    def __exit__(
        self, kind: Optional[type], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool._release(conn)

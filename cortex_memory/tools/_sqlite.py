"""A small SQLite helper shared by the tools' own tables (memory store, sidecar, ledger).

Each owner keeps one connection behind its own lock (``check_same_thread``
off, because the lock, not the thread, is what makes access safe). Writes run
in ``BEGIN IMMEDIATE`` transactions so two processes sharing a file queue on
the busy timeout instead of failing halfway. ``sqlite3`` failures leave as
``EngineError`` naming what failed (SQLite's own words never quote row values).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from typing import Iterator, Union

from cortex_memory.errors import EngineError
from cortex_memory.local.connections import prepare_private_file, write_transaction

__all__ = ["Database", "MEMORY_PATH", "StrPath"]

StrPath = Union[str, "os.PathLike[str]"]
#: The path of a private in-memory database.
MEMORY_PATH = ":memory:"
_BUSY_TIMEOUT_S = 5.0


class Database:
    """One SQLite connection, its lock and its schema."""

    def __init__(self, path: StrPath, schema: str, *, what: str) -> None:
        self._what = what
        target = os.fspath(path)
        try:
            if target != MEMORY_PATH:
                # Memory is private: a new file (and its folder) is created owner-only,
                # as the local engine does, instead of with the process umask.
                prepare_private_file(target)
            conn = sqlite3.connect(
                target,
                timeout=_BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
        except (sqlite3.Error, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise EngineError(f"{what} could not be opened: {reason}") from exc
        self._conn = conn
        self._lock = threading.RLock()
        self._closed = False
        try:
            if target != MEMORY_PATH:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            with self.transaction() as cur:
                for statement in schema.split(";"):
                    if statement.strip():
                        cur.execute(statement)
        except BaseException:
            conn.close()
            raise

    @property
    def lock(self) -> threading.RLock:
        """The lock every use of the connection holds."""
        return self._lock

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Cursor]:
        """Hold the lock and an immediate write transaction; commit on success."""
        with self._lock:
            cur = self._cursor()
            try:
                with write_transaction(self._conn):
                    yield cur
            except sqlite3.Error as exc:
                raise self.failure(exc) from exc
            finally:
                cur.close()

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Cursor]:
        """Hold the lock and a cursor for reads (autocommit: each statement is consistent)."""
        with self._lock:
            cur = self._cursor()
            try:
                yield cur
            except sqlite3.Error as exc:
                raise self.failure(exc) from exc
            finally:
                cur.close()

    def _cursor(self) -> sqlite3.Cursor:
        if self._closed:
            raise EngineError(f"{self._what} is closed")
        try:
            return self._conn.cursor()
        except sqlite3.Error as exc:
            raise self.failure(exc) from exc

    def failure(self, exc: sqlite3.Error) -> EngineError:
        """The ``EngineError`` for a failed statement."""
        return EngineError(f"{self._what} failed: {exc}")

    def close(self) -> None:
        """Close the connection; later use raises ``EngineError``."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

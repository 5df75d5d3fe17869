"""A small SQLite helper shared by the tools' own tables (memory store, sidecar, ledger).

Each owner keeps one connection behind its own lock (``check_same_thread``
off, because the lock, not the thread, is what makes access safe). The file is
opened as the local engine opens its own (:mod:`cortex_memory.local.files`):
created owner-only and never through a symbolic link, claimed by its kind
(another application's database, a file that is not one, or another kind of
``cortex_memory`` file is a ``ConfigError`` and stays unchanged), set up in the
transaction that checked it, then switched to WAL within the busy timeout.
Writes run in ``BEGIN IMMEDIATE`` transactions so two processes sharing a file
queue on the busy timeout instead of failing halfway. ``sqlite3`` failures
leave as ``EngineError`` naming what failed (``UnavailableError`` when the file
stayed locked; SQLite's own words never quote row values), and text that
cannot be encoded as UTF-8 as ``InvalidRequestError``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from typing import Iterator, Union

from cortex_memory.errors import (
    ConfigError,
    EngineError,
    Error,
    InvalidRequestError,
    UnavailableError,
)
from cortex_memory.local.connections import write_transaction
from cortex_memory.local.files import (
    MEMORY,
    FileKind,
    check_path,
    claim,
    is_busy,
    prepare_file,
    shown,
    use_wal,
    warn_if_shared,
)

__all__ = ["Database", "MEMORY_PATH", "StrPath", "not_unicode"]

StrPath = Union[str, "os.PathLike[str]"]
#: The path of a private in-memory database.
MEMORY_PATH = MEMORY
_BUSY_TIMEOUT_S = 5.0


def not_unicode(what: str) -> InvalidRequestError:
    """The refusal of text that UTF-8 cannot carry (a lone surrogate)."""
    return InvalidRequestError(f"{what} must be valid Unicode (it holds a lone surrogate)")


class Database:
    """One SQLite connection, its lock and its schema (``kind`` names and stamps the file)."""

    def __init__(self, path: StrPath, schema: str, *, kind: FileKind) -> None:
        what = kind.name
        self._what = what
        target = check_path(path, what)
        if not target:
            raise ConfigError(f"the {what} path must not be empty (use {MEMORY!r} for none)")
        try:
            if target != MEMORY_PATH:
                prepare_file(target, what)
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
            self._set_up(target, schema, kind)
        except BaseException:
            conn.close()
            raise

    def _set_up(self, target: str, schema: str, kind: FileKind) -> None:
        def create(conn: sqlite3.Connection) -> None:
            for statement in schema.split(";"):
                if statement.strip():
                    conn.execute(statement)

        def upgrade(conn: sqlite3.Connection, version: int) -> None:
            create(conn)  # the tables are created "IF NOT EXISTS": adds what is missing

        try:
            claim(self._conn, kind, shown(target), create=create, upgrade=upgrade)
            if target != MEMORY_PATH:
                use_wal(self._conn, _BUSY_TIMEOUT_S)
            self._conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.Error as exc:
            raise self.failure(exc) from exc
        warn_if_shared(target, kind.name)

    @property
    def lock(self) -> threading.RLock:
        """The lock every use of the connection holds."""
        return self._lock

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Cursor]:
        """Hold the lock and an immediate write transaction; commit on success."""
        # reading() holds the lock and the cursor and translates the failures,
        # the commit's included.
        with self.reading() as cur, write_transaction(self._conn):
            yield cur

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Cursor]:
        """Hold the lock and a cursor for reads (autocommit: each statement is consistent)."""
        with self._lock:
            cur = self._cursor()
            try:
                yield cur
            except sqlite3.Error as exc:
                raise self.failure(exc) from exc
            except UnicodeEncodeError as exc:
                raise not_unicode("text") from exc
            finally:
                cur.close()

    def _cursor(self) -> sqlite3.Cursor:
        if self._closed:
            raise EngineError(f"{self._what} is closed")
        try:
            return self._conn.cursor()
        except sqlite3.Error as exc:
            raise self.failure(exc) from exc

    def failure(self, exc: sqlite3.Error) -> Error:
        """The error for a failed statement: ``UnavailableError`` when the file stayed
        locked by another writer, else ``EngineError``."""
        if is_busy(exc):
            return UnavailableError(f"{self._what} stayed locked by another writer: {exc}")
        return EngineError(f"{self._what} failed: {exc}")

    def close(self) -> None:
        """Close the connection; later use raises ``EngineError``."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

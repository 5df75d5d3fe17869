"""Files that hold memory: claiming a SQLite file, transactions, and WAL.

Every SQLite file the library writes goes through here: the local engine's
database, the memory tool's store and sidecar, and the MCP write ledger.

Paths are checked and files created by :mod:`cortex_memory.local.filepaths`
(re-exported here): ``check_path``, ``prepare_file``, ``warn_if_shared``.

**Claiming** (:func:`claim`). Each kind of file has an ``application_id`` of
its own in the SQLite header (:class:`FileKind`). Opening reads the header and
the schema in one transaction and decides: a new (empty) file is set up; a file
of this kind is used (migrated when older, refused when newer); a file written
before application ids existed is recognised by its tables and stamped; a file
that is not a SQLite database, another application's database, or a
``cortex_memory`` file of another kind is a ``ConfigError`` naming the path, and
nothing in it is changed. The set-up runs in the same ``BEGIN IMMEDIATE``
transaction as the check, so processes racing to create one file queue on the
busy timeout and all see one finished schema. :func:`use_wal` then switches the
file to WAL, retrying while another process holds the lock (SQLite does not call
its busy handler for that switch when it could deadlock), within the same
timeout.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from dataclasses import dataclass
from typing import Callable, FrozenSet, Iterator, Optional

from cortex_memory.errors import ConfigError, EngineError
from cortex_memory.local.filepaths import (
    MEMORY,
    InsecureFileWarning,
    check_path,
    prepare_file,
    shown,
    warn_if_shared,
)

__all__ = [
    "APP_IDS",
    "FileKind",
    "InsecureFileWarning",
    "MEMORY",
    "check_path",
    "claim",
    "header_errors",
    "is_busy",
    "prepare_file",
    "rollback",
    "shown",
    "use_wal",
    "warn_if_shared",
    "write_transaction",
]

_log = logging.getLogger(__name__)

#: ``PRAGMA application_id`` of each kind of file (four ASCII letters each).
APP_IDS = {
    "local database": 0x434D_6462,  # "CMdb"
    "local memory store": 0x434D_6D73,  # "CMms"
    "memory sidecar": 0x434D_7363,  # "CMsc"
    "write ledger": 0x434D_6C67,  # "CMlg"
}

# sqlite3 result codes: someone else holds the lock; the file is not a database.
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_NOTADB = 26


def is_busy(exc: sqlite3.Error) -> bool:
    """True when ``exc`` means another connection holds the lock."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if isinstance(code, int):
        return (code & 0xFF) in (_SQLITE_BUSY, _SQLITE_LOCKED)
    text = str(exc).lower()
    return "database is locked" in text or "is busy" in text or "table is locked" in text


def _not_a_database(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return (code & 0xFF) == _SQLITE_NOTADB
    return "file is not a database" in str(exc).lower()


@dataclass(frozen=True)
class FileKind:
    """One kind of file: its name, ``application_id`` and schema version, and how a
    file written before application ids is recognised.

    A file with no application id is of this kind when it holds every table in
    ``markers``, only tables in ``allowed`` (when given), and a ``user_version``
    of at least ``legacy_min_version``.
    """

    name: str
    version: int
    markers: FrozenSet[str]
    allowed: Optional[FrozenSet[str]] = None
    legacy_min_version: int = 0

    @property
    def app_id(self) -> int:
        """The ``application_id`` this kind's files carry."""
        return APP_IDS[self.name]


@dataclass(frozen=True)
class _Facts:
    app_id: int
    version: int
    tables: FrozenSet[str]
    objects: int  # schema objects of any type (tables, indexes, views, triggers)


def _facts(conn: sqlite3.Connection) -> _Facts:
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    rows = conn.execute(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    ).fetchall()
    tables = frozenset(str(name) for kind, name in rows if kind == "table")
    return _Facts(app_id, version, tables, len(rows))


# What a file is, for one kind.
_NEW, _CURRENT, _BEHIND = "new", "current", "behind"


def _judge(facts: _Facts, kind: FileKind, name: str) -> str:
    """``_NEW``, ``_CURRENT`` or ``_BEHIND``; raises for a file that is not to be used."""
    if facts.app_id == kind.app_id:
        if facts.version > kind.version:
            raise EngineError(
                f"the {kind.name} {name} has schema version {facts.version}; this library "
                f"reads up to {kind.version} (upgrade cortex_memory)"
            )
        return _CURRENT if facts.version == kind.version else _BEHIND
    if facts.app_id == 0:
        if not facts.objects and facts.version == 0:
            return _NEW
        legacy = (
            kind.markers <= facts.tables
            and (kind.allowed is None or facts.tables <= kind.allowed)
            and facts.version >= kind.legacy_min_version
        )
        if legacy:
            if facts.version > kind.version:
                raise EngineError(
                    f"the {kind.name} {name} has schema version {facts.version}; this "
                    f"library reads up to {kind.version} (upgrade cortex_memory)"
                )
            return _BEHIND
    for other, app_id in APP_IDS.items():
        if app_id == facts.app_id:
            raise ConfigError(
                f"{name} is a cortex_memory {other}, not a {kind.name}; choose another path"
            )
    raise ConfigError(
        f"{name} holds another application's SQLite database; cortex_memory leaves it "
        f"unchanged (choose another path for the {kind.name})"
    )


@contextlib.contextmanager
def header_errors(what: str, name: str) -> Iterator[None]:
    """Turn SQLite's "file is not a database" into a ``ConfigError`` naming the file
    ``name`` (shown as :func:`shown` does), meant to hold a ``what``."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if _not_a_database(exc):
            raise ConfigError(
                f"{name} is not a SQLite database; cortex_memory leaves it unchanged "
                f"(choose another path for the {what})"
            ) from exc
        raise


def claim(
    conn: sqlite3.Connection,
    kind: FileKind,
    name: str,
    *,
    create: Callable[[sqlite3.Connection], None],
    upgrade: Callable[[sqlite3.Connection, int], None],
) -> None:
    """Make sure the file behind ``conn`` is a ``kind`` file at its current version.

    ``create(conn)`` sets up a new file and ``upgrade(conn, version)`` brings
    an older (or unstamped) one up to date; both run inside the write
    transaction that checked the file, which then stamps the application id and
    ``user_version``. ``name`` is the path as messages show it. The common case,
    a file already current, takes no write lock.
    """
    with header_errors(kind.name, name):
        conn.execute("BEGIN")
        try:
            state = _judge(_facts(conn), kind, name)
        finally:
            conn.execute("ROLLBACK")
        if state == _CURRENT:
            return
        with write_transaction(conn):
            # Another process may have set the file up while this one waited.
            facts = _facts(conn)
            state = _judge(facts, kind, name)
            if state == _NEW:
                create(conn)
            elif state == _BEHIND:
                upgrade(conn, facts.version)
            if state != _CURRENT:
                conn.execute(f"PRAGMA application_id = {int(kind.app_id)}")
                conn.execute(f"PRAGMA user_version = {int(kind.version)}")


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; roll back when the block raises.

    Taking the write lock up front means a transaction never has to upgrade a
    read lock, which in WAL mode fails at once instead of waiting.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        rollback(conn)
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if any; a failing rollback is logged, not raised."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            _log.debug("rollback failed", exc_info=True)


def use_wal(
    conn: sqlite3.Connection, timeout: float, *, sleep: Callable[[float], None] = time.sleep
) -> str:
    """Switch the file to WAL (persistent: every later connection uses it).

    The switch needs the file to itself. SQLite answers "database is locked"
    at once, without waiting, when waiting could deadlock, so the switch is
    tried again (1 ms, doubling to 50 ms) until ``timeout`` seconds have
    passed; the last failure is then raised. Returns the journal mode now in
    force (the old one on a file system WAL cannot use, which SQLite reports
    rather than refuses).
    """
    deadline = time.monotonic() + max(0.0, timeout)
    delay = 0.001
    while True:
        try:
            mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            if mode == "wal":
                return mode
            mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            left = deadline - time.monotonic()
            if not is_busy(exc) or left <= 0:
                raise
            sleep(min(delay, left))
            delay = min(delay * 2, 0.05)
            continue
        if mode != "wal":
            _log.info("the file system kept journal mode %s (WAL unavailable)", mode)
        return mode

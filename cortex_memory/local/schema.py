"""The local database's schema: creating or migrating a file, and its keyword index state.

:func:`ensure_schema` opens a file for an engine: it creates the tables
(:mod:`cortex_memory.local.ddl`, which also describes the layout) or brings an
older file up to date (:mod:`cortex_memory.local.migrations`), then keeps the
FTS5 keyword indexes and the query planner's statistics current.
"""

from __future__ import annotations

import logging
import sqlite3

from cortex_memory.local.connections import write_transaction
from cortex_memory.local.ddl import (
    FTS_ABSENT,
    FTS_OK,
    FTS_STALE,
    KEYWORD_CORPORA,
    LOCAL_FILE,
    SCHEMA_VERSION,
    SEQ_FLOOR,
    TOKENIZER,
    create_fts,
    create_schema,
    fts5_available,
)
from cortex_memory.local.files import claim, use_wal
from cortex_memory.local.migrations import MIGRATIONS

__all__ = [
    "FTS_ABSENT",
    "FTS_OK",
    "FTS_STALE",
    "LOCAL_FILE",
    "SCHEMA_VERSION",
    "SEQ_FLOOR",
    "TOKENIZER",
    "ensure_schema",
    "fts5_available",
    "fts_state",
    "mark_fts_stale",
    "rebuild_fts",
    "refresh_statistics",
]

_log = logging.getLogger(__name__)


def ensure_schema(
    conn: sqlite3.Connection,
    *,
    use_fts: bool,
    memory: bool,
    name: str = "`:memory:`",
    timeout: float = 0.0,
) -> None:
    """Create or migrate the schema, switch the file to WAL, bring FTS5 up to date.

    Runs once per engine, on its first connection. ``use_fts`` is True when
    this engine will rank keywords with FTS5 (the build has it and it was not
    turned off); only then is an index created or rebuilt. The file is
    claimed first (:func:`~cortex_memory.local.files.claim`): another
    application's database, or a file that is not one, is refused before
    anything in it changes. ``name`` is the path as messages show it and
    ``timeout`` the busy timeout the WAL switch may wait.
    """

    def create(conn: sqlite3.Connection) -> None:
        create_schema(conn, use_fts)

    def upgrade(conn: sqlite3.Connection, version: int) -> None:
        for step in range(version + 1, SCHEMA_VERSION + 1):
            _log.info("migrating the local database to schema %d", step)
            MIGRATIONS[step](conn, use_fts)

    claim(conn, LOCAL_FILE, name, create=create, upgrade=upgrade)
    if not memory:
        # Persistent in the file: every later connection, in any process, uses WAL.
        use_wal(conn, timeout)
    if use_fts and fts_state(conn) != FTS_OK:
        rebuild_fts(conn)


def fts_state(conn: sqlite3.Connection) -> str:
    """``ok``, ``stale`` (written without the index) or ``absent`` (never built)."""
    row = conn.execute("SELECT value FROM engine_info WHERE key = 'fts_state'").fetchone()
    return FTS_ABSENT if row is None else str(row[0])


def mark_fts_stale(conn: sqlite3.Connection) -> None:
    """Note, inside a write, that the FTS5 indexes (if any) missed this write."""
    conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state' AND value = ?",
                 (FTS_STALE, FTS_OK))


def rebuild_fts(conn: sqlite3.Connection) -> None:
    """Create the FTS5 indexes when absent, or rebuild them from their content tables."""
    with write_transaction(conn):
        state = fts_state(conn)
        if state == FTS_OK:
            return  # another connection did it first
        if state == FTS_ABSENT:
            create_fts(conn)
        _log.info("rebuilding the local keyword index (state was %s)", state)
        for corpus in KEYWORD_CORPORA:
            conn.execute(f"INSERT INTO {corpus.fts} ({corpus.fts}) VALUES ('rebuild')")
            if corpus.pending is not None:  # the rebuilt index holds them too
                conn.execute(f"DELETE FROM {corpus.pending}")
        conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_OK,))


#: Items a file must hold before the query planner gets statistics measured
#: on it (before, it gets :data:`_SEEDS`).
ANALYZE_FROM = 1000

#: ``sqlite_stat1`` rows a file gets until ANALYZE measures it: the shape of a
#: typical file of ANALYZE_FROM items (one tenant; a few namespaces,
#: workspaces and threads; unique ids). With no statistics at all SQLite
#: takes every ``column = ?`` for one that picks about ten rows, so
#: ``tenant = ?`` looks selective: a hybrid fetch's newest rows were read
#: through the ``(tenant, namespace)`` index and sorted, every row of the
#: tenant, instead of walked newest first (2.6 ms at 990 items, against
#: 0.1 ms measured).
_SEEDS = (
    ("items", "items_id", "1000 1"),
    ("items", "items_namespace", "1000 1000 250"),
    ("items", "items_workspace", "1000 1000 100"),
    ("items", "items_thread", "1000 1000 20 1"),
    ("beliefs", "beliefs_id", "1000 1000 1"),
)


def refresh_statistics(conn: sqlite3.Connection) -> bool:
    """Run ``ANALYZE`` when ``items`` has doubled since the last run; True when it ran.

    Without statistics SQLite picks among the ``(tenant, …)`` indexes blindly;
    with them it reads rows in table order (or uses the index a selective
    filter deserves). The highest ``seq`` stands for the row count (the
    items ever written): reading it costs one index probe. A file under
    :data:`ANALYZE_FROM` items that was never analyzed gets typical
    statistics instead (:data:`_SEEDS`; ``analyzed_rows`` is then 0), which
    the first real ``ANALYZE`` replaces.
    """
    rows = int(conn.execute("SELECT coalesce(max(seq), 0) FROM items").fetchone()[0])
    found = conn.execute(
        "SELECT value FROM engine_info WHERE key = 'analyzed_rows'"
    ).fetchone()
    if found is None and rows < ANALYZE_FROM:
        _seed_statistics(conn)
        return True
    analyzed = 0 if found is None else int(found[0])
    if rows < ANALYZE_FROM or rows < 2 * analyzed:
        return False
    with write_transaction(conn):
        conn.execute("ANALYZE")
        _analyzed(conn, rows)
    _log.debug("refreshed the local database statistics at %d items", rows)
    return True


def _seed_statistics(conn: sqlite3.Connection) -> None:
    with write_transaction(conn):
        # Creates sqlite_stat1 when the file has none (it analyzes only the
        # schema table, which costs nothing).
        conn.execute("ANALYZE sqlite_schema")
        conn.execute("DELETE FROM sqlite_stat1 WHERE tbl IN ('items', 'beliefs')")
        conn.executemany("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", _SEEDS)
        _analyzed(conn, 0)
    # This connection reads them now; the others when they load the schema.
    conn.execute("ANALYZE sqlite_schema")
    _log.debug("gave the local database typical planner statistics")


def _analyzed(conn: sqlite3.Connection, rows: int) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO engine_info (key, value) VALUES ('analyzed_rows', ?)",
        (str(rows),),
    )

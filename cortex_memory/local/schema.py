"""The local database's schema: tables, indexes, the schema version and migrations.

Layout (schema version 1):

- ``items``: one short row per stored item and tenant, holding what reads
  filter and rank on: ``seq`` (insertion order; the key every other table
  refers to), id, kind, namespace path (``''`` for the root), ``svc`` (1 + the
  index of the deepest ``service`` segment, 0 when none), the metadata fields
  filters test, ``observed_us`` (microseconds since the epoch) and the hashed
  trigram vector: ``1/length`` and one integer column per bucket (``d0`` …),
  so SQLite computes dot products in C over small rows.
- ``item_bodies``: the long columns, read only for the rows a page returns:
  the item's distinct words, its rendered text and the item whole as its
  canonical contract JSON (``item_json``).
- ``item_tags``: one row per tag (repeats kept, as facets count them).
- ``items_fts``: an external-content FTS5 index over ``item_bodies.words``,
  present only when the SQLite build has FTS5.
- ``beliefs``, ``belief_sources``: consolidated beliefs (with their own
  vectors), kept apart from items (see ``beliefs.py``).
- ``engine_info``: key/value facts about the file: ``schema_version``,
  ``dims`` and ``fts_state`` (``ok``, ``stale`` or ``absent``).

``PRAGMA user_version`` mirrors the schema version so a newer file is refused
before anything reads it.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Callable, Dict

from cortex_memory.errors import EngineError
from cortex_memory.local.analysis import DIMS
from cortex_memory.local.connections import write_transaction

__all__ = [
    "SCHEMA_VERSION",
    "ensure_schema",
    "fts5_available",
    "fts_state",
    "mark_fts_stale",
    "rebuild_fts",
    "refresh_statistics",
    "vector_columns",
]

_log = logging.getLogger(__name__)

#: The schema this library writes and reads.
SCHEMA_VERSION = 1

FTS_OK = "ok"
FTS_STALE = "stale"
FTS_ABSENT = "absent"


def vector_columns() -> str:
    """``d0, d1, …`` for every bucket, in order."""
    return ", ".join(f"d{i}" for i in range(DIMS))


# The trigram vector is kept in the row it ranks, after the short columns and
# before nothing long, so scanning it reads only small, local row payloads.
_VECTOR = "inv_norm REAL NOT NULL, " + ", ".join(
    f"d{i} INTEGER NOT NULL DEFAULT 0" for i in range(DIMS)
)

_V1 = (
    """CREATE TABLE engine_info (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    f"""CREATE TABLE items (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        id TEXT NOT NULL,
        kind TEXT NOT NULL,
        namespace TEXT NOT NULL,
        svc INTEGER NOT NULL,
        workspace TEXT, folder TEXT, file_path TEXT, language TEXT, repo TEXT,
        vcs_commit TEXT, url TEXT, thread_id TEXT, turns_first INTEGER, turns_last INTEGER,
        agent_id TEXT, tool_call TEXT, source_kind TEXT NOT NULL, source_id TEXT,
        observed_us INTEGER,
        confidence REAL,
        {_VECTOR},
        UNIQUE (tenant, id)
    )""",
    "CREATE INDEX items_tenant ON items (tenant)",
    "CREATE INDEX items_namespace ON items (tenant, namespace)",
    "CREATE INDEX items_workspace ON items (tenant, workspace)",
    """CREATE TABLE item_bodies (
        seq INTEGER PRIMARY KEY, words TEXT NOT NULL, text TEXT NOT NULL,
        item_json TEXT NOT NULL
    )""",
    """CREATE TABLE item_tags (
        seq INTEGER NOT NULL, pos INTEGER NOT NULL, tag TEXT NOT NULL,
        PRIMARY KEY (seq, pos)
    ) WITHOUT ROWID""",
    "CREATE INDEX item_tags_tag ON item_tags (tag)",
    f"""CREATE TABLE beliefs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        id TEXT NOT NULL,
        namespace TEXT NOT NULL,
        svc INTEGER NOT NULL,
        key TEXT NOT NULL,
        miss REAL NOT NULL,
        updated_us INTEGER NOT NULL,
        {_VECTOR},
        text TEXT NOT NULL,
        words TEXT NOT NULL,
        UNIQUE (tenant, namespace, key)
    )""",
    "CREATE INDEX beliefs_id ON beliefs (tenant, id)",
    """CREATE TABLE belief_sources (
        belief INTEGER NOT NULL, item INTEGER NOT NULL, weight REAL NOT NULL,
        PRIMARY KEY (belief, item)
    ) WITHOUT ROWID""",
    "CREATE INDEX belief_sources_item ON belief_sources (item)",
)

_FTS_DDL = (
    "CREATE VIRTUAL TABLE items_fts USING fts5("
    "words, content='item_bodies', content_rowid='seq', "
    "tokenize='unicode61 remove_diacritics 0')"
)

# version -> the step that brings a file at ``version - 1`` to ``version``.
_MIGRATIONS: Dict[int, Callable[[sqlite3.Connection], None]] = {}


def fts5_available(conn: sqlite3.Connection) -> bool:
    """True when this SQLite build can create FTS5 tables."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.cm_fts_probe USING fts5(x)")
    except sqlite3.OperationalError:
        return False
    conn.execute("DROP TABLE temp.cm_fts_probe")
    return True


def _refuse_foreign(conn: sqlite3.Connection) -> None:
    # A file with tables but no schema version belongs to someone else: never
    # add ours next to them.
    found = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchone()[0]
    if found:
        raise EngineError(
            "the file is not a cortex_memory database (it holds other tables); "
            "choose another path"
        )


def _create_v1(conn: sqlite3.Connection, use_fts: bool) -> None:
    for statement in _V1:
        conn.execute(statement)
    state = FTS_ABSENT
    if use_fts:
        conn.execute(_FTS_DDL)
        state = FTS_OK
    conn.executemany(
        "INSERT INTO engine_info (key, value) VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), ("dims", str(DIMS)), ("fts_state", state)],
    )
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def ensure_schema(conn: sqlite3.Connection, *, use_fts: bool, memory: bool) -> None:
    """Create or migrate the schema, then bring the FTS5 index up to date.

    Runs once per engine, on its first connection. ``use_fts`` is True when
    this engine will rank keywords with FTS5 (the build has it and it was not
    turned off); only then is the index created or rebuilt.
    """
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise EngineError(
            f"the local database has schema version {version}; this library reads "
            f"up to {SCHEMA_VERSION} (upgrade cortex_memory)"
        )
    if version == 0:
        _refuse_foreign(conn)  # before changing anything in the file
    if not memory:
        # Persistent in the file: every later connection, in any process, uses WAL.
        conn.execute("PRAGMA journal_mode = WAL")
    if version < SCHEMA_VERSION:
        with write_transaction(conn):
            # Another process may have done it while we waited for the lock.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                _refuse_foreign(conn)
                _create_v1(conn, use_fts)
            else:
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    _log.info("migrating the local database to schema %d", step)
                    _MIGRATIONS[step](conn)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    dims = conn.execute("SELECT value FROM engine_info WHERE key = 'dims'").fetchone()
    if dims is None or int(dims[0]) != DIMS:
        raise EngineError("the local database was written with other vector settings")
    if use_fts and fts_state(conn) != FTS_OK:
        rebuild_fts(conn)


def fts_state(conn: sqlite3.Connection) -> str:
    """``ok``, ``stale`` (written without the index) or ``absent`` (never built)."""
    row = conn.execute("SELECT value FROM engine_info WHERE key = 'fts_state'").fetchone()
    return FTS_ABSENT if row is None else str(row[0])


def mark_fts_stale(conn: sqlite3.Connection) -> None:
    """Note, inside a write, that the FTS5 index (if any) missed this write."""
    conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state' AND value = ?",
                 (FTS_STALE, FTS_OK))


def rebuild_fts(conn: sqlite3.Connection) -> None:
    """Create the FTS5 index when absent, or rebuild it from ``items.words``."""
    with write_transaction(conn):
        state = fts_state(conn)
        if state == FTS_OK:
            return  # another connection did it first
        if state == FTS_ABSENT:
            conn.execute(_FTS_DDL)
        _log.info("rebuilding the local keyword index (state was %s)", state)
        conn.execute("INSERT INTO items_fts (items_fts) VALUES ('rebuild')")
        conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_OK,))


#: Items a file must hold before the query planner gets statistics.
ANALYZE_FROM = 1000


def refresh_statistics(conn: sqlite3.Connection) -> bool:
    """Run ``ANALYZE`` when ``items`` has doubled since the last run; True when it ran.

    Without statistics SQLite picks among the ``(tenant, …)`` indexes blindly
    and may walk a ranking scan in a random order; with them it reads rows in
    table order (or uses the index a selective filter deserves).
    """
    rows = int(conn.execute("SELECT count(*) FROM items").fetchone()[0])
    found = conn.execute(
        "SELECT value FROM engine_info WHERE key = 'analyzed_rows'"
    ).fetchone()
    analyzed = 0 if found is None else int(found[0])
    if rows < ANALYZE_FROM or rows < 2 * analyzed:
        return False
    with write_transaction(conn):
        conn.execute("ANALYZE")
        conn.execute(
            "INSERT OR REPLACE INTO engine_info (key, value) VALUES ('analyzed_rows', ?)",
            (str(rows),),
        )
    _log.debug("refreshed the local database statistics at %d items", rows)
    return True

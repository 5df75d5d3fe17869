"""The local database's schema: tables, indexes, the schema version and migrations.

Layout (schema version 2):

- ``items``: one short row per stored item and tenant, holding what filters
  test: ``seq`` (insertion order; the key every other table refers to), id,
  kind, namespace path (``''`` for the root), ``svc`` (1 + the index of the
  deepest ``service`` segment, 0 when none), the metadata fields filters test
  and ``observed_us`` (microseconds since the epoch).
- ``item_bodies``: the item's rendered text (what the keyword index and hits
  read) and the item whole as its canonical contract JSON (``item_json``).
- ``item_tags``: one row per tag (repeats kept, as facets count them).
- ``item_vectors``: ``(seq, model, vec)``, the item's unit float32 vector
  from the embedder ``model`` (a key into ``embedders``).
- ``items_fts`` (+ ``items_vocab``): an external-content FTS5 index over
  ``item_bodies.text`` with the ``porter unicode61 remove_diacritics 2``
  tokenizer, and its vocabulary (how many rows hold each stem). Present only
  when the SQLite build has FTS5.
- ``beliefs``, ``belief_sources``, ``belief_vectors``, ``beliefs_fts``
  (+ ``beliefs_vocab``): consolidated beliefs, ranked like items.
- ``stats``: integer counters kept in step by every write: rows and words
  per corpus (BM25 needs them) and ``vector_epoch``, bumped whenever vectors
  go away or change (in-memory vector indexes reload then).
- ``engine_info``: ``schema_version`` and ``fts_state`` (``ok``, ``stale``
  or ``absent``).

``PRAGMA user_version`` mirrors the schema version so a newer file is refused
before anything reads it. Version 1 files (hashed trigram columns, an index
over distinct words) are migrated in place when opened (:func:`_migrate_2`).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Callable, Dict, Iterable, Tuple

from cortex_memory.contract import StoreItem
from cortex_memory.errors import EngineError, InvalidRequestError
from cortex_memory.local.connections import write_transaction
from cortex_memory.local.corpus import BELIEFS, ITEMS, Corpus
from cortex_memory.local.store import stored_json
from cortex_memory.local.text import words_of

__all__ = [
    "FTS_ABSENT",
    "FTS_OK",
    "FTS_STALE",
    "SCHEMA_VERSION",
    "ensure_schema",
    "fts5_available",
    "fts_state",
    "mark_fts_stale",
    "rebuild_fts",
    "refresh_statistics",
]

_log = logging.getLogger(__name__)

#: The schema this library writes and reads.
SCHEMA_VERSION = 2

FTS_OK = "ok"
FTS_STALE = "stale"
FTS_ABSENT = "absent"

#: The tokenizer of both keyword indexes.
TOKENIZER = "porter unicode61 remove_diacritics 2"

_ITEMS = """CREATE TABLE items (
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
    UNIQUE (tenant, id)
)"""
_ITEM_INDEXES = (
    "CREATE INDEX items_namespace ON items (tenant, namespace)",
    "CREATE INDEX items_workspace ON items (tenant, workspace)",
    "CREATE INDEX items_thread ON items (tenant, thread_id, turns_first)",
)
_BODIES = """CREATE TABLE item_bodies (
    seq INTEGER PRIMARY KEY, text TEXT NOT NULL, item_json TEXT NOT NULL
)"""
_BELIEFS = """CREATE TABLE beliefs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    svc INTEGER NOT NULL,
    key TEXT NOT NULL,
    miss REAL NOT NULL,
    updated_us INTEGER NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (tenant, namespace, key)
)"""

_COMMON = (
    "CREATE TABLE engine_info (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE stats (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
    """CREATE TABLE embedders (
        key INTEGER PRIMARY KEY, model_id TEXT NOT NULL UNIQUE, dimension INTEGER NOT NULL
    )""",
    """CREATE TABLE item_vectors (
        seq INTEGER PRIMARY KEY, model INTEGER NOT NULL, vec BLOB NOT NULL
    )""",
    """CREATE TABLE belief_vectors (
        seq INTEGER PRIMARY KEY, model INTEGER NOT NULL, vec BLOB NOT NULL
    )""",
)
_TAGS_AND_SOURCES = (
    """CREATE TABLE item_tags (
        seq INTEGER NOT NULL, pos INTEGER NOT NULL, tag TEXT NOT NULL,
        PRIMARY KEY (seq, pos)
    ) WITHOUT ROWID""",
    "CREATE INDEX item_tags_tag ON item_tags (tag)",
    """CREATE TABLE belief_sources (
        belief INTEGER NOT NULL, item INTEGER NOT NULL, weight REAL NOT NULL,
        PRIMARY KEY (belief, item)
    ) WITHOUT ROWID""",
    "CREATE INDEX belief_sources_item ON belief_sources (item)",
)
_BELIEF_INDEXES = ("CREATE INDEX beliefs_id ON beliefs (tenant, id)",)

#: (FTS5 table, content table) of each corpus.
_FTS: Tuple[Tuple[Corpus, str], ...] = ((ITEMS, "item_bodies"), (BELIEFS, "beliefs"))

_COUNTERS = (
    ITEMS.docs_key, ITEMS.words_key, BELIEFS.docs_key, BELIEFS.words_key, "vector_epoch",
)  # fmt: skip

# version -> the step that brings a file at ``version - 1`` to ``version``.
_MIGRATIONS: Dict[int, Callable[[sqlite3.Connection, bool], None]] = {}


def fts5_available(conn: sqlite3.Connection) -> bool:
    """True when this SQLite build can create FTS5 tables with the porter tokenizer."""
    try:
        conn.execute(
            f"CREATE VIRTUAL TABLE temp.cm_fts_probe USING fts5(x, tokenize='{TOKENIZER}')"
        )
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


def _create_fts(conn: sqlite3.Connection) -> None:
    for corpus, content in _FTS:
        conn.execute(
            f"CREATE VIRTUAL TABLE {corpus.fts} USING fts5(text, content='{content}', "
            f"content_rowid='seq', tokenize='{TOKENIZER}')"
        )
        conn.execute(f"CREATE VIRTUAL TABLE {corpus.vocab} USING fts5vocab({corpus.fts}, row)")


def _create(conn: sqlite3.Connection, use_fts: bool) -> None:
    for statement in (*_COMMON, _ITEMS, *_ITEM_INDEXES, _BODIES, _BELIEFS, *_BELIEF_INDEXES,
                      *_TAGS_AND_SOURCES):  # fmt: skip
        conn.execute(statement)
    state = FTS_ABSENT
    if use_fts:
        _create_fts(conn)
        state = FTS_OK
    conn.executemany(
        "INSERT INTO engine_info (key, value) VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), ("fts_state", state)],
    )
    conn.executemany("INSERT INTO stats (key, value) VALUES (?, 0)", [(k,) for k in _COUNTERS])
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _word_total(texts: Iterable[Tuple[str]]) -> Tuple[int, int]:
    rows = words = 0
    for (text,) in texts:
        rows += 1
        words += len(words_of(str(text)))
    return rows, words


def _migrate_2(conn: sqlite3.Connection, use_fts: bool) -> None:
    """Version 1 → 2: vectors leave the row, the keyword index stems, stats appear.

    Everything stored is kept: item rows, bodies, tags, beliefs and their
    sources are copied column by column into the new tables; ``seq`` values
    and the AUTOINCREMENT counters are preserved. The vectors are computed
    afterwards by the engine's embedder (``vectors.reembed``).
    """
    sequences = dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
    item_columns = (
        "seq, tenant, id, kind, namespace, svc, workspace, folder, file_path, language, repo, "
        "vcs_commit, url, thread_id, turns_first, turns_last, agent_id, tool_call, "
        "source_kind, source_id, observed_us, confidence"
    )
    belief_columns = "seq, tenant, id, namespace, svc, key, miss, updated_us, text"
    for old in ("items_fts",):
        if conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (old,)
        ).fetchone() is not None:
            conn.execute(f"DROP TABLE {old}")
    conn.execute("ALTER TABLE items RENAME TO items_v1")
    conn.execute("ALTER TABLE item_bodies RENAME TO item_bodies_v1")
    conn.execute("ALTER TABLE beliefs RENAME TO beliefs_v1")
    for index in ("items_tenant", "items_namespace", "items_workspace", "beliefs_id"):
        conn.execute(f"DROP INDEX IF EXISTS {index}")
    for statement in (*_COMMON[1:], _ITEMS, *_ITEM_INDEXES, _BODIES, _BELIEFS, *_BELIEF_INDEXES):
        conn.execute(statement)
    conn.execute(f"INSERT INTO items ({item_columns}) SELECT {item_columns} FROM items_v1")
    conn.executemany(
        "INSERT INTO item_bodies (seq, text, item_json) VALUES (?, ?, ?)",
        (
            (seq, text, _compact_json(str(item_json)))
            for seq, text, item_json in conn.execute(
                "SELECT seq, text, item_json FROM item_bodies_v1"
            ).fetchall()
        ),
    )
    conn.execute(f"INSERT INTO beliefs ({belief_columns}) SELECT {belief_columns} FROM beliefs_v1")
    for table in ("items_v1", "item_bodies_v1", "beliefs_v1"):
        conn.execute(f"DROP TABLE {table}")
    for name in ("items", "beliefs"):
        if name in sequences:
            conn.execute(
                "UPDATE sqlite_sequence SET seq = ? WHERE name = ?", (sequences[name], name)
            )
    conn.executemany("INSERT INTO stats (key, value) VALUES (?, 0)", [(k,) for k in _COUNTERS])
    for corpus, content in _FTS:
        docs, words = _word_total(conn.execute(f"SELECT text FROM {content}"))
        conn.executemany(
            "UPDATE stats SET value = ? WHERE key = ?",
            [(docs, corpus.docs_key), (words, corpus.words_key)],
        )
    conn.execute("DELETE FROM engine_info WHERE key IN ('dims', 'analyzed_rows')")
    conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_ABSENT,))
    if use_fts:
        _create_fts(conn)
        for corpus, _content in _FTS:
            conn.execute(f"INSERT INTO {corpus.fts} ({corpus.fts}) VALUES ('rebuild')")
        conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_OK,))
    conn.execute(
        "UPDATE engine_info SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
    )


_MIGRATIONS[2] = _migrate_2


def _compact_json(item_json: str) -> str:
    """A version 1 ``item_json`` as version 2 keeps it (text not repeated).

    A row that does not parse is kept as it was: readers report it as
    unreadable, as before, and nothing is lost.
    """
    try:
        item = StoreItem.from_json(json.loads(item_json))
    except (ValueError, InvalidRequestError):
        return item_json
    return stored_json(item)


def ensure_schema(conn: sqlite3.Connection, *, use_fts: bool, memory: bool) -> None:
    """Create or migrate the schema, then bring the FTS5 indexes up to date.

    Runs once per engine, on its first connection. ``use_fts`` is True when
    this engine will rank keywords with FTS5 (the build has it and it was not
    turned off); only then is an index created or rebuilt.
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
                _create(conn, use_fts)
            else:
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    _log.info("migrating the local database to schema %d", step)
                    _MIGRATIONS[step](conn, use_fts)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
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
            _create_fts(conn)
        _log.info("rebuilding the local keyword index (state was %s)", state)
        for corpus, _content in _FTS:
            conn.execute(f"INSERT INTO {corpus.fts} ({corpus.fts}) VALUES ('rebuild')")
        conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_OK,))


#: Items a file must hold before the query planner gets statistics.
ANALYZE_FROM = 1000


def refresh_statistics(conn: sqlite3.Connection) -> bool:
    """Run ``ANALYZE`` when ``items`` has doubled since the last run; True when it ran.

    Without statistics SQLite picks among the ``(tenant, …)`` indexes blindly;
    with them it reads rows in table order (or uses the index a selective
    filter deserves).
    """
    rows = int(
        conn.execute("SELECT value FROM stats WHERE key = ?", (ITEMS.docs_key,)).fetchone()[0]
    )
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

"""The local database's tables and indexes, as SQL, and the constants that name them.

Layout (schema version 4), made so that storing an item writes few pages:

- ``items``: one row per stored item and tenant, everything in it: ``seq``
  (insertion order, the key every other table refers to; given out by the
  engine and never reused), ``idkey`` (the id's first 64 bits as an
  integer), id, kind, namespace path (``''`` for the root), ``svc`` (1 + the
  index of the deepest ``service`` segment, 0 when none), the metadata
  fields filters test, ``observed_us`` (microseconds since the epoch), the
  tags (``sqlfilter.tags_key``), the rendered text (what the keyword index
  and hits read) and the item whole as JSON (``item_json``, its text not
  repeated). Indexes: ``idkey`` (ids are hashes, so this index is written
  at a random place per item: an 8-byte key keeps it small), ``(tenant,
  namespace)``, and ``(tenant, workspace)`` and ``(tenant, thread_id,
  turns_first)`` over the rows that have one.
- ``item_vectors``: ``(seq, model, vec)``, the item's unit float32 vector
  from the embedder ``model`` (a key into ``embedders``), for embedders that
  store vectors.
- ``items_cjk``: ``(seq, text)``, for the items whose text holds CJK
  characters only, the text as the keyword index reads it: a space around
  each CJK character (``text.index_text``; the tokenizer would otherwise
  take a whole clause for one word). Always kept in step with ``items``,
  with or without FTS5, so a rebuild of the index reads the right text.
- ``items_fts_text``: a view, ``(seq, text)`` of every item with its
  ``items_cjk`` text when it has one, else ``items.text``: what the keyword
  index reads (its content table: ``rebuild``) and what
  deleting from it must pass back.
- ``items_fts`` (+ ``items_vocab``): an external-content FTS5 index over
  ``items_fts_text`` with the ``porter unicode61 remove_diacritics 2``
  tokenizer, and its vocabulary (how many rows hold each stem). Present only
  when the SQLite build has FTS5. Its own row and token counts are BM25's
  corpus statistics (``corpus.read_stats``).
- ``items_pending``: ``(seq, words)`` of the item rows the FTS5 index does
  not hold yet, and how many words the index will count in each: short
  items stored one at a time, which the index takes in bulk once there are
  :data:`~cortex_memory.local.pending.PENDING_ROWS` of them (or with the
  next batch, or a rebuild). Every item row of an indexed file is in the
  index or here, never both; readers read these rows with the index
  (:mod:`cortex_memory.local.pending`).
- ``beliefs``, ``belief_sources``, ``belief_vectors``, ``beliefs_cjk``,
  ``beliefs_fts_text``, ``beliefs_fts`` (+ ``beliefs_vocab``): consolidated
  beliefs, ranked and indexed like items.
- ``stats``: integer counters: ``vector_epoch``, bumped whenever vectors go
  away or change (in-memory vector indexes reload then), and ``items_seq``,
  the highest ``seq`` a deleted item ever had (new items get a higher one).
- ``engine_info``: ``schema_version``, ``fts_state`` (``ok``, ``stale`` or
  ``absent``) and ``analyzed_rows``.

``PRAGMA user_version`` mirrors the schema version so a newer file is refused
before anything reads it. Creating, opening and checking the file is
:mod:`cortex_memory.local.schema`; bringing an older file to this layout is
:mod:`cortex_memory.local.migrations`.
"""

from __future__ import annotations

import sqlite3
from typing import Tuple

from cortex_memory.local.corpus import BELIEFS, ITEMS, Corpus
from cortex_memory.local.files import FileKind

__all__ = [
    "BELIEFS_TABLE",
    "BELIEF_INDEXES",
    "COMMON_TABLES",
    "COUNTERS",
    "FTS_ABSENT",
    "FTS_OK",
    "FTS_STALE",
    "ITEMS_TABLE",
    "ITEM_INDEXES",
    "KEYWORD_CORPORA",
    "LOCAL_FILE",
    "PENDING_TABLE",
    "SCHEMA_VERSION",
    "SEQ_FLOOR",
    "TOKENIZER",
    "create_fts",
    "create_schema",
    "fts5_available",
    "keyword_sources",
]

#: The schema this library writes and reads.
SCHEMA_VERSION = 4

#: The local engine's kind of file. Files written before application ids
#: (schema 1 and 2) are recognised by their ``engine_info`` and ``items`` tables.
LOCAL_FILE = FileKind(
    "local database", SCHEMA_VERSION, frozenset({"engine_info", "items"}), legacy_min_version=1
)

#: ``engine_info.fts_state``: the keyword indexes are current, missed a write, never built.
FTS_OK = "ok"
FTS_STALE = "stale"
FTS_ABSENT = "absent"

#: The tokenizer of both keyword indexes.
TOKENIZER = "porter unicode61 remove_diacritics 2"

#: The statements that create the tables (see the module's docstring).
ITEMS_TABLE = """CREATE TABLE items (
    seq INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    idkey INTEGER NOT NULL,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    svc INTEGER NOT NULL,
    workspace TEXT, folder TEXT, file_path TEXT, language TEXT, repo TEXT,
    vcs_commit TEXT, url TEXT, thread_id TEXT, turns_first INTEGER, turns_last INTEGER,
    agent_id TEXT, tool_call TEXT, source_kind TEXT NOT NULL, source_id TEXT,
    observed_us INTEGER,
    confidence REAL,
    tags TEXT,
    text TEXT NOT NULL,
    item_json TEXT NOT NULL
)"""
# Partial indexes: an item without a workspace or a thread writes no entry
# there, and a filter on either (``column = ?``) implies the index's condition.
ITEM_INDEXES = (
    "CREATE INDEX items_id ON items (idkey)",
    "CREATE INDEX items_namespace ON items (tenant, namespace)",
    "CREATE INDEX items_workspace ON items (tenant, workspace) WHERE workspace IS NOT NULL",
    "CREATE INDEX items_thread ON items (tenant, thread_id, turns_first) "
    "WHERE thread_id IS NOT NULL",
)
BELIEFS_TABLE = """CREATE TABLE beliefs (
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

#: The item rows the keyword index does not hold yet (schema 4).
PENDING_TABLE = (
    "CREATE TABLE items_pending (seq INTEGER PRIMARY KEY, words INTEGER NOT NULL)"
)

COMMON_TABLES = (
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
_SOURCES = (
    """CREATE TABLE belief_sources (
        belief INTEGER NOT NULL, item INTEGER NOT NULL, weight REAL NOT NULL,
        PRIMARY KEY (belief, item)
    ) WITHOUT ROWID""",
    "CREATE INDEX belief_sources_item ON belief_sources (item)",
)
BELIEF_INDEXES = ("CREATE INDEX beliefs_id ON beliefs (tenant, id)",)


def keyword_sources(corpus: Corpus) -> Tuple[str, str]:
    """The ``<corpus>_cjk`` table and the ``<corpus>_fts_text`` view (schema 3)."""
    return (
        f"CREATE TABLE {corpus.cjk} (seq INTEGER PRIMARY KEY, text TEXT NOT NULL)",
        f"CREATE VIEW {corpus.indexed} (seq, text) AS SELECT c.seq, "
        f"coalesce(CAST(k.text AS TEXT), c.text) "
        f"FROM {corpus.table} c LEFT JOIN {corpus.cjk} k ON k.seq = c.seq",
    )

#: The corpora with a keyword index.
KEYWORD_CORPORA: Tuple[Corpus, ...] = (ITEMS, BELIEFS)

#: ``stats`` keys: see the module's docstring.
SEQ_FLOOR = "items_seq"
COUNTERS = ("vector_epoch", SEQ_FLOOR)


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


def create_fts(conn: sqlite3.Connection) -> None:
    """Create both keyword indexes (FTS5 over ``*_fts_text``) and their vocabularies."""
    for corpus in KEYWORD_CORPORA:
        conn.execute(
            f"CREATE VIRTUAL TABLE {corpus.fts} USING fts5(text, content='{corpus.indexed}', "
            f"content_rowid='seq', tokenize='{TOKENIZER}')"
        )
        conn.execute(f"CREATE VIRTUAL TABLE {corpus.vocab} USING fts5vocab({corpus.fts}, row)")


def create_schema(conn: sqlite3.Connection, use_fts: bool) -> None:
    """Create every table of a new file at :data:`SCHEMA_VERSION` (the keyword
    indexes only when ``use_fts``) and record the version."""
    for statement in (*COMMON_TABLES, ITEMS_TABLE, *ITEM_INDEXES, PENDING_TABLE, BELIEFS_TABLE,
                      *BELIEF_INDEXES, *_SOURCES, *keyword_sources(ITEMS),
                      *keyword_sources(BELIEFS)):  # fmt: skip
        conn.execute(statement)
    state = FTS_ABSENT
    if use_fts:
        create_fts(conn)
        state = FTS_OK
    conn.executemany(
        "INSERT INTO engine_info (key, value) VALUES (?, ?)",
        [("schema_version", str(SCHEMA_VERSION)), ("fts_state", state)],
    )
    conn.executemany("INSERT INTO stats (key, value) VALUES (?, 0)", [(k,) for k in COUNTERS])
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

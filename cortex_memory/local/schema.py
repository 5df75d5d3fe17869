"""The local database's schema: tables, indexes, the schema version and migrations.

Layout (schema version 3), made so that storing an item writes few pages:

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
- ``beliefs``, ``belief_sources``, ``belief_vectors``, ``beliefs_cjk``,
  ``beliefs_fts_text``, ``beliefs_fts`` (+ ``beliefs_vocab``): consolidated
  beliefs, ranked and indexed like items.
- ``stats``: integer counters: ``vector_epoch``, bumped whenever vectors go
  away or change (in-memory vector indexes reload then), and ``items_seq``,
  the highest ``seq`` a deleted item ever had (new items get a higher one).
- ``engine_info``: ``schema_version``, ``fts_state`` (``ok``, ``stale`` or
  ``absent``) and ``analyzed_rows``.

``PRAGMA user_version`` mirrors the schema version so a newer file is refused
before anything reads it. Older files are migrated in place when opened:
version 1 (hashed trigram columns, an index over distinct words, bodies and
tags in tables of their own) by :func:`_migrate_2`, version 2 (the keyword
index read ``items.text`` as it is, so a CJK clause was one word) by
:func:`_migrate_3`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import Callable, Dict, Iterator, List, Tuple

from cortex_memory.contract import StoreItem
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local.connections import write_transaction
from cortex_memory.local.corpus import BELIEFS, ITEMS, Corpus
from cortex_memory.local.files import FileKind, claim, use_wal
from cortex_memory.local.sqlfilter import tags_key
from cortex_memory.local.store import id_key, stored_json
from cortex_memory.local.text import index_text

__all__ = [
    "FTS_ABSENT",
    "FTS_OK",
    "FTS_STALE",
    "LOCAL_FILE",
    "SCHEMA_VERSION",
    "SEQ_FLOOR",
    "ensure_schema",
    "fts5_available",
    "fts_state",
    "mark_fts_stale",
    "rebuild_fts",
    "refresh_statistics",
]

_log = logging.getLogger(__name__)

#: The schema this library writes and reads.
SCHEMA_VERSION = 3

#: The local engine's kind of file. Files written before application ids
#: (schema 1 and 2) are recognised by their ``engine_info`` and ``items`` tables.
LOCAL_FILE = FileKind(
    "local database", SCHEMA_VERSION, frozenset({"engine_info", "items"}), legacy_min_version=1
)

FTS_OK = "ok"
FTS_STALE = "stale"
FTS_ABSENT = "absent"

#: The tokenizer of both keyword indexes.
TOKENIZER = "porter unicode61 remove_diacritics 2"

_ITEMS = """CREATE TABLE items (
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
_ITEM_INDEXES = (
    "CREATE INDEX items_id ON items (idkey)",
    "CREATE INDEX items_namespace ON items (tenant, namespace)",
    "CREATE INDEX items_workspace ON items (tenant, workspace) WHERE workspace IS NOT NULL",
    "CREATE INDEX items_thread ON items (tenant, thread_id, turns_first) "
    "WHERE thread_id IS NOT NULL",
)
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
_SOURCES = (
    """CREATE TABLE belief_sources (
        belief INTEGER NOT NULL, item INTEGER NOT NULL, weight REAL NOT NULL,
        PRIMARY KEY (belief, item)
    ) WITHOUT ROWID""",
    "CREATE INDEX belief_sources_item ON belief_sources (item)",
)
_BELIEF_INDEXES = ("CREATE INDEX beliefs_id ON beliefs (tenant, id)",)


def _keyword_sources(corpus: Corpus) -> Tuple[str, str]:
    """The ``<corpus>_cjk`` table and the ``<corpus>_fts_text`` view (schema 3)."""
    return (
        f"CREATE TABLE {corpus.cjk} (seq INTEGER PRIMARY KEY, text TEXT NOT NULL)",
        f"CREATE VIEW {corpus.indexed} (seq, text) AS SELECT c.seq, "
        f"coalesce(CAST(k.text AS TEXT), c.text) "
        f"FROM {corpus.table} c LEFT JOIN {corpus.cjk} k ON k.seq = c.seq",
    )

#: The corpora with a keyword index.
_FTS: Tuple[Corpus, ...] = (ITEMS, BELIEFS)

#: ``stats`` keys: see the module's docstring.
SEQ_FLOOR = "items_seq"
_COUNTERS = ("vector_epoch", SEQ_FLOOR)

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


def _create_fts(conn: sqlite3.Connection) -> None:
    for corpus in _FTS:
        conn.execute(
            f"CREATE VIRTUAL TABLE {corpus.fts} USING fts5(text, content='{corpus.indexed}', "
            f"content_rowid='seq', tokenize='{TOKENIZER}')"
        )
        conn.execute(f"CREATE VIRTUAL TABLE {corpus.vocab} USING fts5vocab({corpus.fts}, row)")


def _create(conn: sqlite3.Connection, use_fts: bool) -> None:
    for statement in (*_COMMON, _ITEMS, *_ITEM_INDEXES, _BELIEFS, *_BELIEF_INDEXES,
                      *_SOURCES, *_keyword_sources(ITEMS), *_keyword_sources(BELIEFS)):  # fmt: skip
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


#: The metadata columns schema 1 and 2 share, in ``items`` order.
_V1_ITEM_COLUMNS = (
    "seq, tenant, id, kind, namespace, svc, workspace, folder, file_path, language, repo, "
    "vcs_commit, url, thread_id, turns_first, turns_last, agent_id, tool_call, "
    "source_kind, source_id, observed_us, confidence"
)


def _v1_items(conn: sqlite3.Connection) -> Iterator[List[Tuple[object, ...]]]:
    """Schema 1's items as schema 2 rows, in ``seq`` order, a slice at a time."""
    after = -1
    while True:
        rows = conn.execute(
            f"SELECT {', '.join('i.' + c for c in _V1_ITEM_COLUMNS.split(', '))}, "
            "b.text, b.item_json FROM items_v1 i JOIN item_bodies_v1 b ON b.seq = i.seq "
            "WHERE i.seq > ? ORDER BY i.seq LIMIT 500",
            (after,),
        ).fetchall()
        if not rows:
            return
        tags: Dict[int, List[str]] = {}
        marks = ", ".join("?" * len(rows))
        for seq, tag in conn.execute(
            f"SELECT seq, tag FROM item_tags_v1 WHERE seq IN ({marks}) ORDER BY seq, pos",
            [row[0] for row in rows],
        ):
            tags.setdefault(int(seq), []).append(str(tag))
        converted: List[Tuple[object, ...]] = []
        for row in rows:
            *columns, text, item_json = row
            converted.append((
                *columns[:2], id_key(str(columns[2])), *columns[2:],
                tags_key(tags.get(int(row[0]), ())), text, _compact_json(str(item_json)),
            ))  # fmt: skip
        yield converted
        after = int(rows[-1][0])


def _migrate_2(conn: sqlite3.Connection, use_fts: bool) -> None:
    """Version 1 → 2: one row per item, vectors leave it, the keyword index stems.

    Everything stored is kept: each item's columns, text, JSON and tags go
    into its one new row, beliefs and their sources are copied; ``seq``
    values are preserved, and no ``seq`` an item ever had is given out
    again. The vectors are computed afterwards by the engine's embedder
    (``vectors.reembed``). The old keyword index is dropped; the next step
    (:func:`_migrate_3`, which always follows) builds the stemming one.
    """
    sequences = dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
    belief_columns = "seq, tenant, id, namespace, svc, key, miss, updated_us, text"
    conn.execute("DROP TABLE IF EXISTS items_fts")
    for old in ("items", "item_bodies", "item_tags", "beliefs"):
        conn.execute(f"ALTER TABLE {old} RENAME TO {old}_v1")
    for index in ("items_tenant", "items_namespace", "items_workspace", "beliefs_id",
                  "item_tags_tag"):  # fmt: skip
        conn.execute(f"DROP INDEX IF EXISTS {index}")
    for statement in (*_COMMON[1:], _ITEMS, *_ITEM_INDEXES, _BELIEFS, *_BELIEF_INDEXES):
        conn.execute(statement)
    names = ", ".join(
        ["seq", "tenant", "idkey", *_V1_ITEM_COLUMNS.split(", ")[2:], "tags", "text", "item_json"]
    )
    marks = ", ".join("?" * (len(_V1_ITEM_COLUMNS.split(", ")) + 4))
    for rows in _v1_items(conn):
        conn.executemany(f"INSERT INTO items ({names}) VALUES ({marks})", rows)
    conn.execute(f"INSERT INTO beliefs ({belief_columns}) SELECT {belief_columns} FROM beliefs_v1")
    for table in ("items_v1", "item_bodies_v1", "item_tags_v1", "beliefs_v1"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'items'")
    if "beliefs" in sequences:
        conn.execute(
            "UPDATE sqlite_sequence SET seq = ? WHERE name = 'beliefs'", (sequences["beliefs"],)
        )
    conn.executemany("INSERT INTO stats (key, value) VALUES (?, 0)", [(k,) for k in _COUNTERS])
    conn.execute(
        "UPDATE stats SET value = ? WHERE key = ?", (int(sequences.get("items", 0)), SEQ_FLOOR)
    )
    conn.execute("DELETE FROM engine_info WHERE key IN ('dims', 'analyzed_rows')")
    # The keyword index is built by the next step (_migrate_3), over its view.
    conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_ABSENT,))
    conn.execute("UPDATE engine_info SET value = '2' WHERE key = 'schema_version'")


_MIGRATIONS[2] = _migrate_2


def _migrate_3(conn: sqlite3.Connection, use_fts: bool) -> None:
    """Version 2 → 3: the keyword indexes read CJK text a character a word.

    Adds ``items_cjk``/``beliefs_cjk`` (filled for every row whose text holds
    CJK characters) and the ``*_fts_text`` views, and builds both keyword
    indexes again over the views (when this engine uses FTS5; otherwise they
    are left absent and built by the first engine that does). Nothing stored
    changes. Stored vectors are kept: the default n-gram embedder, which
    reads the same words as the index, stores none (it embeds at query time).
    """
    for corpus in _FTS:
        conn.execute(f"DROP TABLE IF EXISTS {corpus.vocab}")
        conn.execute(f"DROP TABLE IF EXISTS {corpus.fts}")
        for statement in _keyword_sources(corpus):
            conn.execute(statement)
        segmented: List[Tuple[int, str]] = []
        # One row at a time (a text may be long): rows whose text has no CJK
        # character cost one check.
        for seq, text in conn.execute(f"SELECT seq, text FROM {corpus.table}"):
            indexed = index_text(str(text))
            if indexed is not None:
                segmented.append((int(seq), indexed))
            if len(segmented) >= 100:
                conn.executemany(f"INSERT INTO {corpus.cjk} (seq, text) VALUES (?, ?)", segmented)
                segmented.clear()
        conn.executemany(f"INSERT INTO {corpus.cjk} (seq, text) VALUES (?, ?)", segmented)
    conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_ABSENT,))
    if use_fts:
        _create_fts(conn)
        for corpus in _FTS:
            conn.execute(f"INSERT INTO {corpus.fts} ({corpus.fts}) VALUES ('rebuild')")
        conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_OK,))
    conn.execute("UPDATE engine_info SET value = '3' WHERE key = 'schema_version'")


_MIGRATIONS[3] = _migrate_3


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
        _create(conn, use_fts)

    def upgrade(conn: sqlite3.Connection, version: int) -> None:
        for step in range(version + 1, SCHEMA_VERSION + 1):
            _log.info("migrating the local database to schema %d", step)
            _MIGRATIONS[step](conn, use_fts)

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
            _create_fts(conn)
        _log.info("rebuilding the local keyword index (state was %s)", state)
        for corpus in _FTS:
            conn.execute(f"INSERT INTO {corpus.fts} ({corpus.fts}) VALUES ('rebuild')")
        conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_OK,))


#: Items a file must hold before the query planner gets statistics.
ANALYZE_FROM = 1000


def refresh_statistics(conn: sqlite3.Connection) -> bool:
    """Run ``ANALYZE`` when ``items`` has doubled since the last run; True when it ran.

    Without statistics SQLite picks among the ``(tenant, …)`` indexes blindly;
    with them it reads rows in table order (or uses the index a selective
    filter deserves). The highest ``seq`` stands for the row count (the
    items ever written): reading it costs one index probe.
    """
    rows = int(conn.execute("SELECT coalesce(max(seq), 0) FROM items").fetchone()[0])
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

"""Migrations of the local database: older schema versions brought to this one in place.

A file is migrated when it is opened (:func:`cortex_memory.local.schema.ensure_schema`
runs :data:`MIGRATIONS` from the file's version up), inside the transaction
that claims it: version 1 (hashed trigram columns, an index over distinct
words, bodies and tags in tables of their own) by :func:`_migrate_2`,
version 2 (the keyword index read ``items.text`` as it is, so a CJK clause
was one word) by :func:`_migrate_3`. The layout they arrive at is
:mod:`cortex_memory.local.ddl`.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Callable, Dict, Iterator, List, Tuple

from cortex_memory.contract import StoreItem
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local.ddl import (
    BELIEF_INDEXES,
    BELIEFS_TABLE,
    COMMON_TABLES,
    COUNTERS,
    FTS_ABSENT,
    FTS_OK,
    ITEM_INDEXES,
    ITEMS_TABLE,
    KEYWORD_CORPORA,
    PENDING_TABLE,
    SEQ_FLOOR,
    create_fts,
    keyword_sources,
)
from cortex_memory.local.sqlfilter import tags_key
from cortex_memory.local.store import id_key, stored_json
from cortex_memory.local.text import index_text

__all__ = ["MIGRATIONS"]

#: version -> the step that brings a file at ``version - 1`` to ``version``.
MIGRATIONS: Dict[int, Callable[[sqlite3.Connection, bool], None]] = {}


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
    tables = (*COMMON_TABLES[1:], ITEMS_TABLE, *ITEM_INDEXES, BELIEFS_TABLE, *BELIEF_INDEXES)
    for statement in tables:
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
    conn.executemany("INSERT INTO stats (key, value) VALUES (?, 0)", [(k,) for k in COUNTERS])
    conn.execute(
        "UPDATE stats SET value = ? WHERE key = ?", (int(sequences.get("items", 0)), SEQ_FLOOR)
    )
    conn.execute("DELETE FROM engine_info WHERE key IN ('dims', 'analyzed_rows')")
    # The keyword index is built by the next step (_migrate_3), over its view.
    conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_ABSENT,))
    conn.execute("UPDATE engine_info SET value = '2' WHERE key = 'schema_version'")


MIGRATIONS[2] = _migrate_2


def _migrate_3(conn: sqlite3.Connection, use_fts: bool) -> None:
    """Version 2 → 3: the keyword indexes read CJK text a character a word.

    Adds ``items_cjk``/``beliefs_cjk`` (filled for every row whose text holds
    CJK characters) and the ``*_fts_text`` views, and builds both keyword
    indexes again over the views (when this engine uses FTS5; otherwise they
    are left absent and built by the first engine that does). Nothing stored
    changes. Stored vectors are kept: the default n-gram embedder, which
    reads the same words as the index, stores none (it embeds at query time).
    """
    for corpus in KEYWORD_CORPORA:
        conn.execute(f"DROP TABLE IF EXISTS {corpus.vocab}")
        conn.execute(f"DROP TABLE IF EXISTS {corpus.fts}")
        for statement in keyword_sources(corpus):
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
        create_fts(conn)
        for corpus in KEYWORD_CORPORA:
            conn.execute(f"INSERT INTO {corpus.fts} ({corpus.fts}) VALUES ('rebuild')")
        conn.execute("UPDATE engine_info SET value = ? WHERE key = 'fts_state'", (FTS_OK,))
    conn.execute("UPDATE engine_info SET value = '3' WHERE key = 'schema_version'")


MIGRATIONS[3] = _migrate_3


def _migrate_4(conn: sqlite3.Connection, use_fts: bool) -> None:
    """Version 3 → 4: ``items_pending``, the item rows the keyword index takes later.

    A new, empty table: every row of a version 3 file is already in its index
    (or the index is stale or absent, and its next rebuild takes every row).
    Nothing stored changes.
    """
    conn.execute(PENDING_TABLE)
    conn.execute("UPDATE engine_info SET value = '4' WHERE key = 'schema_version'")


MIGRATIONS[4] = _migrate_4


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

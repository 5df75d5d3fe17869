"""Rows of the ``items`` table: writing an item, deleting rows, reading hits back.

Writing is split in two so the write lock is held briefly: :func:`prepare`
does the CPU work (fingerprint, canonical JSON, words, trigram vector) with no
lock held, and :func:`insert` writes the prepared rows inside the caller's
transaction. Every delete goes through :func:`delete_seqs`, which keeps the
tag, vector and FTS5 rows and the beliefs built on the item in step.
"""

# only; every value is bound as a parameter, never formatted into the text.
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Set, Tuple, cast

from cortex_memory.contract import Hit, ItemKind, MemoryMeta, StoreItem, dumps
from cortex_memory.errors import EngineError, InvalidRequestError
from cortex_memory.local import beliefs
from cortex_memory.local.analysis import DIMS, padded_words, vector_row, words_of
from cortex_memory.local.schema import vector_columns
from cortex_memory.local.sqlfilter import micros, namespace_key, service_depth

__all__ = [
    "HIT_COLUMNS",
    "HIT_FROM",
    "PREVIEW_CHARS",
    "Prepared",
    "chunks",
    "delete_seqs",
    "held_ids",
    "hit_of",
    "insert",
    "item_of",
    "prepare",
]

#: Columns a hit is built from, in the order :func:`hit_of` reads them
#: (``items c`` joined with ``item_bodies w``; see :data:`HIT_FROM`).
HIT_COLUMNS = "c.seq, c.id, c.kind, w.text, c.confidence, w.item_json"
#: The tables :data:`HIT_COLUMNS` read.
HIT_FROM = "items c JOIN item_bodies w ON w.seq = c.seq"
#: Characters of text ``list_preview`` keeps.
PREVIEW_CHARS = 512
#: Rows per ``IN (...)`` list, well under every SQLite build's variable limit.
CHUNK = 500

_KINDS = {kind.value: kind for kind in ItemKind}

_INSERT_ITEM = (
    "INSERT INTO items (tenant, id, kind, namespace, svc, workspace, folder, file_path, "
    "language, repo, vcs_commit, url, thread_id, turns_first, turns_last, agent_id, "
    f"tool_call, source_kind, source_id, observed_us, confidence, inv_norm, {vector_columns()}) "
    f"VALUES ({', '.join('?' * (22 + DIMS))})"
)
_INSERT_BODY = "INSERT INTO item_bodies (seq, words, text, item_json) VALUES (?, ?, ?, ?)"


def chunks(values: Sequence[object], size: int = CHUNK) -> Iterable[Sequence[object]]:
    """``values`` in slices of at most ``size``."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _marks(n: int) -> str:
    return ", ".join("?" * n)


@dataclass(frozen=True)
class Prepared:
    """An item made ready to write: its id and every column value."""

    id: str
    item_row: Tuple[object, ...]  # _INSERT_ITEM's values after the tenant
    body: Tuple[str, str, str]  # words, text, item_json
    tags: Tuple[str, ...]


def prepare(item: StoreItem) -> Prepared:
    """Compute everything a write of ``item`` needs (no database access)."""
    meta = item.meta
    text = item.render_text()
    words = words_of(text)
    padded = padded_words(words)
    item_id = item.fingerprint()
    row = (
        item_id,
        item.item_kind.value,
        namespace_key(meta.namespace),
        service_depth(meta.namespace),
        meta.workspace,
        meta.folder,
        meta.file_path,
        meta.language,
        meta.repo,
        meta.commit,
        meta.url,
        meta.thread_id,
        None if meta.turns is None else meta.turns.first,
        None if meta.turns is None else meta.turns.last,
        meta.agent_id,
        None if meta.tool_call is None else meta.tool_call.name,
        meta.source.kind.value,
        meta.source.id,
        None if meta.observed_at is None else micros(meta.observed_at),
        item.item_confidence,
        *vector_row(words),
    )
    return Prepared(item_id, row, (padded, text, dumps(item.to_json())), meta.tags)


def held_ids(conn: sqlite3.Connection, tenant: str, ids: Sequence[str]) -> Set[str]:
    """Which of ``ids`` ``tenant`` already holds."""
    held: Set[str] = set()
    for chunk in chunks(ids):
        held.update(
            str(row[0])
            for row in conn.execute(
                f"SELECT id FROM items WHERE tenant = ? AND id IN ({_marks(len(chunk))})",
                (tenant, *chunk),
            )
        )
    return held


def insert(conn: sqlite3.Connection, tenant: str, item: Prepared, *, fts: bool) -> None:
    """Write ``item`` for ``tenant`` (the caller checked it is not held).

    Runs inside the caller's write transaction, which makes the check and the
    insert one atomic step across threads and processes.
    """
    cursor = conn.execute(_INSERT_ITEM, (tenant, *item.item_row))
    seq = cursor.lastrowid
    conn.execute(_INSERT_BODY, (seq, *item.body))
    if item.tags:
        conn.executemany(
            "INSERT INTO item_tags (seq, pos, tag) VALUES (?, ?, ?)",
            [(seq, pos, tag) for pos, tag in enumerate(item.tags)],
        )
    if fts:
        conn.execute("INSERT INTO items_fts (rowid, words) VALUES (?, ?)", (seq, item.body[0]))


def delete_seqs(conn: sqlite3.Connection, seqs: Sequence[int], *, fts: bool) -> int:
    """Delete the item rows ``seqs`` and everything hanging off them; the count removed.

    Runs inside the caller's write transaction. Beliefs lose these items as
    sources, and a belief left with none is deleted too.
    """
    removed = 0
    for chunk in chunks(seqs):
        marks = _marks(len(chunk))
        if fts:
            rows = conn.execute(
                f"SELECT seq, words FROM item_bodies WHERE seq IN ({marks})", chunk
            ).fetchall()
            conn.executemany(
                "INSERT INTO items_fts (items_fts, rowid, words) VALUES ('delete', ?, ?)",
                rows,
            )
        conn.execute(f"DELETE FROM item_tags WHERE seq IN ({marks})", chunk)
        conn.execute(f"DELETE FROM item_bodies WHERE seq IN ({marks})", chunk)
        beliefs.drop_sources(conn, chunk)
        removed += conn.execute(f"DELETE FROM items WHERE seq IN ({marks})", chunk).rowcount
    return removed


def _decode(item_id: str, item_json: str) -> object:
    try:
        return json.loads(item_json)
    except ValueError as exc:
        raise EngineError(f"stored item `{item_id}` is unreadable") from exc


def meta_of(item_id: str, item_json: str) -> MemoryMeta:
    """The metadata of a stored item."""
    value = _decode(item_id, item_json)
    meta = value.get("meta") if isinstance(value, dict) else None
    try:
        return MemoryMeta.from_json(meta)
    except InvalidRequestError as exc:
        raise EngineError(f"stored item `{item_id}` is unreadable") from exc


def item_of(item_id: str, item_json: str) -> StoreItem:
    """The stored item, rebuilt whole from its canonical JSON."""
    value = _decode(item_id, item_json)
    try:
        return StoreItem.from_json(value)
    except InvalidRequestError as exc:
        raise EngineError(f"stored item `{item_id}` is unreadable") from exc


def hit_of(
    row: Sequence[object],
    meta: Optional[MemoryMeta] = None,
    *,
    score: float = 0.0,
    preview: bool = False,
) -> Hit:
    """The hit for a row of :data:`HIT_COLUMNS` (``meta`` when already decoded)."""
    item_id, text, item_json = str(row[1]), str(row[3]), str(row[5])
    confidence = row[4]
    if meta is None:
        meta = meta_of(item_id, item_json)
    if preview and len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS]
    return Hit(
        item_id,
        _KINDS[str(row[2])],
        text,
        meta,
        score,
        None if confidence is None else float(cast(float, confidence)),
    )


def kind_of(value: object) -> ItemKind:
    """The ``ItemKind`` of a stored kind string."""
    return _KINDS[str(value)]


def rows_by_seq(
    conn: sqlite3.Connection, seqs: Sequence[int]
) -> List[Tuple[object, ...]]:
    """The :data:`HIT_COLUMNS` rows of ``seqs`` (any order)."""
    out: List[Tuple[object, ...]] = []
    for chunk in chunks(seqs):
        out.extend(
            conn.execute(
                f"SELECT {HIT_COLUMNS} FROM {HIT_FROM} WHERE c.seq IN ({_marks(len(chunk))})",
                chunk,
            )
        )
    return out

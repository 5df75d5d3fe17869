"""Rows of the ``items`` table: writing an item and deleting rows (reading them back: :mod:`.rows`).

Writing is split in two so the write lock is held briefly: :func:`prepare`
does the CPU work (fingerprint, JSON, the embedder's vector) with no lock
held (:mod:`.plainrows` computes the same, byte for byte, in one pass for
items of the exact contract types, and embeds batches), and
:func:`insert_many` writes the prepared rows inside the caller's
transaction: one ``items`` row per item (tags, text and JSON included), its
keyword index entry and, for an embedder that stores them, its vector.
Every delete goes through :func:`delete_seqs`, which keeps the vector and
FTS5 rows and the beliefs built on the item in step.

Ids are looked up through ``idkey``, their first 64 bits as an integer
(:func:`id_key`), always together with the id itself (:func:`id_condition`).
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import hashlib
import re
import sqlite3
from functools import lru_cache
from itertools import compress
from operator import is_not
from typing import (
    Dict,
    Iterable,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    cast,
)

from cortex_memory.contract import (
    Document,
    Learning,
    StoreItem,
    TextBody,
)
from cortex_memory.contract.jsonfmt import c_dumps
from cortex_memory.local import beliefs, keywords, pending
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.sqlfilter import micros, namespace_key, service_depth, tags_key
from cortex_memory.local.vectors import bump_epoch, delete_vectors

__all__ = [
    "ID_FROM",
    "LONG_TEXT",
    "NEXT_SEQ",
    "Prepared",
    "chunks",
    "delete_seqs",
    "held_ids",
    "id_condition",
    "id_key",
    "insert_many",
    "prepare",
]

#: Rows per ``IN (...)`` list, well under every SQLite build's variable limit.
CHUNK = 500

#: The columns of ``items`` an item may fill, after ``seq`` and ``tenant``.
ITEM_COLUMNS = (
    "idkey", "id", "kind", "namespace", "svc", "workspace", "folder", "file_path", "language",
    "repo", "vcs_commit", "url", "thread_id", "turns_first", "turns_last", "agent_id",
    "tool_call", "source_kind", "source_id", "observed_us", "confidence", "tags", "text",
    "item_json",
)  # fmt: skip


_TEXT = ITEM_COLUMNS.index("text")
_POSITIONS = range(len(ITEM_COLUMNS))
_NONES = (None,) * len(ITEM_COLUMNS)
#: Characters from which a text counts as long. sqlite3 keeps the values last
#: bound to a statement until it runs again, so a long text is written by a
#: statement that is then run once more with nothing to insert (SQLite lets the
#: copy go). A long text that is not ASCII is bound as UTF-8 bytes: bound as a
#: ``str``, sqlite3 would keep a UTF-8 copy inside the caller's string for as
#: long as the caller keeps the item.
LONG_TEXT = 1 << 16


@lru_cache(maxsize=256)
def _insert_item(present: Tuple[int, ...], long: bool = False, as_bytes: bool = False) -> str:
    # Only the columns an item fills are bound: the others default to NULL, and
    # binding a parameter costs more than SQLite storing the NULL.
    names = ", ".join(ITEM_COLUMNS[i] for i in present)
    marks = ["?"] * (len(present) + 2)
    if as_bytes:
        marks[2 + present.index(_TEXT)] = "CAST(? AS TEXT)"
    if long:  # the last parameter says whether to insert (see LONG_TEXT)
        return f"INSERT INTO items (seq, tenant, {names}) SELECT {', '.join(marks)} WHERE ?"
    return f"INSERT INTO items (seq, tenant, {names}) VALUES ({', '.join(marks)})"


def _long_rows(
    rows: Sequence[Tuple[object, ...]], at: int, as_bytes: bool
) -> Iterator[Tuple[object, ...]]:
    """``rows`` to insert with the guarded statement, the text at ``at`` encoded when
    ``as_bytes``, one row at a time (one encoded copy at once)."""
    for row in rows:
        if as_bytes:
            text = cast(str, row[at]).encode("utf-8")
            yield (*row[:at], text, *row[at + 1 :], 1)
        else:
            yield (*row, 1)


def _write_long(
    conn: sqlite3.Connection,
    present: Tuple[int, ...],
    as_bytes: bool,
    rows: Sequence[Tuple[object, ...]],
) -> None:
    sql = _insert_item(present, True, as_bytes)
    conn.executemany(sql, _long_rows(rows, 2 + present.index(_TEXT), as_bytes))
    conn.execute(sql, (None,) * (len(present) + 2) + (0,))  # inserts nothing, unbinds


# Items are stored in JSON only the engine reads back: the C encoder writes
# it (the contract's own writer is for bytes other implementations must
# match; any JSON that ``json.loads`` reads back to the same value serves
# here, floats included, since ``repr`` round-trips them exactly).

_ID_PREFIX = re.compile(r"[0-9a-f]{16}")


def id_key(item_id: str) -> int:
    """The ``idkey`` of an id: its first 16 hex digits as a signed 64-bit integer.

    Item ids are hashes (40 lowercase hex digits), so the key spreads like
    one. Any other string (an id no item has) gets a key from a hash of it,
    so a lookup of it finds nothing without failing.
    """
    prefix = item_id[:16]
    if _ID_PREFIX.fullmatch(prefix):
        value = int(prefix, 16)
    else:
        digest = hashlib.blake2b(item_id.encode("utf-8", "surrogatepass"), digest_size=8)
        value = int.from_bytes(digest.digest(), "big")
    return value - (1 << 64) if value >= 1 << 63 else value


#: The rows :func:`id_condition` selects are read through the ``idkey`` index:
#: without planner statistics SQLite would rather walk the tenant's rows.
ID_FROM = "items c INDEXED BY items_id"


def id_condition(ids: Sequence[str]) -> Tuple[str, List[object]]:
    """SQL selecting the rows of :data:`ID_FROM` whose id is one of ``ids``."""
    keys = list(dict.fromkeys(id_key(item_id) for item_id in ids))
    return f"c.idkey IN ({_marks(len(keys))}) AND c.id IN ({_marks(len(ids))})", [*keys, *ids]


def chunks(values: Sequence[object], size: int = CHUNK) -> Iterable[Sequence[object]]:
    """``values`` in slices of at most ``size``."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class Prepared(NamedTuple):
    """An item made ready to write: its id and every column value."""

    id: str
    present: Tuple[int, ...]  # which of ITEM_COLUMNS the item fills
    values: Tuple[object, ...]  # their values, in that order
    text: str  # the rendered text (also among ``values``)
    vector: Optional[bytes]  # the embedder's vector (None: not embedded yet)


def prepare(item: StoreItem) -> Prepared:
    """Compute everything a write of ``item`` needs but its vector (no database access)."""
    meta = item.meta
    text = item.render_text()
    item_id = item.fingerprint()
    turns, tool_call, observed = meta.turns, meta.tool_call, meta.observed_at
    row: Tuple[object, ...] = (
        id_key(item_id),
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
        None if turns is None else turns.first,
        None if turns is None else turns.last,
        meta.agent_id,
        None if tool_call is None else tool_call.name,
        meta.source.kind.value,
        meta.source.id,
        None if observed is None else micros(observed),
        item.item_confidence,
        tags_key(meta.tags) if meta.tags else None,
        text,
        stored_json(item),
    )
    # The filled columns and their values, picked in C (an item fills about half).
    filled = list(map(is_not, row, _NONES))
    return Prepared(
        item_id, tuple(compress(_POSITIONS, filled)), tuple(compress(row, filled)), text, None
    )


def stored_json(item: StoreItem) -> str:
    """The item's contract JSON as kept in ``item_json``, its text not repeated.

    ``items.text`` holds the rendered text already, so a document's text
    body and a learning's text are written as ``null`` here and put back on
    reading (``rows.item_of``); everything else is the contract JSON as is.
    """
    value = item.to_json()
    if isinstance(item, Document) and isinstance(item.body, TextBody):
        value["body"] = {"text": None}
    elif isinstance(item, Learning):
        value["text"] = None
    return c_dumps(value)


#: The next ``seq``: above every row's, and above every deleted row's.
#: The ``seq`` the next new item gets: above every ``seq`` an item ever had,
#: the deleted ones included (``items_seq``). Read inside the write transaction.
NEXT_SEQ = (
    "(max(coalesce((SELECT max(seq) FROM items), 0), "
    "(SELECT value FROM stats WHERE key = 'items_seq')) + 1)"
)
_NEXT_SEQ = f"SELECT NULL, {NEXT_SEQ}"


def held_ids(
    conn: sqlite3.Connection,
    tenant: str,
    ids: Sequence[str],
    keys: Optional[Sequence[int]] = None,
) -> Tuple[Set[str], int]:
    """Which of ``ids`` ``tenant`` already holds, and the ``seq`` the next new item gets.

    One statement for both (a store of one item is mostly statements).
    ``keys`` are the ids' :func:`id_key` when the caller has them. The rows
    are looked up by key alone and their ids checked here: SQLite then
    builds one ``IN`` list per statement, not two.
    """
    held: Set[str] = set()
    first = 0
    if not ids:
        return held, int(conn.execute(_NEXT_SEQ).fetchone()[1])
    wanted = set(ids)
    if keys is None:
        keys = [id_key(item_id) for item_id in ids]
    for chunk in chunks(keys):
        for item_id, seq in conn.execute(
            f"SELECT c.id, NULL FROM {ID_FROM} WHERE c.idkey IN ({_marks(len(chunk))}) "
            f"AND c.tenant = ? UNION ALL {_NEXT_SEQ}",
            (*chunk, tenant),
        ):
            if item_id is None:
                first = int(seq)
            elif item_id in wanted:
                held.add(str(item_id))
    return held, first


def insert_many(
    conn: sqlite3.Connection,
    tenant: str,
    items: Sequence[Prepared],
    first: int,
    *,
    fts: bool,
    model: Optional[int],
) -> None:
    """Write ``items`` for ``tenant`` as rows ``first``, ``first + 1``, …

    The caller checked, in the same write transaction, that none is held and
    that ``first`` is above every ``seq`` an item ever had (:func:`held_ids`),
    which makes the check and the insert one atomic step across threads and
    processes. Each table gets one statement for the whole batch, and the
    keyword index takes the rows waiting for it with the batch's own
    (:func:`~cortex_memory.local.pending.flush`). ``model`` is the key of the
    embedder that made the items' vectors.
    """
    if not items:
        return
    seqs = range(first, first + len(items))
    shapes: Dict[Tuple[Tuple[int, ...], bool, bool], List[Tuple[object, ...]]] = {}
    any_long = False
    for s, i in zip(seqs, items):
        long = len(i.text) >= LONG_TEXT
        any_long = any_long or long
        as_bytes = long and not i.text.isascii()
        shapes.setdefault((i.present, long, as_bytes), []).append((s, tenant, *i.values))
    for (present, long, as_bytes), rows in shapes.items():
        if long:
            _write_long(conn, present, as_bytes, rows)
        else:
            conn.executemany(_insert_item(present), rows)
    keyed = [(s, i.text) for s, i in zip(seqs, items)]
    if fts:  # the batch writes an index segment anyway: the pending rows join it
        pending.flush(conn, ITEMS)
    if any_long:
        keywords.add_long(conn, ITEMS, keyed, first, first + len(items), fts=fts)
    else:
        keywords.add_short(conn, ITEMS, keyed, fts=fts)
    if model is not None:
        vectors = [(s, model, i.vector) for s, i in zip(seqs, items) if i.vector is not None]
        if vectors:
            conn.executemany("INSERT INTO item_vectors (seq, model, vec) VALUES (?, ?, ?)", vectors)


def delete_seqs(conn: sqlite3.Connection, seqs: Sequence[int], *, fts: bool) -> int:
    """Delete the item rows ``seqs`` and everything hanging off them; the count removed.

    Runs inside the caller's write transaction. Beliefs lose these items as
    sources, and a belief left with none is deleted too.
    """
    removed = 0
    for chunk in chunks(seqs):
        marks = _marks(len(chunk))
        found = keywords.drop(conn, ITEMS, chunk, marks, fts=fts)
        if not found:
            continue
        # No seq is given out twice, even the highest one's after it goes.
        conn.execute(
            "UPDATE stats SET value = max(value, ?) WHERE key = 'items_seq'", (max(found),)
        )
        delete_vectors(conn, ITEMS, chunk)
        beliefs.drop_sources(conn, chunk, fts=fts)
        removed += conn.execute(f"DELETE FROM items WHERE seq IN ({marks})", chunk).rowcount
    if removed:
        bump_epoch(conn)
    return removed

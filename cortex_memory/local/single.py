"""A store of one item, the common case of scripts and GUIs, written with the fewest statements.

:func:`~cortex_memory.local.writes.store_batch` serves every batch: it looks
up which of the batch's ids are held and the next ``seq`` in one statement,
groups rows by shape, and falls back to item-by-item writes to find a
failing item. For one item that machinery costs about as much as the SQL it
runs, so :func:`store_one` writes it with three statements in its own
transaction:

1. one ``INSERT`` that does the rest in SQLite: its ``seq`` is computed in
   the statement (above every ``seq`` an item ever had, the deleted ones
   included: the ``items_seq`` counter), and when the tenant already holds
   the id (``items_id``, the id compared too) the row's ``id`` is NULL, which
   ``OR IGNORE`` turns into no row: a replay. No row for any other reason
   is a defect, reported as one, never a replay;
2. its keyword index entry, or for a short text its place among the rows the
   index takes later in bulk (:func:`~cortex_memory.local.keywords.add_one`,
   :mod:`~cortex_memory.local.pending`), and, for an embedder that stores
   them, its vector;
3. ``COMMIT``.

The transaction starts deferred: its first statement is the ``INSERT``, so
SQLite takes the write lock before it reads anything (waiting for a busy
lock as ``BEGIN IMMEDIATE`` would) and a read never has to be upgraded.
The rows written are those ``store_batch`` writes for the same item (the
tests compare the two files), and a failure is rolled back and raised as
``store_batch`` raises it for a batch of one. A long text is left to the
general path (:data:`~cortex_memory.local.store.LONG_TEXT`).
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from functools import lru_cache
from typing import Optional, Tuple

from cortex_memory.contract import StoreReceipt
from cortex_memory.contract.receipts import receipt
from cortex_memory.errors import EngineError
from cortex_memory.local import keywords
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.files import rollback
from cortex_memory.local.schema import mark_fts_stale
from cortex_memory.local.store import ITEM_COLUMNS, LONG_TEXT, NEXT_SEQ, Prepared

__all__ = ["store_one"]

#: The first columns of every prepared item: the id's key and the id.
_ID_FIRST = (0, 1)

#: Whether ``tenant`` (``?1``) holds the id (key ``?2``, id ``?3``).
_HELD = "SELECT 1 FROM items INDEXED BY items_id WHERE idkey = ?2 AND tenant = ?1 AND id = ?3"


@lru_cache(maxsize=64)
def _insert(present: Tuple[int, ...]) -> str:
    # Only the columns the item fills are bound (as in store._insert_item); the
    # first two are always the id's key and the id.
    names = ", ".join(ITEM_COLUMNS[i] for i in present)
    marks = ", ".join("?" * (len(present) - 2))
    return (
        f"INSERT OR IGNORE INTO items (seq, tenant, {names}) VALUES ({NEXT_SEQ}, ?1, ?2, "
        f"CASE WHEN EXISTS ({_HELD}) THEN NULL ELSE ?3 END, {marks})"
    )


def store_one(
    conn: sqlite3.Connection,
    tenant: str,
    item: Prepared,
    *,
    fts: bool,
    model: Optional[int],
) -> Optional[StoreReceipt]:
    """Store one prepared item in its own transaction; its receipt, or ``None``
    for an item the general path writes (nothing ran then)."""
    if len(item.text) >= LONG_TEXT or item.present[:2] != _ID_FIRST:
        return None
    values = (tenant, *item.values)
    # One cursor runs every statement (``Connection.execute`` makes one per call).
    cursor = conn.cursor()
    cursor.execute("BEGIN")
    try:
        cursor.execute(_insert(item.present), values)
        if cursor.rowcount != 1:
            if cursor.execute(_HELD, values[:3]).fetchone() is None:
                raise EngineError(
                    "the local database did not store the item (a defect: please report it)"
                )
            cursor.execute("COMMIT")
            return receipt(item.id, True)
        seq = cursor.lastrowid
        assert seq is not None  # an INSERT that wrote a row always gives its id
        keywords.add_one(cursor, ITEMS, seq, item.text, fts=fts)
        if model is not None and item.vector is not None:
            cursor.execute(
                "INSERT INTO item_vectors (seq, model, vec) VALUES (?, ?, ?)",
                (seq, model, item.vector),
            )
        if not fts:
            mark_fts_stale(conn)
        cursor.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise
    return receipt(item.id, False)

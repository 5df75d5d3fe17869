"""Writes of the local engine: store, store_many, forget (ids, filter, within a reach), erase.

Each function takes a borrowed connection and runs in its own write
transaction (``BEGIN IMMEDIATE``; a store of one item, :mod:`.single`, lets
its first statement take the lock), so a write is all or nothing and sees no
other writer half-way. Filter-driven deletes walk the matching rows in
:data:`SCAN` sized slices (by ``seq``), so memory stays bounded however many
rows go.

A store with ``replace`` removes the other versions of each surviving item's
source in the same transaction as the insert (:func:`_replace`), so the new
version and the removal commit together: never the one without the other.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, cast

from cortex_memory.contract import (
    ItemKind,
    MetaFilter,
    Namespace,
    Reach,
    StoreReceipt,
    holds_phone_number,
    redacted_id,
    same_id,
)
from cortex_memory.contract.receipts import receipt
from cortex_memory.contract.replacing import FILE_PATH, ReplaceBatch, VersionKey
from cortex_memory.local.connections import LARGE_WRITE_CHARS, small_cache, write_transaction
from cortex_memory.local.rows import HIT_FROM, kind_of, meta_of
from cortex_memory.local.schema import mark_fts_stale
from cortex_memory.local.single import store_one
from cortex_memory.local.sqlfilter import filter_condition, namespace_key, reach_condition
from cortex_memory.local.store import (
    ID_FROM,
    Prepared,
    chunks,
    delete_seqs,
    held_ids,
    id_condition,
    insert_many,
)

__all__ = [
    "SCAN",
    "erase_reach",
    "forget_filter",
    "forget_ids",
    "forget_within",
    "store_batch",
]

#: Rows read per slice while deleting by filter.
SCAN = 500


class _ItemFailed(Exception):
    """Writing item ``index`` of a batch failed with ``cause``."""

    def __init__(self, index: int, cause: Exception) -> None:
        super().__init__(index)
        self.index = index
        self.cause = cause


def _fresh(
    conn: sqlite3.Connection, tenant: str, batch: Sequence[Prepared]
) -> Tuple[List[StoreReceipt], List[Prepared], int]:
    """Receipts in item order, the items to write (not held, first copies) and
    the ``seq`` the first of them gets."""
    # An item's values start with its id's key (``idkey``, always filled).
    held, first = held_ids(
        conn, tenant, [item.id for item in batch], [cast(int, item.values[0]) for item in batch]
    )
    receipts: List[StoreReceipt] = []
    fresh: List[Prepared] = []
    for item in batch:
        replay = item.id in held  # held before, or an earlier copy in this batch
        receipts.append(receipt(item.id, replay))
        if not replay:
            held.add(item.id)
            fresh.append(item)
    return receipts, fresh, first


def _count(conn: sqlite3.Connection, fresh: Sequence[Prepared], fts: bool) -> None:
    if fresh and not fts:
        mark_fts_stale(conn)


def _write_all(
    conn: sqlite3.Connection,
    tenant: str,
    batch: Sequence[Prepared],
    fts: bool,
    model: Optional[int],
) -> List[StoreReceipt]:
    """Write the batch's fresh items with one statement per table; receipts in item order."""
    receipts, fresh, first = _fresh(conn, tenant, batch)
    insert_many(conn, tenant, fresh, first, fts=fts, model=model)
    _count(conn, fresh, fts)
    return receipts


def _write_each(
    conn: sqlite3.Connection,
    tenant: str,
    batch: Sequence[Prepared],
    fts: bool,
    model: Optional[int],
) -> List[StoreReceipt]:
    """:func:`_write_all` item by item, to find the one that fails (:class:`_ItemFailed`).

    The slow path, taken only when the batched statements failed; the items
    written before the failing one stay written in the transaction.
    """
    receipts, fresh, first = _fresh(conn, tenant, batch)
    done: List[Prepared] = []
    for offset, item in enumerate(fresh):
        try:
            insert_many(conn, tenant, [item], first + offset, fts=fts, model=model)
        except Exception as exc:
            _count(conn, done, fts)
            raise _ItemFailed(batch.index(item), exc) from exc
        done.append(item)
    _count(conn, done, fts)
    return receipts


def store_batch(
    conn: sqlite3.Connection,
    tenant: str,
    batch: Sequence[Prepared],
    *,
    fts: bool,
    model: Optional[int],
    replacing: Optional[ReplaceBatch] = None,
    kept: Optional[List[StoreReceipt]] = None,
) -> List[StoreReceipt]:
    """Store prepared items in order in one transaction; receipts in item order.

    The batch is written with one statement per table. Should that fail,
    the items are written again one by one; when item ``k`` fails, items
    ``0..k-1`` stay stored (as if stored one by one, so sending the batch
    again gives replays for them), their receipts are appended to ``kept``,
    and the failure is raised. Each item is thus all or nothing, with no
    per-item savepoint on the common path. With ``replacing`` (the batch's
    replace rules), the other versions of every surviving item are removed
    in the same transaction. A batch holding a long text runs with a small page
    cache (:func:`~cortex_memory.local.connections.small_cache`). One item
    with no replace rules is written by
    :func:`~cortex_memory.local.single.store_one` (the same rows, fewer
    statements).
    """
    if replacing is None and len(batch) == 1:
        receipt = store_one(conn, tenant, batch[0], fts=fts, model=model)
        if receipt is not None:
            return [receipt]
    large = sum(len(item.text) for item in batch) >= LARGE_WRITE_CHARS
    with small_cache(conn, large):
        return _store_batch(conn, tenant, batch, fts, model, replacing, kept)


def _store_batch(
    conn: sqlite3.Connection,
    tenant: str,
    batch: Sequence[Prepared],
    fts: bool,
    model: Optional[int],
    replacing: Optional[ReplaceBatch],
    kept: Optional[List[StoreReceipt]],
) -> List[StoreReceipt]:
    try:
        with write_transaction(conn):
            receipts = _write_all(conn, tenant, batch, fts, model)
            return _replace(conn, tenant, replacing, receipts, fts)
    except sqlite3.Error as exc:
        if _is_lock(exc) or _is_interrupt(exc):
            raise
    except (UnicodeEncodeError, ValueError, OverflowError):
        pass
    try:
        with write_transaction(conn):
            receipts = _write_each(conn, tenant, batch, fts, model)
            return _replace(conn, tenant, replacing, receipts, fts)
    except _ItemFailed as failed:
        if failed.index > 0:
            count = failed.index
            prefix = None if replacing is None else replacing.prefix(count)
            with write_transaction(conn):
                receipts = _write_all(conn, tenant, batch[:count], fts, model)
                receipts = _replace(conn, tenant, prefix, receipts, fts)
            if kept is not None:
                kept.extend(receipts)
        raise failed.cause from None


def _replace(
    conn: sqlite3.Connection,
    tenant: str,
    replacing: Optional[ReplaceBatch],
    receipts: List[StoreReceipt],
    fts: bool,
) -> List[StoreReceipt]:
    """Remove the other versions of each survivor of ``replacing``; receipts filled in.

    One look per (namespace, kind) the batch's sources live in, through the
    ``(tenant, namespace)`` index; a source id matches exactly or in its
    redacted form, a file path exactly.
    """
    if replacing is None:
        return receipts
    groups: Dict[Tuple[str, str], List[Tuple[VersionKey, int]]] = {}
    for key, index in replacing.survivors().items():
        groups.setdefault((namespace_key(key.namespace), key.kind.value), []).append((key, index))
    gone: Dict[int, List[str]] = {}
    doomed: List[int] = []
    for (namespace, kind), survivors in groups.items():
        for seq, item_id, index in _versions(conn, tenant, namespace, kind, survivors, replacing):
            doomed.append(seq)
            gone.setdefault(index, []).append(item_id)
    _finish_delete(conn, doomed, fts)
    return replacing.receipts(receipts, gone)


#: Values per ``IN (...)`` list of a versions look-up (under the oldest variable limit).
_VERSION_VALUES = 400


def _versions(
    conn: sqlite3.Connection,
    tenant: str,
    namespace: str,
    kind: str,
    survivors: Sequence[Tuple[VersionKey, int]],
    replacing: ReplaceBatch,
) -> Iterable[Tuple[int, str, int]]:
    """``(seq, id, survivor index)`` of every held version of ``survivors``' sources."""
    by_source: Dict[str, List[Tuple[str, int]]] = {}
    by_path: Dict[str, List[Tuple[str, int]]] = {}
    for key, index in survivors:
        value = key.identity.value
        if key.identity.field == FILE_PATH:
            by_path.setdefault(value, []).append((value, index))
            continue
        forms = (value, redacted_id(value)) if holds_phone_number(value) else (value,)
        for form in forms:
            by_source.setdefault(form, []).append((value, index))
    base = (
        "SELECT seq, id, source_id, file_path FROM items "
        "WHERE tenant = ? AND namespace = ? AND kind = ? AND "
    )
    looks = (
        ("source_id IN ({})", list(by_source)),
        ("source_id IS NULL AND file_path IN ({})", list(by_path)),
    )
    for condition, values in looks:
        for chunk in chunks(values, _VERSION_VALUES):
            marks = ", ".join("?" * len(chunk))
            rows = conn.execute(
                base + condition.format(marks), (tenant, namespace, kind, *chunk)
            ).fetchall()
            for seq, item_id, source_id, file_path in rows:
                if source_id is not None:
                    wanted = [
                        index for value, index in by_source.get(source_id, [])
                        if same_id(source_id, value)
                    ]
                else:
                    wanted = [index for _, index in by_path.get(file_path, [])]
                for index in wanted:
                    if item_id != replacing.ids[index]:
                        yield int(seq), str(item_id), index


def _is_lock(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_interrupt(exc: sqlite3.Error) -> bool:
    # A deadline's progress handler stopped the statement: writing the items
    # one by one would only be stopped again.
    return "interrupted" in str(exc).lower()


def _finish_delete(conn: sqlite3.Connection, seqs: Sequence[int], fts: bool) -> int:
    if not seqs:
        return 0
    removed = delete_seqs(conn, seqs, fts=fts)
    if not fts:
        mark_fts_stale(conn)
    return removed


def forget_ids(conn: sqlite3.Connection, tenant: str, ids: Iterable[str], *, fts: bool) -> int:
    """Delete ``tenant``'s items by id wherever they live (sandboxes included)."""
    unique = list(dict.fromkeys(ids))
    removed = 0
    with write_transaction(conn):
        for chunk in chunks(unique):
            where, params = id_condition(cast(Sequence[str], chunk))
            seqs = [
                int(row[0])
                for row in conn.execute(
                    f"SELECT c.seq FROM {ID_FROM} WHERE {where} AND c.tenant = ?", (*params, tenant)
                )
            ]
            removed += _finish_delete(conn, seqs, fts)
    return removed


def _matching_slices(
    conn: sqlite3.Connection, where: str, params: Sequence[object]
) -> Iterable[List[Tuple[int, str, str, str]]]:
    """Slices of ``(seq, id, kind, item_json)`` rows matching ``where``, by seq.

    The caller may delete each slice before asking for the next one.
    """
    after = 0
    while True:
        rows = conn.execute(
            f"SELECT c.seq, c.id, c.kind, c.item_json FROM {HIT_FROM} WHERE {where} "
            "AND c.seq > ? ORDER BY c.seq LIMIT ?",
            (*params, after, SCAN),
        ).fetchall()
        if rows:
            yield rows
        if len(rows) < SCAN:
            return
        after = rows[-1][0]


def forget_filter(
    conn: sqlite3.Connection, tenant: str, flt: MetaFilter, *, fts: bool
) -> int:
    """Delete every item of ``tenant`` the filter admits (confined by its reach)."""
    where, params = filter_condition(flt, tenant)
    removed = 0
    with write_transaction(conn):
        for rows in _matching_slices(conn, where, params):
            doomed = [
                seq for seq, item_id, kind, item_json in rows
                if flt.matches(kind_of(kind), meta_of(item_id, item_json))
            ]
            removed += _finish_delete(conn, doomed, fts)
    return removed


def forget_within(
    conn: sqlite3.Connection, tenant: str, ids: Sequence[str], reach: Reach, *, fts: bool
) -> int:
    """Delete the items among ``ids`` that live where ``reach`` admits; look nowhere else."""
    reach_sql, reach_params = reach_condition(reach, "c")
    removed = 0
    with write_transaction(conn):
        for chunk in chunks(ids):
            where, params = id_condition(cast(Sequence[str], chunk))
            rows = conn.execute(
                f"SELECT c.seq, c.id, c.item_json FROM {ID_FROM} WHERE {where} "
                f"AND c.tenant = ? AND {reach_sql}",
                (*params, tenant, *reach_params),
            ).fetchall()
            doomed = [
                seq for seq, item_id, item_json in rows
                if reach.admits(meta_of(item_id, item_json).namespace)
            ]
            removed += _finish_delete(conn, doomed, fts)
    return removed


def erase_reach(
    conn: sqlite3.Connection,
    tenant: str,
    reach: Reach,
    kinds: Sequence[ItemKind],
    *,
    fts: bool,
) -> int:
    """Hard-delete the items at the nodes of ``reach`` (never above it) of ``kinds``.

    Returns the number of distinct (node, kind) pairs that lost items.
    """
    flat = Reach(reach.at, False, reach.descendants)
    flt = MetaFilter(reach=flat, kinds=tuple(kinds))
    where, params = filter_condition(flt, tenant)
    scopes: Set[Tuple[str, str]] = set()
    with write_transaction(conn):
        for rows in _matching_slices(conn, where, params):
            doomed: List[int] = []
            for seq, item_id, kind, item_json in rows:
                namespace: Namespace = meta_of(item_id, item_json).namespace
                if flat.admits(namespace) and flt.admits_kind(kind_of(kind)):
                    doomed.append(seq)
                    scopes.add((str(namespace), kind))
            _finish_delete(conn, doomed, fts)
    return len(scopes)

"""The belief tables: statements distilled from items, with the items they rest on.

A belief is one statement at one node (``namespace``) of one tenant, keyed by
its normalised text, so the same sentence found in several items is one
belief with several sources. Each source carries a weight (0.5 for a
sentence taken from a document or conversation, the learning's own
confidence for a learning), and the belief's confidence is the chance that
not every source is wrong: ``1 - Π(1 - weight)``. The table keeps
``miss = Π(1 - weight)``; it is recomputed from the remaining sources
whenever one goes away, and a belief left without sources is deleted. So
forgetting or erasing an item also takes back what was derived from it.

Beliefs are never items: they have their own ids and tables, so ``list``,
``fetch``, ``get`` and ``forget`` by id never see them.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import re
import sqlite3
import time
from typing import Dict, List, Sequence, Set, Tuple, cast

from cortex_memory.contract import (
    BELIEF_TAG,
    Hit,
    ItemKind,
    MemoryMeta,
    Namespace,
    hash_json,
)
from cortex_memory.local import keywords
from cortex_memory.local.corpus import BELIEFS
from cortex_memory.local.sqlfilter import namespace_key, service_depth
from cortex_memory.local.vectors import bump_epoch, delete_vectors

__all__ = [
    "BELIEF_COLUMNS",
    "add_source",
    "belief_hit",
    "belief_key",
    "drop_sources",
    "upsert",
]

#: Columns :func:`belief_hit` reads, in order.
BELIEF_COLUMNS = BELIEFS.columns

_PUNCTUATION = re.compile(r"[\s.!?;:,]+$")
_SPACES = re.compile(r"\s+")
_INSERT = (
    "INSERT INTO beliefs (tenant, id, namespace, svc, key, miss, updated_us, text) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def belief_key(text: str) -> str:
    """What makes two statements the same belief: lowercase, spaces collapsed,
    closing punctuation dropped."""
    return _PUNCTUATION.sub("", _SPACES.sub(" ", text).strip().lower())


def _now_us() -> int:
    return time.time_ns() // 1000


def upsert(
    conn: sqlite3.Connection, tenant: str, ns: Namespace, text: str, *, fts: bool
) -> Tuple[int, bool]:
    """The seq of the belief ``text`` at ``ns`` and whether it is new (created
    with no sources and no vector yet)."""
    key = belief_key(text)
    ns_key = namespace_key(ns)
    row = conn.execute(
        "SELECT seq FROM beliefs WHERE tenant = ? AND namespace = ? AND key = ?",
        (tenant, ns_key, key),
    ).fetchone()
    if row is not None:
        return int(row[0]), False
    belief_id = hash_json(f"belief\n{ns_key}\n{key}")
    cursor = conn.execute(
        _INSERT, (tenant, belief_id, ns_key, service_depth(ns), key, 1.0, _now_us(), text)
    )
    seq = int(cursor.lastrowid or 0)
    keywords.add_short(conn, BELIEFS, ((seq, text),), fts=fts)
    return seq, True


def add_source(conn: sqlite3.Connection, belief: int, item: int, weight: float) -> bool:
    """Record that item row ``item`` supports ``belief``; True when it is new support."""
    held = conn.execute(
        "SELECT 1 FROM belief_sources WHERE belief = ? AND item = ?", (belief, item)
    ).fetchone()
    if held is not None:
        return False
    conn.execute(
        "INSERT INTO belief_sources (belief, item, weight) VALUES (?, ?, ?)",
        (belief, item, weight),
    )
    conn.execute(
        "UPDATE beliefs SET miss = miss * ?, updated_us = ? WHERE seq = ?",
        (1.0 - weight, _now_us(), belief),
    )
    return True


def _delete_beliefs(conn: sqlite3.Connection, seqs: Sequence[int], fts: bool) -> None:
    marks = ", ".join("?" * len(seqs))
    keywords.drop(conn, BELIEFS, seqs, marks, fts=fts)
    delete_vectors(conn, BELIEFS, seqs)
    conn.execute(f"DELETE FROM beliefs WHERE seq IN ({marks})", seqs)
    bump_epoch(conn)


def drop_sources(conn: sqlite3.Connection, items: Sequence[object], *, fts: bool) -> None:
    """Remove item rows ``items`` as sources (they are being deleted).

    Each affected belief's ``miss`` is recomputed from the sources left; a
    belief with none left is deleted with its vector.
    """
    marks = ", ".join("?" * len(items))
    affected = [
        int(row[0])
        for row in conn.execute(
            f"SELECT DISTINCT belief FROM belief_sources WHERE item IN ({marks})", items
        )
    ]
    if not affected:
        return
    conn.execute(f"DELETE FROM belief_sources WHERE item IN ({marks})", items)
    for start in range(0, len(affected), 500):
        chunk = affected[start : start + 500]
        chunk_marks = ", ".join("?" * len(chunk))
        miss: Dict[int, float] = {}
        for belief, weight in conn.execute(
            f"SELECT belief, weight FROM belief_sources WHERE belief IN ({chunk_marks})",
            chunk,
        ):
            miss[belief] = miss.get(belief, 1.0) * (1.0 - weight)
        orphans: List[int] = [seq for seq in chunk if seq not in miss]
        conn.executemany(
            "UPDATE beliefs SET miss = ? WHERE seq = ?", [(m, s) for s, m in miss.items()]
        )
        if orphans:
            _delete_beliefs(conn, orphans, fts)


def belief_hit(row: Sequence[object], score: float = 0.0) -> Hit:
    """The hit for a row of :data:`BELIEF_COLUMNS`: a learning tagged ``belief``."""
    _seq, belief_id, ns_key, text, miss = row[:5]
    ns = Namespace.parse(str(ns_key)) if ns_key else Namespace.root()
    confidence = min(1.0, max(0.0, 1.0 - float(cast(float, miss))))
    return Hit(
        str(belief_id),
        ItemKind.LEARNING,
        str(text),
        MemoryMeta(namespace=ns, tags=(BELIEF_TAG,)),
        score,
        confidence,
    )


def nodes_and_counts(conn: sqlite3.Connection, tenant: str) -> Set[Tuple[str, int]]:
    """Every (namespace, belief count) of ``tenant`` (for tests and diagnostics)."""
    return {
        (str(ns), int(count))
        for ns, count in conn.execute(
            "SELECT namespace, count(*) FROM beliefs WHERE tenant = ? GROUP BY namespace",
            (tenant,),
        )
    }

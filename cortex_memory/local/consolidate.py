"""Consolidation on demand: distil beliefs from the items in a reach, and read them.

``consolidate`` reads every item the request's reach and kinds admit (skipping
items with ``derive: false``) and turns each into statements:

- a document: the sentences of its body (prose lines; ``#`` headings only
  when there is nothing else);
- a conversation: the sentences of its user turns (what the user said);
- a learning: its text, carrying the learning's confidence.

Statements of fewer than two words are dropped and long ones cut at 240
characters. Each becomes (or supports) a belief at the node its item lives
at (see ``beliefs.py`` for how support adds up to a confidence). The build
is idempotent: running it again adds nothing new. It commits every
:data:`BATCH` items, so a large reach never holds the write lock for long.

``beliefs`` reads them back: ranked by a query (hybrid ranking), or most
confident first, then newest.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from typing import Dict, List, Optional, Set, Tuple

from cortex_memory.contract import (
    ConsolidateReceipt,
    ConsolidateRequest,
    Conversation,
    Document,
    FetchMode,
    Hit,
    Learning,
    MetaFilter,
    Reach,
    Role,
    StoreItem,
    TextBody,
    admitted_by,
)
from cortex_memory.local import beliefs as table
from cortex_memory.local.connections import write_transaction
from cortex_memory.local.corpus import BELIEFS
from cortex_memory.local.embedders import Embedder, embed_all
from cortex_memory.local.rows import HIT_FROM, item_of
from cortex_memory.local.search import Query, VectorSpace, rank
from cortex_memory.local.sqlfilter import filter_condition, reach_condition
from cortex_memory.local.text import sentences, words_of
from cortex_memory.local.vectors import write_vectors

__all__ = [
    "BATCH",
    "MAX_STATEMENT",
    "SENTENCE_WEIGHT",
    "build",
    "read",
    "statements",
]

#: Items read per write transaction.
BATCH = 200
#: Longest statement kept, in characters.
MAX_STATEMENT = 240
#: Statements taken from one item, at most.
MAX_STATEMENTS = 12
#: Support one sentence of a document or conversation lends a belief.
SENTENCE_WEIGHT = 0.5


def _keep(sentence: str) -> Optional[str]:
    if len(words_of(sentence)) < 2:
        return None
    if len(sentence) > MAX_STATEMENT:
        sentence = sentence[:MAX_STATEMENT].rsplit(" ", 1)[0]
    return sentence


def statements(item: StoreItem) -> List[Tuple[str, float]]:
    """The statements ``item`` lends to beliefs, each with its weight."""
    if isinstance(item, Learning):
        kept = _keep(" ".join(item.text.split()))
        return [] if kept is None else [(kept, float(item.confidence))]
    texts: List[str] = []
    if isinstance(item, Document) and isinstance(item.body, TextBody):
        texts.append(item.body.text)
    elif isinstance(item, Conversation):
        texts.extend(turn.text for turn in item.turns if turn.role is Role.USER)
    out: List[Tuple[str, float]] = []
    for text in texts:
        for sentence in sentences(text):
            kept = _keep(sentence)
            if kept is not None:
                out.append((kept, SENTENCE_WEIGHT))
                if len(out) == MAX_STATEMENTS:
                    return out
    return out


def build(
    conn: sqlite3.Connection,
    tenant: str,
    request: ConsolidateRequest,
    *,
    fts: bool,
    embedder: Optional[Embedder],
    model: int,
) -> ConsolidateReceipt:
    """Distil beliefs from the items ``request`` admits; the receipt says how many.

    ``scopes`` is nodes read × kinds (the reach's own nodes, as the reference
    engine counts them); ``built`` counts beliefs created or given new support.
    New beliefs are embedded with ``embedder`` (model key ``model``) in the
    batch that creates them (None: its vectors are not stored).
    """
    kinds = request.admitted_kinds()
    flt = MetaFilter(reach=request.reach, kinds=kinds)
    where, params = filter_condition(flt, tenant)
    touched: Set[int] = set()
    after = 0
    while True:
        with write_transaction(conn):
            rows = conn.execute(
                f"SELECT c.seq, c.id, c.item_json, c.text FROM {HIT_FROM} WHERE {where} "
                "AND c.seq > ? "
                "ORDER BY c.seq LIMIT ?",
                (*params, after, BATCH),
            ).fetchall()
            created: List[Tuple[int, str]] = []
            for seq, item_id, item_json, text in rows:
                item = item_of(item_id, item_json, text)
                if item.meta.derive is False or not flt.matches(item.item_kind, item.meta):
                    continue
                for text, weight in statements(item):
                    belief, new = table.upsert(conn, tenant, item.meta.namespace, text, fts=fts)
                    if new:
                        created.append((belief, text))
                    if table.add_source(conn, belief, seq, weight):
                        touched.add(belief)
            if created and embedder is not None:
                vectors = embed_all(embedder, [text for _seq, text in created])
                write_vectors(
                    conn, BELIEFS, model, [(s, v) for (s, _t), v in zip(created, vectors)]
                )
        if len(rows) < BATCH:
            break
        after = rows[-1][0]
    return ConsolidateReceipt.completed(len(request.reach.nodes()) * len(kinds), len(touched))


def read(
    conn: sqlite3.Connection,
    tenant: str,
    reach: Optional[Reach],
    query: Optional[Query],
    limit: int,
    *,
    use_fts: bool,
    space: Optional[VectorSpace],
) -> List[Hit]:
    """Up to ``limit`` beliefs at nodes ``reach`` admits (None: every node but sandboxes).

    With a query they are ranked (hybrid, hits only); without, the most
    confident come first, then the newest.
    """
    reach_sql, reach_params = reach_condition(reach, "b")
    where = (f"b.tenant = ? AND {reach_sql}", [tenant, *reach_params])
    scores: Dict[int, float] = {}
    if query is not None:
        ranking = rank(
            conn, BELIEFS, FetchMode.HYBRID, query, where, space,
            use_fts=use_fts, offset=0, size=limit,
        )
        scores = dict(ranking.page)
        rows = [ranking.rows[seq] for seq, _score in ranking.page if seq in ranking.rows]
    else:
        rows = conn.execute(
            f"SELECT {table.BELIEF_COLUMNS} FROM beliefs b WHERE {where[0]} "
            "ORDER BY b.miss ASC, b.updated_us DESC, b.seq DESC LIMIT ?",
            (*where[1], limit),
        ).fetchall()
    hits = [table.belief_hit(row, scores.get(row[0], 0.0)) for row in rows]
    return [hit for hit in hits if admitted_by(reach, hit.meta.namespace)]

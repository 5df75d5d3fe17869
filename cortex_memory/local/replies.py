"""Replies for recall: the next turn of a thread, after a stored question.

A host that logs a chat turn by turn stores each turn as its own item, with the
conversation's ``thread_id`` and the turn's place (``turns``). A question turn
then ranks well for a question asked in the same words, while the turn that
answers it often shares none of them ("Where did I park the car?" / "Level 3,
spot B12."). For each ranked item that ends with a question and knows its
thread and turns, :func:`replies` reads the item holding the thread's next turn,
when the request's filter admits it, so recall can quote it as that question's
answer (:func:`cortex_memory.local.recall.answer`).
"""

from __future__ import annotations

import sqlite3
from typing import Dict, Optional, Sequence, Tuple

from cortex_memory.contract import Hit, MetaFilter, StoreItem
from cortex_memory.local.passages import asks_last
from cortex_memory.local.rows import HIT_COLUMNS, HIT_FROM, hit_of, item_of
from cortex_memory.local.sqlfilter import Condition, filter_condition

__all__ = ["replies"]

#: Ranked items looked at, best first: a reply is worth reading only for the
#: questions recall may quote.
MAX_QUESTIONS = 10


def replies(
    conn: sqlite3.Connection,
    tenant: str,
    flt: MetaFilter,
    ranked: Sequence[Tuple[Hit, StoreItem]],
) -> Dict[int, Tuple[Hit, StoreItem]]:
    """The reply to each ranked item that asks, by that item's rank.

    A reply is the newest stored item of the same thread whose first turn is the
    one right after the asking item's last, admitted by ``flt`` (the request's
    own filter: nothing outside its reach is read). Items without a thread or
    turns, or whose last line does not end with a question mark, have none.
    """
    condition: Optional[Condition] = None  # the filter's SQL, once a question needs it
    out: Dict[int, Tuple[Hit, StoreItem]] = {}
    for rank, (hit, item) in enumerate(ranked[:MAX_QUESTIONS]):
        meta = item.meta
        if meta.thread_id is None or meta.turns is None or not asks_last(item):
            continue
        if condition is None:
            condition = filter_condition(flt, tenant)
        where, params = condition
        row = conn.execute(
            f"SELECT {HIT_COLUMNS} FROM {HIT_FROM} WHERE {where} "
            "AND c.thread_id = ? AND c.turns_first = ? ORDER BY c.seq DESC LIMIT 1",
            (*params, meta.thread_id, meta.turns.last + 1),
        ).fetchone()
        if row is None:
            continue
        found = item_of(str(row[1]), str(row[5]), str(row[3]))
        # Some criteria are checked on the decoded meta only (as listing does).
        if not flt.matches(found.item_kind, found.meta):
            continue
        # The reply is cited as relevant as the question it answers.
        out[rank] = (hit_of(row, found.meta, score=hit.score), found)
    return out

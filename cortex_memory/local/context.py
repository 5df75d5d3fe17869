"""Conversation context in a ranking: a message is judged together with its neighbours.

Chat apps often store every message as its own item, with the conversation
as ``thread_id`` and the message's place as ``turns``. In a conversation the
message that holds an answer is seldom worded like the question about it:
"Which port did you pick?" is followed by "8443, like staging". So for a
hybrid ranking of such items, each one's score is raised by the scores of
the messages around it in its thread (those the filter admits): by
:data:`NEAR` times the score of the message right before or after it, and
:data:`FAR` times the score of those two places away; a message right after
one that asks a question (ends with ``?``) takes :data:`QUESTION_LEAD` times
more from it. Neighbours that did not rank themselves join the ranking that
way. Items without a thread and turns are ranked as they were.

The weights were chosen on half of the B8 benchmark's conversations (its
``dev`` split) and are checked on the other half.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from typing import Dict, List, Mapping, Sequence, Tuple

from cortex_memory.local.corpus import THREAD_COLUMNS
from cortex_memory.local.corpus import Row as CorpusRow
from cortex_memory.local.sqlfilter import Condition

__all__ = ["FAR", "NEAR", "QUESTION_LEAD", "with_context"]

#: Share of a neighbour's score a message takes, right next to it.
NEAR = 0.35
#: Share of a neighbour's score a message takes, two places away.
FAR = 0.15
#: How much more a message takes from a question right before it.
QUESTION_LEAD = 1.5
#: A thread span wider than this is read in pieces around each candidate.
_SPAN = 200

# (seq, first turn, last turn, asks)
_Row = Tuple[int, int, int, bool]


def _places(
    conn: sqlite3.Connection, seqs: Sequence[int], read: Mapping[int, CorpusRow]
) -> Dict[str, List[Tuple[int, int, int]]]:
    out: Dict[str, List[Tuple[int, int, int]]] = {}
    unread: List[int] = []
    for seq in seqs:
        row = read.get(seq)
        if row is None:
            unread.append(seq)
            continue
        thread, first, last = row[THREAD_COLUMNS]
        if thread is not None and first is not None:
            out.setdefault(str(thread), []).append((seq, int(first), int(last)))
    for start in range(0, len(unread), 500):
        chunk = unread[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for seq, thread, first, last in conn.execute(
            f"SELECT seq, thread_id, turns_first, turns_last FROM items WHERE seq IN ({marks}) "
            "AND thread_id IS NOT NULL AND turns_first IS NOT NULL",
            chunk,
        ):
            out.setdefault(str(thread), []).append((int(seq), int(first), int(last)))
    return out


def _thread_rows(
    conn: sqlite3.Connection, where: Condition, thread: str, lo: int, hi: int
) -> List[_Row]:
    where_sql, where_params = where
    return [
        (int(seq), int(first), int(last), bool(asks))
        for seq, first, last, asks in conn.execute(
            "SELECT c.seq, c.turns_first, c.turns_last, rtrim(c.text) LIKE '%?' FROM items c "
            f"WHERE {where_sql} AND c.thread_id = ? AND c.turns_first BETWEEN ? AND ?",
            (*where_params, thread, lo, hi),
        )
    ]


def _neighbourhood(
    conn: sqlite3.Connection, where: Condition, thread: str, places: List[Tuple[int, int, int]]
) -> List[_Row]:
    lo = min(first for _s, first, _l in places) - 2
    hi = max(last for _s, _f, last in places) + 2
    if hi - lo <= _SPAN:
        return _thread_rows(conn, where, thread, max(lo, 0), hi)
    rows: Dict[int, _Row] = {}
    for _seq, first, last in places:
        for row in _thread_rows(conn, where, thread, max(first - 2, 0), last + 2):
            rows[row[0]] = row
    return list(rows.values())


def with_context(
    conn: sqlite3.Connection,
    where: Condition,
    ranked: Sequence[Tuple[int, float]],
    read: Mapping[int, CorpusRow],
) -> List[Tuple[int, float]]:
    """``ranked`` (items, best first) re-scored with their thread neighbours, best first.

    ``read`` holds items already read (``ITEMS.columns``): their threads are
    known without reading them again.
    """
    scores = dict(ranked)
    threads = _places(conn, list(scores), read)
    if not threads:
        return list(ranked)
    total = dict(scores)
    for thread, places in threads.items():
        rows = _neighbourhood(conn, where, thread, places)
        starting: Dict[int, List[_Row]] = {}
        ending: Dict[int, List[_Row]] = {}
        for row in rows:
            starting.setdefault(row[1], []).append(row)
            ending.setdefault(row[2], []).append(row)
        for seq, first, last, _asks in rows:
            gained = 0.0
            for gap, weight in ((1, NEAR), (2, FAR)):
                for other, _f, _l, asks in ending.get(first - gap, ()):  # before it
                    lead = QUESTION_LEAD if gap == 1 and asks else 1.0
                    gained += weight * lead * scores.get(other, 0.0)
                for other, _f, _l, _a in starting.get(last + gap, ()):  # after it
                    gained += weight * scores.get(other, 0.0)
            if gained:
                total[seq] = total.get(seq, 0.0) + gained
    return sorted(total.items(), key=lambda pair: (-pair[1], pair[0]))

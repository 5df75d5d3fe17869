"""The keyword index's pending rows: short items stored one at a time, indexed in bulk.

Every transaction that writes to an FTS5 index writes it a new segment: the
segment's leaf, the index's structure and averages records, a ``_idx`` row
and a ``_docsize`` row, about five pages at ``COMMIT`` whether it indexes one
row or five hundred. For a store of one item that is most of its cost (B7:
a single store's SQL halves without it). So a one-item store of a short text
(under :data:`PENDING_CHARS` characters) leaves its row out of the index and
notes its ``seq`` in ``items_pending`` instead (one small page); the index
takes the pending rows in bulk:

- in the transaction of the store that brings them to :data:`PENDING_ROWS`
  (:func:`defer`), so there are never more;
- with the next batch store (``store.insert_many``), which writes a segment
  anyway;
- when the index is rebuilt (it reads every row).

Readers miss nothing. A keyword read of the items (``search``) reads the
pending rows in the same snapshot as the index (:func:`merge`): the ones its
filter admits join its candidates, and every one of them (all tenants, as the
index counts rows) counts in BM25's statistics and in the query terms' row
counts as the index will count it. A pending row is scored as it would be
indexed; it is only always a candidate, where the index would have to rank
it among the best of its matches first (it is one of the newest few rows).

Deleting a row that is pending takes it out of ``items_pending`` and never out
of the index (:func:`discard`): an external-content FTS5 index must not be
asked to delete a row it does not hold.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from functools import lru_cache
from typing import Dict, Optional, Sequence, Set, Tuple, Union

from cortex_memory.local.corpus import Corpus, Stats
from cortex_memory.local.lexical import Waiting
from cortex_memory.local.text import stems_of, words_of
from cortex_memory.local.wordscan import word_count

__all__ = ["PENDING_CHARS", "PENDING_ROWS", "defer", "discard", "flush", "merge"]

#: At most this many rows are pending: the store that brings them there has
#: the index take them all. Each keyword read of the items reads them.
PENDING_ROWS = 8

#: A one-item store of a text this long or longer is indexed at once (a read
#: tokenizes every pending row's text: their total stays small).
PENDING_CHARS = 2048


def _table(corpus: Corpus) -> str:
    if corpus.pending is None:  # pragma: no cover - only items defer their rows
        raise ValueError(f"{corpus.name} keeps no pending rows")
    return corpus.pending


def defer(cursor: sqlite3.Cursor, corpus: Corpus, seq: int, text: str) -> None:
    """Leave the row ``seq``, just written with the index text ``text``, for the
    index to take later (inside the caller's write transaction); take every
    pending row now when that makes :data:`PENDING_ROWS`."""
    table = _table(corpus)
    cursor.execute(f"INSERT INTO {table} (seq, words) VALUES (?, ?)", (seq, word_count(text)))
    if cursor.execute(f"SELECT count(*) FROM {table}").fetchone()[0] >= PENDING_ROWS:
        flush(cursor, corpus)


@lru_cache(maxsize=4)
def _flush_sql(corpus: Corpus) -> str:
    # The text the index reads (its view) of each pending row, looked up from
    # the pending seqs (the IN list; see lexical._counts_sql for why not a join).
    return (
        f"SELECT v.seq, v.text FROM {corpus.indexed} v "
        f"WHERE v.seq IN (SELECT seq FROM {_table(corpus)})"
    )


def flush(cursor: Union[sqlite3.Connection, sqlite3.Cursor], corpus: Corpus) -> int:
    """Have the index take every pending row (inside the caller's write
    transaction); how many it took.

    A pending ``seq`` whose row is gone (deleted by an engine without the
    index, which marks the index stale anyway) is only forgotten.
    """
    table = _table(corpus)
    if cursor.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is None:
        return 0  # the usual case for a batch: nothing waits
    rows = cursor.execute(_flush_sql(corpus)).fetchall()
    cursor.executemany(f"INSERT INTO {corpus.fts} (rowid, text) VALUES (?, ?)", rows)
    cursor.execute(f"DELETE FROM {table}")
    return len(rows)


def discard(
    conn: sqlite3.Connection, corpus: Corpus, seqs: Sequence[object], marks: str
) -> Set[int]:
    """Take the rows ``seqs`` (``marks``: as many ``?``) out of the pending rows,
    inside the caller's write transaction; the ``seq`` of those that were pending."""
    table = _table(corpus)
    found = {
        int(seq)
        for (seq,) in conn.execute(f"SELECT seq FROM {table} WHERE seq IN ({marks})", seqs)
    }
    if found:
        conn.execute(f"DELETE FROM {table} WHERE seq IN ({marks})", seqs)
    return found


def merge(
    stems: Sequence[str],
    stats: Stats,
    counts: Optional[Dict[str, int]],
    waiting: Sequence[Waiting],
    texts: Dict[int, str],
) -> Tuple[Stats, Optional[Dict[str, int]]]:
    """Add the pending rows a keyword read found (``waiting``, read with the
    index's statistics by :func:`~cortex_memory.local.lexical.index_counts`, in
    its snapshot) to what the read has of the index.

    The rows its filter admits join ``texts`` (the candidates' texts, by
    ``seq``): scoring drops the ones that hold no term, and their other
    columns are read with the page's, as for any candidate not read whole.
    The statistics, and the row counts of ``stems`` (``counts``, None when the
    read needs none), are returned with every pending row counted in, as the
    index will count it.
    """
    stats = Stats(stats.docs + len(waiting), stats.words + sum(row[1] for row in waiting))
    held: Dict[str, int] = {}
    wanted = frozenset(stems) if counts is not None else frozenset()
    for seq, _words, text, admitted in waiting:
        if wanted:
            for stem in wanted.intersection(stems_of(words_of(text))):
                held[stem] = held.get(stem, 0) + 1
        if admitted:
            texts.setdefault(seq, text)
    if counts is not None:
        counts = {stem: count + held.get(stem, 0) for stem, count in counts.items()}
    return stats, counts

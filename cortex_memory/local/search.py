"""Ranking a corpus: keyword, vector and hybrid lists, their fusion, time hints, pages.

- **keyword**: BM25 over stems with an exact-form boost (``lexical.py``);
  every row holding a query term is a candidate, SQLite ranks them, Python
  scores the best ones. A hit holds at least one term.
- **vector**: the cosine between the query's and each row's vector (the
  engine's embedder); a hit reaches the embedder's ``min_similarity``.
  With NumPy every row is compared (``VectorIndex``); without it, the
  keyword candidates and the newest rows are (``scan_candidates``).
- **hybrid**: reciprocal-rank fusion of the two lists, ``Σ 1 / (60 + rank)``
  over the lists a row is in, divided by what first place in both would get,
  so a hit's score is in (0, 1]. The keyword list of a hybrid read is the
  bounded plan (broad terms do not make candidates), so hybrid costs the
  same at any file size.

Ties go to the older row. With a time hint, rows observed on the hinted days
come first (a stable partition of the ranking), so pages stay consistent.
Scores are in [0, 1].
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta, timezone, tzinfo
from typing import Dict, List, Optional, Sequence, Tuple
from zoneinfo import ZoneInfo

from cortex_memory.contract import FetchMode, TimeHint
from cortex_memory.local import pending
from cortex_memory.local.bm25 import needs_counts, score_rows
from cortex_memory.local.context import with_context
from cortex_memory.local.corpus import ITEMS, TEXT_COLUMN, Corpus, Row, Stats
from cortex_memory.local.embedders import Embedder
from cortex_memory.local.lexical import (
    Terms,
    candidates,
    fallback_candidates,
    index_counts,
)
from cortex_memory.local.sqlfilter import Condition, micros
from cortex_memory.local.vectors import (
    VectorIndex,
    live_candidates,
    numpy_or_none,
    scan_candidates,
)

__all__ = [
    "RRF_K",
    "Query",
    "Ranked",
    "Ranking",
    "VectorSpace",
    "hint_window",
    "rank",
    "read_rows",
]

#: The constant of reciprocal-rank fusion (the usual 60).
RRF_K = 60
#: Rows the no-NumPy vector search adds to the keyword candidates: the newest.
RECENT_ROWS = 50

#: ``(seq, score)`` pairs, best first.
Ranked = List[Tuple[int, float]]


@dataclass(frozen=True)
class Query:
    """A query made ready to rank: its terms and (for vector modes) its vector."""

    text: str
    terms: Terms
    vector: Optional[bytes] = None  # unit float32; None or zeros: no vector part

    @classmethod
    def of(cls, text: str, vector: Optional[bytes] = None) -> Query:
        """Prepare ``text``; ``vector`` is its packed embedding (see ``embedders.pack``)."""
        if vector is not None and not any(vector):
            vector = None  # a text with nothing to embed is similar to nothing
        if cls is not Query:
            return cls(text, Terms.of(text), vector)
        # What the dataclass's __init__ does (it checks nothing), without its
        # frozen-field setters: every fetch prepares a query.
        query = object.__new__(Query)
        fields = query.__dict__
        fields["text"] = text
        fields["terms"] = Terms.of(text)
        fields["vector"] = vector
        return query


@dataclass(frozen=True)
class VectorSpace:
    """Where a corpus's vectors are: the model key, the hit floor, the NumPy index."""

    key: int
    floor: float
    index: Optional[VectorIndex]
    weight: float = 1.0  # the vector list's weight in hybrid fusion (keyword: 1)
    live: Optional[Embedder] = None  # set: vectors are made from the text, not stored


def hint_window(hint: Optional[TimeHint]) -> Optional[Tuple[int, int]]:
    """The instants (µs since the epoch, ``[lo, hi)``) a time hint covers, or None.

    The hint's first day starts at local midnight in its zone and its last
    day ends at the next local midnight; ``zoneinfo`` resolves midnights that
    fall in a DST gap to the first instant of the day.
    """
    if hint is None:
        return None
    zone = timezone.utc if hint.zone is None else _zone(hint.zone)
    lo = datetime.combine(hint.from_, time(0), tzinfo=zone)
    hi = datetime.combine(hint.to + timedelta(days=1), time(0), tzinfo=zone)
    return micros(lo.astimezone(timezone.utc)), micros(hi.astimezone(timezone.utc))


def _zone(name: str) -> tzinfo:
    # TimeHint.validate already loaded the zone (zoneinfo caches it).
    return ZoneInfo(name)


def pool_size(need: int) -> int:
    """Candidates each list keeps for a page ending at rank ``need``.

    In steps, so the first pages of a ranking all see the same candidates.
    """
    if need <= 50:
        return 100
    if need <= 500:
        return 1000
    return 2 * need


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def read_rows(
    conn: sqlite3.Connection, corpus: Corpus, seqs: Sequence[int], rows: Dict[int, Row]
) -> None:
    """Add the :attr:`Corpus.columns` rows of ``seqs`` not yet in ``rows`` to it."""
    missing = [seq for seq in dict.fromkeys(seqs) if seq not in rows]
    a = corpus.alias
    for start in range(0, len(missing), 500):
        chunk = missing[start : start + 500]
        for row in conn.execute(
            f"SELECT {corpus.columns} FROM {corpus.table} {a} "
            f"WHERE {a}.seq IN ({_marks(len(chunk))})",
            tuple(chunk),
        ):
            rows[int(row[0])] = row


@dataclass
class Ranking:
    """A page of a ranking and what was read to make it.

    ``rows`` holds the :attr:`Corpus.columns` of every row read while ranking
    (readers build hits from them without reading them again); ``stats`` and
    ``counts`` are the keyword index's statistics and the query terms' row
    counts (None when no keyword list was made).
    """

    page: Ranked
    more: bool
    rows: Dict[int, Row] = field(default_factory=dict)
    stats: Optional[Stats] = None
    counts: Optional[Dict[str, int]] = None


def _keyword(
    conn: sqlite3.Connection,
    corpus: Corpus,
    query: Query,
    where: Condition,
    size: int,
    ranking: Ranking,
    *,
    use_fts: bool,
    bounded: bool,
) -> Tuple[Ranked, List[int]]:
    """The keyword list, and the candidate rows it was scored from."""
    counts: Optional[Dict[str, int]]
    if use_fts:
        wanted = query.terms.stems if needs_counts(query.terms, bounded) else ()
        stats, counts, waiting = index_counts(conn, corpus, wanted, where)
        if not wanted:
            counts = None
        found = candidates(conn, corpus, query.terms, where, size, bounded=bounded, counts=counts)
        texts: Dict[int, str] = {row[0]: row[TEXT_COLUMN] for row in found}
        ranking.rows.update(zip(texts, found))  # seqs are unique: texts is in row order
        if waiting:  # rows the index takes later: read with it, counted as it will
            stats, counts = pending.merge(wanted, stats, counts, waiting, texts)
    else:
        texts, counts, stats = fallback_candidates(conn, corpus, query.terms, where)
    ranking.stats, ranking.counts = stats, counts
    scored = score_rows(query.terms, texts, counts, stats)
    return [(seq, score) for seq, score, _bm25 in scored[:size]], list(texts)


def _admitted(
    conn: sqlite3.Connection, corpus: Corpus, where: Condition, seqs: Sequence[int]
) -> List[int]:
    a = corpus.alias
    where_sql, where_params = where
    kept: set[int] = set()
    for start in range(0, len(seqs), 500):
        chunk = list(seqs[start : start + 500])
        kept.update(
            int(row[0])
            for row in conn.execute(
                f"SELECT {a}.seq FROM {corpus.table} {a} WHERE {a}.seq IN "
                f"({_marks(len(chunk))}) AND {where_sql}",
                (*chunk, *where_params),
            )
        )
    return [seq for seq in seqs if seq in kept]


def _vector(
    conn: sqlite3.Connection,
    corpus: Corpus,
    query: Query,
    where: Condition,
    size: int,
    space: VectorSpace,
    keyword_rows: Sequence[int],
    rows: Dict[int, Row],
) -> Ranked:
    if query.vector is None:
        return []
    if space.index is not None:
        return _indexed(conn, corpus, query.vector, where, size, space)
    # The candidates: the keyword candidates and the newest rows, all of them
    # rows the filter admits (both were read through it).
    a = corpus.alias
    where_sql, where_params = where
    columns = corpus.columns if space.live is not None else f"{a}.seq"
    recent: List[int] = []
    for row in conn.execute(
        f"SELECT {columns} FROM {corpus.table} {a} WHERE {where_sql} "
        f"ORDER BY {a}.seq DESC LIMIT ?",
        (*where_params, RECENT_ROWS),
    ):
        seq = int(row[0])
        recent.append(seq)
        if space.live is not None:
            rows.setdefault(seq, row)
    pool = list(dict.fromkeys([*keyword_rows, *recent]))
    if space.live is not None:
        read_rows(conn, corpus, pool, rows)  # the fallback's keyword candidates
        texts = {seq: str(rows[seq][TEXT_COLUMN]) for seq in pool if seq in rows}
        cosines = live_candidates(space.live, query.vector, texts)
    else:
        cosines = scan_candidates(conn, corpus, space.key, query.vector, pool)
    ranked = sorted(
        ((seq, score) for seq, score in cosines.items() if score >= space.floor),
        key=lambda pair: (-pair[1], pair[0]),
    )
    return [(seq, min(1.0, score)) for seq, score in ranked[:size]]


def _indexed(
    conn: sqlite3.Connection,
    corpus: Corpus,
    vector: bytes,
    where: Condition,
    size: int,
    space: VectorSpace,
) -> Ranked:
    index = space.index
    assert index is not None
    # Most filters admit most rows: search every row, keep what the filter
    # admits, and only when that leaves the page short ask SQL for the whole
    # admitted set and search within it.
    wanted = 2 * size
    found = index.search(conn, vector, None, wanted, space.floor)
    kept = _admitted(conn, corpus, where, [seq for seq, _ in found])
    if len(kept) < size and len(found) == wanted:
        np = numpy_or_none()
        a = corpus.alias
        where_sql, where_params = where
        allowed = np.fromiter(
            (
                int(row[0])
                for row in conn.execute(
                    f"SELECT {a}.seq FROM {corpus.table} {a} WHERE {where_sql} "
                    f"ORDER BY {a}.seq",
                    where_params,
                )
            ),
            dtype=np.int64,
        )
        found = index.search(conn, vector, allowed, size, space.floor)
        kept = [seq for seq, _ in found]
    scores = dict(found)
    return [(seq, min(1.0, max(0.0, scores[seq]))) for seq in kept[:size]]


def fuse(lists: Sequence[Ranked], weights: Sequence[float]) -> Ranked:
    """Weighted reciprocal-rank fusion of ranked lists, normalised to (0, 1]."""
    total: Dict[int, float] = {}
    for ranked, weight in zip(lists, weights):
        for position, (seq, _score) in enumerate(ranked):
            total[seq] = total.get(seq, 0.0) + weight / (RRF_K + position + 1)
    best = sum(weights) / (RRF_K + 1)
    return sorted(
        ((seq, min(1.0, value / best)) for seq, value in total.items()),
        key=lambda pair: (-pair[1], pair[0]),
    )


def _covered_first(
    conn: sqlite3.Connection, corpus: Corpus, ranked: Ranked, window: Tuple[int, int]
) -> Ranked:
    a = corpus.alias
    seqs = [seq for seq, _ in ranked]
    covered: set[int] = set()
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        covered.update(
            int(row[0])
            for row in conn.execute(
                f"SELECT {a}.seq FROM {corpus.table} {a} WHERE {a}.seq IN "
                f"({_marks(len(chunk))}) AND {a}.observed_us >= ? AND {a}.observed_us < ?",
                (*chunk, window[0], window[1]),
            )
        )
    return [p for p in ranked if p[0] in covered] + [p for p in ranked if p[0] not in covered]


def rank(
    conn: sqlite3.Connection,
    corpus: Corpus,
    mode: FetchMode,
    query: Query,
    where: Condition,
    space: Optional[VectorSpace],
    *,
    use_fts: bool,
    offset: int,
    size: int,
    window: Optional[Tuple[int, int]] = None,
    bounded: Optional[bool] = None,
) -> Ranking:
    """Ranks ``offset .. offset+size`` of the ranking, whether more follow, and
    the rows read on the way.

    ``bounded`` (default: True for hybrid) picks the keyword plan that keeps
    broad terms from making candidates.
    """
    ranking = Ranking([], False)
    pool = pool_size(offset + size + 1)
    bounded = (mode is FetchMode.HYBRID) if bounded is None else bounded
    keyword: Ranked = []
    keyword_rows: List[int] = []
    if mode is not FetchMode.VECTOR or (space is not None and space.index is None):
        keyword, keyword_rows = _keyword(
            conn, corpus, query, where, pool, ranking,
            use_fts=use_fts, bounded=bounded or mode is FetchMode.VECTOR,
        )
    vector: Ranked = []
    if mode is not FetchMode.KEYWORD and space is not None:
        vector = _vector(conn, corpus, query, where, pool, space, keyword_rows, ranking.rows)
    if mode is FetchMode.KEYWORD:
        ranked = keyword
    elif mode is FetchMode.VECTOR:
        ranked = vector
    else:
        if corpus is ITEMS:
            keyword = with_context(conn, where, keyword, ranking.rows)
        weight = 1.0 if space is None else space.weight
        ranked = fuse([keyword, vector], [1.0, weight])
    if window is not None and corpus.observed and ranked:
        ranked = _covered_first(conn, corpus, ranked, window)
    ranking.page = ranked[offset : offset + size]
    ranking.more = len(ranked) > offset + size
    read_rows(conn, corpus, [seq for seq, _ in ranking.page], ranking.rows)
    return ranking

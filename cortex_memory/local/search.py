"""Ranking in SQL: keyword, vector and hybrid scores, best first.

Every score is computed by SQLite in C; Python only reads the page it needs.

- **keyword**: the fraction of the query's distinct words the text holds
  (whole words). A hit needs at least one. With FTS5 the index alone says
  which rows hold which words (one phrase query per word), and equal scores
  are ordered by bm25 relevance; without it (the fallback) every row in the
  filter is tested with ``instr`` over its padded ``words`` column: the same
  hits and scores, ties in insertion order.
- **vector**: the cosine between the query's and the text's hashed trigram
  vectors, as a dot product over the query's non-zero buckets; a hit needs
  at least :data:`VECTOR_THRESHOLD`.
- **hybrid**: the mean of the two; a hit when either one hits.

Ties go to the older item. With a time hint, items observed on the hinted
days come first (a stable partition, like ``TimeHint.rank`` over the whole
ranking), so paging stays consistent.
"""

# only; every value is bound as a parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone, tzinfo
from typing import List, Optional, Sequence, Tuple
from zoneinfo import ZoneInfo

from cortex_memory.contract import FetchMode, TimeHint
from cortex_memory.local.analysis import Vector, norm, query_words, vector_of, words_of
from cortex_memory.local.sqlfilter import Condition, micros

__all__ = [
    "BELIEFS",
    "ITEMS",
    "VECTOR_THRESHOLD",
    "Corpus",
    "Query",
    "hint_window",
    "ranked_page",
    "ranking",
]

#: Lowest cosine that counts as a vector hit.
VECTOR_THRESHOLD = 0.3


@dataclass(frozen=True)
class Corpus:
    """A ranked table: its rows (vectors inline), where its words are, its FTS5 index."""

    table: str
    alias: str
    words: str  # the SQL column holding the padded words
    words_join: str  # the join that brings ``words`` in ("" when in the row)
    fts: Optional[str]
    observed: bool  # rows have ``observed_us`` (time hints apply)


ITEMS = Corpus(
    "items", "c", "w.words", "JOIN item_bodies w ON w.seq = c.seq", "items_fts", True
)
BELIEFS = Corpus("beliefs", "b", "b.words", "", None, False)


@dataclass(frozen=True)
class Query:
    """A query made ready to rank: its distinct words and its trigram vector."""

    words: Tuple[str, ...]
    vector: Vector
    length: float

    @classmethod
    def of(cls, text: str, words: Optional[Sequence[str]] = None) -> Query:
        """Prepare ``text``; ``words`` replaces its keyword words (recall drops stopwords)."""
        chosen = query_words(text) if words is None else tuple(words)
        vector = vector_of(words_of(text) if words is None else chosen)
        return cls(chosen, vector, norm(vector))


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


def _keyword_expr(query: Query, corpus: Corpus) -> Tuple[str, List[object]]:
    # Whole words: the column is " w1 w2 ... " and each probe is " w ".
    terms = " + ".join(f"(instr({corpus.words}, ?) > 0)" for _ in query.words)
    return f"(({terms}) / ?)", [*(f" {w} " for w in query.words), float(len(query.words))]


def _vector_expr(query: Query, alias: str) -> Tuple[str, List[object]]:
    dims = sorted(query.vector)
    terms = " + ".join(f"{alias}.d{dim} * ?" for dim in dims)
    params: List[object] = [query.vector[dim] for dim in dims]
    return f"(({terms}) * {alias}.inv_norm * ?)", [*params, 1.0 / query.length]


def _word_counts(query: Query, fts: str) -> Tuple[str, List[object]]:
    """Per row the index matches: how many query words it holds (``n``) and the sum
    of their bm25 ranks (``r``, lower is better); read from the index alone."""
    one = f"SELECT rowid AS hit, rank AS r FROM {fts} WHERE {fts} MATCH ?"
    union = " UNION ALL ".join(one for _ in query.words)
    sql = f"SELECT hit, count(*) AS n, sum(r) AS r FROM ({union}) GROUP BY hit"
    return sql, [f'"{word}"' for word in query.words]


def ranking(
    corpus: Corpus,
    mode: FetchMode,
    query: Query,
    where: Condition,
    *,
    use_fts: bool,
    window: Optional[Tuple[int, int]] = None,
) -> Optional[Tuple[str, List[object]]]:
    """The SQL (and parameters) yielding ``(seq, score)`` best first; None when
    the query cannot hit anything in ``mode`` (no words, no trigrams).

    Parameters are listed in the order their ``?`` appear in the text. The
    inner selects end in ``LIMIT -1`` so SQLite evaluates each score once per
    row instead of copying the expression into the outer query.
    """
    a = corpus.alias
    can_keyword = bool(query.words) and mode is not FetchMode.VECTOR
    can_vector = query.length > 0 and mode is not FetchMode.KEYWORD
    if not (can_keyword or can_vector):
        return None
    fts = corpus.fts if use_fts and can_keyword else None
    where_sql, where_params = where
    covered = "0"
    covered_params: List[object] = []
    if window is not None and corpus.observed:
        covered = f"COALESCE({a}.observed_us >= ? AND {a}.observed_us < ?, 0)"
        covered_params = [window[0], window[1]]
    n_words = float(len(query.words))

    if mode is FetchMode.KEYWORD and fts is not None:
        counts, match_params = _word_counts(query, fts)
        inner = (
            f"SELECT {a}.seq AS seq, m.n / ? AS score, {covered} AS covered, m.r AS r "
            f"FROM ({counts}) m JOIN {corpus.table} {a} ON {a}.seq = m.hit "
            f"WHERE {where_sql} LIMIT -1"
        )
        params = [n_words, *covered_params, *match_params, *where_params]
        return (
            f"SELECT seq, score FROM ({inner}) ORDER BY covered DESC, score DESC, r, seq",
            params,
        )

    vec, vec_params = _vector_expr(query, a) if can_vector else ("0.0", [])
    kw = "0.0"
    kw_params: List[object] = []
    source = f"{corpus.table} {a}"
    join_params: List[object] = []
    if fts is not None:
        counts, join_params = _word_counts(query, fts)
        kw, kw_params = "(coalesce(m.n, 0) / ?)", [n_words]
        source += f" LEFT JOIN ({counts}) m ON m.hit = {a}.seq"
    elif can_keyword:
        kw, kw_params = _keyword_expr(query, corpus)
        source += f" {corpus.words_join}"
    inner = (
        f"SELECT {a}.seq AS seq, {vec} AS vs, {kw} AS kw, {covered} AS covered "
        f"FROM {source} WHERE {where_sql} LIMIT -1"
    )
    params = [*vec_params, *kw_params, *covered_params, *join_params, *where_params]
    if mode is FetchMode.KEYWORD:
        score, hit = "kw", "kw > 0"
    elif mode is FetchMode.VECTOR:
        score, hit = "vs", "vs >= ?"
        params.append(VECTOR_THRESHOLD)
    else:
        score, hit = "(kw + vs) / 2.0", "kw > 0 OR vs >= ?"
        params.append(VECTOR_THRESHOLD)
    sql = (
        f"SELECT seq, {score} AS score FROM ({inner}) WHERE {hit} "
        "ORDER BY covered DESC, score DESC, seq"
    )
    return sql, params


def ranked_page(
    conn: sqlite3.Connection,
    statement: Tuple[str, List[object]],
    offset: int,
    size: int,
) -> Tuple[List[Tuple[int, float]], bool]:
    """Ranks ``offset .. offset+size`` of a ranking, and whether more follow.

    SQLite keeps only ``offset + size + 1`` rows while sorting, so memory stays
    bounded whatever the number of candidates.
    """
    sql, params = statement
    rows = conn.execute(f"{sql} LIMIT ? OFFSET ?", (*params, size + 1, offset)).fetchall()
    page = [(int(row[0]), float(row[1])) for row in rows[:size]]
    return page, len(rows) > size

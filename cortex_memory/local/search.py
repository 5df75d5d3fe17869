"""Ranking in SQL: keyword, vector and hybrid scores, best first.

Every score is computed by SQLite in C; Python only reads the page it needs.

- **keyword**: the fraction of the query's distinct words the text holds
  (``instr`` over the padded ``words`` column, so whole words only). A hit
  needs at least one word. With FTS5 the candidates come from the index
  (``"w1" OR "w2" …``) and equal scores are ordered by bm25 relevance; without
  it every row in the filter is scored (the fallback: same hits, same scores,
  ties in insertion order).
- **vector**: the cosine between the query's and the text's hashed trigram
  vectors, as a dot product over the query's non-zero buckets; a hit needs
  at least :data:`VECTOR_THRESHOLD`.
- **hybrid**: the mean of the two; a hit when either one hits.

Ties go to the older item. With a time hint, items observed on the hinted
days come first (a stable partition, like ``TimeHint.rank`` over the whole
ranking), so paging stays consistent.
"""

# ruff: noqa: S608 - SQL here is built from fixed fragments and `?` placeholders
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
    """A ranked table: the rows, their vectors and (optionally) their FTS5 index."""

    table: str
    alias: str
    vectors: str
    fts: Optional[str]
    observed: bool


ITEMS = Corpus("items", "c", "item_vectors", "items_fts", True)
BELIEFS = Corpus("beliefs", "b", "belief_vectors", None, False)


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


def _keyword_expr(query: Query, alias: str) -> Tuple[str, List[object]]:
    terms = " + ".join(f"(instr({alias}.words, ?) > 0)" for _ in query.words)
    return f"(({terms}) / ?)", [*(f" {w} " for w in query.words), float(len(query.words))]


def _vector_expr(query: Query) -> Tuple[str, List[object]]:
    dims = sorted(query.vector)
    terms = " + ".join(f"v.d{dim} * ?" for dim in dims)
    params: List[object] = [query.vector[dim] for dim in dims]
    return f"(({terms}) * v.inv_norm * ?)", [*params, 1.0 / query.length]


def _match_text(query: Query) -> str:
    return " OR ".join(f'"{word}"' for word in query.words)


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
    the query cannot hit anything in ``mode`` (no words, no trigrams)."""
    a = corpus.alias
    can_keyword = bool(query.words)
    can_vector = query.length > 0
    if mode is FetchMode.KEYWORD and not can_keyword:
        return None
    if mode is FetchMode.VECTOR and not can_vector:
        return None
    if mode is FetchMode.HYBRID and not (can_keyword or can_vector):
        return None
    fts = corpus.fts if use_fts else None
    where_sql, where_params = where
    covered = "0"
    covered_params: List[object] = []
    if window is not None and corpus.observed:
        covered = f"COALESCE({a}.observed_us >= ? AND {a}.observed_us < ?, 0)"
        covered_params = [window[0], window[1]]
    order = f"covered DESC, score DESC, {'r, ' if mode is FetchMode.KEYWORD and fts else ''}seq"

    if mode is FetchMode.KEYWORD:
        kw, kw_params = _keyword_expr(query, a)
        if fts is not None:
            inner = (
                f"SELECT {a}.seq AS seq, {kw} AS score, {covered} AS covered, {fts}.rank AS r "
                f"FROM {fts} JOIN {corpus.table} {a} ON {a}.seq = {fts}.rowid "
                f"WHERE {fts} MATCH ? AND {where_sql}"
            )
            params = [*kw_params, *covered_params, _match_text(query), *where_params]
        else:
            inner = (
                f"SELECT {a}.seq AS seq, {kw} AS score, {covered} AS covered "
                f"FROM {corpus.table} {a} WHERE {where_sql}"
            )
            params = [*kw_params, *covered_params, *where_params]
        sql = f"SELECT seq, score FROM ({inner}) WHERE score > 0 ORDER BY {order}"
        return sql, params

    vec, vec_params = _vector_expr(query) if can_vector else ("0.0", [])
    join = f"JOIN {corpus.vectors} v ON v.seq = {a}.seq"
    if mode is FetchMode.VECTOR:
        inner = (
            f"SELECT {a}.seq AS seq, {vec} AS score, {covered} AS covered "
            f"FROM {corpus.table} {a} {join} WHERE {where_sql}"
        )
        params = [*vec_params, *covered_params, *where_params]
        sql = f"SELECT seq, score FROM ({inner}) WHERE score >= ? ORDER BY {order}"
        return sql, [*params, VECTOR_THRESHOLD]

    # Hybrid: the keyword part only where the index (or the words) can match.
    kw_sql, kw_params = _keyword_expr(query, a) if can_keyword else ("0.0", [])
    match_join = ""
    match_params: List[object] = []
    if can_keyword and fts is not None:
        kw_sql = f"(CASE WHEN m.hit IS NULL THEN 0.0 ELSE {kw_sql} END)"
        match_join = f"LEFT JOIN (SELECT rowid AS hit FROM {fts} WHERE {fts} MATCH ?) m " \
            f"ON m.hit = {a}.seq"
        match_params = [_match_text(query)]
    inner = (
        f"SELECT {a}.seq AS seq, {vec} AS vs, {kw_sql} AS kw, {covered} AS covered "
        f"FROM {corpus.table} {a} {join} {match_join} WHERE {where_sql}"
    )
    params = [*vec_params, *kw_params, *covered_params, *match_params, *where_params]
    sql = (
        f"SELECT seq, (kw + vs) / 2.0 AS score FROM ({inner}) "
        f"WHERE kw > 0 OR vs >= ? ORDER BY {order}"
    )
    return sql, [*params, VECTOR_THRESHOLD]


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

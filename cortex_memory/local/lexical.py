"""Keyword ranking: BM25 over stems with an exact-form boost, candidates from FTS5.

A query's *terms* are the stems of its words (stop words left out when
anything else is left). Ranking has two stages:

1. **Candidates.** With FTS5, SQLite ranks the rows that hold any term by
   its own BM25 and hands back only the best ``size`` of those the filter
   admits (``… MATCH ? AND <filter> ORDER BY rank LIMIT ?``), so memory and
   Python work stay bounded however many rows match. When the rows holding
   the terms fit in ``size`` (their row counts say so, or, for a lone term
   whose count is not read, an unranked read finds no more than that), all
   of them are read as they are, unranked: SQLite's BM25 would cost more
   than the read, and the scores come from Python anyway. A *bounded* plan
   (hybrid fetch, recall, beliefs) first looks each term up in the index's
   vocabulary and lets only the rarest terms make candidates, as long as the
   rows holding them add up to at most :data:`BROAD_TERM_ROWS`; the others
   are "broad" (they say little about which row is wanted: they still count
   in the scores). When even the rarest term is broad, the newest rows
   holding a term are the candidates. That keeps those reads within a fixed
   budget at any file size. Without FTS5 (the fallback) every row the filter
   admits is tokenized in Python.
2. **Scores**, computed in Python for the candidates, the same way with or
   without FTS5 (:func:`cortex_memory.local.bm25.score_rows`): Okapi BM25
   with an exact-form boost. A hit holds at least one term.

``N``, the average length and ``n`` (rows holding a term) count every row of
the file, all tenants together, as the FTS5 index does.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from cortex_memory.local.corpus import Corpus, Row, Stats, stats_of
from cortex_memory.local.schema import FTS_OK
from cortex_memory.local.sqlfilter import Condition
from cortex_memory.local.text import STOPWORDS, query_phrases, stem, stems_of, words_of

__all__ = [
    "BROAD_TERM_ROWS",
    "StaleIndex",
    "Terms",
    "Waiting",
    "candidates",
    "fallback_candidates",
    "index_counts",
]

#: The rows a bounded plan lets SQLite rank: the rarest terms make candidates
#: while the rows holding them add up to at most this many.
BROAD_TERM_ROWS = 2000


@dataclass(frozen=True)
class Terms:
    """A query's terms: each stem with the forms the query wrote it in, and the
    phrases (tuples of stems) a row must hold one of to match.

    A word is a phrase of one stem; a run of CJK characters is a phrase of its
    characters (see :func:`~cortex_memory.local.text.query_phrases`), each of
    them a term of its own.
    """

    stems: Tuple[str, ...]
    forms: Mapping[str, FrozenSet[str]]
    phrases: Tuple[Tuple[str, ...], ...] = ()

    @classmethod
    def of(cls, text: str) -> Terms:
        """The terms of ``text`` (stop words out when anything else is left).

        A text of one ASCII word (letters and digits only: the usual keyword
        search) is its one word lowercased, for ``words_of`` and
        ``query_phrases`` alike, and that word is kept whether or not it is a
        stop word; its terms are built directly (tested against the general
        way).
        """
        if cls is Terms and text.isascii() and text.isalnum():
            word = text.lower()
            term = stem(word)
            terms = object.__new__(Terms)
            fields = terms.__dict__
            fields["stems"] = (term,)
            fields["forms"] = {term: frozenset((word,))}
            fields["phrases"] = ((term,),)
            return terms
        return cls._of_phrases(text)

    @classmethod
    def _of_phrases(cls, text: str) -> Terms:
        """:meth:`of`, the general way: from the query's phrases."""
        found = query_phrases(text)
        kept = [p for p in found if len(p) > 1 or p[0] not in STOPWORDS] or list(found)
        forms: Dict[str, set[str]] = {}
        phrases: Dict[Tuple[str, ...], None] = {}
        for phrase in kept:
            stems = []
            for word in phrase:
                term = stem(word)
                forms.setdefault(term, set()).add(word)
                stems.append(term)
            phrases[tuple(stems)] = None
        return cls(tuple(forms), {k: frozenset(v) for k, v in forms.items()}, tuple(phrases))

    @property
    def all_phrases(self) -> Tuple[Tuple[str, ...], ...]:
        """The phrases (each stem its own when none were given)."""
        return self.phrases or tuple((term,) for term in self.stems)

    def phrase_counts(self, counts: Mapping[str, int]) -> Dict[Tuple[str, ...], int]:
        """At most how many rows hold each phrase: its rarest stem's row count."""
        return {p: min(counts.get(t, 0) for t in p) for p in self.all_phrases}

    def match_expression(self, phrases: Optional[Sequence[Tuple[str, ...]]] = None) -> str:
        """An FTS5 query holding any of ``phrases`` (default: all), each quoted.

        The index stems query text with its own tokenizer, so each stem is
        written as a word the query used for it (stemming a stem again can
        change it: ``releas`` becomes ``relea``); every word form that stems
        the same way matches. A phrase of several stems is one quoted string
        of their words, which FTS5 matches as a phrase.
        """
        chosen = self.all_phrases if phrases is None else phrases
        if len(chosen) == 1 and len(chosen[0]) == 1:  # one word (the usual keyword search)
            return '"' + min(self.forms[chosen[0][0]]).replace('"', '""') + '"'
        return self._expression(chosen)

    def _expression(self, chosen: Sequence[Tuple[str, ...]]) -> str:
        """:meth:`match_expression` of ``chosen``, the general way."""
        quoted = (" ".join(min(self.forms[term]) for term in phrase) for phrase in chosen)
        return " OR ".join('"' + words.replace('"', '""') + '"' for words in quoted)


class StaleIndex(Exception):
    """The keyword index missed writes (made without it): rebuild it, then read again."""


@lru_cache(maxsize=64)
def _counts_sql(corpus: Corpus, stems: int, where_sql: str) -> str:
    """The statement of :func:`index_counts` for a keyword index, a number of stems
    and a filter condition, made once (a query has at most 64 phrases of at most 4
    stems: ``text.py``). Rows: (kind, name, value, text, admitted)."""
    parts = [
        "SELECT 0, NULL, value, NULL, NULL FROM engine_info WHERE key = 'fts_state'",
        f"SELECT 1, NULL, block, NULL, NULL FROM {corpus.fts_data} WHERE id = 1",
    ]
    parts.extend(
        f"SELECT 2, term, doc, NULL, NULL FROM {corpus.vocab} WHERE term = ?"
        for _ in range(stems)
    )
    if corpus.pending is not None:
        # The pending rows, the filter as a column: every one counts in the
        # statistics, the admitted ones are candidates (local/pending.py). They
        # are looked up from the pending seqs (the IN list): as a join, SQLite
        # may take the small table, which has no statistics, for a large one
        # and build a Bloom filter over every row of the corpus first.
        a = corpus.alias
        parts.append(
            f"SELECT 3, {a}.seq, (SELECT words FROM {corpus.pending} WHERE seq = {a}.seq), "
            f"{corpus.text}, ({where_sql}) FROM {corpus.table} {a} "
            f"WHERE {a}.seq IN (SELECT seq FROM {corpus.pending})"
        )
    return " UNION ALL ".join(parts)


def _check_state(state: object) -> None:
    # engine_info.fts_state: anything but "ok" means the index missed writes.
    if state != FTS_OK:
        raise StaleIndex(state)


#: A pending row as :func:`index_counts` reads it: its ``seq``, how many words the
#: index will count in it, its text, and whether the read's filter admits it.
Waiting = Tuple[int, int, str, bool]

#: The condition of a read with no filter of its own.
_EVERY_ROW: Condition = ("1", [])


def index_counts(
    conn: sqlite3.Connection,
    corpus: Corpus,
    stems: Sequence[str],
    where: Optional[Condition] = None,
) -> Tuple[Stats, Dict[str, int], List[Waiting]]:
    """The keyword index's statistics, the rows it holds with each stem (0 when
    absent), and the rows not in it yet (:mod:`.pending`), in one read.

    The same statement checks that the index is up to date (``fts_state``)
    and raises :class:`StaleIndex` when it is not. Each stem is looked up by
    equality (an ``IN`` list would make SQLite walk the whole vocabulary);
    counting a stem walks the index's list of the rows that hold it (in C,
    but in time that grows with that count). With no stems, only the
    statistics are read. ``where`` says which pending rows the read admits
    (None: every one).
    """
    counts = dict.fromkeys(stems, 0)
    stats = Stats(0, 0)
    waiting: List[Waiting] = []
    if where is None or corpus.pending is None:  # no pending rows: no condition read
        where = _EVERY_ROW
    where_sql, where_params = where
    statement = _counts_sql(corpus, len(stems), where_sql)
    for kind, name, value, text, admitted in conn.execute(
        statement, (*stems, *where_params)
    ):
        if kind == 0:
            _check_state(value)
        elif kind == 1:
            stats = stats_of(value)
        elif kind == 2:
            counts[str(name)] = int(value)
        else:
            waiting.append((int(name), int(value), str(text), bool(admitted)))
    return stats, counts, waiting


@lru_cache(maxsize=256)
def _candidate_sql(corpus: Corpus, where_sql: str, order: Optional[str]) -> str:
    """The statement of :func:`_fts_rows` for a keyword index, a filter condition and an
    order, made once (a condition's text depends only on which filter fields are
    set, and how many values a list holds, so few are ever made)."""
    a = corpus.alias
    # Rows come whole, with their text: scores are computed from it in
    # Python (bm25.score_rows), so nothing else of the index is read.
    # CROSS JOIN keeps the keyword index the outer loop. Without statistics
    # (a file under ANALYZE_FROM items) SQLite takes ``tenant = ?`` for a
    # selective index and would run the full-text query once per row of the
    # tenant instead (a 990-item file: 12 ms a fetch instead of 0.5).
    sql = (
        f"SELECT {corpus.columns} FROM {corpus.fts} f "
        f"CROSS JOIN {corpus.table} {a} ON {a}.seq = f.rowid "
        f"WHERE f.{corpus.fts} MATCH ? AND {where_sql}"
    )
    if order is not None:
        sql += f" ORDER BY {order}"
    return sql + " LIMIT ?"


def _fts_rows(
    conn: sqlite3.Connection,
    corpus: Corpus,
    expression: str,
    where: Condition,
    order: Optional[str],
    size: int,
) -> List[Row]:
    where_sql, where_params = where
    sql = _candidate_sql(corpus, where_sql, order)
    return conn.execute(sql, (expression, *where_params, size)).fetchall()


def _best_rows(
    conn: sqlite3.Connection,
    corpus: Corpus,
    expression: str,
    where: Condition,
    size: int,
    holding: Optional[int],
) -> List[Row]:
    """The best ``size`` rows by SQLite's BM25 that match ``expression``;
    ``holding`` is how many rows of the index hold one of its terms (None:
    not counted).

    When those rows fit in ``size``, every one of them is a candidate
    whatever its rank, so SQLite is not asked to rank them (its BM25 costs
    more than reading them: FTS5 prepares a statement of its own to sort by
    rank, and looks up every match's size): they come in index order. One
    row more than ``size`` is asked for, so counts that came short (a word
    the index stemmed differently) fall back to the ranked read instead of
    cutting rows. Rows not counted are read that way first too: a lone
    keyword term (whose count would cost as much as the ranking) is most
    often a rare one, and when it is not, the unranked read stops at
    ``size + 1`` rows, little next to ranking every match.
    """
    if holding is None or holding <= size:
        rows = _fts_rows(conn, corpus, expression, where, None, size + 1)
        if len(rows) <= size:
            return rows
    return _fts_rows(conn, corpus, expression, where, "f.rank", size)


def candidates(
    conn: sqlite3.Connection,
    corpus: Corpus,
    terms: Terms,
    where: Condition,
    size: int,
    *,
    bounded: bool,
    counts: Optional[Mapping[str, int]],
) -> List[Row]:
    """Up to ``size`` rows the filter admits that hold a term, best (by SQLite's
    BM25) first (or all of them in index order, when they fit).

    Each row is :attr:`Corpus.columns`. ``counts`` are the terms' row counts
    (a bounded plan needs them; None: not read).
    """
    if not terms.stems:
        return []
    if not bounded:
        holding = None if counts is None else sum(terms.phrase_counts(counts).values())
        return _best_rows(conn, corpus, terms.match_expression(), where, size, holding)
    assert counts is not None
    # A phrase's count is its rarest stem's: at least the rows that hold it.
    rows_of = terms.phrase_counts(counts)
    held = [phrase for phrase, count in rows_of.items() if count > 0]
    if not held:
        return []
    # The rarest phrases, as long as the rows they hold stay within the budget.
    narrow: List[Tuple[str, ...]] = []
    budget = BROAD_TERM_ROWS
    for phrase in sorted(held, key=lambda p: (rows_of[p], p)):
        if rows_of[phrase] > budget:
            break
        narrow.append(phrase)
        budget -= rows_of[phrase]
    if narrow:
        holding = BROAD_TERM_ROWS - budget
        return _best_rows(conn, corpus, terms.match_expression(narrow), where, size, holding)
    # Every term is broad: the newest rows holding one of them (the index reads
    # its rows in descending rowid order without sorting them), ranked by score
    # afterwards.
    return _fts_rows(conn, corpus, terms.match_expression(held), where, "f.rowid DESC", size)


def fallback_candidates(
    conn: sqlite3.Connection,
    corpus: Corpus,
    terms: Terms,
    where: Condition,
) -> Tuple[Dict[int, str], Dict[str, int], Stats]:
    """Without FTS5: the texts of every admitted row that holds a term, each
    term's row count over the whole corpus and the corpus statistics (to
    score like the index would).

    Reads every row of the corpus, so its cost grows with the file; it is the
    path for SQLite builds without FTS5, and ``use_fts=False``.
    """
    a = corpus.alias
    wanted = frozenset(terms.stems)
    where_sql, where_params = where
    admitted = {
        int(seq)
        for (seq,) in conn.execute(
            f"SELECT {a}.seq FROM {corpus.table} {a} WHERE {where_sql}", where_params
        )
    }
    counts: Counter[str] = Counter()
    texts: Dict[int, str] = {}
    docs = total = 0
    for seq, text in conn.execute(f"SELECT {a}.seq, {corpus.text} FROM {corpus.table} {a}"):
        words = words_of(str(text))
        docs += 1
        total += len(words)
        held = wanted.intersection(stems_of(words))
        if held:
            counts.update(held)
            if int(seq) in admitted:
                texts[int(seq)] = str(text)
    return texts, {term: counts.get(term, 0) for term in terms.stems}, Stats(docs, total)



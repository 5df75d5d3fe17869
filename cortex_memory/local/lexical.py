"""Keyword ranking: BM25 over stems with an exact-form boost, candidates from FTS5.

A query's *terms* are the stems of its words (stop words left out when
anything else is left). Ranking has two stages:

1. **Candidates.** With FTS5, SQLite ranks the rows that hold any term by
   its own BM25 and hands back only the best ``size`` of those the filter
   admits (``… MATCH ? AND <filter> ORDER BY rank LIMIT ?``), so memory and
   Python work stay bounded however many rows match. When the terms' row
   counts are known (several terms, or a bounded plan) and the rows holding
   them fit in ``size``, all of them are read as they are, unranked: SQLite's
   BM25 would cost more than the read, and the scores come from Python
   anyway. A *bounded* plan (hybrid
   fetch, recall, beliefs) first looks each term up in the index's
   vocabulary and lets only the rarest terms make candidates, as long as the
   rows holding them add up to at most :data:`BROAD_TERM_ROWS`; the others
   are "broad" (they say little about which row is wanted: they still count
   in the scores). When even the rarest term is broad, the newest rows
   holding a term are the candidates. That keeps those reads within a fixed
   budget at any file size. Without FTS5 (the fallback) every row the filter
   admits is tokenized in Python.
2. **Scores**, computed in Python for the candidates, the same way with or
   without FTS5 (:func:`score_rows`): Okapi BM25 (``k1 = 1.2``, ``b = 0.75``,
   ``idf = ln(1 + (N − n + ½) / (n + ½))``) where a term met in the same
   form the query used (not only its stem) counts :data:`EXACT_BOOST` more,
   divided by what one exact occurrence of every term in a row of average
   length would score, and capped at 1. A hit holds at least one term.

``N``, the average length and ``n`` (rows holding a term) count every row of
the file, all tenants together, as the FTS5 index does.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import math
import sqlite3
from collections import Counter
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from cortex_memory.local.corpus import Corpus, Row, Stats, decode_varints, stats_of
from cortex_memory.local.schema import FTS_OK
from cortex_memory.local.sqlfilter import Condition
from cortex_memory.local.text import STOPWORDS, query_phrases, stem, stems_of, words_of

__all__ = [
    "BROAD_TERM_ROWS",
    "EXACT_BOOST",
    "MARK_CLOSE",
    "MARK_OPEN",
    "StaleIndex",
    "Terms",
    "candidates",
    "document_counts",
    "fallback_candidates",
    "needs_counts",
    "rarity",
    "score_rows",
]

#: BM25 parameters (the usual ones, as FTS5's ``bm25()`` uses).
K1 = 1.2
B = 0.75
#: How much more a term counts when the row holds the query's own form of it.
EXACT_BOOST = 0.25
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
        """The terms of ``text`` (stop words out when anything else is left)."""
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
        quoted = (" ".join(min(self.forms[term]) for term in phrase) for phrase in chosen)
        return " OR ".join('"' + words.replace('"', '""') + '"' for words in quoted)


class StaleIndex(Exception):
    """The keyword index missed writes (made without it): rebuild it, then read again."""


def document_counts(
    conn: sqlite3.Connection, corpus: Corpus, stems: Sequence[str]
) -> Tuple[Stats, Dict[str, int]]:
    """The corpus statistics and the rows holding each stem (0 when absent), in one read.

    The same statement checks that the index is up to date (``fts_state``)
    and raises :class:`StaleIndex` when it is not. Each stem is looked up by
    equality (an ``IN`` list would make SQLite walk the whole vocabulary);
    counting a stem walks the index's list of the rows that hold it (in C,
    but in time that grows with that count). With no stems, only the
    statistics are read.
    """
    counts = dict.fromkeys(stems, 0)
    parts = [
        "SELECT 0, NULL, value FROM engine_info WHERE key = 'fts_state'",
        f"SELECT 1, NULL, block FROM {corpus.fts_data} WHERE id = 1",
    ]
    parts.extend(f"SELECT 2, term, doc FROM {corpus.vocab} WHERE term = ?" for _ in stems)
    stats = Stats(0, 0)
    for kind, term, value in conn.execute(" UNION ALL ".join(parts), tuple(stems)):
        if kind == 0:
            if value != FTS_OK:
                raise StaleIndex(value)
        elif kind == 1:
            stats = stats_of(value)
        else:
            counts[str(term)] = int(value)
    return stats, counts


#: Around each token the index matched, in the text ``highlight()`` returns.
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"


def _fts_rows(
    conn: sqlite3.Connection,
    corpus: Corpus,
    expression: str,
    where: Condition,
    order: Optional[str],
    size: int,
) -> List[Row]:
    a = corpus.alias
    where_sql, where_params = where
    # Each row also comes with its text as highlight() marks the tokens the
    # expression matched, and its length in tokens (the index's docsize):
    # scoring then reads the matched tokens only (see :func:`score_rows`).
    sql = (
        f"SELECT {corpus.columns}, highlight(f.{corpus.fts}, 0, char(2), char(3)), d.sz "
        f"FROM {corpus.fts} f JOIN {corpus.fts}_docsize d ON d.id = f.rowid "
        f"JOIN {corpus.table} {a} ON {a}.seq = f.rowid "
        f"WHERE f.{corpus.fts} MATCH ? AND {where_sql}"
    )
    if order is not None:
        sql += f" ORDER BY {order}"
    return conn.execute(sql + " LIMIT ?", (expression, *where_params, size)).fetchall()


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
    more than reading them): they come in index order. One row more than
    ``size`` is asked for, so counts that came short (a word the index
    stemmed differently) fall back to the ranked read instead of cutting rows.
    """
    if holding is not None and holding <= size:
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
) -> Tuple[List[Row], bool]:
    """Up to ``size`` rows the filter admits that hold a term, best (by SQLite's
    BM25) first (or all of them in index order, when the counts say they fit),
    and whether their marks cover every term the rows may hold.

    Each row is :attr:`Corpus.columns`, then the text with the matched tokens
    marked and the row's length (see :func:`_fts_rows`). ``counts`` are the
    terms' row counts (a bounded plan needs them); when a bounded plan leaves
    terms out of its expression, the marks miss them and the flag is False.
    """
    if not terms.stems:
        return [], True
    if not bounded:
        holding = None if counts is None else sum(terms.phrase_counts(counts).values())
        return _best_rows(conn, corpus, terms.match_expression(), where, size, holding), True
    assert counts is not None
    # A phrase's count is its rarest stem's: at least the rows that hold it.
    rows_of = terms.phrase_counts(counts)
    held = [phrase for phrase, count in rows_of.items() if count > 0]
    if not held:
        return [], True
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
        rows = _best_rows(conn, corpus, terms.match_expression(narrow), where, size, holding)
        return rows, len(narrow) == len(held)
    # Every term is broad: the newest rows holding one of them (the index reads
    # its rows in descending rowid order without sorting them), ranked by score
    # afterwards.
    rows = _fts_rows(conn, corpus, terms.match_expression(held), where, "f.rowid DESC", size)
    return rows, True


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


def _idf(docs: int, holding: int) -> float:
    return math.log(1.0 + (docs - holding + 0.5) / (holding + 0.5))


def needs_counts(terms: Terms, bounded: bool) -> bool:
    """Whether ranking ``terms`` needs each one's row count.

    A bounded plan picks its candidates by them; scores weigh terms against
    each other by them. A lone term in an unbounded plan needs none: its
    weight divides out of its score (see :func:`score_rows`).
    """
    return bounded or len(terms.stems) > 1


def rarity(terms: Terms, counts: Mapping[str, int], stats: Stats) -> Dict[str, float]:
    """Each term's BM25 idf in the corpus (what :func:`score_rows` weighs it by)."""
    docs = max(stats.docs, 1)
    return {t: _idf(max(docs, counts.get(t, 0)), counts.get(t, 0)) for t in terms.stems}


#: What scoring needs of a row: its length in words, and per term met, how
#: often its stem occurs and whether the query's own form does.
_Tally = Tuple[int, Dict[str, int], FrozenSet[str]]


def _phrase_positions(stems: List[str], phrase: Tuple[str, ...]) -> List[int]:
    """Where ``phrase`` (several stems) occurs in ``stems``: every position it covers."""
    out: List[int] = []
    first, size, at = phrase[0], len(phrase), 0
    wanted = list(phrase)
    while True:
        try:
            at = stems.index(first, at)
        except ValueError:
            return out
        if stems[at : at + size] == wanted:
            out.extend(range(at, at + size))
        at += 1


def _tally_text(terms: Terms, text: str) -> _Tally:
    # What the index's marks would count (see _tally_marks): every occurrence of
    # a one-word phrase's stem, and the words inside occurrences of the others.
    words = words_of(text)
    stems = stems_of(words)
    found: Dict[str, int] = {}
    exact: List[str] = []
    singles = {p[0] for p in terms.all_phrases if len(p) == 1}
    for term in singles:
        tf = stems.count(term)
        if tf:
            found[term] = tf
            if any(form in words for form in terms.forms[term]):
                exact.append(term)
    covered = {at for p in terms.all_phrases if len(p) > 1 for at in _phrase_positions(stems, p)}
    for at in sorted(covered):
        term = stems[at]
        forms = terms.forms.get(term)
        if forms is None or term in singles:
            continue
        found[term] = found.get(term, 0) + 1
        if words[at] in forms:
            exact.append(term)
    return len(words), found, frozenset(exact)


def _tally_marks(terms: Terms, marked: str, size: bytes) -> _Tally:
    # Only the tokens the index matched are read: each is a word of the row
    # whose stem is a query term (the index and words_of tokenize alike).
    found: Dict[str, int] = {}
    exact: List[str] = []
    for piece in marked.split(MARK_OPEN)[1:]:
        for word in words_of(piece.split(MARK_CLOSE, 1)[0]):
            term = stems_of((word,))[0]
            forms = terms.forms.get(term)
            if forms is None:
                continue
            found[term] = found.get(term, 0) + 1
            if word in forms:
                exact.append(term)
    lengths = decode_varints(size)
    return (lengths[0] if lengths else 0), found, frozenset(exact)


def score_rows(
    terms: Terms,
    texts: Mapping[int, str],
    counts: Optional[Mapping[str, int]],
    stats: Stats,
    marks: Optional[Mapping[int, Tuple[str, bytes]]] = None,
) -> List[Tuple[int, float, float]]:
    """``(seq, score, bm25)`` of every row holding a term, best first.

    ``score`` is in [0, 1] (see the module's docstring); rows are ordered by
    the uncapped boosted BM25, then by age (the older row first). ``counts``
    may be None for a lone term: its idf scales every row's BM25 and the
    ideal alike, so scores and order do not depend on it (it is taken as 1).

    ``marks`` (from :func:`candidates`, when they cover every term) hold each
    row's text with the index's matches marked and its length: the row is
    then scored from its marked tokens alone, the same score as from its
    whole text (a row whose text holds a mark character is read whole).
    """
    if not terms.stems:
        return []
    average = stats.average_length
    idf = dict.fromkeys(terms.stems, 1.0) if counts is None else rarity(terms, counts, stats)
    ideal = sum(idf.values()) * (1.0 + EXACT_BOOST)
    out: List[Tuple[int, float, float]] = []
    for seq, text in texts.items():
        mark = None if marks is None else marks.get(seq)
        if mark is not None and MARK_OPEN not in text and MARK_CLOSE not in text:
            length, found, exact = _tally_marks(terms, mark[0], mark[1])
        else:
            length, found, exact = _tally_text(terms, text)
        if not found or not length:
            continue
        norm = K1 * (1.0 - B + B * length / average)
        total = 0.0
        for term, tf in found.items():
            gain = idf[term] * tf * (K1 + 1.0) / (tf + norm)
            if term in exact:
                gain *= 1.0 + EXACT_BOOST
            total += gain
        out.append((seq, min(1.0, total / ideal) if ideal > 0 else 0.0, total))
    out.sort(key=lambda row: (-row[2], row[0]))
    return out

"""Keyword scores: Okapi BM25 over stems with an exact-form boost, computed in Python.

:func:`score_rows` scores the candidates :func:`~cortex_memory.local.lexical.candidates`
read (or, without FTS5, every row holding a term), the same way on both
paths: BM25 (``k1 = 1.2``, ``b = 0.75``, ``idf = ln(1 + (N − n + ½) / (n + ½))``)
where a term met in the same form the query used (not only its stem) counts
:data:`EXACT_BOOST` more, divided by what one exact occurrence of every term
in a row of average length would score, and capped at 1.

What a row holds is counted from its text, as the keyword index tokenizes
it (:func:`~cortex_memory.local.text.words_of`, stems by
:func:`~cortex_memory.local.porter.stem`). An ASCII text is scanned for the
words that can stem to a query term (:mod:`.wordscan`); other texts (letters
outside ASCII, which are folded; CJK phrases) are split into words and
stemmed whole. Both ways give the same tally, with or without FTS5.
"""

from __future__ import annotations

import math
from typing import (
    AbstractSet,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

from cortex_memory.local.corpus import Stats
from cortex_memory.local.lexical import Terms
from cortex_memory.local.text import stems_of, words_of
from cortex_memory.local.wordscan import (
    BATCH_CHARS,
    Tally,
    joined_texts,
    lone_counts,
    scan_batch,
    scan_heads,
)

__all__ = [
    "B",
    "EXACT_BOOST",
    "K1",
    "needs_counts",
    "rarity",
    "scan_heads",
    "score_rows",
]

#: BM25 parameters (the usual ones, as FTS5's ``bm25()`` uses).
K1 = 1.2
B = 0.75
#: How much more a term counts when the row holds the query's own form of it.
EXACT_BOOST = 0.25


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


#: What :func:`_tally_text` counts of a text: its length in words, and per
#: term met, how often its stem occurs and whether the query's own form does.
_TextTally = Tuple[int, Dict[str, int], AbstractSet[str]]


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


def _tally_text(terms: Terms, text: str) -> _TextTally:
    # Every occurrence of a one-word phrase's stem, and the words inside
    # occurrences of the others (what the index matches).
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


def _score_lone(term: str, forms: AbstractSet[str], head: str, seqs: Sequence[int],
                texts: Sequence[str], joined: str, idf: float,
                average: float) -> List[Tuple[int, float, float]]:
    """:func:`score_rows` of a lone term over ASCII ``texts`` (of rows ``seqs``;
    ``joined`` as :func:`joined_texts` joins them), tallied and scored in one pass.

    The same arithmetic in the same order as the general loop, so the same
    floats (tested against it): with one term, its sum is its gain and the
    ideal its idf times the boost.
    """
    lowered, marked, starts = joined_texts(texts, joined)
    held, exact = lone_counts(term, forms, lowered, marked, starts, head)
    count = marked.count
    ideal = idf * (1.0 + EXACT_BOOST)
    boosted = 1.0 + EXACT_BOOST
    ranked: List[Tuple[float, int, float]] = []
    for row, tf in enumerate(held):
        if not tf:
            continue
        length = count(b" a", starts[row] - 1, starts[row + 1] - 1)
        if not length:
            continue
        norm = K1 * (1.0 - B + B * length / average)
        gain = idf * tf * (K1 + 1.0) / (tf + norm)
        if exact[row]:
            gain *= boosted
        score = gain / ideal if ideal > 0 else 0.0
        ranked.append((-gain, seqs[row], score if score < 1.0 else 1.0))
    ranked.sort()
    return [(seq, score, -negated) for negated, seq, score in ranked]


def _tallies(terms: Terms, texts: Mapping[int, str]) -> List[Tally]:
    """The tallies of the texts: ASCII ones scanned in batches (when the terms
    allow it, see :func:`scan_heads`: then only those holding a term are
    tallied), the others split and stemmed."""
    heads = scan_heads(terms)
    if heads is None:
        return [(seq, *_tally_text(terms, text)) for seq, text in texts.items()]
    values = texts.values()
    if all(map(str.isascii, values)) and sum(map(len, values)) < BATCH_CHARS:
        return scan_batch(terms, list(texts), list(values), heads)  # the usual case
    out: List[Tally] = []
    seqs: List[int] = []
    batch: List[str] = []
    size = 0
    for seq, text in texts.items():
        if not text.isascii():
            out.append((seq, *_tally_text(terms, text)))
            continue
        seqs.append(seq)
        batch.append(text)
        size += len(text)
        if size >= BATCH_CHARS:
            out.extend(scan_batch(terms, seqs, batch, heads))
            seqs, batch, size = [], [], 0
    if batch:
        out.extend(scan_batch(terms, seqs, batch, heads))
    return out


def score_rows(
    terms: Terms,
    texts: Mapping[int, str],
    counts: Optional[Mapping[str, int]],
    stats: Stats,
) -> List[Tuple[int, float, float]]:
    """``(seq, score, bm25)`` of every row holding a term, best first.

    ``score`` is in [0, 1] (see the module's docstring); rows are ordered by
    the uncapped boosted BM25, then by age (the older row first). ``counts``
    may be None for a lone term: its idf scales every row's BM25 and the
    ideal alike, so scores and order do not depend on it (it is taken as 1).

    An ASCII text is scanned for the words that can stem to a term, any
    other text split and stemmed whole: the same tally (see the module's
    docstring).
    """
    if not terms.stems:
        return []
    average = stats.average_length
    idf = dict.fromkeys(terms.stems, 1.0) if counts is None else rarity(terms, counts, stats)
    if len(idf) == 1:  # a lone term (the usual keyword search): see _score_lone
        heads = scan_heads(terms)
        if heads is not None:
            values = list(texts.values())
            # Joined, the texts are ASCII when each is, and as long as them all
            # with a space each.
            joined = " " + " ".join(values)
            if joined.isascii() and len(joined) - len(values) < BATCH_CHARS:
                (term, weight), = idf.items()
                return _score_lone(term, terms.forms[term], heads[0], list(texts), values,
                                   joined, weight, average)
    ideal = sum(idf.values()) * (1.0 + EXACT_BOOST)
    boosted = 1.0 + EXACT_BOOST
    ranked: List[Tuple[float, int, float]] = []  # (-bm25, seq, score): sorted as they are
    for seq, length, found, exact in _tallies(terms, texts):
        if not found or not length:
            continue
        norm = K1 * (1.0 - B + B * length / average)
        total = 0.0
        # Terms in a fixed order: the same sum whichever way the row was tallied.
        for term, tf in sorted(found.items()) if len(found) > 1 else found.items():
            gain = idf[term] * tf * (K1 + 1.0) / (tf + norm)
            if term in exact:
                gain *= boosted
            total += gain
        score = total / ideal if ideal > 0 else 0.0
        ranked.append((-total, seq, score if score < 1.0 else 1.0))
    ranked.sort()
    return [(seq, score, -negated) for negated, seq, score in ranked]

"""Keyword scores: Okapi BM25 over stems with an exact-form boost, computed in Python.

:func:`score_rows` scores the candidates :func:`~cortex_memory.local.lexical.candidates`
read (or, without FTS5, every row holding a term), the same way on both
paths: BM25 (``k1 = 1.2``, ``b = 0.75``, ``idf = ln(1 + (N − n + ½) / (n + ½))``)
where a term met in the same form the query used (not only its stem) counts
:data:`EXACT_BOOST` more, divided by what one exact occurrence of every term
in a row of average length would score, and capped at 1.

What a row holds is counted from its text, as the keyword index tokenizes
it (:func:`~cortex_memory.local.text.words_of`, stems by
:func:`~cortex_memory.local.porter.stem`). Stemming every word of every
candidate costs more than the rest of a rare-term fetch, so for an ASCII text
only the words that can stem to a query term are stemmed: a Porter stem is
never more than its last letter away from the beginning of its word (the
steps only cut or rewrite a word's end; tested), so a word whose stem is
``t`` begins with ``t[:-1]``, and ``str.find`` (in C) finds those words; the
row's length is its count of runs of ASCII letters and digits, counted in C
(``bytes.translate``). Other texts (letters outside ASCII, which are folded;
CJK phrases) are split into words and stemmed whole. Both ways give the same
tally, with or without FTS5.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from itertools import accumulate
from typing import (
    AbstractSet,
    Dict,
    FrozenSet,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
)

from cortex_memory.local.corpus import Stats
from cortex_memory.local.lexical import Terms
from cortex_memory.local.text import stems_of, words_of

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


def scan_heads(terms: Terms) -> Optional[Tuple[str, ...]]:
    """The word beginnings that find, in an ASCII text, every word whose stem
    is one of ``terms``: each stem but its last letter, none that another
    one begins (so no word is found twice). None when the scan does not
    apply: a phrase of several stems, or a stem of one letter.
    """
    if any(len(phrase) > 1 for phrase in terms.all_phrases):
        return None
    heads = sorted({term[:-1] for term in terms.stems})
    if not heads or heads[0] == "":
        return None
    kept: List[str] = []
    for head in heads:  # sorted: a head comes after every head that begins it
        if not any(head.startswith(shorter) for shorter in kept):
            kept.append(head)
    return tuple(kept)


#: Each ASCII letter and digit to ``a``, every other byte to a space: in an
#: ASCII text so translated, a word starts where ``a`` follows a space and
#: ends at the next space.
_WORD_BYTES = bytes(
    ord("a") if c < 128 and chr(c).isalnum() else ord(" ") for c in range(256)
)
_LETTER = ord("a")

#: Characters of text scanned at once (the texts of a batch are joined).
_BATCH_CHARS = 1 << 20

#: A row's tally: its seq, its length in words, and per term met, how often
#: its stem occurs and whether the query's own form does.
_Tally = Tuple[int, int, Dict[str, int], AbstractSet[str]]


def _words_from(lowered: str, marked: bytes, head: str) -> Iterator[Tuple[int, str]]:
    """Where each word of ``lowered`` that begins with ``head`` starts, and the word.

    ``marked`` is the same text translated by :data:`_WORD_BYTES` (and starting
    with a space): a find inside a word is skipped, and a word ends at the next
    space of ``marked``.
    """
    width = len(head)
    at = lowered.find(head)
    while at >= 0:
        if marked[at - 1] == _LETTER:  # inside a word
            at = lowered.find(head, at + 1)
            continue
        end = marked.find(b" ", at + width)
        if end < 0:
            end = len(marked)
        yield at, lowered[at:end]
        at = lowered.find(head, end)


def _scan_batch(terms: Terms, seqs: Sequence[int], texts: Sequence[str],
                heads: Sequence[str]) -> List[_Tally]:
    """The tallies of ``texts`` (every one ASCII) that hold a term, scanned together.

    The texts are joined by spaces (a space ends a word), lowercased (for
    ASCII, that is the folding) and searched once per head; each word found
    belongs to the text its start falls in. A text's length is its count of
    word starts in the joined text with every letter and digit made ``a``.
    """
    lowered, marked, starts = _joined(texts)
    if len(terms.stems) == 1:
        return _scan_one(terms.stems[0], terms.forms[terms.stems[0]], seqs, lowered, marked,
                         starts, heads[0])
    # A word that is one of the query's own forms needs no stemming: it is
    # that form's term, met exactly. Other words are stemmed together after.
    exact_terms = {form: term for term, forms in terms.forms.items() for form in forms}
    found: Dict[int, Dict[str, int]] = {}
    exact: Dict[int, Set[str]] = {}
    places: List[int] = []
    others: List[str] = []
    for head in heads:
        for at, word in _words_from(lowered, marked, head):
            term = exact_terms.get(word)
            if term is None:
                places.append(at)
                others.append(word)
                continue
            row = bisect_right(starts, at) - 1
            held = found.get(row)
            if held is None:
                held = found[row] = {}
                exact[row] = {term}
            else:
                exact[row].add(term)
            held[term] = held.get(term, 0) + 1
    for at, term in zip(places, stems_of(others)):
        if term in terms.forms:
            row = bisect_right(starts, at) - 1
            held = found.get(row)
            if held is None:
                held = found[row] = {}
                exact[row] = set()
            held[term] = held.get(term, 0) + 1
    count = marked.count
    return [
        (seqs[row], count(b" a", starts[row] - 1, starts[row + 1] - 1), held, exact[row])
        for row, held in found.items()
    ]


def _lone_counts(term: str, forms: AbstractSet[str], lowered: str, marked: bytes,
                 starts: Sequence[int], head: str) -> Tuple[Dict[int, int], Set[int]]:
    """For a lone term (one head): per row (an index into ``starts``), how often a
    word stemming to ``term`` occurs, and the rows holding one of the query's forms.

    :func:`_words_from`'s scan, written out: a rare term's fetch runs it on
    every candidate, and the generator's frames cost as much as the finds.
    """
    width = len(head)
    find = lowered.find
    held: Dict[int, int] = {}
    exact: Set[int] = set()
    places: List[int] = []
    others: List[str] = []
    at = find(head)
    while at >= 0:
        if marked[at - 1] == _LETTER:  # inside a word
            at = find(head, at + 1)
            continue
        end = marked.find(b" ", at + width)
        if end < 0:
            end = len(marked)
        word = lowered[at:end]
        if word in forms:
            row = bisect_right(starts, at) - 1
            held[row] = held.get(row, 0) + 1
            exact.add(row)
        else:
            places.append(at)
            others.append(word)
        at = find(head, end)
    if others:
        for at, stemmed in zip(places, stems_of(others)):
            if stemmed == term:
                row = bisect_right(starts, at) - 1
                held[row] = held.get(row, 0) + 1
    return held, exact


def _scan_one(term: str, forms: AbstractSet[str], seqs: Sequence[int], lowered: str,
              marked: bytes, starts: Sequence[int], head: str) -> List[_Tally]:
    """:func:`_scan_batch` for a lone term (one head): counts per row, no dict per word."""
    held, exact = _lone_counts(term, forms, lowered, marked, starts, head)
    count = marked.count
    met: FrozenSet[str] = frozenset((term,))
    none: FrozenSet[str] = frozenset()
    return [
        (seqs[row], count(b" a", starts[row] - 1, starts[row + 1] - 1), {term: tf},
         met if row in exact else none)
        for row, tf in held.items()
    ]


def _joined(texts: Sequence[str]) -> Tuple[str, bytes, List[int]]:
    """The texts (every one ASCII) joined by spaces after a space, lowercased; the
    same translated by :data:`_WORD_BYTES`; and where each text begins in them
    (``starts[i + 1] - 1``: where text ``i`` ends)."""
    joined = " " + " ".join(texts)
    starts = list(accumulate([len(text) + 1 for text in texts], initial=1))
    return joined.lower(), joined.encode("ascii").translate(_WORD_BYTES), starts


def _score_lone(term: str, forms: AbstractSet[str], head: str, texts: Mapping[int, str],
                idf: float, average: float) -> List[Tuple[int, float, float]]:
    """:func:`score_rows` of a lone term over ASCII texts, tallied and scored in one pass.

    The same arithmetic in the same order as the general loop, so the same
    floats (tested against it): with one term, its sum is its gain and the
    ideal its idf times the boost.
    """
    seqs = list(texts)
    lowered, marked, starts = _joined(list(texts.values()))
    held, exact = _lone_counts(term, forms, lowered, marked, starts, head)
    count = marked.count
    ideal = idf * (1.0 + EXACT_BOOST)
    boosted = 1.0 + EXACT_BOOST
    ranked: List[Tuple[float, int, float]] = []
    for row, tf in held.items():
        length = count(b" a", starts[row] - 1, starts[row + 1] - 1)
        if not length:
            continue
        norm = K1 * (1.0 - B + B * length / average)
        gain = idf * tf * (K1 + 1.0) / (tf + norm)
        if row in exact:
            gain *= boosted
        score = gain / ideal if ideal > 0 else 0.0
        ranked.append((-gain, seqs[row], score if score < 1.0 else 1.0))
    ranked.sort()
    return [(seq, score, -negated) for negated, seq, score in ranked]


def _tallies(terms: Terms, texts: Mapping[int, str]) -> List[_Tally]:
    """The tallies of the texts: ASCII ones scanned in batches (when the terms
    allow it, see :func:`scan_heads`: then only those holding a term are
    tallied), the others split and stemmed."""
    heads = scan_heads(terms)
    if heads is None:
        return [(seq, *_tally_text(terms, text)) for seq, text in texts.items()]
    values = texts.values()
    if all(map(str.isascii, values)) and sum(map(len, values)) < _BATCH_CHARS:
        return _scan_batch(terms, list(texts), list(values), heads)  # the usual case
    out: List[_Tally] = []
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
        if size >= _BATCH_CHARS:
            out.extend(_scan_batch(terms, seqs, batch, heads))
            seqs, batch, size = [], [], 0
    if batch:
        out.extend(_scan_batch(terms, seqs, batch, heads))
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
        values = texts.values()
        if (
            heads is not None
            and all(map(str.isascii, values))
            and sum(map(len, values)) < _BATCH_CHARS
        ):
            (term, weight), = idf.items()
            return _score_lone(term, terms.forms[term], heads[0], texts, weight, average)
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

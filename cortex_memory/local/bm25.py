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
import re
from bisect import bisect_right
from typing import Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Tuple

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


#: The rest of an ASCII word (the index's tokens are runs of ASCII letters and
#: digits in an ASCII text).
_WORD_REST = re.compile(r"[a-z0-9]*")
#: Each ASCII letter and digit to ``a``, every other byte to a space: the words
#: of an ASCII text are then the places where `` a`` follows a space.
_WORD_BYTES = bytes(
    ord("a") if c < 128 and chr(c).isalnum() else ord(" ") for c in range(256)
)


#: Characters of text scanned at once (the texts of a batch are joined).
_BATCH_CHARS = 1 << 20


def _scan_batch(terms: Terms, texts: Sequence[str], heads: Sequence[str]) -> List[_Tally]:
    """The tally of each of ``texts`` (every one ASCII), scanned together.

    The texts are joined by spaces (a space ends a word), lowercased (for
    ASCII, that is the folding) and searched once per head; each word found
    belongs to the text its start falls in. A text's length is its count of
    word starts in the joined text with every letter and digit made ``a``.
    """
    joined = " " + " ".join(texts)
    lowered = joined.lower()
    starts: List[int] = []
    at = 1
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    rows: List[int] = []
    words: List[str] = []
    for head in heads:
        at = lowered.find(head)
        while at >= 0:
            if lowered[at - 1].isalnum():  # inside a word (the text starts with a space)
                at = lowered.find(head, at + 1)
                continue
            end = _WORD_REST.match(lowered, at + len(head)).end()  # type: ignore[union-attr]
            rows.append(bisect_right(starts, at) - 1)
            words.append(lowered[at:end])
            at = lowered.find(head, end)
    found: Dict[int, Dict[str, int]] = {}
    exact: Dict[int, List[str]] = {}
    forms_of = terms.forms
    for row, word, term in zip(rows, words, stems_of(words)):
        forms = forms_of.get(term)
        if forms is None:
            continue
        held = found.setdefault(row, {})
        held[term] = held.get(term, 0) + 1
        if word in forms:
            exact.setdefault(row, []).append(term)
    marked = joined.encode("ascii").translate(_WORD_BYTES) if found else b""
    out: List[_Tally] = []
    for row, start in enumerate(starts):
        terms_met = found.get(row)
        if terms_met is None:
            out.append((0, {}, frozenset()))
            continue
        length = marked.count(b" a", start - 1, start + len(texts[row]))
        out.append((length, terms_met, frozenset(exact.get(row, ()))))
    return out


def _tallies(terms: Terms, texts: Mapping[int, str]) -> Iterator[Tuple[int, _Tally]]:
    """``(seq, tally)`` of every text: ASCII ones scanned in batches (when the
    terms allow it, see :func:`scan_heads`), the others split and stemmed."""
    heads = scan_heads(terms)
    if heads is None:
        for seq, text in texts.items():
            yield seq, _tally_text(terms, text)
        return
    seqs: List[int] = []
    batch: List[str] = []
    size = 0
    for seq, text in texts.items():
        if not text.isascii():
            yield seq, _tally_text(terms, text)
            continue
        seqs.append(seq)
        batch.append(text)
        size += len(text)
        if size >= _BATCH_CHARS:
            yield from zip(seqs, _scan_batch(terms, batch, heads))
            seqs, batch, size = [], [], 0
    if batch:
        yield from zip(seqs, _scan_batch(terms, batch, heads))


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
    ideal = sum(idf.values()) * (1.0 + EXACT_BOOST)
    out: List[Tuple[int, float, float]] = []
    for seq, (length, found, exact) in _tallies(terms, texts):
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

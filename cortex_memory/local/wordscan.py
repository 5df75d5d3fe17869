"""Finding a query's words in ASCII texts without splitting them (for :mod:`.bm25`).

Stemming every word of every candidate costs more than the rest of a
rare-term fetch, so for an ASCII text only the words that can stem to a
query term are stemmed: a Porter stem is never more than its last letter
away from the beginning of its word (the steps only cut or rewrite a word's
end; tested), so a word whose stem is ``t`` begins with ``t[:-1]`` (its
*head*, :func:`scan_heads`), and ``str.find`` (in C) finds those words in
the texts of a batch joined together. A row's length is its count of runs
of ASCII letters and digits, counted in C on the joined text translated by
:data:`WORD_BYTES`. The tallies are those of splitting and stemming each
text whole (:func:`cortex_memory.local.bm25.score_rows` holds them to it).
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import (
    AbstractSet,
    Dict,
    FrozenSet,
    Iterator,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
)

from cortex_memory.local.lexical import Terms
from cortex_memory.local.text import stems_of, words_of

__all__ = [
    "BATCH_CHARS",
    "LETTER",
    "WORD_BYTES",
    "Tally",
    "joined_texts",
    "lone_counts",
    "scan_batch",
    "scan_heads",
    "scan_one",
    "word_count",
    "words_from",
]


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
WORD_BYTES = bytes(
    ord("a") if c < 128 and chr(c).isalnum() else ord(" ") for c in range(256)
)
LETTER = ord("a")

#: Characters of text scanned at once (the texts of a batch are joined).
BATCH_CHARS = 1 << 20

#: A row's tally: its seq, its length in words, and per term met, how often
#: its stem occurs and whether the query's own form does.
Tally = Tuple[int, int, Dict[str, int], AbstractSet[str]]


def words_from(lowered: str, marked: bytes, head: str) -> Iterator[Tuple[int, str]]:
    """Where each word of ``lowered`` that begins with ``head`` starts, and the word.

    ``marked`` is the same text translated by :data:`WORD_BYTES` (and starting
    with a space): a find inside a word is skipped, and a word ends at the next
    space of ``marked``.
    """
    width = len(head)
    at = lowered.find(head)
    while at >= 0:
        if marked[at - 1] == LETTER:  # inside a word
            at = lowered.find(head, at + 1)
            continue
        end = marked.find(b" ", at + width)
        if end < 0:
            end = len(marked)
        yield at, lowered[at:end]
        at = lowered.find(head, end)


def scan_batch(terms: Terms, seqs: Sequence[int], texts: Sequence[str],
                heads: Sequence[str]) -> List[Tally]:
    """The tallies of ``texts`` (every one ASCII) that hold a term, scanned together.

    The texts are joined by spaces (a space ends a word), lowercased (for
    ASCII, that is the folding) and searched once per head; each word found
    belongs to the text its start falls in. A text's length is its count of
    word starts in the joined text with every letter and digit made ``a``.
    """
    lowered, marked, starts = joined_texts(texts)
    if len(terms.stems) == 1:
        return scan_one(terms.stems[0], terms.forms[terms.stems[0]], seqs, lowered, marked,
                         starts, heads[0])
    # A word that is one of the query's own forms needs no stemming: it is
    # that form's term, met exactly. Other words are stemmed together after.
    exact_terms = {form: term for term, forms in terms.forms.items() for form in forms}
    found: Dict[int, Dict[str, int]] = {}
    exact: Dict[int, Set[str]] = {}
    places: List[int] = []
    others: List[str] = []
    for head in heads:
        for at, word in words_from(lowered, marked, head):
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


def lone_counts(term: str, forms: AbstractSet[str], lowered: str, marked: bytes,
                 starts: Sequence[int], head: str) -> Tuple[List[int], List[bool]]:
    """For a lone term (one head): per row (an index into ``starts``), how often a
    word stemming to ``term`` occurs, and whether one of the query's forms does.

    :func:`words_from`'s scan, written out: a rare term's fetch runs it on
    every candidate, and the generator's frames cost as much as the finds.
    """
    width = len(head)
    find = lowered.find
    held = [0] * (len(starts) - 1)
    exact = [False] * len(held)
    rows: List[int] = []
    others: List[str] = []
    at = find(head)
    while at >= 0:
        if marked[at - 1] == LETTER:  # inside a word
            at = find(head, at + 1)
            continue
        end = marked.find(b" ", at + width)
        if end < 0:
            end = len(marked)
        word = lowered[at:end]
        row = bisect_right(starts, at) - 1
        if word in forms:
            held[row] += 1
            exact[row] = True
        else:
            rows.append(row)
            others.append(word)
        at = find(head, end)
    if others:
        for row, stemmed in zip(rows, stems_of(others)):
            if stemmed == term:
                held[row] += 1
    return held, exact


def scan_one(term: str, forms: AbstractSet[str], seqs: Sequence[int], lowered: str,
              marked: bytes, starts: Sequence[int], head: str) -> List[Tally]:
    """:func:`scan_batch` for a lone term (one head): counts per row, no dict per word."""
    held, exact = lone_counts(term, forms, lowered, marked, starts, head)
    count = marked.count
    met: FrozenSet[str] = frozenset((term,))
    none: FrozenSet[str] = frozenset()
    return [
        (seqs[row], count(b" a", starts[row] - 1, starts[row + 1] - 1), {term: tf},
         met if exact[row] else none)
        for row, tf in enumerate(held) if tf
    ]


def joined_texts(
    texts: Sequence[str], joined: Optional[str] = None
) -> Tuple[str, bytes, List[int]]:
    """The texts (every one ASCII) joined by spaces after a space (``joined``, when
    the caller has it), lowercased; the same translated by :data:`WORD_BYTES`;
    and where each text begins in them (``starts[i + 1] - 1``: where text ``i`` ends)."""
    if joined is None:
        joined = " " + " ".join(texts)
    starts = list(accumulate([len(text) + 1 for text in texts], initial=1))
    return joined.lower(), joined.encode("ascii").translate(WORD_BYTES), starts


def word_count(text: str) -> int:
    """How many words ``text`` has, as ``len(text.words_of(text))`` counts them (and
    the index's tokenizer): for an ASCII text, its runs of letters and digits,
    counted in C."""
    if text.isascii():
        return (b" " + text.encode("ascii")).translate(WORD_BYTES).count(b" a")
    return len(words_of(text))

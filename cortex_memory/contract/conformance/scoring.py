"""The reference engine's ranking: keyword overlap and hashed character trigrams.

Deliberately simple and fully specified (contract.md §9.6) so the reference
engine's answers can be predicted by hand:

- words: the text split on every character that is not alphanumeric
  (``str.isalnum``, so Unicode letters and digits count), lowercased;
- keyword score: the fraction of the query's distinct words found among the
  text's words;
- vector: 64 buckets counting character trigrams of each word padded as
  ``" word "``, hashed with 32-bit FNV-1a over the characters' code points,
  L2-normalised and compared by cosine;
- hybrid: the mean of the two.
"""

from __future__ import annotations

import math
from typing import FrozenSet, List, Tuple

from cortex_memory.contract.jsonfmt import to_f32
from cortex_memory.contract.requests import FetchMode

__all__ = [
    "DIMENSIONS",
    "VECTOR_THRESHOLD",
    "Query",
    "Scored",
    "cosine",
    "keyword_score",
    "score",
    "trigram_vector",
    "words",
]

#: Buckets of the trigram vector.
DIMENSIONS = 64
#: A vector score at or above this is a hit.
VECTOR_THRESHOLD = 0.2

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_MASK = 0xFFFFFFFF

#: A text's score and whether it is a hit.
Scored = Tuple[float, bool]
Vector = Tuple[float, ...]


def words(text: str) -> List[str]:
    """``text`` split on non-alphanumeric characters, lowercased, empty words dropped."""
    out: List[str] = []
    current: List[str] = []
    for ch in text:
        if ch.isalnum():
            current.append(ch)
        elif current:
            out.append("".join(current).lower())
            current = []
    if current:
        out.append("".join(current).lower())
    return out


def keyword_score(query_words: FrozenSet[str], text_words: FrozenSet[str]) -> float:
    """The fraction of the distinct query words found in the text (0 for no query words)."""
    if not query_words:
        return 0.0
    return len(query_words & text_words) / len(query_words)


def _fnv1a(trigram: str) -> int:
    h = _FNV_OFFSET
    for ch in trigram:
        h = ((h ^ ord(ch)) * _FNV_PRIME) & _MASK
    return h


def trigram_vector(text_words: List[str]) -> Vector:
    """The L2-normalised 64-bucket trigram vector of ``text_words`` (all zeros when empty)."""
    counts = [0] * DIMENSIONS
    for word in text_words:
        padded = f" {word} "
        for i in range(len(padded) - 2):
            counts[_fnv1a(padded[i : i + 3]) % DIMENSIONS] += 1
    norm = math.sqrt(sum(c * c for c in counts))
    if norm == 0.0:
        return tuple(0.0 for _ in counts)
    return tuple(c / norm for c in counts)


def cosine(a: Vector, b: Vector) -> float:
    """The cosine of two normalised vectors (their dot product)."""
    return sum(x * y for x, y in zip(a, b))


class Query:
    """A query prepared once and scored against many texts."""

    __slots__ = ("vector", "words")

    def __init__(self, text: str) -> None:
        query_words = words(text)
        self.words = frozenset(query_words)
        self.vector = trigram_vector(query_words)


def score(query: Query, text: str, mode: FetchMode) -> Scored:
    """Score ``text`` for ``query`` in ``mode``: ``(score, is_hit)``.

    Scores are float32 values (rounded before the thresholds apply, as the
    contract compares them). Keyword hits score above 0; vector hits at least
    0.2; a hybrid hit is either, scored by the mean of the two.
    """
    text_words = words(text)
    keyword = vector = 0.0
    if mode is not FetchMode.VECTOR:
        keyword = to_f32(keyword_score(query.words, frozenset(text_words)))
    if mode is not FetchMode.KEYWORD:
        vector = to_f32(cosine(query.vector, trigram_vector(text_words)))
    if mode is FetchMode.KEYWORD:
        return keyword, keyword > 0.0
    if mode is FetchMode.VECTOR:
        return vector, vector >= VECTOR_THRESHOLD
    return to_f32((keyword + vector) / 2), keyword > 0.0 or vector >= VECTOR_THRESHOLD

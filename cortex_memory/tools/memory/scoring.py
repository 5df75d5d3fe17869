"""Ranking for the local memory backend: a small hybrid of words and character trigrams.

The local backend keeps its own table, so it ranks in process, the way the
contract's reference engine does (contract.md §9.6): a keyword score (the
share of the query's distinct words found in the memory) and a vector score
(cosine of 64-dimensional hashed character-trigram vectors), averaged. Both
lie in 0..1, so the hybrid does too, and the tool's abstention threshold
(0.2 by default) means the same thing on every call.
"""

from __future__ import annotations

import math
from typing import FrozenSet, List, Tuple

__all__ = ["QueryScorer", "hybrid_score", "words"]

_DIMENSIONS = 64
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def words(text: str) -> List[str]:
    """The lower-cased words of ``text``: runs of alphanumeric characters."""
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


def _bucket(trigram: str) -> int:
    h = _FNV_OFFSET
    for ch in trigram:
        h ^= ord(ch)
        h = (h * _FNV_PRIME) & 0xFFFFFFFF
    return h % _DIMENSIONS


def _vector(tokens: List[str]) -> Tuple[float, ...]:
    counts = [0.0] * _DIMENSIONS
    for word in tokens:
        padded = f" {word} "
        for i in range(len(padded) - 2):
            counts[_bucket(padded[i : i + 3])] += 1.0
    norm = math.sqrt(sum(c * c for c in counts))
    if norm == 0.0:
        return tuple(counts)
    return tuple(c / norm for c in counts)


class QueryScorer:
    """Scores many texts against one query (the query is analysed once)."""

    def __init__(self, query: str) -> None:
        tokens = words(query)
        self._words: FrozenSet[str] = frozenset(tokens)
        self._vector = _vector(tokens)

    def score(self, text: str) -> float:
        """The hybrid score of ``text``: the mean of the keyword and vector scores."""
        if not self._words:
            return 0.0
        tokens = words(text)
        held = frozenset(tokens)
        keyword = len(self._words & held) / len(self._words)
        other = _vector(tokens)
        vector = sum(a * b for a, b in zip(self._vector, other))
        return (keyword + max(vector, 0.0)) / 2.0


def hybrid_score(query: str, text: str) -> float:
    """The hybrid score of ``text`` for ``query`` (0..1)."""
    return QueryScorer(query).score(text)

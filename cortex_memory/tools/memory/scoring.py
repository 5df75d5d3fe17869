"""Ranking for the local memory backend: the local engine's hybrid score, in process.

The local backend keeps its own table, so it scores rows itself, with the
local engine's analysis (:mod:`cortex_memory.local.analysis`): the keyword
score is the share of the query's distinct words the memory holds, the
vector score the cosine of hashed character-trigram vectors, and the hybrid
score their mean, exactly as the local engine's ``fetch`` ranks in hybrid
mode. Both parts lie in 0..1, so the tool's abstention threshold (0.2 by
default) means the same thing on every call.
"""

from __future__ import annotations

from typing import FrozenSet

from cortex_memory.local.analysis import cosine, query_words, vector_of, words_of

__all__ = ["QueryScorer", "hybrid_score"]


class QueryScorer:
    """Scores many texts against one query (the query is analysed once)."""

    def __init__(self, query: str) -> None:
        distinct = query_words(query)
        self._words: FrozenSet[str] = frozenset(distinct)
        self._count = len(distinct)
        # As the local engine: repeats count in vectors, not in the keyword share.
        self._vector = vector_of(words_of(query))

    def score(self, text: str) -> float:
        """The hybrid score of ``text``: the mean of its keyword and vector scores."""
        if not self._count:
            return 0.0
        words = words_of(text)
        keyword = len(self._words.intersection(words)) / self._count
        vector = cosine(self._vector, vector_of(words))
        return (keyword + vector) / 2.0


def hybrid_score(query: str, text: str) -> float:
    """The hybrid score of ``text`` for ``query`` (0..1)."""
    return QueryScorer(query).score(text)

"""Ranking for the local memory backend: the local engine's analysis, in process.

The local backend keeps its own table, so it scores rows itself, with the
local engine's text analysis (:mod:`cortex_memory.local.text`): the keyword
score is the share of the query's distinct content stems the memory holds
(so ``ships`` meets ``ship``), counting each pair of neighbouring CJK
characters in the query as one more term (CJK characters are words of their
own, so ``公园`` ranks a text holding the word above one holding ``公`` and
``园`` apart), the vector score the cosine of the built-in
character n-gram vectors (:class:`~cortex_memory.local.embedders.NgramEmbedder`),
and the hybrid score their mean. Both parts lie in 0..1, so the tool's
abstention threshold (0.2 by default) means the same thing on every call.
"""

from __future__ import annotations

import math
from typing import FrozenSet, Sequence

from cortex_memory.local.embedders import NgramEmbedder
from cortex_memory.local.text import cjk_pairs, content_words, query_words, stem, words_of

__all__ = ["QueryScorer", "hybrid_score"]

# 256 buckets keep unrelated short memories further apart than the engine's 64.
_NGRAMS = NgramEmbedder(256)


def _vector(text: str) -> Sequence[float]:
    return _NGRAMS.embed([text])[0]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    size = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / size if size else 0.0


class QueryScorer:
    """Scores many texts against one query (the query is analysed once)."""

    def __init__(self, query: str) -> None:
        self._stems: FrozenSet[str] = frozenset(stem(w) for w in content_words(query_words(query)))
        self._pairs = cjk_pairs(query)
        self._vector = _vector(query)

    def score(self, text: str) -> float:
        """The hybrid score of ``text``: the mean of its keyword and vector scores."""
        if not self._stems:
            return 0.0
        held = {stem(w) for w in words_of(text)}
        found = len(self._stems & held)
        if self._pairs:
            found += len(self._pairs & cjk_pairs(text))
        keyword = found / (len(self._stems) + len(self._pairs))
        return (keyword + _cosine(self._vector, _vector(text))) / 2.0


def hybrid_score(query: str, text: str) -> float:
    """The hybrid score of ``text`` for ``query`` (0..1)."""
    return QueryScorer(query).score(text)

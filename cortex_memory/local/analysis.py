"""Text analysis for the local engine: words, hashed trigram vectors, sentences.

Everything ranking needs is computed once, when an item is written, and kept
in the database: the item's distinct *words* (for keyword scoring and the FTS5
index) and its *trigram vector* (for vector scoring). Queries go through the
same functions, so an item and a query always agree on what a word is.

- **Words**: the text split on every character that is not alphanumeric
  (``str.isalnum``, so Unicode letters and digits count), each lowercased.
  This is the reference engine's tokenizer (contract.md §9.6).
- **Trigram vector**: each word is padded as ``" word "`` and every window of
  three characters is hashed (32-bit FNV-1a over the characters' code points)
  into one of :data:`DIMS` buckets, which are counted. Vectors compare by
  cosine. 256 buckets (the reference uses 64) keep unrelated texts further
  apart, so the vector threshold means something.
- **Sentences**: prose split at ``.``, ``!`` or ``?`` followed by whitespace,
  and at line breaks; used by recall and consolidation.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from itertools import chain
from typing import Dict, FrozenSet, Iterable, List, Tuple

__all__ = [
    "DIMS",
    "MAX_QUERY_WORDS",
    "STOPWORDS",
    "Vector",
    "content_words",
    "cosine",
    "norm",
    "padded_words",
    "query_words",
    "sentences",
    "vector_of",
    "vector_row",
    "word_dims",
    "words_of",
]

#: Buckets of the hashed trigram vectors (one database column each).
DIMS = 256
#: Distinct query words a keyword score looks at; longer queries keep the first ones.
MAX_QUERY_WORDS = 64

# ``[^\W_]`` is exactly "alphanumeric" as ``str.isalnum`` means it: ``\w`` is
# alphanumeric or ``_`` in a str pattern.
_WORD = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SPACES = re.compile(r"\s+")

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193

#: A sparse vector: bucket -> count.
Vector = Dict[int, int]

#: Common English words recall leaves out of its question before ranking
#: (fetch never does: its keyword mode scores every word it is given).
STOPWORDS: FrozenSet[str] = frozenset(
    (
        "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
        "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing",
        "done", "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him",
        "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "nor", "not",
        "of", "on", "or", "our", "ours", "out", "over", "she", "should", "so", "some", "such",
        "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they", "this",
        "those", "to", "too", "under", "until", "up", "us", "very", "was", "we", "were", "what",
        "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
        "your", "yours",
    )
)


def words_of(text: str) -> List[str]:
    """The words of ``text`` in order (repeats kept), lowercased."""
    return [word.lower() for word in _WORD.findall(text)]


def padded_words(words: Iterable[str]) -> str:
    """The distinct ``words`` joined by spaces, with a space at each end.

    This is what the database keeps (column ``words``): ``instr(words, ' w ')``
    then finds a whole word, and the FTS5 index is built over it.
    """
    distinct = dict.fromkeys(words)
    return " " + " ".join(distinct) + " " if distinct else " "


def query_words(text: str) -> Tuple[str, ...]:
    """The distinct words of a query, first occurrence first, at most 64 of them."""
    return tuple(dict.fromkeys(words_of(text)))[:MAX_QUERY_WORDS]


def content_words(words: Iterable[str]) -> Tuple[str, ...]:
    """``words`` without :data:`STOPWORDS` (recall's view of a question)."""
    return tuple(word for word in words if word not in STOPWORDS)


def _fnv1a(chars: str) -> int:
    h = _FNV_OFFSET
    for ch in chars:
        h = ((h ^ ord(ch)) * _FNV_PRIME) & 0xFFFFFFFF
    return h


@lru_cache(maxsize=65536)
def word_dims(word: str) -> Tuple[int, ...]:
    """The bucket of every trigram of ``" word "`` (repeats kept).

    Cached: words repeat across texts far more than they vary, and the
    per-character hash loop is the expensive part of writing an item.
    """
    padded = f" {word} "
    return tuple(_fnv1a(padded[i : i + 3]) % DIMS for i in range(len(padded) - 2))


def vector_of(words: Iterable[str]) -> Vector:
    """The trigram vector (bucket -> count) of a sequence of words."""
    # Counter counts in C; the buckets of each word come from the cache.
    return dict(Counter(chain.from_iterable(map(word_dims, words))))


def norm(vector: Vector) -> float:
    """The Euclidean length of ``vector``."""
    return math.hypot(*vector.values())


def vector_row(words: Iterable[str]) -> Tuple[object, ...]:
    """``(1/length, d0, d1, …)``: the trigram vector of ``words`` as a table row."""
    vector = vector_of(words)
    length = norm(vector)
    row: List[object] = [0] * DIMS
    for dim, count in vector.items():
        row[dim] = count
    return (1.0 / length if length else 0.0, *row)


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity of two vectors; 0.0 when either is empty."""
    if not a or not b:
        return 0.0
    if len(b) < len(a):
        a, b = b, a
    dot = sum(count * b.get(dim, 0) for dim, count in a.items())
    return dot / (norm(a) * norm(b))


def sentences(text: str, *, limit: int = 64) -> List[str]:
    """Up to ``limit`` sentences of ``text``, whitespace collapsed.

    Lines are split first (a line break ends a sentence), then each line at
    ``.``, ``!`` or ``?`` followed by whitespace. Markdown headings (``#``
    lines) are left out unless the text has nothing else.
    """
    lines = [line.strip() for line in text.splitlines()]
    prose = [line for line in lines if line and not line.startswith("#")]
    if not prose:
        prose = [line.lstrip("#").strip() for line in lines if line.lstrip("#").strip()]
    out: List[str] = []
    for line in prose:
        for part in _SENTENCE_END.split(line):
            sentence = _SPACES.sub(" ", part).strip()
            if sentence:
                out.append(sentence)
                if len(out) >= limit:
                    return out
    return out

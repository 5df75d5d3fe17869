"""The ``Embedder`` seam of the local engine, and its built-in character n-gram embedder.

An embedder turns texts into vectors for the engine's ``vector`` and
``hybrid`` fetch modes. Any object with these three members is one:

- ``model_id`` (str): names the model and its settings. Vectors are stored
  with it, so opening a file with another model re-embeds what the file
  holds instead of comparing vectors from two spaces.
- ``dimension`` (int): the length of every vector it returns.
- ``embed(texts)``: one vector (a sequence of floats) per text, in order.

Optionally ``min_similarity`` (float in [0, 1]): the lowest cosine that
counts as a vector hit (default :data:`DEFAULT_MIN_SIMILARITY`); and
``fusion_weight`` (float in [0, 1]): how much the vector list counts in a
hybrid ranking, next to the keyword list's 1 (default 1); and
``stores_vectors`` (bool, default True): False for an embedder so cheap that
computing a vector costs less than storing it, whose vectors are then
computed from the candidates' text at query time (never stored; vector
search then always compares the bounded candidate set).

The engine calls ``embed`` outside its database locks, on the calling
thread, with batches of up to :data:`EMBED_BATCH` texts; it keeps every
vector as little-endian float32 and compares vectors by cosine.

:class:`NgramEmbedder` is the built-in default, and it is honest about what
it is: **character n-gram similarity**, not a semantic model. Each word is
padded (``" word "``) and its three-character windows are hashed into
buckets; two texts are close when they share spellings. It finds
``planning`` for ``plan`` and survives typos, but it does not know that
``car`` and ``automobile`` mean the same thing. For meaning, install
``cortex-memory[semantic]`` and use :func:`cortex_memory.local.semantic.static_embedder`.

How vectors are packed into bytes and compared, and the n-gram embedder's
packed integer counts, are :mod:`cortex_memory.local.packing` (``pack``,
``unpack`` and ``cosine`` are re-exported here).
"""

from __future__ import annotations

import importlib
import math
from array import array
from itertools import filterfalse
from operator import mul
from typing import Dict, List, Protocol, Sequence, Tuple, runtime_checkable

from cortex_memory.errors import ConfigError, EngineError
from cortex_memory.local.packing import cosine, pack, unpack, unpack_counts, word_packed
from cortex_memory.local.text import STOPWORDS, strip_labels, words_of

__all__ = [
    "DEFAULT_MIN_SIMILARITY",
    "EMBED_BATCH",
    "EMBED_CHARS",
    "Embedder",
    "NgramEmbedder",
    "check_embedder",
    "cosine",
    "cosines",
    "embedder_named",
    "embedding_text",
    "fusion_weight_of",
    "min_similarity_of",
    "pack",
    "stores_vectors",
    "unpack",
]

#: Lowest cosine that counts as a vector hit when an embedder does not say.
DEFAULT_MIN_SIMILARITY = 0.3
#: Texts per ``embed`` call.
EMBED_BATCH = 256
#: Characters of an item's text that are embedded (its beginning).
EMBED_CHARS = 8000



@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors of one dimension, under one model id."""

    @property
    def model_id(self) -> str:
        """The model and its settings, e.g. ``"ngram-3x64"``."""

    @property
    def dimension(self) -> int:
        """The length of every vector :meth:`embed` returns."""

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One vector per text, in order."""


_STOPWORD = STOPWORDS.__contains__

#: Words an embedder remembers the packed vector of (then it starts afresh).
_WORD_CACHE = 100_000


class NgramEmbedder:
    """Character trigram similarity (the built-in, dependency-free default).

    Every word of a text (lowercased, diacritics removed; common English stop
    words left out when anything else is left) is padded as ``" word "``; each
    window of three bytes of its UTF-8 form is hashed (CRC-32) into one of
    ``dimension`` buckets with a sign taken from the hash's top bit, and the
    vector sums those signs. The signs make the collisions
    of unrelated trigrams cancel out on average, so unrelated texts sit near
    a cosine of 0 instead of sharing the buckets of ``the`` and ``ing``.
    Similar spellings give similar vectors; meanings do not.
    """

    def __init__(self, dimension: int = 64) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int):
            raise TypeError(
                f"NgramEmbedder dimension must be an int, not {type(dimension).__name__}"
            )
        if not 8 <= dimension <= 4096:
            raise ConfigError("NgramEmbedder dimension must be between 8 and 4096")
        self._dimension = dimension
        self.min_similarity = DEFAULT_MIN_SIMILARITY
        # Spelling similarity ranks meaning poorly (B8: recall@10 0.51 against
        # keyword's 0.73), so in hybrid it mostly orders near ties and brings in
        # typo matches after the keyword hits.
        self.fusion_weight = 0.1
        # A vector costs a few microseconds to compute from words the engine
        # reads anyway, less than writing and reading 256 bytes per item.
        self.stores_vectors = False
        # word -> packed counts, text -> (bucket sums, length); read and written
        # without a lock: a lost update only costs a recomputation, and dict
        # operations are atomic.
        self._words: Dict[str, int] = {}
        self._texts: Dict[str, Tuple[array[int], float]] = {}

    @property
    def model_id(self) -> str:
        """``ngram-signed-3x<dimension>``."""
        return f"ngram-signed-3x{self._dimension}"

    @property
    def dimension(self) -> int:
        """The number of hash buckets."""
        return self._dimension

    def embed(self, texts: Sequence[str]) -> List[array[int]]:
        """The signed bucket sums of every text's character trigrams."""
        dims = self._dimension
        cache = self._words
        if len(cache) > _WORD_CACHE:
            cache.clear()
        out: List[array[int]] = []
        for text in texts:
            words = words_of(text)
            kept = list(filterfalse(_STOPWORD, words)) or words
            try:
                total = sum(map(cache.__getitem__, kept))  # every word seen before: in C
            except KeyError:
                total = 0
                for word in kept:
                    packed = cache.get(word)
                    if packed is None:
                        packed = cache[word] = word_packed(word, dims)
                    total += packed
            out.append(unpack_counts(total, dims))
        return out

    def similarities(self, query: Sequence[float], texts: Sequence[str]) -> List[float]:
        """The cosine of ``query`` with each text's vector (see :func:`cosines`).

        The same values as embedding :func:`embedding_text` of each text and
        comparing, computed over the query's non-zero buckets only, with each
        text's bucket sums and length remembered (a text's vector never
        changes): ranking and recall compare the same candidates and newest
        rows again and again.
        """
        nonzero = [(bucket, value) for bucket, value in enumerate(query) if value]
        size = math.sqrt(sum(value * value for _bucket, value in nonzero))
        out: List[float] = []
        if not size:
            return [0.0] * len(texts)
        for text in texts:
            fields, length = self._vector_of(text)
            dot = sum(value * fields[bucket] for bucket, value in nonzero)
            out.append(dot / (size * length) if dot and length else 0.0)
        return out

    def _vector_of(self, text: str) -> Tuple[array[int], float]:
        cache = self._texts
        found = cache.get(text)
        if found is None:
            fields = self.embed([embedding_text(text)])[0]
            found = (fields, math.sqrt(sum(map(mul, fields, fields))))
            if len(text) <= _CACHED_TEXT:
                if len(cache) >= _TEXT_CACHE:
                    cache.clear()
                cache[text] = found
        return found

    def __repr__(self) -> str:
        return f"NgramEmbedder(dimension={self._dimension})"


#: Texts (of at most :data:`_CACHED_TEXT` characters) whose n-gram vector an
#: embedder remembers, then it starts afresh.
_TEXT_CACHE = 2048
_CACHED_TEXT = 4096


def cosines(embedder: Embedder, query: bytes, texts: Sequence[str]) -> List[float]:
    """The cosine of the packed ``query`` with each text's vector, made now.

    The built-in n-gram embedder compares without packing its vectors (the
    same values, sooner); any other embedder embeds the texts.
    """
    q = unpack(query)
    if isinstance(embedder, NgramEmbedder):
        return embedder.similarities(q, texts)
    return [cosine(q, unpack(blob)) for blob in embed_all(embedder, texts)]


def fusion_weight_of(embedder: Embedder) -> float:
    """The embedder's ``fusion_weight``, or 1.0."""
    value = getattr(embedder, "fusion_weight", 1.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError("an embedder's fusion_weight must be a number between 0 and 1")
    return float(value)


def stores_vectors(embedder: Embedder) -> bool:
    """The embedder's ``stores_vectors`` (default True)."""
    value = getattr(embedder, "stores_vectors", True)
    if not isinstance(value, bool):
        raise ConfigError("an embedder's stores_vectors must be True or False")
    return value


def min_similarity_of(embedder: Embedder) -> float:
    """The embedder's ``min_similarity``, or :data:`DEFAULT_MIN_SIMILARITY`."""
    value = getattr(embedder, "min_similarity", DEFAULT_MIN_SIMILARITY)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError("an embedder's min_similarity must be a number between 0 and 1")
    return float(value)


def check_embedder(embedder: object) -> Embedder:
    """``embedder`` when it has the members an :class:`Embedder` needs; else TypeError."""
    if not isinstance(embedder, Embedder):
        raise TypeError(
            "an embedder needs model_id, dimension and embed(texts); "
            f"{type(embedder).__name__} lacks some"
        )
    model_id, dimension = embedder.model_id, embedder.dimension
    if not isinstance(model_id, str) or not model_id.strip() or len(model_id) > 200:
        raise ConfigError(
            "an embedder's model_id must be a non-blank string of at most 200 characters"
        )
    if isinstance(dimension, bool) or not isinstance(dimension, int) or not 1 <= dimension <= 65536:
        raise ConfigError("an embedder's dimension must be an int between 1 and 65536")
    min_similarity_of(embedder)
    fusion_weight_of(embedder)
    stores_vectors(embedder)
    return embedder



def embedding_text(text: str) -> str:
    """What of a text is embedded: its beginning, without the labels of its lines.

    Who said a line is matched by the keyword index; left in the vector, a
    speaker's name (or ``user:``) would make every line of theirs look alike.
    """
    return strip_labels(text[:EMBED_CHARS])


def embed_all(embedder: Embedder, texts: Sequence[str]) -> List[bytes]:
    """Every text's :func:`embedding_text` embedded (in batches) and packed."""
    out: List[bytes] = []
    dimension = embedder.dimension
    for start in range(0, len(texts), EMBED_BATCH):
        batch = [embedding_text(text) for text in texts[start : start + EMBED_BATCH]]
        try:
            vectors = embedder.embed(batch)
        except Exception as exc:  # an embedder is user code: map what it raises
            raise EngineError(
                f"the embedder `{embedder.model_id}` failed ({type(exc).__name__})"
            ) from exc
        if len(vectors) != len(batch):
            raise EngineError(
                f"the embedder returned {len(vectors)} vectors for {len(batch)} texts"
            )
        out.extend(pack(vector, dimension) for vector in vectors)
    return out


def embedder_named(spec: str) -> Embedder:
    """The embedder a configuration names.

    - ``"ngram"`` (the default): :class:`NgramEmbedder`;
    - ``"semantic"``: the offline semantic model of the ``[semantic]`` extra;
    - ``"module:attribute"``: a factory (or class) called with no arguments,
      or an embedder object, imported from ``module``.
    """
    if not isinstance(spec, str):
        raise TypeError(f"an embedder name must be a str, not {type(spec).__name__}")
    name = spec.strip()
    if name == "ngram":
        return NgramEmbedder()
    if name == "semantic":
        from cortex_memory.local.semantic import static_embedder

        return static_embedder()
    module_name, sep, attribute = name.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(
            f"unknown embedder `{spec}`: use `ngram`, `semantic` or `module:factory`"
        )
    try:
        module = importlib.import_module(module_name)
        target = getattr(module, attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"embedder `{spec}` cannot be imported ({type(exc).__name__})") from exc
    made = target() if callable(target) and not isinstance(target, Embedder) else target
    return check_embedder(made)


def as_embedder(value: object) -> Embedder:
    """An embedder given as an object or as a name (see :func:`embedder_named`)."""
    if isinstance(value, str):
        return embedder_named(value)
    return check_embedder(value)

"""Vectors as numbers and bytes: stored float32 vectors, cosines, and packed n-gram counts.

Two representations, neither knowing anything of embedders:

- A stored vector is little-endian float32 bytes (:func:`pack`,
  :func:`unpack`), compared by :func:`cosine`.
- The n-gram embedder (:class:`~cortex_memory.local.embedders.NgramEmbedder`)
  keeps a word's signed trigram counts as one Python integer, one 32-bit
  field per bucket (:func:`word_packed`), so that summing a text's words
  sums every bucket at once; :func:`unpack_counts` reads the buckets back.

:func:`pack`, :func:`unpack` and :func:`cosine` are re-exported from
:mod:`cortex_memory.local.embedders`, where the rest of the engine imports them.
"""

from __future__ import annotations

import math
import zlib
from array import array
from functools import lru_cache
from operator import mul
from typing import Sequence

from cortex_memory.errors import EngineError

__all__ = ["cosine", "pack", "unpack", "unpack_counts", "word_packed"]

# A word's vector is kept as one integer holding its signed trigram counts,
# one 32-bit field per bucket (see :func:`word_packed`).
_FIELD_BITS = 32


def word_packed(word: str, dims: int) -> int:
    """``Σ count(b) · 2**(32·b)`` over the buckets of the trigrams of ``" word "``.

    Summing these integers over a text's words sums every bucket at once
    (the sum is exact, since Python integers have any length), so embedding
    a text is one big-integer addition per word instead of a Python loop
    over its trigrams; :func:`unpack_counts` reads the buckets back.
    """
    padded = f" {word} ".encode("utf-8", "surrogatepass")
    total = 0
    # Trigrams of the UTF-8 bytes: a stable hash (CRC-32) of each window;
    # its top bit is the sign, the rest picks the bucket.
    for i in range(len(padded) - 2):
        h = zlib.crc32(padded[i : i + 3])
        field = 1 << (_FIELD_BITS * (h % dims))
        total += field if h & 0x80000000 else -field
    return total


@lru_cache(maxsize=64)
def _offset(dims: int) -> int:
    # 2**31 in every field. A text's counts are far inside ±2**31, so adding
    # this makes every field non-negative: the sum is then its plain base
    # 2**32 form, and XOR-ing the offset back out leaves each field as the
    # signed 32-bit two's-complement count.
    return sum((1 << 31) << (_FIELD_BITS * b) for b in range(dims))


def unpack_counts(total: int, dims: int) -> array[int]:
    """The ``dims`` signed bucket counts a sum of :func:`word_packed` values holds."""
    offset = _offset(dims)
    fields = array("i")
    fields.frombytes(((total + offset) ^ offset).to_bytes(dims * _FIELD_BITS // 8, "little"))
    if _BIG_ENDIAN:  # pragma: no cover - see pack()
        fields.byteswap()
    return fields


def pack(vector: Sequence[float], dimension: int) -> bytes:
    """``vector`` as little-endian float32 bytes (searches divide by its length).

    A vector of the wrong length, or holding a value that is not a finite
    number, is the embedder's fault: ``EngineError``. A zero vector (a text
    with no words) is kept as zeros; it is similar to nothing.
    """
    if len(vector) != dimension:
        raise EngineError(
            f"the embedder returned a vector of {len(vector)} values; its dimension is {dimension}"
        )
    try:
        packed = array("f", vector)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EngineError("the embedder returned a value that is not a number") from exc
    if not math.isfinite(sum(packed)):
        raise EngineError("the embedder returned a value that is not a finite number")
    if _BIG_ENDIAN:  # pragma: no cover - every supported CI machine is little-endian
        packed.byteswap()
    return packed.tobytes()


def unpack(blob: bytes) -> array[float]:
    """The float32 values of a stored vector."""
    values = array("f")
    values.frombytes(blob)
    if _BIG_ENDIAN:  # pragma: no cover - see pack()
        values.byteswap()
    return values


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors of one length; 0.0 when either is all zeros."""
    dot = sum(map(mul, a, b))
    if not dot:
        return 0.0
    size = math.sqrt(sum(map(mul, a, a)) * sum(map(mul, b, b)))
    return dot / size if size else 0.0


_BIG_ENDIAN = array("H", [1]).tobytes() == b"\x00\x01"

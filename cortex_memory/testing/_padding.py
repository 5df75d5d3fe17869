"""Filler bodies of an exact size, shared by the doubles and the raw-socket servers.

A filler body is the JSON document ``{"pad":"xxx…"}`` of exactly the size a
test asks for, produced in 64 KiB pieces so an oversize body (hundreds of MiB)
is never held whole; :func:`gzip_pieces` compresses such a stream piece by piece.
"""

from __future__ import annotations

import zlib
from typing import Iterable, Iterator, List

__all__ = ["PIECE", "gzip_pieces", "pad_pieces"]

PIECE = 64 * 1024
_FRAME = len(b'{"pad":""}')


def pad_pieces(size: int) -> Iterator[bytes]:
    """A valid JSON document of exactly `size` bytes, `{"pad":"xxx…"}`, in 64 KiB pieces."""
    if size < _FRAME:
        # Too small for the object: a number padded with whitespace is still valid JSON.
        if size > 0:
            yield b"0" + b" " * (size - 1)
        return
    yield b'{"pad":"'
    remaining = size - _FRAME
    while remaining > 0:
        step = min(PIECE, remaining)
        yield b"x" * step
        remaining -= step
    yield b'"}'


def gzip_pieces(pieces: Iterable[bytes]) -> bytes:
    """The pieces gzip-compressed; only the (small) compressed output is held."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out: List[bytes] = [compressor.compress(piece) for piece in pieces]
    out.append(compressor.flush())
    return b"".join(out)

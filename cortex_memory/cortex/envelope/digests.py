"""Unkeyed SHA-256 digests used by lookup labels and local-path privacy (engine.md §2, §7.3, §7.7).

A *lookup* digest keeps 64 bits: it only narrows a server-side listing, and every hit is
re-checked against the decoded envelope. A *path* digest keeps 160 bits, as many as an
item id, because it is the match itself (a path filter is decided by comparing digests).
The first 16 hex characters of a path digest equal the lookup digest of the same value.
"""

from __future__ import annotations

import hashlib
from typing import List, Tuple

__all__ = ["LOOKUP_HEX", "PATH_HEX", "digest", "path_digest", "prefixes"]

LOOKUP_HEX = 16
"""Hex characters of a lookup digest (64 bits)."""

PATH_HEX = 40
"""Hex characters of a path digest (160 bits)."""


def digest(value: str) -> str:
    """First 16 lowercase hex characters of SHA-256 over the UTF-8 of ``value``."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:LOOKUP_HEX]


def path_digest(value: str) -> str:
    """First 40 lowercase hex characters of SHA-256 over the UTF-8 of ``value``."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:PATH_HEX]


def prefixes(path: str) -> Tuple[str, ...]:
    """Path digests of every text before a ``/`` of ``path`` (in order), then of ``path`` itself.

    These are exactly the values a path filter can name and still match (an exact path,
    or a folder above it cut at a ``/``). Only ``/`` cuts, never ``\\``, as in the
    contract's path-prefix rule. Consecutive duplicates are dropped.
    """
    out: List[str] = []
    at = path.find("/")
    while at != -1:
        _push(out, path_digest(path[:at]))
        at = path.find("/", at + 1)
    _push(out, path_digest(path))
    return tuple(out)


def _push(out: List[str], value: str) -> None:
    if not out or out[-1] != value:
        out.append(value)

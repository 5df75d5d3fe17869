"""Hosted idempotency claims and URL encoding (engine.md §5.11).

``fresh_claim()`` returns a new ``Idempotency-Key`` for the hosted wire:
``tm-<16 hex salt>-<unix nanos>-<seq>``, where the salt is one random 64-bit
value per process (drawn lazily under a lock the first time a claim is made,
never at import) and ``seq`` a process-wide counter from 0. A child made by
``fork`` starts over, with a new lock, no salt and ``seq`` 0, so its claims
never repeat its parent's (and a lock held by another thread at the fork
cannot leave the child stuck). The body key
(``tm3:`` + 56 hex) is derived from the request body and lives with the
envelope code, not here.

``urlencode(value)`` percent-encodes every UTF-8 byte outside ``A-Z a-z 0-9 - .
_ ~`` with uppercase hex, so ``:``, ``/`` and ``,`` are encoded too.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from functools import lru_cache
from typing import Iterable, Optional, Tuple
from urllib.parse import quote

__all__ = ["fresh_claim", "query_string", "urlencode"]

_lock = threading.Lock()
_salt: Optional[str] = None
_seq = 0


def fresh_claim() -> str:
    """Return a new hosted claim ``tm-<salt>-<nanos>-<seq>``, unique within the process."""
    global _salt, _seq
    with _lock:
        if _salt is None:
            _salt = f"{secrets.randbits(64):016x}"
        salt = _salt
        seq = _seq
        _seq += 1
    return f"tm-{salt}-{time.time_ns()}-{seq}"


def _start_over() -> None:
    # Runs in a forked child only: the parent's salt and counter are its own.
    global _lock, _salt, _seq
    _lock = threading.Lock()
    _salt = None
    _seq = 0


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_start_over)


@lru_cache(maxsize=512)
def urlencode(value: str) -> str:
    """Percent-encode ``value`` for a query or path segment (uppercase hex, nothing kept but
    ``A-Z a-z 0-9 - . _ ~``).

    Remembered for the last 512 values: the same scope paths and labels are
    encoded for request after request, and ``quote`` works byte by byte.
    """
    return quote(value, safe="")


def query_string(pairs: Iterable[Tuple[str, str]]) -> str:
    """Join ``(name, value)`` pairs as ``name=value&...``, each side :func:`urlencode`-d.

    A name may repeat (the Direct wire sends one ``labels=`` per label).
    """
    return "&".join(f"{urlencode(name)}={urlencode(value)}" for name, value in pairs)

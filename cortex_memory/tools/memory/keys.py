"""Stable keys for remote memories, carried in the stored learning's tags.

A remote memory is a learning tagged::

    memory  memory-key:<id>  memory-version:<n>  memory-created:<ms>  memory-updated:<ms>

so any machine that reads the learning back knows its key and timestamps.
The ``id`` is derived once, from the first version: the first 13 hex digits
(52 bits, so a safe JSON integer) of the SHA-256 of that version's item id,
plus 1 (never 0). The "first version's item id" is the fingerprint of the
first version as it is before its ``memory-key`` tag is added (the key cannot
be part of what it is derived from). Replacing keeps the id and bumps the
version.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable, Optional, Tuple

__all__ = [
    "CREATED_PREFIX",
    "KEY_PREFIX",
    "KeyTags",
    "MEMORY_TAG",
    "UPDATED_PREFIX",
    "VERSION_PREFIX",
    "derive_key_id",
    "key_tag",
    "memory_tags",
    "read_tags",
]

MEMORY_TAG = "memory"
KEY_PREFIX = "memory-key:"
VERSION_PREFIX = "memory-version:"
CREATED_PREFIX = "memory-created:"
UPDATED_PREFIX = "memory-updated:"

_ID_HEX_DIGITS = 13


def derive_key_id(first_item_id: str) -> int:
    """The key id for a memory whose first version has item id ``first_item_id``."""
    digest = hashlib.sha256(first_item_id.encode("utf-8")).hexdigest()
    return int(digest[:_ID_HEX_DIGITS], 16) + 1


def key_tag(key_id: int) -> str:
    """``memory-key:<id>``."""
    return f"{KEY_PREFIX}{key_id}"


def memory_tags(
    version: int, created_ms: int, updated_ms: int, key_id: Optional[int] = None
) -> Tuple[str, ...]:
    """The tags of one version (without ``memory-key`` when ``key_id`` is None)."""
    tags = [MEMORY_TAG]
    if key_id is not None:
        tags.append(key_tag(key_id))
    tags.extend(
        (
            f"{VERSION_PREFIX}{version}",
            f"{CREATED_PREFIX}{created_ms}",
            f"{UPDATED_PREFIX}{updated_ms}",
        )
    )
    return tuple(tags)


@dataclass(frozen=True)
class KeyTags:
    """What a stored version's tags say: key id, version and timestamps."""

    key_id: int
    version: int
    created_ms: int
    updated_ms: int


def _number(tag: str, prefix: str) -> Optional[int]:
    digits = tag[len(prefix) :]
    # ASCII digits only: int() would also take "١٢" or " 12".
    if not digits or len(digits) > 19 or not all("0" <= ch <= "9" for ch in digits):
        return None
    return int(digits)


def read_tags(tags: Iterable[str]) -> Optional[KeyTags]:
    """The key facts in ``tags``, or None when they do not name a memory version.

    Needs the ``memory`` tag, a key id ≥ 1 and a version ≥ 1; a missing
    ``updated`` falls back to ``created``, a missing ``created`` to 0.
    """
    marked = False
    key_id = version = created = updated = None
    for tag in tags:
        if tag == MEMORY_TAG:
            marked = True
        elif tag.startswith(KEY_PREFIX):
            key_id = _number(tag, KEY_PREFIX)
        elif tag.startswith(VERSION_PREFIX):
            version = _number(tag, VERSION_PREFIX)
        elif tag.startswith(CREATED_PREFIX):
            created = _number(tag, CREATED_PREFIX)
        elif tag.startswith(UPDATED_PREFIX):
            updated = _number(tag, UPDATED_PREFIX)
    if not marked or not key_id or not version:
        return None
    created_ms = created or 0
    return KeyTags(key_id, version, created_ms, updated if updated is not None else created_ms)

"""The item fingerprint, which is the item id (contract.md §5).

``id = sha256(dumps(identity JSON)).hexdigest()[:40]``, where the identity JSON
is ``item.to_json()`` with ``meta.observed_at``, ``meta.observed_actor`` and
``meta.tool_call.id`` left out. Because the id is a hash of the content, the
same item stored twice is a replay, items written by any engine (or by the Rust
implementation) get the same ids, and editing anything gives a new item.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, List

from cortex_memory.contract.jsonfmt import dumps, write

if TYPE_CHECKING:  # pragma: no cover
    from cortex_memory.contract.items import StoreItem

__all__ = [
    "ID_HEX_LEN",
    "fingerprint",
    "fingerprint_json",
    "hash_json",
    "hash_value",
    "is_item_id",
]

#: Length of an item id: 20 bytes of SHA-256 as lowercase hex.
ID_HEX_LEN = 40

_ITEM_ID = re.compile(r"[0-9a-f]{40}")


def hash_json(text: str) -> str:
    """The id of an identity JSON text: the first 40 hex digits of its SHA-256."""
    # surrogatepass: a lone surrogate (possible in a Python str, never in Rust)
    # still hashes deterministically instead of raising.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:ID_HEX_LEN]


# Characters of JSON gathered before they are hashed: one update for a small
# value (as hashing its whole text would), bounded memory for a long one.
_FLUSH = 1 << 16


def hash_value(value: object) -> str:
    """``hash_json(dumps(value))``, without holding the JSON text whole.

    The JSON is written in pieces (:func:`~cortex_memory.contract.jsonfmt.write`)
    and hashed as it comes, so the id of a 16 MiB document costs a few pieces
    of memory, not two copies of the document.
    """
    digest = hashlib.sha256()
    pending: List[str] = []
    held = 0

    def put(part: str) -> None:
        nonlocal held
        pending.append(part)
        held += len(part)
        if held >= _FLUSH:
            digest.update("".join(pending).encode("utf-8", "surrogatepass"))
            pending.clear()
            held = 0

    write(value, put)
    digest.update("".join(pending).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:ID_HEX_LEN]


def fingerprint_json(item: StoreItem) -> str:
    """The exact JSON text the fingerprint hashes (useful to explain an id)."""
    return dumps(item.identity_json())


def fingerprint(item: StoreItem) -> str:
    """The item's id: same as ``item.fingerprint()``."""
    return item.fingerprint()


def is_item_id(value: object) -> bool:
    """True when ``value`` has the shape of an item id (40 lowercase hex digits)."""
    return isinstance(value, str) and _ITEM_ID.fullmatch(value) is not None

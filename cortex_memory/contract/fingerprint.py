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
from typing import TYPE_CHECKING

from cortex_memory.contract.jsonfmt import dumps

if TYPE_CHECKING:  # pragma: no cover
    from cortex_memory.contract.items import StoreItem

__all__ = ["ID_HEX_LEN", "fingerprint", "fingerprint_json", "hash_json", "is_item_id"]

#: Length of an item id: 20 bytes of SHA-256 as lowercase hex.
ID_HEX_LEN = 40

_ITEM_ID = re.compile(r"[0-9a-f]{40}")


def hash_json(text: str) -> str:
    """The id of an identity JSON text: the first 40 hex digits of its SHA-256."""
    # surrogatepass: a lone surrogate (possible in a Python str, never in Rust)
    # still hashes deterministically instead of raising.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:ID_HEX_LEN]


def fingerprint_json(item: StoreItem) -> str:
    """The exact JSON text the fingerprint hashes (useful to explain an id)."""
    return dumps(item.identity_json())


def fingerprint(item: StoreItem) -> str:
    """The item's id: same as ``item.fingerprint()``."""
    return item.fingerprint()


def is_item_id(value: object) -> bool:
    """True when ``value`` has the shape of an item id (40 lowercase hex digits)."""
    return isinstance(value, str) and _ITEM_ID.fullmatch(value) is not None

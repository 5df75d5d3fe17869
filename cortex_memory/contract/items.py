"""Stored items as the library imports them, and the checks a batch of them passes.

The item types are defined in :mod:`cortex_memory.contract.storeitem`
(``StoreItem`` and its variants), :mod:`~cortex_memory.contract.content`
(bodies, turns and kinds) and :mod:`~cortex_memory.contract.receipts` (ids
and receipts), and re-exported here. What is left here is what ``store`` and
``store_many`` demand of a batch before any of it is written:
:func:`validate_many` and :func:`validate_each`.
"""

from __future__ import annotations

from typing import Iterable, Tuple

from cortex_memory.contract.content import (
    DocumentBody,
    ItemKind,
    LearningKind,
    Role,
    TextBody,
    Turn,
    UriBody,
)
from cortex_memory.contract.limits import MAX_STORE_MANY
from cortex_memory.contract.receipts import ItemId, StoreReceipt
from cortex_memory.contract.storeitem import Conversation, Document, Learning, StoreItem
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "Conversation",
    "Document",
    "DocumentBody",
    "ItemId",
    "ItemKind",
    "Learning",
    "LearningKind",
    "Role",
    "StoreItem",
    "StoreReceipt",
    "TextBody",
    "Turn",
    "UriBody",
    "validate_each",
    "validate_many",
]


def validate_many(items: Iterable[StoreItem]) -> Tuple[StoreItem, ...]:
    """Check one batch of at most 100 items and return it as a tuple.

    An empty batch or one of more than 100 items is refused; otherwise the
    first item whose ``validate()`` fails gives its error. (``store_many``
    itself takes any number of items and batches them.)
    """
    batch = tuple(items)
    if not 1 <= len(batch) <= MAX_STORE_MANY:
        raise InvalidRequestError(
            f"store_many takes between 1 and {MAX_STORE_MANY} items"
        )
    return validate_each(batch)


def validate_each(batch: Tuple[StoreItem, ...]) -> Tuple[StoreItem, ...]:
    """Check every item of ``batch`` in order (a non-item is ``TypeError``); return it.

    The first item whose ``validate()`` fails gives its error.
    """
    for item in batch:
        if not isinstance(item, StoreItem):
            raise TypeError(f"store_many takes StoreItem values, not {type(item).__name__}")
        item.validate()
    return batch

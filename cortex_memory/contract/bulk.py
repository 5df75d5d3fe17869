"""``store_many`` over any iterable: batches, progress, and what a failure kept.

Every engine's ``store_many`` runs through :func:`store_in_batches`: it takes
the items lazily (a generator is never materialised whole), cuts them into
batches of the engine's size, validates each batch whole before any of it is
written, hands it to the engine, and calls ``progress(done, total)`` after
each batch (``total`` is ``None`` when the iterable has no ``len``). When an
``Error`` stops the call part-way, ``err.receipts`` holds the receipts of the
items stored before it, in item order; since ids are fingerprints, sending the
same items again replays those and stores only the rest.

Memory: one batch of items at a time, plus the receipts (which the call
returns, about 200 bytes per item).
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Sized, Tuple

from cortex_memory.contract.deadline import Deadline
from cortex_memory.contract.items import StoreItem, StoreReceipt, validate_each
from cortex_memory.contract.limits import MAX_STORE_MANY
from cortex_memory.contract.replacing import ReplaceBatch
from cortex_memory.errors import Error, InvalidRequestError

__all__ = [
    "EMPTY_STORE_MANY",
    "BatchStore",
    "Progress",
    "batches",
    "store_in_batches",
    "stored_one_by_one",
]

#: What ``store_many`` of no items at all says.
EMPTY_STORE_MANY = "store_many takes at least one item"

Progress = Callable[[int, Optional[int]], None]
"""``progress(done, total)``: items handled so far, and the total (``None`` when unsized)."""

#: Stores one validated batch; receipts in item order.
BatchStore = Callable[[Tuple[StoreItem, ...]], List[StoreReceipt]]


def batches(items: Iterable[StoreItem], size: int) -> Iterator[Tuple[StoreItem, ...]]:
    """``items`` in tuples of at most ``size``, taken lazily."""
    it = iter(items)
    while True:
        batch = tuple(itertools.islice(it, size))
        if not batch:
            return
        yield batch


def _total(items: Iterable[StoreItem]) -> Optional[int]:
    if isinstance(items, Sized):
        try:
            return len(items)
        except TypeError:  # a __len__ that refuses: treat the iterable as unsized
            return None
    return None


def store_in_batches(
    items: Iterable[StoreItem],
    store_batch: BatchStore,
    *,
    deadline: Deadline,
    progress: Optional[Progress] = None,
    replace: bool = False,
    batch_size: int = MAX_STORE_MANY,
    where: str = "store_many",
) -> List[StoreReceipt]:
    """Store ``items`` batch by batch through ``store_batch``; receipts in item order.

    Each batch is validated whole (every item, and with ``replace`` its source
    identity) before ``store_batch`` sees it, so a bad item stops the call
    with nothing of its batch written; the batches before it stay stored. No
    items at all is ``InvalidRequestError``. The deadline is checked before
    each batch. An ``Error`` leaving the call carries the receipts so far in
    ``err.receipts`` (after any the batch itself reported); ``progress`` may
    raise to stop the call between batches.
    """
    if isinstance(items, (StoreItem, str, bytes)):
        raise TypeError(f"store_many takes an iterable of StoreItem, not {type(items).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable, not {type(progress).__name__}")
    total = _total(items)
    receipts: List[StoreReceipt] = []
    try:
        for batch in batches(items, batch_size):
            validate_each(batch)
            if replace:
                ReplaceBatch.of(batch)  # refuses an item without a source identity
            deadline.check(where)
            receipts.extend(store_batch(batch))
            if progress is not None:
                progress(len(receipts), total)
        if not receipts:
            raise InvalidRequestError(EMPTY_STORE_MANY)
    except Error as err:
        err.receipts = (*receipts, *err.receipts)
        raise
    return receipts


def stored_one_by_one(
    store: Callable[[StoreItem, bool], StoreReceipt],
    batch: Sequence[StoreItem],
    *,
    replace: bool,
) -> List[StoreReceipt]:
    """Store a batch item by item with ``store(item, replace)``, by the batch rules.

    With ``replace`` only the last item of each source replaces (the earlier
    ones are stored plainly and then replaced by it, so its receipt lists
    them). An ``Error`` part-way carries the receipts of the items before it.
    """
    survives = ReplaceBatch.of(batch).survives if replace else [False] * len(batch)
    receipts: List[StoreReceipt] = []
    try:
        for item, survivor in zip(batch, survives):
            receipts.append(store(item, survivor))
    except Error as err:
        err.receipts = (*receipts, *err.receipts)
        raise
    return receipts

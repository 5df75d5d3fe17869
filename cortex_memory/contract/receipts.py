"""What a store answers: :class:`StoreReceipt` (and :data:`ItemId`, the id it names).

:mod:`.items` re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Tuple

from cortex_memory.contract._wire import BOOL, TEXT, TEXTS, Shape, Wire

__all__ = ["ItemId", "StoreReceipt", "receipt"]

#: An item id: the 40-hex fingerprint, a bare JSON string on the wire.
ItemId = str


@dataclass(frozen=True)
class StoreReceipt(Wire):
    """The answer to a store ↔ ``{id, replayed, replaced?}``.

    ``replayed`` means the item was already held. ``replaced`` holds, sorted,
    the ids of the other versions of the item's source that a store with
    ``replace=True`` removed (omitted from the JSON when empty, so a store
    without ``replace`` answers exactly ``{id, replayed}``).
    """

    _SHAPE: ClassVar[Shape] = Shape.of("store receipt", id=TEXT, replayed=BOOL, replaced=TEXTS)

    id: ItemId
    replayed: bool
    replaced: Tuple[ItemId, ...] = ()

    def __post_init__(self) -> None:
        # Engines answer one receipt per stored item: with the exact types
        # (the common case) the shape's checks can neither fail nor change a field.
        if not (
            type(self.id) is str
            and type(self.replayed) is bool
            and type(self.replaced) is tuple
            and not self.replaced
        ):
            super().__post_init__()


def receipt(item_id: ItemId, replayed: bool) -> StoreReceipt:
    """``StoreReceipt(item_id, replayed)``, built without the dataclass's machinery
    when the id is a ``str`` and ``replayed`` a ``bool``.

    Engines answer every stored item with one; for those exact types the
    checks of :meth:`StoreReceipt.__post_init__` can neither fail nor change a
    field, so the two fields are set directly (``replaced`` keeps the class's
    default, an empty tuple, which equality, hashing, ``repr`` and
    ``dataclasses.replace`` read as an attribute). Any other value goes
    through the constructor and its checks.
    """
    if type(item_id) is not str or type(replayed) is not bool:
        return StoreReceipt(item_id, replayed)
    out: StoreReceipt = object.__new__(StoreReceipt)
    fields = out.__dict__
    fields["id"] = item_id
    fields["replayed"] = replayed
    return out

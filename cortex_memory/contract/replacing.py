"""Replace on re-store: an item's source identity, and which versions a store replaces.

A store with ``replace=True`` stores the item, then forgets the other
*versions of its source*: items held by the same engine (and tenant) of the
same kind, in the same namespace, with the same source identity. The source
identity is ``meta.source.id`` when it is set, else ``meta.file_path``; an
item with neither cannot replace anything and is refused. Matching is exact
(a file path is not a prefix here, as it is in a filter), except that a held
source id in its redacted form (an id holding a phone number, as the CortexDB
wires send it) still matches.

Within one batch, items that are versions of one source collapse to the last
of them: it is the one held afterwards, and its receipt's ``replaced`` lists
every other version that is gone (those held before and the earlier items of
the batch). The earlier items' receipts list nothing; an engine may skip
writing them, since they would be forgotten at once.

The engines share these pure rules; each finds the held versions its own way.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Set

from cortex_memory.contract.content import ItemKind
from cortex_memory.contract.items import ItemId, StoreItem, StoreReceipt
from cortex_memory.contract.meta import MemoryMeta, same_id
from cortex_memory.contract.namespace import Namespace
from cortex_memory.contract.text import is_blank
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "FILE_PATH",
    "SOURCE_ID",
    "ReplaceBatch",
    "SourceIdentity",
    "VersionKey",
    "is_version_of",
    "source_identity",
    "version_key",
]

#: The identity field of an item whose ``meta.source.id`` is set.
SOURCE_ID = "source_id"
#: The identity field of an item with no source id but a ``meta.file_path``.
FILE_PATH = "file_path"


class SourceIdentity(NamedTuple):
    """What names an item's source: ``field`` (``source_id`` or ``file_path``) and its value."""

    field: str
    value: str


class VersionKey(NamedTuple):
    """What makes two items versions of one source: kind, namespace and source identity."""

    kind: ItemKind
    namespace: Namespace
    identity: SourceIdentity


def source_identity(meta: MemoryMeta) -> Optional[SourceIdentity]:
    """``meta.source.id`` when set, else ``meta.file_path``, else ``None``."""
    if meta.source.id is not None:
        return SourceIdentity(SOURCE_ID, meta.source.id)
    if meta.file_path is not None:
        return SourceIdentity(FILE_PATH, meta.file_path)
    return None


def version_key(item: StoreItem) -> VersionKey:
    """The version key of an item stored with ``replace=True``.

    An item without a source identity, or with a blank one, is refused with
    ``InvalidRequestError`` naming what is missing.
    """
    identity = source_identity(item.meta)
    kind = item.item_kind
    if identity is None:
        raise InvalidRequestError(
            f"replace needs a source identity: the {kind.value} has neither "
            "meta.source.id nor meta.file_path"
        )
    if is_blank(identity.value):
        name = "meta.source.id" if identity.field == SOURCE_ID else "meta.file_path"
        raise InvalidRequestError(
            f"replace needs a source identity: the {kind.value}'s {name} is blank"
        )
    return VersionKey(kind, item.meta.namespace, identity)


def is_version_of(key: VersionKey, kind: ItemKind, meta: MemoryMeta) -> bool:
    """True when a held item of ``kind`` with ``meta`` is a version of ``key``'s source."""
    if kind is not key.kind or meta.namespace != key.namespace:
        return False
    held = source_identity(meta)
    wanted = key.identity
    if held is None or held.field != wanted.field:
        return False
    if held.field == SOURCE_ID:
        return same_id(held.value, wanted.value)
    return held.value == wanted.value


class ReplaceBatch:
    """The replace rules for one batch: version keys, survivors and earlier versions.

    Build it with :meth:`of` from a validated batch (an item without a source
    identity is refused there). ``survives[i]`` is True for the last item of
    each source; the others are replaced within the batch.
    """

    __slots__ = ("_earlier", "ids", "keys", "survives")

    def __init__(self, keys: Sequence[VersionKey], ids: Sequence[ItemId]) -> None:
        if len(keys) != len(ids):
            raise ValueError("a replace batch needs one id per version key")
        self.keys: List[VersionKey] = list(keys)
        self.ids: List[ItemId] = list(ids)
        last: Dict[VersionKey, int] = {}
        for index, key in enumerate(self.keys):
            last[key] = index
        self.survives: List[bool] = [last[key] == index for index, key in enumerate(self.keys)]
        # For each survivor, the ids of the earlier items of its source (not its own id).
        self._earlier: Dict[int, Set[ItemId]] = {}
        for index, key in enumerate(self.keys):
            survivor = last[key]
            if index != survivor and self.ids[index] != self.ids[survivor]:
                self._earlier.setdefault(survivor, set()).add(self.ids[index])

    @classmethod
    def of(
        cls, items: Sequence[StoreItem], ids: Optional[Sequence[ItemId]] = None
    ) -> ReplaceBatch:
        """The rules for ``items`` (their fingerprints unless ``ids`` are given).

        An item without a source identity is ``InvalidRequestError``.
        """
        keys = [version_key(item) for item in items]
        return cls(keys, [item.fingerprint() for item in items] if ids is None else ids)

    def prefix(self, count: int) -> ReplaceBatch:
        """The rules for the first ``count`` items alone (what a failure part-way kept)."""
        return ReplaceBatch(self.keys[:count], self.ids[:count])

    def survivors(self) -> Dict[VersionKey, int]:
        """Each source of the batch and the index of its surviving item."""
        return {key: index for index, key in enumerate(self.keys) if self.survives[index]}

    def receipts(
        self, receipts: Sequence[StoreReceipt], gone: Mapping[int, Iterable[ItemId]]
    ) -> List[StoreReceipt]:
        """``receipts`` with ``replaced`` filled in for every survivor.

        ``gone[i]`` are the held versions the engine removed for survivor ``i``;
        the earlier items of the batch are added, the survivor's own id never.
        """
        out: List[StoreReceipt] = []
        for index, receipt in enumerate(receipts):
            if not self.survives[index]:
                out.append(receipt)
                continue
            ids = set(gone.get(index, ())) | self._earlier.get(index, set())
            ids.discard(receipt.id)
            out.append(StoreReceipt(receipt.id, receipt.replayed, tuple(sorted(ids))))
        return out

"""Erase: hard-delete by node(s) and kinds (the request and the report)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterable, Tuple

from cortex_memory.contract._coerce import enum_tuple
from cortex_memory.contract._wire import BOOL, COUNT, TEXTS, Shape, Wire, enums, nested
from cortex_memory.contract.content import ItemKind
from cortex_memory.contract.namespace import Reach
from cortex_memory.errors import InvalidRequestError

__all__ = ["EraseReport", "EraseRequest"]


@dataclass(frozen=True)
class EraseRequest(Wire):
    """Hard delete by node(s) and kinds ↔ ``{reach, kinds?, whole_tree}``.

    ``inherit`` is ignored: an erase never reaches up. Empty ``kinds`` means all
    (and is not written); a missing ``whole_tree`` reads as false.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "erase request",
        reach=nested(Reach),
        kinds=enums(ItemKind),
        whole_tree=BOOL.or_missing(False),
    )

    reach: Reach
    kinds: Tuple[ItemKind, ...] = ()
    whole_tree: bool = False

    @classmethod
    def new(cls, reach: Reach) -> EraseRequest:
        """Erase every kind within ``reach``."""
        return cls(reach)

    def with_kinds(self, kinds: Iterable[ItemKind]) -> EraseRequest:
        """A copy erasing only ``kinds``."""
        return replace(self, kinds=enum_tuple(self, "kinds", ItemKind, kinds))

    def with_whole_tree(self, whole_tree: bool = True) -> EraseRequest:
        """A copy that confirms erasing the whole tree."""
        return replace(self, whole_tree=whole_tree)

    def validate(self) -> None:
        """Refuse erasing everything (root, descendants, all kinds) without ``whole_tree``."""
        reach = self.reach
        if reach.at.is_root() and reach.descendants and not self.kinds and not self.whole_tree:
            raise InvalidRequestError("erasing the whole tree needs whole_tree: true")


@dataclass(frozen=True)
class EraseReport(Wire):
    """What an erase removed ↔ ``{erased_scopes, receipts?}``."""

    _SHAPE: ClassVar[Shape] = Shape.of("erase report", erased_scopes=COUNT, receipts=TEXTS)

    erased_scopes: int
    receipts: Tuple[str, ...] = ()

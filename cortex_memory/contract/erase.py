"""Erase: hard-delete by node(s) and kinds (the request and the report)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, Tuple

from cortex_memory.contract._coerce import (
    enum_tuple,
    req_bool,
    req_int,
    req_type,
    set_attr,
    str_tuple,
)
from cortex_memory.contract._read import (
    get_bool,
    get_enum_tuple,
    get_int,
    get_str_tuple,
    obj,
    require,
)
from cortex_memory.contract.content import ItemKind
from cortex_memory.contract.namespace import Reach
from cortex_memory.errors import InvalidRequestError

__all__ = ["EraseReport", "EraseRequest"]


@dataclass(frozen=True)
class EraseRequest:
    """Hard delete by node(s) and kinds ↔ ``{reach, kinds?, whole_tree}``.

    ``inherit`` is ignored: an erase never reaches up. Empty ``kinds`` means all.
    """

    reach: Reach
    kinds: Tuple[ItemKind, ...] = ()
    whole_tree: bool = False

    def __post_init__(self) -> None:
        req_type(self, "reach", Reach, self.reach)
        if type(self.kinds) is not tuple or self.kinds:
            set_attr(self, "kinds", enum_tuple(self, "kinds", ItemKind, self.kinds))
        req_bool(self, "whole_tree", self.whole_tree)

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

    def to_json(self) -> Dict[str, Any]:
        """``{reach, kinds?, whole_tree}``."""
        out: Dict[str, Any] = {"reach": self.reach.to_json()}
        if self.kinds:
            out["kinds"] = [k.value for k in self.kinds]
        out["whole_tree"] = self.whole_tree
        return out

    @classmethod
    def from_json(cls, value: object) -> EraseRequest:
        """Read ``{reach, kinds?, whole_tree?}``."""
        o = obj(value, "erase request")
        return cls(
            Reach.from_json(require(o, "reach", "erase request")),
            get_enum_tuple(o, "kinds", "erase request", ItemKind),
            get_bool(o, "whole_tree", "erase request", False),
        )


@dataclass(frozen=True)
class EraseReport:
    """What an erase removed ↔ ``{erased_scopes, receipts?}``."""

    erased_scopes: int
    receipts: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        req_int(self, "erased_scopes", self.erased_scopes)
        if type(self.receipts) is not tuple or self.receipts:
            set_attr(self, "receipts", str_tuple(self, "receipts", self.receipts))

    def to_json(self) -> Dict[str, Any]:
        """``{erased_scopes, receipts?}``."""
        out: Dict[str, Any] = {"erased_scopes": self.erased_scopes}
        if self.receipts:
            out["receipts"] = list(self.receipts)
        return out

    @classmethod
    def from_json(cls, value: object) -> EraseReport:
        """Read ``{erased_scopes, receipts?}``."""
        o = obj(value, "erase report")
        return cls(
            get_int(o, "erased_scopes", "erase report"),
            get_str_tuple(o, "receipts", "erase report"),
        )

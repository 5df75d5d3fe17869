"""Forgetting: by ids (anywhere) or by filter (inside its reach), and the report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Dict, Iterable, Tuple

from cortex_memory.contract._coerce import req_type, set_attr, str_tuple
from cortex_memory.contract._enum import quote
from cortex_memory.contract._read import get_str_tuple, only_key
from cortex_memory.contract._wire import COUNT, Shape, Wire
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemId
from cortex_memory.errors import InvalidRequestError

__all__ = ["ForgetFilter", "ForgetIds", "ForgetReport", "ForgetTarget"]


class _TargetFactories(type):
    """Puts the ``ForgetTarget.ids(...)`` / ``ForgetTarget.filter(...)`` factories
    on the class object only.

    The variants hold fields named ``ids`` and ``filter``; classmethods of the
    same names on the shared base would clash with them. Methods of the
    metaclass are visible on the classes and invisible on instances, so
    ``ForgetTarget.ids([...])`` builds a target while ``target.ids`` is the field.
    """

    def ids(cls, ids: Iterable[ItemId]) -> ForgetIds:
        """Forget these ids wherever they live.

        ``ids`` is a list (or any iterable) of ids; a single ``str`` is refused
        with ``TypeError`` (write ``ForgetTarget.ids([receipt.id])``), since
        iterating it would give one-character ids that name nothing.
        """
        return ForgetIds(str_tuple(cls, "ids", ids))

    def filter(cls, flt: MetaFilter) -> ForgetFilter:
        """Forget everything ``flt`` admits, confined by its reach."""
        return ForgetFilter(flt)


class ForgetTarget(metaclass=_TargetFactories):
    """What to forget: :class:`ForgetIds` or :class:`ForgetFilter` (externally tagged).

    Build one with ``ForgetTarget.ids([...])`` or ``ForgetTarget.filter(flt)``.
    """

    __slots__ = ()

    def validate(self) -> None:
        """Raise ``InvalidRequestError`` when an engine must refuse this target."""
        raise NotImplementedError  # pragma: no cover

    def to_json(self) -> Dict[str, Any]:
        """``{"ids": [...]}`` or ``{"filter": {...}}``."""
        raise NotImplementedError  # pragma: no cover

    @staticmethod
    def from_json(value: object) -> ForgetTarget:
        """Read ``{"ids": [...]}`` or ``{"filter": {...}}`` (exactly one key)."""
        o, key = only_key(value, "forget target")
        if key == "ids":
            return ForgetIds(get_str_tuple(o, "ids", "forget target", required=True))
        if key == "filter":
            return ForgetFilter(MetaFilter.from_json(o["filter"]))
        keys = ", ".join(quote(k) for k in o) or "none"
        raise InvalidRequestError(
            f"forget target must be {{\"ids\": ...}} or {{\"filter\": ...}}, got keys {keys}"
        )


@dataclass(frozen=True)
class ForgetIds(ForgetTarget):
    """Forget these ids wherever they live (sandboxes included); unknown ids are skipped."""

    ids: Tuple[ItemId, ...]

    def __post_init__(self) -> None:
        set_attr(self, "ids", str_tuple(self, "ids", self.ids))

    def validate(self) -> None:
        """Refuse an empty list of ids."""
        if not self.ids:
            raise InvalidRequestError("forget needs at least one id")

    def to_json(self) -> Dict[str, Any]:
        """``{"ids": [...]}``."""
        return {"ids": list(self.ids)}


@dataclass(frozen=True)
class ForgetFilter(ForgetTarget):
    """Forget everything the filter admits, confined by its reach.

    A filter holding only a reach is not empty: it means everything in reach.
    """

    filter: MetaFilter

    def __post_init__(self) -> None:
        req_type(self, "filter", MetaFilter, self.filter)

    def validate(self) -> None:
        """Refuse the empty filter, which would mean everything."""
        if self.filter.is_empty():
            raise InvalidRequestError(
                "forget refuses an empty filter, which would mean everything"
            )

    def to_json(self) -> Dict[str, Any]:
        """``{"filter": {...}}``."""
        return {"filter": self.filter.to_json()}


@dataclass(frozen=True)
class ForgetReport(Wire):
    """How many items were actually removed ↔ ``{forgotten}``."""

    _SHAPE: ClassVar[Shape] = Shape.of("forget report", forgotten=COUNT)

    forgotten: int

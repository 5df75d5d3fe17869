"""Consolidation (building beliefs from stored items) and reading beliefs back.

A belief is a ``learning`` hit tagged :data:`BELIEF_TAG`, at the node its
sources live at. It is not a stored item: it cannot be listed, fetched or
forgotten by id. Consolidation is asked for explicitly, never on the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar, Iterable, Optional, Tuple

from cortex_memory.contract._coerce import enum_tuple, str_tuple
from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract._wire import (
    COUNT,
    OPT_COUNT,
    OPT_TEXT,
    TEXTS,
    Shape,
    Wire,
    enum,
    enums,
    nested,
)
from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.text import is_blank
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "BELIEF_TAG",
    "CONSOLIDATED_TAG",
    "BeliefsRequest",
    "ConsolidateReceipt",
    "ConsolidateRequest",
    "ConsolidateStatus",
]

#: Tag every belief hit carries.
BELIEF_TAG = "belief"
#: Tag of the learnings a consolidation distils from items (reference engine).
CONSOLIDATED_TAG = "consolidated"


@dataclass(frozen=True)
class ConsolidateRequest(Wire):
    """Ask for a belief build over ``reach`` ↔ ``{reach, kinds?}`` (empty kinds = all)."""

    _SHAPE: ClassVar[Shape] = Shape.of(
        "consolidate request", reach=nested(Reach), kinds=enums(ItemKind)
    )

    reach: Reach
    kinds: Tuple[ItemKind, ...] = ()

    @classmethod
    def new(cls, reach: Reach) -> ConsolidateRequest:
        """Consolidate every kind within ``reach``."""
        return cls(reach)

    def with_kinds(self, kinds: Iterable[ItemKind]) -> ConsolidateRequest:
        """A copy naming ``kinds`` (a list; a single ``str`` is ``TypeError``)."""
        return replace(self, kinds=enum_tuple(self, "kinds", ItemKind, kinds))

    def admitted_kinds(self) -> Tuple[ItemKind, ...]:
        """The kinds named, or every kind when none are."""
        return self.kinds or tuple(ItemKind)

    def validate(self) -> None:
        """Refuse a kind named twice."""
        seen = set()
        for kind in self.kinds:
            if kind in seen:
                raise InvalidRequestError(f"consolidate names the kind `{kind.value}` twice")
            seen.add(kind)


class ConsolidateStatus(WireEnum):
    """How a consolidate call was answered."""

    STARTED = "started"
    SCHEDULED = "scheduled"
    COMPLETED = "completed"


@dataclass(frozen=True)
class ConsolidateReceipt(Wire):
    """The answer to ``consolidate`` ↔ ``{status, jobs?, scopes, built?}``.

    ``scopes`` counts nodes × kinds covered; ``built`` how many beliefs (or
    learnings) were built when known. A missing ``scopes`` reads as 0.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "consolidate receipt",
        status=enum(ConsolidateStatus),
        jobs=TEXTS,
        scopes=COUNT.or_missing(0),
        built=OPT_COUNT,
    )

    status: ConsolidateStatus
    jobs: Tuple[str, ...] = ()
    scopes: int = 0
    built: Optional[int] = None

    @classmethod
    def scheduled(cls) -> ConsolidateReceipt:
        """``{status: scheduled, jobs: [], scopes: 0}``."""
        return cls(ConsolidateStatus.SCHEDULED)

    @classmethod
    def started(cls, jobs: Iterable[str], scopes: int) -> ConsolidateReceipt:
        """Builds were started as ``jobs``."""
        return cls(ConsolidateStatus.STARTED, str_tuple(cls, "jobs", jobs), scopes)

    @classmethod
    def completed(cls, scopes: int, built: Optional[int] = None) -> ConsolidateReceipt:
        """The build finished before answering."""
        return cls(ConsolidateStatus.COMPLETED, (), scopes, built)


@dataclass(frozen=True)
class BeliefsRequest(Wire):
    """Read beliefs within ``reach`` ↔ ``{reach, query?, limit}``.

    Without a query, beliefs come most confident first, then newest.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "beliefs request",
        order=("reach", "query", "limit"),
        reach=nested(Reach),
        limit=COUNT,
        query=OPT_TEXT,
    )

    reach: Reach
    limit: int
    query: Optional[str] = None

    @classmethod
    def new(cls, reach: Reach, limit: int) -> BeliefsRequest:
        """Up to ``limit`` beliefs within ``reach``, no query."""
        return cls(reach, limit)

    def with_query(self, query: Optional[str]) -> BeliefsRequest:
        """A copy ranking beliefs by ``query``."""
        return replace(self, query=query)

    def validate(self) -> None:
        """Refuse a limit of 0 and a query that is set but blank."""
        if self.limit <= 0:
            raise InvalidRequestError("a beliefs limit must be positive")
        if self.query is not None and is_blank(self.query):
            raise InvalidRequestError("a beliefs query must not be blank")

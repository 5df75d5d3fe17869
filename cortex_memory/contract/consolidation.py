"""Consolidation (building beliefs from stored items) and reading beliefs back.

A belief is a ``learning`` hit tagged :data:`BELIEF_TAG`, at the node its
sources live at. It is not a stored item: it cannot be listed, fetched or
forgotten by id. Consolidation is asked for explicitly, never on the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, Optional, Tuple

from cortex_memory.contract._coerce import (
    enum_member,
    enum_tuple,
    opt_str,
    req_int,
    req_type,
    set_attr,
    str_tuple,
)
from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract._read import (
    get_enum,
    get_enum_tuple,
    get_int,
    get_opt_str,
    get_str_tuple,
    obj,
    opt_int,
    require,
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
class ConsolidateRequest:
    """Ask for a belief build over ``reach`` ↔ ``{reach, kinds?}`` (empty kinds = all)."""

    reach: Reach
    kinds: Tuple[ItemKind, ...] = ()

    def __post_init__(self) -> None:
        req_type(self, "reach", Reach, self.reach)
        if type(self.kinds) is not tuple or self.kinds:
            set_attr(self, "kinds", enum_tuple(self, "kinds", ItemKind, self.kinds))

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

    def to_json(self) -> Dict[str, Any]:
        """``{reach, kinds?}``."""
        out: Dict[str, Any] = {"reach": self.reach.to_json()}
        if self.kinds:
            out["kinds"] = [k.value for k in self.kinds]
        return out

    @classmethod
    def from_json(cls, value: object) -> ConsolidateRequest:
        """Read ``{reach, kinds?}``."""
        o = obj(value, "consolidate request")
        return cls(
            Reach.from_json(require(o, "reach", "consolidate request")),
            get_enum_tuple(o, "kinds", "consolidate request", ItemKind),
        )


class ConsolidateStatus(WireEnum):
    """How a consolidate call was answered."""

    STARTED = "started"
    SCHEDULED = "scheduled"
    COMPLETED = "completed"


@dataclass(frozen=True)
class ConsolidateReceipt:
    """The answer to ``consolidate`` ↔ ``{status, jobs?, scopes, built?}``.

    ``scopes`` counts nodes × kinds covered; ``built`` how many beliefs (or
    learnings) were built when known.
    """

    status: ConsolidateStatus
    jobs: Tuple[str, ...] = ()
    scopes: int = 0
    built: Optional[int] = None

    def __post_init__(self) -> None:
        if type(self.status) is not ConsolidateStatus:
            set_attr(self, "status", enum_member(self, "status", ConsolidateStatus, self.status))
        if type(self.jobs) is not tuple or self.jobs:
            set_attr(self, "jobs", str_tuple(self, "jobs", self.jobs))
        req_int(self, "scopes", self.scopes)
        if self.built is not None:
            req_int(self, "built", self.built)

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

    def to_json(self) -> Dict[str, Any]:
        """``{status, jobs?, scopes, built?}``."""
        out: Dict[str, Any] = {"status": self.status.value}
        if self.jobs:
            out["jobs"] = list(self.jobs)
        out["scopes"] = self.scopes
        if self.built is not None:
            out["built"] = self.built
        return out

    @classmethod
    def from_json(cls, value: object) -> ConsolidateReceipt:
        """Read ``{status, jobs?, scopes?, built?}``."""
        o = obj(value, "consolidate receipt")
        what = "consolidate receipt"
        return cls(
            get_enum(o, "status", what, ConsolidateStatus),
            get_str_tuple(o, "jobs", what),
            get_int(o, "scopes", what, 0),
            opt_int(o, "built", what),
        )


@dataclass(frozen=True)
class BeliefsRequest:
    """Read beliefs within ``reach`` ↔ ``{reach, query?, limit}``.

    Without a query, beliefs come most confident first, then newest.
    """

    reach: Reach
    limit: int
    query: Optional[str] = None

    def __post_init__(self) -> None:
        req_type(self, "reach", Reach, self.reach)
        req_int(self, "limit", self.limit)
        opt_str(self, "query", self.query)

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

    def to_json(self) -> Dict[str, Any]:
        """``{reach, query?, limit}``."""
        out: Dict[str, Any] = {"reach": self.reach.to_json()}
        if self.query is not None:
            out["query"] = self.query
        out["limit"] = self.limit
        return out

    @classmethod
    def from_json(cls, value: object) -> BeliefsRequest:
        """Read ``{reach, query?, limit}``."""
        o = obj(value, "beliefs request")
        return cls(
            Reach.from_json(require(o, "reach", "beliefs request")),
            get_int(o, "limit", "beliefs request"),
            get_opt_str(o, "query", "beliefs request"),
        )

"""What callers ask engines: recall, fetch, list, get, explore, erase, write options.

Every request is a frozen dataclass whose ``validate()`` raises
``InvalidRequestError`` with the contract's message; engines call it first so
all of them refuse the same bad call the same way. Construction never checks
these rules (the conformance suite builds bad requests on purpose).
Constructor argument order puts required fields first; JSON keys follow the
wire order of contract.md §8. ``ExploreRequest`` (explore.py) and
``EraseRequest`` (erase.py) are importable from here too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Optional, Tuple

from cortex_memory.contract._coerce import (
    enum_member,
    opt_str,
    opt_type,
    req_int,
    req_str,
    req_type,
    set_attr,
    str_tuple,
)
from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract._read import (
    get_enum,
    get_int,
    get_opt_str,
    get_str,
    get_str_tuple,
    obj,
    opt_int,
)
from cortex_memory.contract.erase import EraseRequest
from cortex_memory.contract.explore import ExploreRequest
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemId
from cortex_memory.contract.limits import (
    MAX_GET_IDS,
)
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.text import is_blank
from cortex_memory.contract.timehint import TimeHint
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "EraseRequest",
    "ExploreRequest",
    "FetchMode",
    "FetchRequest",
    "GetRequest",
    "ListRequest",
    "RecallRequest",
    "WaitFor",
    "WriteOptions",
]

_EMPTY_FILTER = MetaFilter()


def _filter_of(o: Dict[str, Any]) -> MetaFilter:
    value = o.get("filter")
    return _EMPTY_FILTER if value is None else MetaFilter.from_json(value)


def _hint_of(o: Dict[str, Any]) -> Optional[TimeHint]:
    value = o.get("refers_to")
    return None if value is None else TimeHint.from_json(value)


class FetchMode(WireEnum):
    """How ``fetch`` ranks: by words, by meaning, or both."""

    KEYWORD = "keyword"
    VECTOR = "vector"
    HYBRID = "hybrid"


class WaitFor(WireEnum):
    """How long a store waits: until accepted, or until visible to reads (default)."""

    ACCEPTED = "accepted"
    VISIBLE = "visible"


@dataclass(frozen=True)
class WriteOptions:
    """Options of a write ↔ ``{wait}``."""

    wait: WaitFor = WaitFor.VISIBLE

    def __post_init__(self) -> None:
        if type(self.wait) is not WaitFor:
            set_attr(self, "wait", enum_member(self, "wait", WaitFor, self.wait))

    @classmethod
    def accepted(cls) -> WriteOptions:
        """Return once the write is durably accepted."""
        return cls(WaitFor.ACCEPTED)

    @classmethod
    def visible(cls) -> WriteOptions:
        """Return once the write can be read back (the default)."""
        return cls(WaitFor.VISIBLE)

    def to_json(self) -> Dict[str, Any]:
        """``{wait}``."""
        return {"wait": self.wait.value}

    @classmethod
    def from_json(cls, value: object) -> WriteOptions:
        """Read ``{wait?}`` (default visible)."""
        o = obj(value, "write options")
        wait = o.get("wait")
        return cls(WaitFor.VISIBLE if wait is None else WaitFor.parse(wait, "wait"))


@dataclass(frozen=True)
class RecallRequest:
    """A question to answer from memory.

    ↔ ``{question, filter, limit, instructions?, refers_to?}``.
    """

    question: str
    limit: int
    filter: MetaFilter = _EMPTY_FILTER
    instructions: Optional[str] = None
    refers_to: Optional[TimeHint] = None

    def __post_init__(self) -> None:
        req_str(self, "question", self.question)
        req_int(self, "limit", self.limit)
        req_type(self, "filter", MetaFilter, self.filter)
        opt_str(self, "instructions", self.instructions)
        opt_type(self, "refers_to", TimeHint, self.refers_to)

    @classmethod
    def new(cls, question: str, limit: int) -> RecallRequest:
        """A recall over everything (empty filter), nothing optional set."""
        return cls(question, limit)

    def with_filter(self, flt: MetaFilter) -> RecallRequest:
        """A copy with ``filter``."""
        return replace(self, filter=flt)

    def with_instructions(self, instructions: Optional[str]) -> RecallRequest:
        """A copy steered by ``instructions``."""
        return replace(self, instructions=instructions)

    def with_refers_to(self, hint: Optional[TimeHint]) -> RecallRequest:
        """A copy with a time hint."""
        return replace(self, refers_to=hint)

    def validate(self) -> None:
        """Refuse a blank question, a limit of 0 and an invalid time hint."""
        if is_blank(self.question):
            raise InvalidRequestError("recall question must not be empty")
        if self.limit <= 0:
            raise InvalidRequestError("recall limit must be positive")
        if self.refers_to is not None:
            self.refers_to.validate()

    def to_json(self) -> Dict[str, Any]:
        """``{question, filter, limit, instructions?, refers_to?}``."""
        out: Dict[str, Any] = {
            "question": self.question,
            "filter": self.filter.to_json(),
            "limit": self.limit,
        }
        if self.instructions is not None:
            out["instructions"] = self.instructions
        if self.refers_to is not None:
            out["refers_to"] = self.refers_to.to_json()
        return out

    @classmethod
    def from_json(cls, value: object) -> RecallRequest:
        """Read the wire object (``filter`` defaults to the empty filter)."""
        o = obj(value, "recall request")
        return cls(
            get_str(o, "question", "recall request"),
            get_int(o, "limit", "recall request"),
            _filter_of(o),
            get_opt_str(o, "instructions", "recall request"),
            _hint_of(o),
        )


@dataclass(frozen=True)
class FetchRequest:
    """Ranked raw retrieval ↔ ``{query, mode, filter, limit, cursor?, beliefs, refers_to?,
    max_scopes?}``.

    ``validate()`` does not check the mode: engines call
    ``descriptor().ensure_mode(mode)`` before it.
    """

    query: str
    mode: FetchMode
    limit: int
    filter: MetaFilter = _EMPTY_FILTER
    cursor: Optional[str] = None
    beliefs: int = 0
    refers_to: Optional[TimeHint] = None
    max_scopes: Optional[int] = None

    def __post_init__(self) -> None:
        req_str(self, "query", self.query)
        if type(self.mode) is not FetchMode:
            set_attr(self, "mode", enum_member(self, "mode", FetchMode, self.mode))
        req_int(self, "limit", self.limit)
        req_type(self, "filter", MetaFilter, self.filter)
        opt_str(self, "cursor", self.cursor)
        req_int(self, "beliefs", self.beliefs)
        opt_type(self, "refers_to", TimeHint, self.refers_to)
        if self.max_scopes is not None:
            req_int(self, "max_scopes", self.max_scopes)

    @classmethod
    def new(cls, query: str, mode: FetchMode, limit: int) -> FetchRequest:
        """A fetch over everything (empty filter), nothing optional set."""
        return cls(query, mode, limit)

    def with_filter(self, flt: MetaFilter) -> FetchRequest:
        """A copy with ``filter``."""
        return replace(self, filter=flt)

    def with_cursor(self, cursor: Optional[str]) -> FetchRequest:
        """A copy asking for the page at ``cursor``."""
        return replace(self, cursor=cursor)

    def with_beliefs(self, beliefs: int) -> FetchRequest:
        """A copy asking for up to ``beliefs`` belief hits."""
        return replace(self, beliefs=beliefs)

    def with_refers_to(self, hint: Optional[TimeHint]) -> FetchRequest:
        """A copy with a time hint (it reorders, never filters)."""
        return replace(self, refers_to=hint)

    def with_max_scopes(self, max_scopes: Optional[int]) -> FetchRequest:
        """A copy capping how many engine scopes are read."""
        return replace(self, max_scopes=max_scopes)

    def validate(self) -> None:
        """Refuse a blank query, a limit of 0, ``max_scopes == 0`` and an invalid hint."""
        if is_blank(self.query):
            raise InvalidRequestError("fetch query must not be empty")
        if self.limit <= 0:
            raise InvalidRequestError("fetch limit must be positive")
        if self.beliefs < 0:
            raise InvalidRequestError("fetch beliefs must not be negative")
        if self.max_scopes is not None and self.max_scopes <= 0:
            raise InvalidRequestError("fetch max_scopes must be positive")
        if self.refers_to is not None:
            self.refers_to.validate()

    def to_json(self) -> Dict[str, Any]:
        """The wire object; ``beliefs`` omitted when 0, options when unset."""
        out: Dict[str, Any] = {
            "query": self.query,
            "mode": self.mode.value,
            "filter": self.filter.to_json(),
            "limit": self.limit,
        }
        if self.cursor is not None:
            out["cursor"] = self.cursor
        if self.beliefs:
            out["beliefs"] = self.beliefs
        if self.refers_to is not None:
            out["refers_to"] = self.refers_to.to_json()
        if self.max_scopes is not None:
            out["max_scopes"] = self.max_scopes
        return out

    @classmethod
    def from_json(cls, value: object) -> FetchRequest:
        """Read the wire object."""
        o = obj(value, "fetch request")
        what = "fetch request"
        return cls(
            get_str(o, "query", what),
            get_enum(o, "mode", what, FetchMode),
            get_int(o, "limit", what),
            _filter_of(o),
            get_opt_str(o, "cursor", what),
            get_int(o, "beliefs", what, 0),
            _hint_of(o),
            opt_int(o, "max_scopes", what),
        )


@dataclass(frozen=True)
class ListRequest:
    """Query-free paging ↔ ``{filter, limit, cursor?}``."""

    filter: MetaFilter
    limit: int
    cursor: Optional[str] = None

    def __post_init__(self) -> None:
        req_type(self, "filter", MetaFilter, self.filter)
        req_int(self, "limit", self.limit)
        opt_str(self, "cursor", self.cursor)

    @classmethod
    def new(cls, flt: MetaFilter, limit: int) -> ListRequest:
        """The first page of ``flt``."""
        return cls(flt, limit)

    def with_cursor(self, cursor: Optional[str]) -> ListRequest:
        """A copy asking for the page at ``cursor``."""
        return replace(self, cursor=cursor)

    def validate(self) -> None:
        """Refuse a limit of 0."""
        if self.limit <= 0:
            raise InvalidRequestError("list limit must be positive")

    def to_json(self) -> Dict[str, Any]:
        """``{filter, limit, cursor?}``."""
        out: Dict[str, Any] = {"filter": self.filter.to_json(), "limit": self.limit}
        if self.cursor is not None:
            out["cursor"] = self.cursor
        return out

    @classmethod
    def from_json(cls, value: object) -> ListRequest:
        """Read ``{filter?, limit, cursor?}``."""
        o = obj(value, "list request")
        return cls(
            _filter_of(o),
            get_int(o, "limit", "list request"),
            get_opt_str(o, "cursor", "list request"),
        )


@dataclass(frozen=True)
class GetRequest:
    """Whole items by id ↔ ``{ids, reach?}``; ids outside the reach are left out."""

    ids: Tuple[ItemId, ...]
    reach: Optional[Reach] = None

    def __post_init__(self) -> None:
        set_attr(self, "ids", str_tuple(self, "ids", self.ids))
        opt_type(self, "reach", Reach, self.reach)

    def with_reach(self, reach: Optional[Reach]) -> GetRequest:
        """A copy confined by ``reach``."""
        return replace(self, reach=reach)

    def validate(self) -> None:
        """Refuse 0 or more than 200 ids, and any blank id."""
        if not 1 <= len(self.ids) <= MAX_GET_IDS:
            raise InvalidRequestError(f"get takes between 1 and {MAX_GET_IDS} ids")
        for item_id in self.ids:
            if is_blank(item_id):
                raise InvalidRequestError("an id must not be blank")

    def to_json(self) -> Dict[str, Any]:
        """``{ids, reach?}``."""
        out: Dict[str, Any] = {"ids": list(self.ids)}
        if self.reach is not None:
            out["reach"] = self.reach.to_json()
        return out

    @classmethod
    def from_json(cls, value: object) -> GetRequest:
        """Read ``{ids, reach?}``."""
        o = obj(value, "get request")
        reach = o.get("reach")
        return cls(
            get_str_tuple(o, "ids", "get request", required=True),
            None if reach is None else Reach.from_json(reach),
        )

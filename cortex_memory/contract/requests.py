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
from typing import Any, ClassVar, Dict, Optional, Tuple

from cortex_memory.contract._coerce import enum_member, set_attr
from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract._read import obj
from cortex_memory.contract._wire import (
    COUNT,
    OPT_COUNT,
    OPT_TEXT,
    REQUIRED_TEXTS,
    TEXT,
    Shape,
    Wire,
    enum,
    nested,
    opt_nested,
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


# A missing filter reads as the empty one.
_FILTER = nested(MetaFilter).or_missing(_EMPTY_FILTER)


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
class RecallRequest(Wire):
    """A question to answer from memory.

    ↔ ``{question, filter, limit, instructions?, refers_to?}`` (``from_json``
    reads a missing ``filter`` as the empty filter).
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "recall request",
        order=("question", "filter", "limit", "instructions", "refers_to"),
        question=TEXT,
        limit=COUNT,
        filter=_FILTER,
        instructions=OPT_TEXT,
        refers_to=opt_nested(TimeHint),
    )

    question: str
    limit: int
    filter: MetaFilter = _EMPTY_FILTER
    instructions: Optional[str] = None
    refers_to: Optional[TimeHint] = None

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


@dataclass(frozen=True)
class FetchRequest(Wire):
    """Ranked raw retrieval ↔ ``{query, mode, filter, limit, cursor?, beliefs, refers_to?,
    max_scopes?}``; ``beliefs`` is written only when not 0.

    ``validate()`` does not check the mode: engines call
    ``descriptor().ensure_mode(mode)`` before it.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "fetch request",
        order=("query", "mode", "filter", "limit", "cursor", "beliefs", "refers_to", "max_scopes"),
        query=TEXT,
        mode=enum(FetchMode),
        limit=COUNT,
        filter=_FILTER,
        cursor=OPT_TEXT,
        beliefs=COUNT.or_missing(0).written_when(bool),
        refers_to=opt_nested(TimeHint),
        max_scopes=OPT_COUNT,
    )

    query: str
    mode: FetchMode
    limit: int
    filter: MetaFilter = _EMPTY_FILTER
    cursor: Optional[str] = None
    beliefs: int = 0
    refers_to: Optional[TimeHint] = None
    max_scopes: Optional[int] = None

    def __post_init__(self) -> None:
        # Every fetch builds a request. When each field has its exact type (an
        # optional one may be None), every check of the shape passes and keeps
        # the value as it is, so they are skipped; any other value takes them
        # (tested against them).
        cursor, hint, scopes = self.cursor, self.refers_to, self.max_scopes
        if (
            type(self.query) is str
            and type(self.mode) is FetchMode
            and type(self.limit) is int
            and type(self.filter) is MetaFilter
            and type(self.beliefs) is int
            and (cursor is None or type(cursor) is str)
            and (hint is None or type(hint) is TimeHint)
            and (scopes is None or type(scopes) is int)
        ):
            return
        self._SHAPE.check(self)

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


@dataclass(frozen=True)
class ListRequest(Wire):
    """Query-free paging ↔ ``{filter, limit, cursor?}`` (a missing filter reads as empty)."""

    _SHAPE: ClassVar[Shape] = Shape.of(
        "list request", filter=_FILTER, limit=COUNT, cursor=OPT_TEXT
    )

    filter: MetaFilter
    limit: int
    cursor: Optional[str] = None

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


@dataclass(frozen=True)
class GetRequest(Wire):
    """Whole items by id ↔ ``{ids, reach?}``; ids outside the reach are left out."""

    _SHAPE: ClassVar[Shape] = Shape.of("get request", ids=REQUIRED_TEXTS, reach=opt_nested(Reach))

    ids: Tuple[ItemId, ...]
    reach: Optional[Reach] = None

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

"""``MetaFilter``: which items a read, forget or explore selects (contract.md §7)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from operator import attrgetter
from typing import Any, Callable, ClassVar, Dict, Iterable, Optional, Tuple

from cortex_memory.contract._coerce import (
    enum_tuple,
    opt_str,
    opt_type,
    set_attr,
    str_tuple,
    utc,
)
from cortex_memory.contract._read import (
    get_enum_tuple,
    get_opt_str,
    get_str_tuple,
    obj,
    opt_timestamp,
)
from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.jsonfmt import format_timestamp
from cortex_memory.contract.meta import MemoryMeta, SourceKind, TurnRange, same_id
from cortex_memory.contract.namespace import Reach

__all__ = ["MetaFilter", "path_matches"]

_STRINGS = (
    "workspace", "folder", "file_path", "language", "repo", "commit", "url", "thread_id",
)


def path_matches(held: Optional[str], wanted: str) -> bool:
    """The path-prefix rule for ``folder`` and ``file_path``.

    True when ``held == wanted``; else strip every trailing ``/`` from
    ``wanted`` and match when ``held`` starts with that base followed by
    nothing or ``/``. So ``/a/b`` (or ``/a/b/``) matches ``/a/b`` and
    ``/a/b/c.rs`` but not ``/a/bc``. Only ``/`` separates. ``None`` never matches.
    """
    if held is None:
        return False
    if held == wanted:
        return True
    base = wanted.rstrip("/")
    return held.startswith(base) and (len(held) == len(base) or held[len(base)] == "/")


def _equal(held: Optional[str], wanted: str) -> bool:
    return held == wanted


_Read = Callable[[MemoryMeta], Optional[str]]
_Test = Callable[[Optional[str], str], bool]
_Check = Tuple[_Read, _Test, str]

# The string fields a meta is compared with, in the contract's order: the field, how
# the meta's value is read and how it is compared with a set one.
_MATCHED: Tuple[Tuple[str, _Read, _Test], ...] = (
    ("workspace", attrgetter("workspace"), _equal),
    ("language", attrgetter("language"), _equal),
    ("repo", attrgetter("repo"), _equal),
    ("commit", attrgetter("commit"), _equal),
    ("url", attrgetter("url"), _equal),
    ("folder", attrgetter("folder"), path_matches),
    ("file_path", attrgetter("file_path"), path_matches),
    ("thread_id", attrgetter("thread_id"), same_id),
    ("agent_id", attrgetter("agent_id"), same_id),
    ("source_id", attrgetter("source.id"), same_id),
)  # fmt: skip

@dataclass(frozen=True)
class MetaFilter:
    """Conditions on an item's kind and metadata; every set field must hold.

    All fields are optional (``MetaFilter()`` is the empty filter). An unset
    ``reach`` still leaves out service sandboxes; a filter holding only a reach
    is not empty. Field order is the wire order.
    """

    reach: Optional[Reach] = None
    workspace: Optional[str] = None
    folder: Optional[str] = None
    file_path: Optional[str] = None
    language: Optional[str] = None
    repo: Optional[str] = None
    commit: Optional[str] = None
    url: Optional[str] = None
    thread_id: Optional[str] = None
    turns: Optional[TurnRange] = None
    agent_id: Optional[str] = None
    tool_call: Optional[str] = None
    source_id: Optional[str] = None
    kinds: Tuple[ItemKind, ...] = ()
    sources: Tuple[SourceKind, ...] = ()
    tags_any: Tuple[str, ...] = ()
    observed_after: Optional[datetime] = None
    observed_before: Optional[datetime] = None

    # The set string fields' checks, made in __post_init__ (a ClassVar: not a field).
    _checks: ClassVar[Tuple[_Check, ...]] = ()

    def __post_init__(self) -> None:
        opt_type(self, "reach", Reach, self.reach)
        for name in _STRINGS:
            opt_str(self, name, getattr(self, name))
        opt_type(self, "turns", TurnRange, self.turns)
        opt_str(self, "agent_id", self.agent_id)
        opt_str(self, "tool_call", self.tool_call)
        opt_str(self, "source_id", self.source_id)
        if type(self.kinds) is not tuple or self.kinds:
            set_attr(self, "kinds", enum_tuple(self, "kinds", ItemKind, self.kinds))
        if type(self.sources) is not tuple or self.sources:
            set_attr(self, "sources", enum_tuple(self, "sources", SourceKind, self.sources))
        if type(self.tags_any) is not tuple or self.tags_any:
            set_attr(self, "tags_any", str_tuple(self, "tags_any", self.tags_any))
        if self.observed_after is not None:
            set_attr(self, "observed_after", utc(self, "observed_after", self.observed_after))
        if self.observed_before is not None:
            set_attr(self, "observed_before", utc(self, "observed_before", self.observed_before))
        # Only the set string fields are checked per item (not a field: eq and repr skip it).
        checks: Tuple[_Check, ...] = tuple(
            (read, test, getattr(self, name))
            for name, read, test in _MATCHED
            if getattr(self, name) is not None
        )
        set_attr(self, "_checks", checks)

    @classmethod
    def for_kinds(cls, kinds: Iterable[ItemKind]) -> MetaFilter:
        """A filter selecting only ``kinds`` (a list; a single ``str`` is ``TypeError``)."""
        return cls(kinds=enum_tuple(cls, "kinds", ItemKind, kinds))

    def admits_kind(self, kind: ItemKind) -> bool:
        """True when ``kinds`` is empty or holds ``kind``."""
        return not self.kinds or kind in self.kinds

    def is_empty(self) -> bool:
        """True exactly when this equals ``MetaFilter()`` (a reach alone is not empty)."""
        return self == _EMPTY

    def with_reach(self, reach: Optional[Reach]) -> MetaFilter:
        """A copy confined by ``reach``."""
        return replace(self, reach=reach)

    def matches(self, kind: ItemKind, meta: MemoryMeta) -> bool:
        """True when an item of ``kind`` with ``meta`` passes every set field.

        Called once per item on listing paths, so only the fields that are set
        are looked at (the string fields' checks are made once, at construction).
        """
        kinds = self.kinds
        if kinds and kind not in kinds:
            return False
        reach = self.reach
        if reach is None:
            if meta.namespace._last_service >= 0:
                return False  # no reach still leaves out service sandboxes
        elif not reach.admits(meta.namespace):
            return False
        for read, test, value in self._checks:
            if not test(read(meta), value):
                return False
        if self.turns is not None and meta.turns != self.turns:
            return False
        wanted = self.tool_call
        if wanted is not None and (meta.tool_call is None or meta.tool_call.name != wanted):
            return False
        if self.sources and meta.source.kind not in self.sources:
            return False
        tags = self.tags_any
        if tags and not any(tag in tags for tag in meta.tags):
            return False
        after, before = self.observed_after, self.observed_before
        if after is None and before is None:
            return True
        at = meta.observed_at
        if at is None:
            return False
        return (after is None or after <= at) and (before is None or at < before)

    def to_json(self) -> Dict[str, Any]:
        """The wire object; unset fields and empty lists omitted (``{}`` = empty)."""
        out: Dict[str, Any] = {}
        if self.reach is not None:
            out["reach"] = self.reach.to_json()
        for name in _STRINGS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.turns is not None:
            out["turns"] = self.turns.to_json()
        for name in ("agent_id", "tool_call", "source_id"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.kinds:
            out["kinds"] = [k.value for k in self.kinds]
        if self.sources:
            out["sources"] = [k.value for k in self.sources]
        if self.tags_any:
            out["tags_any"] = list(self.tags_any)
        if self.observed_after is not None:
            out["observed_after"] = format_timestamp(self.observed_after)
        if self.observed_before is not None:
            out["observed_before"] = format_timestamp(self.observed_before)
        return out

    @classmethod
    def from_json(cls, value: object) -> MetaFilter:
        """Read the wire object; missing keys are unset."""
        o = obj(value, "filter")
        if not o:
            return _EMPTY
        reach = o.get("reach")
        turns = o.get("turns")
        strings = {name: get_opt_str(o, name, "filter") for name in _STRINGS}
        return cls(
            reach=None if reach is None else Reach.from_json(reach),
            turns=None if turns is None else TurnRange.from_json(turns),
            agent_id=get_opt_str(o, "agent_id", "filter"),
            tool_call=get_opt_str(o, "tool_call", "filter"),
            source_id=get_opt_str(o, "source_id", "filter"),
            kinds=get_enum_tuple(o, "kinds", "filter", ItemKind),
            sources=get_enum_tuple(o, "sources", "filter", SourceKind),
            tags_any=get_str_tuple(o, "tags_any", "filter"),
            observed_after=opt_timestamp(o, "observed_after", "filter"),
            observed_before=opt_timestamp(o, "observed_before", "filter"),
            **strings,
        )


_EMPTY = MetaFilter()

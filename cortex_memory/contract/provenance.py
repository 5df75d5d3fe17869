"""Where an item came from: its source, turns, tool call and observed actor.

The parts of :class:`~cortex_memory.contract.meta.MemoryMeta` that are values of
their own, each with its JSON form (contract.md §4.2); :mod:`.meta` re-exports
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Dict, Optional

from cortex_memory.contract._coerce import enum_member, opt_str, req_int, req_str, set_attr
from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract._read import get_int, get_opt_str, get_str, obj
from cortex_memory.contract._wire import OPT_TEXT, TEXT, Shape, Wire
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "SOURCES_BY_KIND",
    "ObservedActor",
    "Source",
    "SourceKind",
    "ToolCallRef",
    "TurnRange",
]

_U32_MAX = 0xFFFFFFFF


class SourceKind(WireEnum):
    """What produced an item. The retired ``link``, ``github``, ``rss`` and
    ``composio`` read as ``IMPORT`` (and so re-serialize and hash as ``import``)."""

    FOLDER = "folder"
    FILE = "file"
    CONVERSATION = "conversation"
    AGENT = "agent"
    IMPORT = "import"

    @classmethod
    def _missing_(cls, value: object) -> Optional[SourceKind]:
        if value in _RETIRED_SOURCE_KINDS:
            return cls.IMPORT
        return None


_RETIRED_SOURCE_KINDS = frozenset({"link", "github", "rss", "composio"})
_SOURCE_OF_KIND: Dict[SourceKind, Source]


@dataclass(frozen=True)
class Source:
    """Where an item came from: a kind and an optional id ↔ ``{kind, id?}``."""

    kind: SourceKind = SourceKind.AGENT
    id: Optional[str] = None

    def __post_init__(self) -> None:
        if type(self.kind) is not SourceKind:
            set_attr(self, "kind", enum_member(self, "kind", SourceKind, self.kind))
        opt_str(self, "id", self.id)

    def to_json(self) -> Dict[str, Any]:
        """``{kind, id?}``."""
        out: Dict[str, Any] = {"kind": self.kind.value}
        if self.id is not None:
            out["id"] = self.id
        return out

    @classmethod
    def from_json(cls, value: object) -> Source:
        """Read ``{kind?, id?}`` (kind defaults to ``agent``)."""
        o = obj(value, "meta.source")
        kind = o.get("kind")
        parsed = SourceKind.AGENT if kind is None else SourceKind.parse(kind, "source kind")
        source_id = get_opt_str(o, "id", "meta.source")
        if source_id is None:
            return SOURCES_BY_KIND[parsed]  # the common case: no id, a shared value
        return cls(parsed, source_id)


@dataclass(frozen=True)
class TurnRange:
    """A zero-based inclusive range of conversation turns (u32 values) ↔ ``{first, last}``."""

    first: int
    last: int

    def __post_init__(self) -> None:
        for name in ("first", "last"):
            value = getattr(self, name)
            req_int(self, name, value)
            if not 0 <= value <= _U32_MAX:
                raise InvalidRequestError(
                    f"turn range {name} must be between 0 and {_U32_MAX}"
                )

    def to_json(self) -> Dict[str, Any]:
        """``{first, last}``."""
        return {"first": self.first, "last": self.last}

    @classmethod
    def from_json(cls, value: object) -> TurnRange:
        """Read ``{first, last}``."""
        o = obj(value, "turns")
        return cls(get_int(o, "first", "turns"), get_int(o, "last", "turns"))


@dataclass(frozen=True)
class ToolCallRef:
    """A tool call by name and optional call id ↔ ``{name, id?}``."""

    name: str
    id: Optional[str] = None

    def __post_init__(self) -> None:
        req_str(self, "name", self.name)
        opt_str(self, "id", self.id)

    def to_json(self) -> Dict[str, Any]:
        """``{name, id?}``."""
        out: Dict[str, Any] = {"name": self.name}
        if self.id is not None:
            out["id"] = self.id
        return out

    @classmethod
    def from_json(cls, value: object) -> ToolCallRef:
        """Read ``{name, id?}``."""
        o = obj(value, "tool call")
        return cls(get_str(o, "name", "tool call"), get_opt_str(o, "id", "tool call"))


@dataclass(frozen=True)
class ObservedActor(Wire):
    """Who said it when not the owner ↔ ``{id, name?}``; ``id`` is ``type:id``."""

    _SHAPE: ClassVar[Shape] = Shape.of("meta.observed_actor", id=TEXT, name=OPT_TEXT)

    id: str
    name: Optional[str] = None


#: One shared ``Source`` without an id per kind (what most items carry).
SOURCES_BY_KIND: Dict[SourceKind, Source] = {kind: Source(kind) for kind in SourceKind}

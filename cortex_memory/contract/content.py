"""The pieces items are made of: kinds, roles, document bodies and conversation turns."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, Optional, Tuple

from cortex_memory.contract._coerce import enum_member, req_str, set_attr, tuple_of, utc
from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract._read import get_enum, get_list, get_str, obj, only_key, opt_timestamp
from cortex_memory.contract.jsonfmt import format_timestamp
from cortex_memory.contract.meta import ToolCallRef
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "DocumentBody",
    "ItemKind",
    "LearningKind",
    "Role",
    "TextBody",
    "Turn",
    "UriBody",
]


class ItemKind(WireEnum):
    """The kind of an item; iteration order is the "all" order."""

    DOCUMENT = "document"
    CONVERSATION = "conversation"
    LEARNING = "learning"

    @classmethod
    def all(cls) -> Tuple[ItemKind, ...]:
        """Every kind, in order: document, conversation, learning."""
        return _ALL_KINDS


_ALL_KINDS = tuple(ItemKind)


class Role(WireEnum):
    """Who spoke a conversation turn."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class LearningKind(WireEnum):
    """What a learning records."""

    PREFERENCE = "preference"
    FACT = "fact"
    PROCEDURE = "procedure"
    CORRECTION = "correction"
    OTHER = "other"


# ------------------------------------------------------------------ bodies


class DocumentBody:
    """A document's body: :class:`TextBody` or :class:`UriBody` (externally tagged)."""

    __slots__ = ()

    def to_json(self) -> Dict[str, Any]:
        """``{"text": ...}`` or ``{"uri": ...}``."""
        raise NotImplementedError  # pragma: no cover

    def render(self) -> str:
        """The text, or the uri of an unresolved body."""
        raise NotImplementedError  # pragma: no cover

    @staticmethod
    def from_json(value: object) -> DocumentBody:
        """Read ``{"text": ...}`` or ``{"uri": ...}`` (exactly one key)."""
        o, key = only_key(value, "document body")
        if key == "text":
            return TextBody(get_str(o, "text", "document body"))
        if key == "uri":
            return UriBody(get_str(o, "uri", "document body"))
        raise InvalidRequestError("document body must be {\"text\": ...} or {\"uri\": ...}")


@dataclass(frozen=True)
class TextBody(DocumentBody):
    """A document body held as text."""

    text: str

    def __post_init__(self) -> None:
        req_str(self, "text", self.text)

    def to_json(self) -> Dict[str, Any]:
        """``{"text": ...}``."""
        return {"text": self.text}

    def render(self) -> str:
        """The text."""
        return self.text


@dataclass(frozen=True)
class UriBody(DocumentBody):
    """A document described by a uri before it is read; engines refuse it."""

    uri: str

    def __post_init__(self) -> None:
        req_str(self, "uri", self.uri)

    def to_json(self) -> Dict[str, Any]:
        """``{"uri": ...}``."""
        return {"uri": self.uri}

    def render(self) -> str:
        """The uri."""
        return self.uri


# ------------------------------------------------------------------- turns


@dataclass(frozen=True)
class Turn:
    """One conversation turn ↔ ``{role, text, at?, tool_calls?}``."""

    role: Role
    text: str
    at: Optional[datetime] = None
    tool_calls: Tuple[ToolCallRef, ...] = ()

    def __post_init__(self) -> None:
        if type(self.role) is not Role:
            set_attr(self, "role", enum_member(self, "role", Role, self.role))
        req_str(self, "text", self.text)
        if self.at is not None:
            set_attr(self, "at", utc(self, "at", self.at))
        if type(self.tool_calls) is not tuple or self.tool_calls:
            set_attr(self, "tool_calls", tuple_of(self, "tool_calls", ToolCallRef, self.tool_calls))

    @classmethod
    def new(cls, role: Role, text: str) -> Turn:
        """A turn with no time and no tool calls."""
        return cls(role, text)

    def render(self) -> str:
        """``"{role}: {text}"``, plus ``" [tools: a (id1), b]"`` when it has tool calls."""
        line = f"{self.role.value}: {self.text}"
        if not self.tool_calls:
            return line
        tools = ", ".join(
            call.name if call.id is None else f"{call.name} ({call.id})"
            for call in self.tool_calls
        )
        return f"{line} [tools: {tools}]"

    def to_json(self) -> Dict[str, Any]:
        """``{role, text, at?, tool_calls?}``."""
        out: Dict[str, Any] = {"role": self.role.value, "text": self.text}
        if self.at is not None:
            out["at"] = format_timestamp(self.at)
        if self.tool_calls:
            out["tool_calls"] = [call.to_json() for call in self.tool_calls]
        return out

    @classmethod
    def from_json(cls, value: object) -> Turn:
        """Read ``{role, text, at?, tool_calls?}``."""
        o = obj(value, "turn")
        return cls(
            get_enum(o, "role", "turn", Role),
            get_str(o, "text", "turn"),
            opt_timestamp(o, "at", "turn"),
            tuple(ToolCallRef.from_json(c) for c in get_list(o, "tool_calls", "turn")),
        )

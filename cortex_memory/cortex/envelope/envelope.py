"""The event envelope: what one CortexDB event says about an item (engine.md §7.2).

An envelope carries the item id, its kind, the text of this event, the wire meta
(§7.3), the path digests, and the kind's own members (a document's title and mime, a
learning's kind, confidence and evidence, a conversation turn, a document piece).
Member order is serialization order: the v3 parts are slices of this JSON, so the
bytes matter (§7.12) and only the contract's ``jsonfmt.dumps`` writes it.
Reading that JSON back is :mod:`.reader` (``parse_envelope``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple

from cortex_memory.contract.items import ItemKind, LearningKind, Role
from cortex_memory.contract.jsonfmt import F32, format_timestamp
from cortex_memory.contract.meta import MemoryMeta, ToolCallRef

__all__ = [
    "U32_MAX",
    "ChunkInfo",
    "Envelope",
    "TurnInfo",
]

U32_MAX = 0xFFFF_FFFF
"""Indexes and counts are u32 on the wire."""


@dataclass(frozen=True)
class TurnInfo:
    """Where a conversation event sits: turn ``index`` of ``count``.

    Wire object: ``{index, count, role, at?, tool_calls?}``.
    """

    index: int
    count: int
    role: Role
    at: Optional[datetime] = None
    tool_calls: Tuple[ToolCallRef, ...] = ()

    def to_json(self) -> Dict[str, Any]:
        """The wire object, members in order."""
        out: Dict[str, Any] = {"index": self.index, "count": self.count, "role": self.role.value}
        if self.at is not None:
            out["at"] = format_timestamp(self.at)
        if self.tool_calls:
            out["tool_calls"] = [call.to_json() for call in self.tool_calls]
        return out


@dataclass(frozen=True)
class ChunkInfo:
    """Where a document piece sits: piece ``index`` of ``count``.

    Wire object: ``{index, count, pages?, section?}``. ``pages`` is ``(first, last)``,
    1-based and inclusive, only for a paged document.
    """

    index: int
    count: int
    pages: Optional[Tuple[int, int]] = None
    section: Optional[str] = None

    def location(self) -> Tuple[str, ...]:
        """``page:N`` or ``page:A-B`` (when paged), then ``section:<title>`` (when set).

        Written as readable labels, and added to the tags of a piece's hit on read.
        """
        out: List[str] = []
        if self.pages is not None:
            first, last = self.pages
            out.append(f"page:{first}" if first == last else f"page:{first}-{last}")
        if self.section is not None:
            out.append("section:" + self.section)
        return tuple(out)

    def to_json(self) -> Dict[str, Any]:
        """The wire object, members in order."""
        out: Dict[str, Any] = {"index": self.index, "count": self.count}
        if self.pages is not None:
            out["pages"] = [self.pages[0], self.pages[1]]
        if self.section is not None:
            out["section"] = self.section
        return out


@dataclass(frozen=True)
class Envelope:
    """One event's view of an item.

    ``id`` is the item's fingerprint, never recomputed on read; ``meta`` is the wire
    meta (no folder, file name only, no absolute workspace, redacted ids); ``ws``,
    ``fp`` and ``fd`` are the path digests that keep path filters matching. ``v`` is the
    version the envelope was read as (3 when built).
    """

    id: str
    kind: ItemKind
    text: str
    meta: MemoryMeta
    ws: Optional[str] = None
    fp: Tuple[str, ...] = ()
    fd: Tuple[str, ...] = ()
    title: Optional[str] = None
    mime: Optional[str] = None
    learning_kind: Optional[LearningKind] = None
    confidence: Optional[float] = None
    evidence: Optional[str] = None
    turn: Optional[TurnInfo] = None
    chunk: Optional[ChunkInfo] = None
    v: int = 3

    def part(self) -> Optional[int]:
        """The turn index, else the chunk index, else None (a single-event item)."""
        if self.turn is not None:
            return self.turn.index
        if self.chunk is not None:
            return self.chunk.index
        return None

    def to_json(self, version: int, *, text: Optional[str] = None) -> Dict[str, Any]:
        """The wire object for ``version`` (members in order), optionally with another text."""
        out: Dict[str, Any] = {
            "v": version,
            "id": self.id,
            "kind": self.kind.value,
            "text": self.text if text is None else text,
            "meta": self.meta.to_json(),
        }
        if self.ws is not None:
            out["ws"] = self.ws
        if self.fp:
            out["fp"] = list(self.fp)
        if self.fd:
            out["fd"] = list(self.fd)
        if self.title is not None:
            out["title"] = self.title
        if self.mime is not None:
            out["mime"] = self.mime
        if self.learning_kind is not None:
            out["learning_kind"] = self.learning_kind.value
        if self.confidence is not None:
            out["confidence"] = F32(self.confidence)
        if self.evidence is not None:
            out["evidence"] = self.evidence
        if self.turn is not None:
            out["turn"] = self.turn.to_json()
        if self.chunk is not None:
            out["chunk"] = self.chunk.to_json()
        return out

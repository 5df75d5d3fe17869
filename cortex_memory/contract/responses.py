"""What engines answer: hits, pages, reports (contract.md §8).

``Bucket``/``ExplorePage`` (explore.py) and ``EraseReport`` (erase.py) are
importable from here too. Scores and confidences are float32 (rounded on construction, written by
:func:`~cortex_memory.contract.jsonfmt.format_f32`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Optional, Tuple

from cortex_memory.contract._coerce import (
    enum_member,
    f32_field,
    opt_f32_field,
    opt_str,
    req_str,
    req_type,
    set_attr,
    str_tuple,
    tuple_of,
)
from cortex_memory.contract._read import (
    get_enum,
    get_f32,
    get_list,
    get_opt_str,
    get_str,
    get_str_tuple,
    obj,
    opt_f32,
    require,
)
from cortex_memory.contract.erase import EraseReport
from cortex_memory.contract.explore import Bucket, ExplorePage
from cortex_memory.contract.items import ItemId, ItemKind, StoreItem
from cortex_memory.contract.jsonfmt import F32
from cortex_memory.contract.meta import MemoryMeta

__all__ = [
    "Bucket",
    "Citation",
    "EraseReport",
    "ExplorePage",
    "ExportPage",
    "Exported",
    "FetchPage",
    "Hit",
    "ListPage",
    "RecallAnswer",
]


def _meta(o: Dict[str, Any], what: str) -> MemoryMeta:
    value = o.get("meta")
    return MemoryMeta() if value is None else MemoryMeta.from_json(value)


@dataclass(frozen=True)
class Hit:
    """One item in a result ↔ ``{id, kind, text, meta, score, confidence?}``.

    ``text`` is the item's ``render_text()``; ``score`` is 0.0 in listings;
    ``confidence`` is set for learnings only.
    """

    id: ItemId
    kind: ItemKind
    text: str
    meta: MemoryMeta
    score: float = 0.0
    confidence: Optional[float] = None

    def __post_init__(self) -> None:
        # Every read builds hits: when id, text and meta have their exact types
        # (the common case) their named checks cannot fail and are skipped.
        if type(self.id) is str and type(self.text) is str and type(self.meta) is MemoryMeta:
            if type(self.kind) is not ItemKind:
                set_attr(self, "kind", enum_member(self, "kind", ItemKind, self.kind))
        else:
            req_str(self, "id", self.id)
            if type(self.kind) is not ItemKind:
                set_attr(self, "kind", enum_member(self, "kind", ItemKind, self.kind))
            req_str(self, "text", self.text)
            req_type(self, "meta", MemoryMeta, self.meta)
        set_attr(self, "score", f32_field(self, "score", self.score))
        if self.confidence is not None:
            set_attr(self, "confidence", opt_f32_field(self, "confidence", self.confidence))

    @classmethod
    def of(cls, item: StoreItem, score: float = 0.0) -> Hit:
        """The hit for a stored item: its id, kind, rendered text, meta and confidence."""
        return cls(
            item.fingerprint(), item.item_kind, item.render_text(), item.meta, score,
            item.item_confidence,
        )

    def to_json(self) -> Dict[str, Any]:
        """``{id, kind, text, meta, score, confidence?}``."""
        out: Dict[str, Any] = {
            "id": self.id,
            "kind": self.kind.value,
            "text": self.text,
            "meta": self.meta.to_json(),
            "score": F32(self.score),
        }
        if self.confidence is not None:
            out["confidence"] = F32(self.confidence)
        return out

    @classmethod
    def from_json(cls, value: object) -> Hit:
        """Read ``{id, kind, text, meta?, score?, confidence?}``."""
        o = obj(value, "hit")
        return cls(
            get_str(o, "id", "hit"),
            get_enum(o, "kind", "hit", ItemKind),
            get_str(o, "text", "hit"),
            _meta(o, "hit"),
            get_f32(o, "score", "hit", 0.0),
            opt_f32(o, "confidence", "hit"),
        )


def _hits(owner: object, name: str, value: Iterable[Hit]) -> Tuple[Hit, ...]:
    return tuple_of(owner, name, Hit, value)


@dataclass(frozen=True)
class Citation:
    """An item a recall answer rests on ↔ ``{id, kind, snippet, meta, score?}``."""

    id: ItemId
    kind: ItemKind
    snippet: str
    meta: MemoryMeta
    score: Optional[float] = None

    def __post_init__(self) -> None:
        req_str(self, "id", self.id)
        if type(self.kind) is not ItemKind:
            set_attr(self, "kind", enum_member(self, "kind", ItemKind, self.kind))
        req_str(self, "snippet", self.snippet)
        req_type(self, "meta", MemoryMeta, self.meta)
        if self.score is not None:
            set_attr(self, "score", opt_f32_field(self, "score", self.score))

    def to_json(self) -> Dict[str, Any]:
        """``{id, kind, snippet, meta, score?}``."""
        out: Dict[str, Any] = {
            "id": self.id,
            "kind": self.kind.value,
            "snippet": self.snippet,
            "meta": self.meta.to_json(),
        }
        if self.score is not None:
            out["score"] = F32(self.score)
        return out

    @classmethod
    def from_json(cls, value: object) -> Citation:
        """Read ``{id, kind, snippet, meta?, score?}``."""
        o = obj(value, "citation")
        return cls(
            get_str(o, "id", "citation"),
            get_enum(o, "kind", "citation", ItemKind),
            get_str(o, "snippet", "citation"),
            _meta(o, "citation"),
            opt_f32(o, "score", "citation"),
        )


@dataclass(frozen=True)
class RecallAnswer:
    """A synthesized answer and its citations ↔ ``{answer, citations, model?}``."""

    answer: str
    citations: Tuple[Citation, ...] = ()
    model: Optional[str] = None

    def __post_init__(self) -> None:
        req_str(self, "answer", self.answer)
        if type(self.citations) is not tuple or self.citations:
            set_attr(self, "citations", tuple_of(self, "citations", Citation, self.citations))
        opt_str(self, "model", self.model)

    def to_json(self) -> Dict[str, Any]:
        """``{answer, citations, model?}`` (citations always written)."""
        out: Dict[str, Any] = {
            "answer": self.answer,
            "citations": [c.to_json() for c in self.citations],
        }
        if self.model is not None:
            out["model"] = self.model
        return out

    @classmethod
    def from_json(cls, value: object) -> RecallAnswer:
        """Read ``{answer, citations?, model?}``."""
        o = obj(value, "recall answer")
        return cls(
            get_str(o, "answer", "recall answer"),
            tuple(Citation.from_json(c) for c in get_list(o, "citations", "recall answer")),
            get_opt_str(o, "model", "recall answer"),
        )


@dataclass(frozen=True)
class FetchPage:
    """Ranked hits ↔ ``{hits, next_cursor?, beliefs?}``; beliefs are not paged."""

    hits: Tuple[Hit, ...]
    next_cursor: Optional[str] = None
    beliefs: Tuple[Hit, ...] = ()

    def __post_init__(self) -> None:
        set_attr(self, "hits", _hits(self, "hits", self.hits))
        opt_str(self, "next_cursor", self.next_cursor)
        if type(self.beliefs) is not tuple or self.beliefs:
            set_attr(self, "beliefs", _hits(self, "beliefs", self.beliefs))

    def to_json(self) -> Dict[str, Any]:
        """``{hits, next_cursor?, beliefs?}`` (beliefs omitted when empty)."""
        out: Dict[str, Any] = {"hits": [h.to_json() for h in self.hits]}
        if self.next_cursor is not None:
            out["next_cursor"] = self.next_cursor
        if self.beliefs:
            out["beliefs"] = [h.to_json() for h in self.beliefs]
        return out

    @classmethod
    def from_json(cls, value: object) -> FetchPage:
        """Read ``{hits, next_cursor?, beliefs?}``."""
        o = obj(value, "fetch page")
        return cls(
            tuple(Hit.from_json(h) for h in get_list(o, "hits", "fetch page", required=True)),
            get_opt_str(o, "next_cursor", "fetch page"),
            tuple(Hit.from_json(h) for h in get_list(o, "beliefs", "fetch page")),
        )


@dataclass(frozen=True)
class ListPage:
    """A page of a listing ↔ ``{items, next_cursor?}``; only a missing cursor ends it."""

    items: Tuple[Hit, ...]
    next_cursor: Optional[str] = None

    def __post_init__(self) -> None:
        set_attr(self, "items", _hits(self, "items", self.items))
        opt_str(self, "next_cursor", self.next_cursor)

    def to_json(self) -> Dict[str, Any]:
        """``{items, next_cursor?}``."""
        out: Dict[str, Any] = {"items": [h.to_json() for h in self.items]}
        if self.next_cursor is not None:
            out["next_cursor"] = self.next_cursor
        return out

    @classmethod
    def from_json(cls, value: object) -> ListPage:
        """Read ``{items, next_cursor?}``."""
        o = obj(value, "list page")
        return cls(
            tuple(Hit.from_json(h) for h in get_list(o, "items", "list page", required=True)),
            get_opt_str(o, "next_cursor", "list page"),
        )


@dataclass(frozen=True)
class Exported:
    """One exported item, whole ↔ ``{id, item}``."""

    id: ItemId
    item: StoreItem

    def __post_init__(self) -> None:
        req_str(self, "id", self.id)
        req_type(self, "item", StoreItem, self.item)

    def to_json(self) -> Dict[str, Any]:
        """``{id, item}``."""
        return {"id": self.id, "item": self.item.to_json()}

    @classmethod
    def from_json(cls, value: object) -> Exported:
        """Read ``{id, item}``."""
        o = obj(value, "exported item")
        return cls(
            get_str(o, "id", "exported item"),
            StoreItem.from_json(require(o, "item", "exported item")),
        )


@dataclass(frozen=True)
class ExportPage:
    """A page of an export ↔ ``{items, incomplete?, next_cursor?}``.

    ``incomplete`` names items that could not be rebuilt whole.
    """

    items: Tuple[Exported, ...]
    incomplete: Tuple[ItemId, ...] = ()
    next_cursor: Optional[str] = None

    def __post_init__(self) -> None:
        set_attr(self, "items", tuple_of(self, "items", Exported, self.items))
        if type(self.incomplete) is not tuple or self.incomplete:
            set_attr(self, "incomplete", str_tuple(self, "incomplete", self.incomplete))
        opt_str(self, "next_cursor", self.next_cursor)

    def to_json(self) -> Dict[str, Any]:
        """``{items, incomplete?, next_cursor?}``."""
        out: Dict[str, Any] = {"items": [e.to_json() for e in self.items]}
        if self.incomplete:
            out["incomplete"] = list(self.incomplete)
        if self.next_cursor is not None:
            out["next_cursor"] = self.next_cursor
        return out

    @classmethod
    def from_json(cls, value: object) -> ExportPage:
        """Read ``{items, incomplete?, next_cursor?}``."""
        o = obj(value, "export page")
        return cls(
            tuple(
                Exported.from_json(e) for e in get_list(o, "items", "export page", required=True)
            ),
            get_str_tuple(o, "incomplete", "export page"),
            get_opt_str(o, "next_cursor", "export page"),
        )

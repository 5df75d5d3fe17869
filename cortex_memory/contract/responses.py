"""What engines answer: hits, pages, reports (contract.md §8).

``Bucket``/``ExplorePage`` (explore.py) and ``EraseReport`` (erase.py) are
importable from here too. Scores and confidences are float32 (rounded on construction, written by
:func:`~cortex_memory.contract.jsonfmt.format_f32`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional, Tuple

from cortex_memory.contract._coerce import (
    enum_member,
    f32_field,
    opt_f32_field,
    req_str,
    req_type,
    set_attr,
)
from cortex_memory.contract._wire import (
    F32_NUMBER,
    OPT_F32_NUMBER,
    OPT_TEXT,
    TEXT,
    TEXTS,
    Shape,
    Wire,
    enum,
    nested,
    nested_list,
)
from cortex_memory.contract.erase import EraseReport
from cortex_memory.contract.explore import Bucket, ExplorePage
from cortex_memory.contract.items import ItemId, ItemKind, StoreItem
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


# A missing meta reads as the default metadata.
_META = nested(MemoryMeta).or_missing(MemoryMeta())


@dataclass(frozen=True)
class Hit(Wire):
    """One item in a result ↔ ``{id, kind, text, meta, score, confidence?}``.

    ``text`` is the item's ``render_text()``; ``score`` is 0.0 in listings;
    ``confidence`` is set for learnings only.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "hit",
        id=TEXT,
        kind=enum(ItemKind),
        text=TEXT,
        meta=_META,
        score=F32_NUMBER.or_missing(0.0),
        confidence=OPT_F32_NUMBER,
    )

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


@dataclass(frozen=True)
class Citation(Wire):
    """An item a recall answer rests on ↔ ``{id, kind, snippet, meta, score?}``."""

    _SHAPE: ClassVar[Shape] = Shape.of(
        "citation", id=TEXT, kind=enum(ItemKind), snippet=TEXT, meta=_META, score=OPT_F32_NUMBER
    )

    id: ItemId
    kind: ItemKind
    snippet: str
    meta: MemoryMeta
    score: Optional[float] = None


@dataclass(frozen=True)
class RecallAnswer(Wire):
    """A synthesized answer and its citations ↔ ``{answer, citations, model?}``
    (``citations`` always written)."""

    _SHAPE: ClassVar[Shape] = Shape.of(
        "recall answer",
        answer=TEXT,
        citations=nested_list(Citation).always_written(),
        model=OPT_TEXT,
    )

    answer: str
    citations: Tuple[Citation, ...] = ()
    model: Optional[str] = None


@dataclass(frozen=True)
class FetchPage(Wire):
    """Ranked hits ↔ ``{hits, next_cursor?, beliefs?}``; beliefs are not paged (and
    not written when there are none)."""

    _SHAPE: ClassVar[Shape] = Shape.of(
        "fetch page",
        hits=nested_list(Hit, required=True),
        next_cursor=OPT_TEXT,
        beliefs=nested_list(Hit),
    )

    hits: Tuple[Hit, ...]
    next_cursor: Optional[str] = None
    beliefs: Tuple[Hit, ...] = ()


@dataclass(frozen=True)
class ListPage(Wire):
    """A page of a listing ↔ ``{items, next_cursor?}``; only a missing cursor ends it."""

    _SHAPE: ClassVar[Shape] = Shape.of(
        "list page", items=nested_list(Hit, required=True), next_cursor=OPT_TEXT
    )

    items: Tuple[Hit, ...]
    next_cursor: Optional[str] = None


@dataclass(frozen=True)
class Exported(Wire):
    """One exported item, whole ↔ ``{id, item}``."""

    _SHAPE: ClassVar[Shape] = Shape.of("exported item", id=TEXT, item=nested(StoreItem))

    id: ItemId
    item: StoreItem


@dataclass(frozen=True)
class ExportPage(Wire):
    """A page of an export ↔ ``{items, incomplete?, next_cursor?}``.

    ``incomplete`` names items that could not be rebuilt whole.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "export page",
        items=nested_list(Exported, required=True),
        incomplete=TEXTS,
        next_cursor=OPT_TEXT,
    )

    items: Tuple[Exported, ...]
    incomplete: Tuple[ItemId, ...] = ()
    next_cursor: Optional[str] = None

"""The three kinds of stored item: documents, conversations and learnings.

``StoreItem`` is the base of three frozen dataclasses, tagged on the wire by
``"type"``. An item's id is its :meth:`~StoreItem.fingerprint`, a hash of its
content (contract.md §4.1, §5). They are re-exported from
:mod:`cortex_memory.contract.items`, next to the checks of a batch of them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Dict, Iterable, Optional, Tuple, cast

from cortex_memory.contract._coerce import (
    enum_member,
    f32_field,
    opt_str,
    req_str,
    req_type,
    set_attr,
    tuple_of,
)
from cortex_memory.contract._enum import quote
from cortex_memory.contract._read import (
    get_enum,
    get_f32,
    get_list,
    get_opt_str,
    get_str,
    obj,
)
from cortex_memory.contract.content import (
    DocumentBody,
    ItemKind,
    LearningKind,
    TextBody,
    Turn,
    UriBody,
)
from cortex_memory.contract.fingerprint import hash_json, hash_value
from cortex_memory.contract.jsonfmt import F32, LONG_STR, c_dumps, dumps
from cortex_memory.contract.limits import MAX_ITEM_BYTES, check_size
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.text import is_blank
from cortex_memory.errors import InvalidRequestError

__all__ = ["Conversation", "Document", "Learning", "StoreItem"]

_DEFAULT_META = MemoryMeta()


class StoreItem:
    """An item to store: a :class:`Document`, :class:`Conversation` or :class:`Learning`.

    Every variant has ``meta``, ``item_kind``, ``item_confidence``,
    :meth:`fingerprint` (the id), :meth:`validate`, :meth:`render_text` and
    ``to_json``; :meth:`from_json` dispatches on ``"type"``.
    """

    meta: MemoryMeta
    _KIND: ClassVar[ItemKind]

    @property
    def item_kind(self) -> ItemKind:
        """The kind of item."""
        return self._KIND

    @property
    def item_confidence(self) -> Optional[float]:
        """The learning's confidence; ``None`` for other kinds."""
        return None

    # -- constructors -------------------------------------------------------

    @classmethod
    def document(cls, text: str, meta: MemoryMeta = _DEFAULT_META) -> Document:
        """A text document with no title or mime."""
        return Document(TextBody(text), meta=meta)

    @classmethod
    def conversation(cls, turns: Iterable[Turn], meta: MemoryMeta = _DEFAULT_META) -> Conversation:
        """A conversation of ``turns``."""
        return Conversation(tuple_of(cls, "turns", Turn, turns), meta)

    @classmethod
    def learning(
        cls,
        text: str,
        kind: LearningKind,
        confidence: float,
        meta: MemoryMeta = _DEFAULT_META,
    ) -> Learning:
        """A learning with no evidence."""
        return Learning(text, kind, confidence, meta=meta)

    # -- behaviour ----------------------------------------------------------

    def fingerprint(self) -> str:
        """The item id: 40 hex of SHA-256 over the identity JSON (contract.md §5)."""
        cached: Optional[str] = self.__dict__.get("_fingerprint")
        if cached is None:
            if any(text is not None and len(text) > LONG_STR for text in self._texts()):
                # Hashed as it is written: no whole copy of a long text is held.
                cached = hash_value(self.identity_json())
            elif self._float_free():
                # Written in C: without floats, the same bytes as dumps().
                cached = hash_json(c_dumps(self.identity_json()))
            else:
                cached = hash_json(dumps(self.identity_json()))
            # A frozen instance may still cache in its own __dict__; the value
            # depends only on fields, and a racing thread computes the same one.
            self.__dict__["_fingerprint"] = cached
        return cached

    def _float_free(self) -> bool:
        """True when :meth:`identity_json` surely holds no float (``c_dumps`` may write it)."""
        return False

    def validate(self) -> None:
        """Raise ``InvalidRequestError`` when an engine must refuse this item."""
        raise NotImplementedError  # pragma: no cover

    def _texts(self) -> Iterable[Optional[str]]:
        """The texts the size limit counts."""
        raise NotImplementedError  # pragma: no cover

    def render_text(self) -> str:
        """The text a :class:`Hit` carries for this item."""
        raise NotImplementedError  # pragma: no cover

    def to_json(self) -> Dict[str, Any]:
        """The wire object, ``type`` first and ``meta`` last."""
        return self._json(self.meta.to_json())

    def identity_json(self) -> Dict[str, Any]:
        """``to_json()`` as the fingerprint hashes it (observed_at, observed_actor
        and tool_call.id left out)."""
        return self._json(self.meta.identity_json())

    def _json(self, meta: Dict[str, Any]) -> Dict[str, Any]:
        raise NotImplementedError  # pragma: no cover

    def with_meta(self, meta: MemoryMeta) -> StoreItem:
        """A copy of this item with ``meta``."""
        changed: StoreItem = replace(cast(Any, self), meta=meta)
        return changed

    @classmethod
    def from_json(cls, value: object) -> StoreItem:
        """Read any variant, dispatching on ``"type"``."""
        o = obj(value, "item")
        kind = o.get("type")
        if kind == "document":
            return Document.from_json(o)
        if kind == "conversation":
            return Conversation.from_json(o)
        if kind == "learning":
            return Learning.from_json(o)
        if kind is None:
            raise InvalidRequestError("item needs `type`")
        raise InvalidRequestError(f"unknown item type {quote(kind)}")


def _typed(value: object, kind: str) -> Dict[str, Any]:
    o = obj(value, kind)
    tag = o.get("type")
    if tag is not None and tag != kind:
        raise InvalidRequestError(f"{kind} has type {quote(tag)}")
    return o


def _meta_of(o: Dict[str, Any]) -> MemoryMeta:
    value = o.get("meta")
    return _DEFAULT_META if value is None else MemoryMeta.from_json(value)


@dataclass(frozen=True)
class Document(StoreItem):
    """A document ↔ ``{type: "document", title?, body, mime?, meta}``."""

    _KIND: ClassVar[ItemKind] = ItemKind.DOCUMENT

    body: DocumentBody
    title: Optional[str] = None
    mime: Optional[str] = None
    meta: MemoryMeta = _DEFAULT_META

    def __post_init__(self) -> None:
        req_type(self, "body", DocumentBody, self.body)
        opt_str(self, "title", self.title)
        opt_str(self, "mime", self.mime)
        req_type(self, "meta", MemoryMeta, self.meta)

    def validate(self) -> None:
        """Refuse a blank text body, an unresolved uri body and text over 16 MiB."""
        body = self.body
        if isinstance(body, UriBody):
            raise InvalidRequestError("unresolved uri; resolve it through a source first")
        if isinstance(body, TextBody):
            if is_blank(body.text):
                raise InvalidRequestError("document body must not be empty")
            check_size(self._texts())

    def _texts(self) -> Iterable[Optional[str]]:
        return (self.title, self.body.text if isinstance(self.body, TextBody) else None)

    def _float_free(self) -> bool:
        # Exact types only: a subclass could write anything.
        return (
            type(self) is Document
            and type(self.body) in (TextBody, UriBody)
            and type(self.meta) is MemoryMeta
        )

    def render_text(self) -> str:
        """``"# {title}\\n\\n{body}"`` when the title is not blank, else the body."""
        body = self.body.render()
        if self.title is not None and not is_blank(self.title):
            return f"# {self.title}\n\n{body}"
        return body

    def _json(self, meta: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {"type": "document"}
        if self.title is not None:
            out["title"] = self.title
        out["body"] = self.body.to_json()
        if self.mime is not None:
            out["mime"] = self.mime
        out["meta"] = meta
        return out

    @classmethod
    def from_json(cls, value: object) -> Document:
        """Read ``{type?, title?, body, mime?, meta?}``."""
        o = _typed(value, "document")
        body = o.get("body")
        if body is None:
            raise InvalidRequestError("document needs `body`")
        return cls(
            DocumentBody.from_json(body),
            get_opt_str(o, "title", "document"),
            get_opt_str(o, "mime", "document"),
            _meta_of(o),
        )


@dataclass(frozen=True)
class Conversation(StoreItem):
    """A conversation ↔ ``{type: "conversation", turns, meta}``."""

    _KIND: ClassVar[ItemKind] = ItemKind.CONVERSATION

    turns: Tuple[Turn, ...]
    meta: MemoryMeta = _DEFAULT_META

    def __post_init__(self) -> None:
        if type(self.turns) is not tuple or self.turns:
            set_attr(self, "turns", tuple_of(self, "turns", Turn, self.turns))
        req_type(self, "meta", MemoryMeta, self.meta)

    def validate(self) -> None:
        """Refuse zero turns, any blank turn and text over 16 MiB in all."""
        if not self.turns:
            raise InvalidRequestError("a conversation needs at least one turn")
        chars = 0
        for turn in self.turns:
            text = turn.text
            if is_blank(text):
                raise InvalidRequestError("conversation turn text must not be empty")
            chars += len(text)
        if chars > MAX_ITEM_BYTES // 4:  # else surely within it: at most 4 bytes a character
            check_size(self._texts())

    def _texts(self) -> Iterable[Optional[str]]:
        return (turn.text for turn in self.turns)

    def _float_free(self) -> bool:
        return (
            type(self) is Conversation
            and type(self.meta) is MemoryMeta
            and all(type(turn) is Turn for turn in self.turns)
        )

    def render_text(self) -> str:
        """One line per turn (``"user: hi\\nassistant: yo"``)."""
        return "\n".join(turn.render() for turn in self.turns)

    def _json(self, meta: Dict[str, Any]) -> Dict[str, Any]:
        return {
            "type": "conversation",
            "turns": [turn.to_json() for turn in self.turns],
            "meta": meta,
        }

    @classmethod
    def from_json(cls, value: object) -> Conversation:
        """Read ``{type?, turns, meta?}``."""
        o = _typed(value, "conversation")
        turns = get_list(o, "turns", "conversation", required=True)
        return cls(tuple(Turn.from_json(t) for t in turns), _meta_of(o))


@dataclass(frozen=True)
class Learning(StoreItem):
    """A learning ↔ ``{type: "learning", text, kind, confidence, evidence?, meta}``.

    ``confidence`` is a float32: it is rounded on construction, so validation,
    equality and JSON all see the rounded value.
    """

    _KIND: ClassVar[ItemKind] = ItemKind.LEARNING

    text: str
    kind: LearningKind
    confidence: float
    evidence: Optional[str] = None
    meta: MemoryMeta = _DEFAULT_META

    def __post_init__(self) -> None:
        # Every read of a learning builds one: when text, evidence and meta have
        # their exact types (the common case) their named checks cannot fail.
        fine = (
            type(self.text) is str
            and (self.evidence is None or type(self.evidence) is str)
            and type(self.meta) is MemoryMeta
        )
        if not fine:
            req_str(self, "text", self.text)
        if type(self.kind) is not LearningKind:
            set_attr(self, "kind", enum_member(self, "kind", LearningKind, self.kind))
        set_attr(self, "confidence", f32_field(self, "confidence", self.confidence))
        if not fine:
            opt_str(self, "evidence", self.evidence)
            req_type(self, "meta", MemoryMeta, self.meta)

    @property
    def item_confidence(self) -> Optional[float]:
        """The confidence (float32)."""
        return self.confidence

    def validate(self) -> None:
        """Refuse blank text, a confidence outside 0..=1 (NaN included) and text
        (with the evidence) over 16 MiB."""
        if is_blank(self.text):
            raise InvalidRequestError("learning text must not be empty")
        if not 0.0 <= self.confidence <= 1.0:
            raise InvalidRequestError("learning confidence must be between 0 and 1")
        check_size(self._texts())

    def _texts(self) -> Iterable[Optional[str]]:
        return (self.text, self.evidence)

    def render_text(self) -> str:
        """The text."""
        return self.text

    def _json(self, meta: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "type": "learning",
            "text": self.text,
            "kind": self.kind.value,
            "confidence": F32(self.confidence),
        }
        if self.evidence is not None:
            out["evidence"] = self.evidence
        out["meta"] = meta
        return out

    @classmethod
    def from_json(cls, value: object) -> Learning:
        """Read ``{type?, text, kind, confidence, evidence?, meta?}``."""
        o = _typed(value, "learning")
        return cls(
            get_str(o, "text", "learning"),
            get_enum(o, "kind", "learning", LearningKind),
            get_f32(o, "confidence", "learning"),
            get_opt_str(o, "evidence", "learning"),
            _meta_of(o),
        )

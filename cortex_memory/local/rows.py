"""Reading stored items back: rows of ``items`` into hits, items and metadata.

``items.item_json`` holds an item's contract JSON without its text (kept once,
in ``items.text``; see :func:`cortex_memory.local.store.stored_json`), so
rebuilding an item puts the text back first. A row that does not read back
as an item is an ``EngineError`` naming its id, never a crash.
"""

from __future__ import annotations

import json
from typing import Callable, List, Mapping, Optional, Sequence, Tuple, cast

from cortex_memory.contract import Hit, ItemKind, MemoryMeta, MetaFilter, StoreItem, is_blank
from cortex_memory.contract.jsonfmt import to_f32
from cortex_memory.contract.meta import common_meta
from cortex_memory.errors import EngineError, InvalidRequestError
from cortex_memory.local.corpus import ITEMS

__all__ = [
    "HIT_COLUMNS",
    "HIT_FROM",
    "PREVIEW_CHARS",
    "hit_of",
    "item_of",
    "kind_of",
    "meta_of",
    "page_hits",
    "scored_hit",
]

#: Columns a hit is built from, in the order :func:`hit_of` reads them
#: (of ``items c``; see :data:`HIT_FROM`).
HIT_COLUMNS = ITEMS.columns
#: The table :data:`HIT_COLUMNS` read.
HIT_FROM = "items c"
#: Characters of text ``list_preview`` keeps.
PREVIEW_CHARS = 512

_KINDS = {kind.value: kind for kind in ItemKind}


def _title_prefix(title: object) -> str:
    # Document.render_text's own rule: "# {title}\n\n" before a non-blank title.
    return f"# {title}\n\n" if isinstance(title, str) and not is_blank(title) else ""


def _restore(value: object, text: str) -> object:
    """Put the text ``store.stored_json`` left out back into a decoded item."""
    if not isinstance(value, dict):
        return value
    kind = value.get("type")
    if kind == "document" and value.get("body") == {"text": None}:
        prefix = _title_prefix(value.get("title"))
        value["body"] = {"text": text[len(prefix) :] if text.startswith(prefix) else text}
    elif kind == "learning" and "text" in value and value["text"] is None:
        value["text"] = text
    return value


#: The C scanner ``json.loads`` ends in, called directly: a stored item's JSON is
#: written by the engine (no whitespace around it), and every read decodes it.
_SCAN: Callable[[str, int], Tuple[object, int]]
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _decode(item_id: str, item_json: str) -> object:
    try:
        value, end = _SCAN(item_json, 0)
    except (StopIteration, ValueError, TypeError):
        value, end = None, -1
    if end == len(item_json):
        return value
    try:  # what the scanner alone does not take (whitespace around it), or an error
        return json.loads(item_json)
    except ValueError as exc:
        raise EngineError(f"stored item `{item_id}` is unreadable") from exc


def meta_of(item_id: str, item_json: str) -> MemoryMeta:
    """The metadata of a stored item."""
    value = _decode(item_id, item_json)
    meta = value.get("meta") if isinstance(value, dict) else None
    try:
        return MemoryMeta.from_json(meta)
    except InvalidRequestError as exc:
        raise EngineError(f"stored item `{item_id}` is unreadable") from exc


def item_of(item_id: str, item_json: str, text: str) -> StoreItem:
    """The stored item, rebuilt whole from its stored JSON and its text."""
    value = _restore(_decode(item_id, item_json), text)
    try:
        return StoreItem.from_json(value)
    except InvalidRequestError as exc:
        raise EngineError(f"stored item `{item_id}` is unreadable") from exc


def hit_of(
    row: Sequence[object],
    meta: Optional[MemoryMeta] = None,
    *,
    score: float = 0.0,
    preview: bool = False,
) -> Hit:
    """The hit for a row of :data:`HIT_COLUMNS` (``meta`` when already decoded)."""
    item_id, text, item_json = str(row[1]), str(row[3]), str(row[5])
    confidence = row[4]
    if meta is None:
        meta = meta_of(item_id, item_json)
    if preview and len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS]
    return Hit(
        item_id,
        _KINDS[str(row[2])],
        text,
        meta,
        score,
        None if confidence is None else float(cast(float, confidence)),
    )


def scored_hit(row: Sequence[object], meta: MemoryMeta, score: float) -> Hit:
    """``hit_of(row, meta, score=score)``, built directly when the row's values
    have their exact types (read from ``items``, they do).

    Every ranked read builds a hit per row of its page; when the id and text
    are ``str``, the kind a known one and the confidence None or a ``float``,
    ``Hit``'s checks could change nothing and are skipped (its float32
    rounding is not). Anything else takes :func:`hit_of`.
    """
    item_id, stored_kind, text, confidence = row[1], row[2], row[3], row[4]
    kind = _KINDS.get(stored_kind) if type(stored_kind) is str else None
    if (
        type(item_id) is not str
        or type(text) is not str
        or kind is None
        or type(meta) is not MemoryMeta
        or not (confidence is None or type(confidence) is float)
    ):
        return hit_of(row, meta, score=score)
    return _hit(item_id, kind, text, meta, score, confidence)


def _hit(item_id: str, kind: ItemKind, text: str, meta: MemoryMeta, score: float,
         confidence: Optional[float]) -> Hit:
    """``Hit(item_id, kind, text, meta, score, confidence)`` for values of exactly
    those types, its fields set directly (its float32 rounding kept)."""
    out = object.__new__(Hit)
    fields = out.__dict__
    fields["id"] = item_id
    fields["kind"] = kind
    fields["text"] = text
    fields["meta"] = meta
    fields["score"] = to_f32(score)
    fields["confidence"] = None if confidence is None else to_f32(confidence)
    return out


def _engine_meta(item_json: str) -> Optional[MemoryMeta]:
    """The meta of a stored item's JSON as the engine writes it (no white space
    around it, a non-empty ``meta`` object holding only common members), or None.

    For such JSON, ``meta_of`` decodes the same value with the same scanner and
    ``MemoryMeta.from_json`` answers what :func:`~cortex_memory.contract.meta.common_meta`
    does; None sends the caller to ``meta_of`` (and its errors).
    """
    try:
        value, end = _SCAN(item_json, 0)
    except (StopIteration, ValueError):
        return None
    if end != len(item_json) or type(value) is not dict:
        return None
    meta = value.get("meta")
    return common_meta(meta) if type(meta) is dict and meta else None


def page_hits(
    page: Sequence[Tuple[int, float]], rows: Mapping[int, Sequence[object]], flt: MetaFilter
) -> List[Tuple[Hit, str]]:
    """``(hit, item_json)`` for each ``(seq, score)`` of a ranked page whose row
    (of :data:`HIT_COLUMNS`, in ``rows``) ``flt`` admits, in page order.

    The general way, for each row: :func:`meta_of`, ``flt.matches``, then
    :func:`scored_hit`. A row read from ``items`` has its values' exact types
    (``str`` id, text and JSON, a known kind, a ``float`` or no confidence) and
    the engine's own JSON: then its meta is :func:`_engine_meta`'s and its hit
    is built as :func:`scored_hit` builds it, without its checks again (a
    ranked read does this for every hit of its page). Any other row takes the general
    way, so a row that is not readable fails as it always did (tested against
    it).
    """
    out: List[Tuple[Hit, str]] = []
    kinds = _KINDS
    matches = flt.matches
    for seq, score in page:
        row = rows.get(seq)
        if row is None:  # pragma: no cover - the ranking read it in this snapshot
            continue
        item_id, stored_kind, text, confidence, item_json = row[1], row[2], row[3], row[4], row[5]
        kind = kinds.get(stored_kind) if type(stored_kind) is str else None
        if (
            kind is not None
            and type(item_id) is str
            and type(text) is str
            and type(item_json) is str
            and (confidence is None or type(confidence) is float)
        ):
            meta = _engine_meta(item_json)
            if meta is not None:
                if matches(kind, meta):
                    out.append((_hit(item_id, kind, text, meta, score, confidence), item_json))
                continue
        item_json = str(row[5])  # the general way
        meta = meta_of(str(row[1]), item_json)
        if matches(kind_of(row[2]), meta):
            out.append((scored_hit(row, meta, score), item_json))
    return out


def kind_of(value: object) -> ItemKind:
    """The ``ItemKind`` of a stored kind string."""
    return _KINDS[str(value)]

"""Read-side helpers over decoded envelopes (engine.md §9.3): filtering and hits.

:func:`keeps` decides whether an event's envelope passes a filter. The paths an
envelope no longer carries (folder, full file path, absolute workspace) are matched
by digest; everything else goes through the contract's ``MetaFilter.matches`` on the
wire meta, so a file-name filter matches the kept name and redacted ids match
through ``same_id``.
"""

from __future__ import annotations

import struct
from dataclasses import fields, replace
from operator import attrgetter
from typing import Dict, Optional, Tuple

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind, StoreItem, Turn
from cortex_memory.contract.meta import MemoryMeta, common_meta
from cortex_memory.contract.responses import Hit
from cortex_memory.contract.text import is_blank
from cortex_memory.cortex.envelope.codec import _FIRST_PART, _FIRST_PART_LEN, _SCAN, PART_TAG
from cortex_memory.cortex.envelope.digests import path_digest
from cortex_memory.cortex.envelope.envelope import _KINDS, _LEARNING_KINDS, Envelope
from cortex_memory.cortex.envelope.rebuild import rebuild

__all__ = [
    "Keeper",
    "event_hit",
    "hit",
    "keeps",
    "located_meta",
    "one_turn_conversation",
    "whole_hit",
]

_Met = Tuple[bool, bool, bool]
# Every criterion of a filter but its kinds and reach, and their values when unset.
_OTHER_CRITERIA = attrgetter(
    *(field.name for field in fields(MetaFilter) if field.name not in ("kinds", "reach"))
)
_NO_OTHER_CRITERIA = _OTHER_CRITERIA(MetaFilter())

# Keeper.quick_hit: the members an envelope of a learning or a document in one
# event can hold (no path digests, turn or chunk), the default meta, and the
# float32 rounding of parse_envelope.
_QUICK_MEMBERS = frozenset(
    ("v", "id", "kind", "text", "meta", "title", "mime", "learning_kind", "confidence", "evidence")
)
_DEFAULT_META = MemoryMeta()
_F32 = struct.Struct("<f")
_F32_PACK = _F32.pack
_F32_UNPACK = _F32.unpack


def _wanted(value: Optional[str]) -> Tuple[str, ...]:
    """The digests a path filter value is matched by: as given, and without trailing ``/``."""
    if value is None:
        return ()
    exact = path_digest(value)
    base = path_digest(value.rstrip("/"))
    return (exact,) if base == exact else (exact, base)


class Keeper:
    """:func:`keeps` for one filter, with its digests computed once.

    Build one per read and call :meth:`keeps` for every event; it holds no mutable
    state, so it may be shared by threads.
    """

    __slots__ = (
        "_fd",
        "_fp",
        "_kind",
        "_kinds",
        "_reach",
        "_reach_only",
        "_reduced",
        "_ws",
    )

    def __init__(self, flt: MetaFilter, kind: Optional[ItemKind] = None) -> None:
        self._kind = kind
        # A filter of kinds and a reach alone (the usual listing): keeps() checks
        # those two itself, as MetaFilter.matches would, without its other checks.
        self._reach_only = _OTHER_CRITERIA(flt) == _NO_OTHER_CRITERIA
        self._kinds = flt.kinds
        self._reach = flt.reach
        self._ws = path_digest(flt.workspace) if flt.workspace is not None else None
        self._fp = _wanted(flt.file_path)
        self._fd = _wanted(flt.folder)
        # The filter left to check once the digests have met some criteria, for each
        # combination (workspace, file_path, folder) that can occur.
        self._reduced: Dict[_Met, MetaFilter] = {}
        for ws in (False, True) if self._ws is not None else (False,):
            for fp in (False, True) if self._fp else (False,):
                for fd in (False, True) if self._fd else (False,):
                    self._reduced[(ws, fp, fd)] = (
                        replace(
                            flt,
                            workspace=None if ws else flt.workspace,
                            file_path=None if fp else flt.file_path,
                            folder=None if fd else flt.folder,
                        )
                        if ws or fp or fd
                        else flt
                    )

    def keeps(self, env: Envelope) -> bool:
        """True when ``env`` passes the filter (and has the fixed kind, if any)."""
        if self._kind is not None and env.kind is not self._kind:
            return False
        if self._reach_only:
            if self._kinds and env.kind not in self._kinds:
                return False
            reach = self._reach
            if reach is None:
                # No reach still leaves out service sandboxes.
                return env.meta.namespace._last_service < 0
            return reach.admits(env.meta.namespace)
        ws_met = False
        if self._ws is not None and env.ws is not None:
            if env.ws != self._ws:
                return False
            ws_met = True
        fp_met = bool(self._fp) and any(d in env.fp for d in self._fp)
        fd_met = bool(self._fd) and any(d in env.fd for d in self._fd)
        return self._reduced[(ws_met, fp_met, fd_met)].matches(env.kind, env.meta)

    def quick_hit(self, event: object) -> Optional[Hit]:
        """``whole_hit(decode_event(event))`` when the event is a common one this keeper
        keeps; None when the general path must decide (see below).

        A listing decodes every event it reads, and most are one-part v3 envelopes of
        a learning or a document in one event, filtered by kinds and a reach alone.
        For those this reads the event in one pass: the part's JSON scanned in place,
        its members checked by the rules of ``parse_envelope`` (only the members such
        an envelope can hold: any other, or a null, sends it to the general path),
        the meta through ``common_meta``, the filter's kinds and reach checked as
        :meth:`keeps` checks them, and the hit built as :func:`whole_hit` builds it.
        No :class:`Envelope` is built. It returns None for everything else: not
        ours, not kept, a conversation, a document piece, path digests, another
        filter, a meta that needs the full read. None is never a verdict; the
        caller then runs ``decode_event``, ``keeps`` and ``whole_hit`` as before.
        """
        if not self._reach_only or type(event) is not dict:
            return None
        content = event.get("content")
        context = event.get("context")
        if type(content) is not dict or type(context) is not dict:
            return None
        text = content.get("text")
        labels = context.get("labels")
        if type(text) is not str or type(labels) is not list or type(event.get("id")) is not str:
            return None
        # The one part, numbered 00 and written last, no other label a part (what
        # decode_event's own shortcut asks; a label that is not a string fails the join).
        last = labels[-1] if labels else None
        if type(last) is not str or not last.startswith(_FIRST_PART):
            return None
        if len(labels) > 1:
            try:
                others = "\x00".join(labels[:-1])
            except TypeError:
                return None
            if PART_TAG in others:
                return None
        try:
            value, end = _SCAN(last, _FIRST_PART_LEN)
        except (StopIteration, ValueError, RecursionError):
            return None
        if end != len(last) or type(value) is not dict or not value.keys() <= _QUICK_MEMBERS:
            return None
        try:
            # Subscripts raise KeyError for a missing member (not ours: general path);
            # _KINDS has only str keys, so a kind found is a str and a known kind.
            version = value["v"]
            item_id = value["id"]
            kind = _KINDS[value["kind"]]
            own_text = value["text"]
            raw_meta = value["meta"]
        except (KeyError, TypeError):
            return None
        if (
            type(version) is not int
            or version != 3
            or type(item_id) is not str
            or type(own_text) is not str
            or type(raw_meta) is not dict
        ):
            return None
        meta = common_meta(raw_meta) if raw_meta else _DEFAULT_META
        if meta is None:
            return None
        # keeps(), for a filter of kinds and a reach alone.
        if self._kind is not None and kind is not self._kind:
            return None
        if self._kinds and kind not in self._kinds:
            return None
        reach = self._reach
        if reach is None:
            if meta.namespace._last_service >= 0:
                return None
        elif not reach.admits(meta.namespace):
            return None
        # The optional members, by parse_envelope's rules: a null reads as missing;
        # title, mime and evidence are strings; a learning kind is a known one.
        title = value.get("title")
        mime = value.get("mime")
        evidence = value.get("evidence")
        learning_kind = value.get("learning_kind")
        raw_confidence = value.get("confidence")
        if not (title is mime is evidence is None):
            for optional in (title, mime, evidence):
                if optional is not None and type(optional) is not str:
                    return None
        if learning_kind is not None and (
            type(learning_kind) is not str or learning_kind not in _LEARNING_KINDS
        ):
            return None
        out = object.__new__(Hit)
        found = out.__dict__
        if kind is ItemKind.LEARNING:
            if raw_confidence is None:
                confidence = 0.0
            elif type(raw_confidence) is float:
                try:
                    confidence = _F32_UNPACK(_F32_PACK(raw_confidence))[0]
                except OverflowError:
                    return None
            else:
                return None
            found["confidence"] = confidence
        elif kind is ItemKind.DOCUMENT:
            if raw_confidence is not None:
                return None
            if title is not None and not is_blank(title):
                text = f"# {title}\n\n{text}"
        else:
            return None
        found["id"] = item_id
        found["kind"] = kind
        found["text"] = text
        found["meta"] = meta
        return out


def keeps(flt: MetaFilter, kind: Optional[ItemKind], env: Envelope) -> bool:
    """True when ``env`` passes ``flt``; with a fixed ``kind`` its kind must equal it.

    (1) the kind; (2) a ``workspace`` filter against the envelope's ``ws`` digest when
    it has one (equal meets the criterion, else the event is refused); (3) a
    ``file_path`` / ``folder`` filter whose digest (as given or without trailing
    ``/``) is in ``fp`` / ``fd`` meets that criterion; (4) every remaining criterion
    through ``MetaFilter.matches`` on the wire meta. For many events, build a
    :class:`Keeper` once.
    """
    return Keeper(flt, kind).keeps(env)


def located_meta(env: Envelope) -> MemoryMeta:
    """The envelope's meta plus its piece's location tags (read side only)."""
    if env.chunk is None:
        return env.meta
    tags = env.chunk.location()
    if not tags:
        return env.meta
    return env.meta.with_tags(env.meta.tags + tags)


def one_turn_conversation(env: Envelope) -> bool:
    """True for a conversation envelope that is the whole conversation (one turn)."""
    return env.kind is ItemKind.CONVERSATION and env.turn is not None and env.turn.count == 1


def hit(item_id: str, item: StoreItem, score: float = 0.0) -> Hit:
    """``{id, kind, text: render_text(item), meta, score, confidence}`` for a rebuilt item.

    The id is the envelopes' (never recomputed: the rebuilt meta is the wire meta, so
    the item's own fingerprint may differ from the id it was stored under).
    """
    return Hit(item_id, item.item_kind, item.render_text(), item.meta, score, item.item_confidence)


def whole_hit(env: Envelope) -> Hit:
    """``hit(env.id, rebuild([env]))`` for the one envelope of a whole item, built directly.

    A listing builds one hit per admitted item; for a learning, a document in
    one event and a one-turn conversation this reads the hit's text and
    confidence straight from the envelope instead of building the contract
    item first and rendering it. The envelope's members already have their
    exact types and the confidence is already a float32, so the checks and
    rounding of ``Learning`` and ``Hit`` construction would change nothing.
    Any other envelope takes the general path.
    """
    kind = env.kind
    confidence: Optional[float] = None
    if kind is ItemKind.LEARNING:
        text = env.text
        confidence = 0.0 if env.confidence is None else env.confidence
    elif kind is ItemKind.DOCUMENT and env.chunk is None:
        title = env.title
        text = env.text if title is None or is_blank(title) else f"# {title}\n\n{env.text}"
    elif kind is ItemKind.CONVERSATION and env.turn is not None:
        turn = env.turn
        text = Turn(turn.role, env.text, turn.at, turn.tool_calls).render()
    else:
        return hit(env.id, rebuild([env]), 0.0)
    # Hit's fields are set directly; score and confidence keep the class's
    # defaults (0.0, None) unless a confidence is set.
    out = object.__new__(Hit)
    found = out.__dict__
    found["id"] = env.id
    found["kind"] = kind
    found["text"] = text
    found["meta"] = env.meta
    if confidence is not None:
        found["confidence"] = confidence
    return out


def event_hit(env: Envelope, score: float = 0.0) -> Hit:
    """The hit of one event: that envelope rebuilt (a piece gives the piece's text),
    with its location tags."""
    item = rebuild([env])
    return Hit(
        env.id, item.item_kind, item.render_text(), located_meta(env), score, item.item_confidence
    )

"""Read-side helpers over decoded envelopes (engine.md §9.3): filtering and hits.

:func:`keeps` decides whether an event's envelope passes a filter. The paths an
envelope no longer carries (folder, full file path, absolute workspace) are matched
by digest; everything else goes through the contract's ``MetaFilter.matches`` on the
wire meta, so a file-name filter matches the kept name and redacted ids match
through ``same_id``.
"""

from __future__ import annotations

from dataclasses import fields, replace
from operator import attrgetter
from typing import Dict, Optional, Tuple

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind, StoreItem, Turn
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.responses import Hit
from cortex_memory.contract.text import is_blank
from cortex_memory.cortex.envelope.digests import path_digest
from cortex_memory.cortex.envelope.envelope import Envelope
from cortex_memory.cortex.envelope.quick import Lane
from cortex_memory.cortex.envelope.rebuild import rebuild

__all__ = [
    "Keeper",
    "event_hit",
    "hit",
    "keeps",
    "lane_reads",
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


def lane_reads(flt: MetaFilter) -> bool:
    """True for a filter of kinds and a reach alone: the listing's lane (:class:`.quick.Lane`)
    reads its common events, checking those two criteria as :meth:`Keeper.keeps` does."""
    return _OTHER_CRITERIA(flt) == _NO_OTHER_CRITERIA


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
        "lane",
    )

    def __init__(self, flt: MetaFilter, kind: Optional[ItemKind] = None) -> None:
        self._kind = kind
        # A filter of kinds and a reach alone (the usual listing): keeps() checks
        # those two itself, as MetaFilter.matches would, without its other checks.
        self._reach_only = lane_reads(flt)
        self._kinds = flt.kinds
        self._reach = flt.reach
        # The one-pass lane of whole learnings and documents (None: another filter).
        self.lane = Lane(kind, flt.kinds, flt.reach) if self._reach_only else None
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
        keeps; None when the general path must decide (see :class:`.quick.Lane`).

        Only a filter of kinds and a reach alone has a lane (:attr:`lane`); a listing
        uses a lane itself (:meth:`.quick.Lane.read`), to read a run of events at once.
        """
        lane = self.lane
        return lane.hit(event) if lane is not None else None


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

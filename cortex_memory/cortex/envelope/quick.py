"""The listing's one-pass lane: whole learnings and documents read straight into hits.

A listing decodes every event it reads, and most are one-part v3 envelopes of a
learning or a document in one event, filtered by kinds and a reach alone. For those
a :class:`Lane` reads the event in one pass: the part's JSON, its members checked by
the rules of ``parse_envelope``, the meta through ``common_meta``,
the filter's kinds and reach checked as ``Keeper.keeps`` checks them, and the hit
built as ``whole_hit`` builds it. No :class:`Envelope` is built.

The members are checked as a whole: the names present, in order, and their types,
against the layouts the codec writes (a set lookup of two tuples built in C), where
``parse_envelope`` checks them one by one. Any other layout (another order, a null,
an int confidence) is left to the general path.

A listing hands the lane its page (:meth:`Lane.read`): the lane reads the events in
one call and stops, leaving it untouched, at the first it cannot answer (not ours,
not kept, a conversation, a document piece, path digests, a meta that needs the full
read). Stopping is never a verdict: the listing then runs ``decode_event``, ``keeps``
and ``whole_hit`` on that event, and hands the lane the rest.
"""

from __future__ import annotations

import struct
from itertools import combinations
from typing import Any, Dict, List, Optional, Set, Tuple

from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.meta import MemoryMeta, common_meta
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.responses import Hit
from cortex_memory.contract.text import is_blank
from cortex_memory.cortex.envelope.codec import _FIRST_PART, _SCAN, PART_TAG
from cortex_memory.cortex.envelope.reader import _LEARNING_KINDS

__all__ = ["Lane"]

# The layouts the lane reads: an envelope of a learning or a document in one event
# as the codec writes it (Envelope.to_json: v, id, kind, text and meta, then the
# optional members in their order, none null; no path digests, turn or chunk),
# each with the types parse_envelope asks of its members (a confidence a float:
# an int is left to to_f32). Keyed by (member names, member types), in order.
_OPTIONAL = (("title", str), ("mime", str), ("learning_kind", str), ("confidence", float),
             ("evidence", str))  # fmt: skip
_LAYOUTS = {
    ("v", "id", "kind", "text", "meta", *(name for name, _ in chosen)): (
        (int, str, str, str, dict, *(kind for _, kind in chosen))
    )
    for size in range(len(_OPTIONAL) + 1)
    for chosen in combinations(_OPTIONAL, size)
}
_DEFAULT_META = MemoryMeta()
_DEFAULT_JSON = _DEFAULT_META.to_json()
_F32 = struct.Struct("<f")
_F32_PACK = _F32.pack
_F32_UNPACK = _F32.unpack
_LEARNING = ItemKind.LEARNING
_DOCUMENT = ItemKind.DOCUMENT
# The kinds a lane reads; each alone, by its wire name (read only, never changed).
_READ = (_LEARNING, _DOCUMENT)
_ALONE: Dict[ItemKind, Dict[str, ItemKind]] = {kind: {kind.value: kind} for kind in _READ}
_NONE: Dict[str, ItemKind] = {}
# A part the lane reads: the first part, holding a JSON object (the whole part
# must scan as one value, and the lane wants an object).
_OBJECT_PART = _FIRST_PART + "{"
_PART_START = len(_FIRST_PART)


class Lane:
    """The one-pass lane of a filter of kinds and a reach alone (``Keeper.lane``).

    Holds no mutable state: threads may share one.
    """

    __slots__ = ("_kind", "_kinds", "_reach")

    def __init__(
        self, kind: Optional[ItemKind], kinds: Tuple[ItemKind, ...], reach: Optional[Reach]
    ) -> None:
        self._kind = kind
        self._kinds = kinds
        self._reach = reach

    def hit(self, event: object) -> Optional[Hit]:
        """``whole_hit(decode_event(event))`` when the event is a common one the filter
        keeps; None when the general path must decide."""
        out: List[Any] = []
        self.read([event], 0, None, None, set(), out, 1)
        return out[0] if out else None

    def read(
        self,
        items: List[Any],
        position: int,
        previous: object,
        last: Optional[str],
        seen: Set[str],
        hits: List[Any],
        limit: int,
    ) -> Tuple[int, Optional[str]]:
        """Read a listing page's ``items`` from ``position`` into ``hits``, up to ``limit``.

        Skips what a listing skips (the same object as the event before, ``previous``
        for the first; an event whose id is ``last``, the one before's) and appends
        ``whole_hit(decode_event(event))`` for every other event, once per item id
        (``seen``), while the events are common ones the filter keeps. Stops at the
        first event it cannot answer, untouched (the general path decides it), or
        after the hit that fills ``hits``. Returns where it stopped (the index of
        the event left, ``len(items)`` at the end, the index after the hit that
        filled) and the id of the last event read.

        A page's events are read in this one call: one frame and one set of
        lookups for the page rather than one per event.
        """
        # The kinds read here, by their wire name: learnings and documents the filter
        # (the fixed kind, the kinds) keeps. Keeper.keeps's reach: the same node is
        # admitted without a call.
        fixed, kinds = self._kind, self._kinds
        if fixed is not None:  # a listing's lane: its scope's kind
            accepted = _ALONE.get(fixed, _NONE) if not kinds or fixed in kinds else _NONE
        else:
            accepted = {kind.value: kind for kind in _READ if not kinds or kind in kinds}
        reach = self._reach
        at = reach.at._path if reach is not None else None
        layouts = _LAYOUTS
        scan = _SCAN
        begin = position
        for position in range(begin, len(items)):
            event = items[position]
            if event is previous:
                continue  # a listing's repeated copy, parsed once: skipped as a copy
            # The event: a string id and text, the part numbered 00 written last and
            # holding an object, no other label a part (what decode_event's own
            # shortcut asks; a label that is not a string fails the join).
            if type(event) is not dict:
                return position, last
            eid = event.get("id")
            if type(eid) is not str:
                return position, last
            if eid == last:
                previous = event
                continue
            content = event.get("content")
            context = event.get("context")
            if type(content) is not dict or type(context) is not dict:
                return position, last
            text = content.get("text")
            labels = context.get("labels")
            if type(text) is not str or type(labels) is not list or not labels:
                return position, last
            part = labels[-1]
            if type(part) is not str or not part.startswith(_OBJECT_PART):
                return position, last
            if len(labels) > 1:
                try:
                    others = "\x00".join(labels[:-1])
                except TypeError:
                    return position, last
                if PART_TAG in others:
                    return position, last
            try:
                value, end = scan(part, _PART_START)
            except (StopIteration, ValueError, RecursionError):
                return position, last
            if end != len(part):
                return position, last
            # The members present, in order, and their types: one of the layouts the
            # codec writes (see _LAYOUTS), or the general path decides. (The part
            # starts with "{", so the value is a dict.)
            members = tuple(value.values())
            if layouts.get(tuple(value)) != tuple(map(type, members)):
                return position, last
            # v (an int) is 3; the kind (a str) one read here (a known kind the filter
            # keeps, a learning or a document), a learning kind a known one.
            kind = accepted.get(members[2])
            learning_kind = value.get("learning_kind")
            if (
                members[0] != 3
                or kind is None
                or (learning_kind is not None and learning_kind not in _LEARNING_KINDS)
            ):
                return position, last
            raw_meta = members[4]
            meta: Optional[MemoryMeta]
            if raw_meta == _DEFAULT_JSON or not raw_meta:
                meta = _DEFAULT_META  # what common_meta answers for the default as written
            else:
                meta = common_meta(raw_meta)
                if meta is None:
                    return position, last
            # Keeper.keeps's reach (its kinds are checked above).
            namespace = meta.namespace
            if reach is None:
                if namespace._last_service >= 0:
                    return position, last
            elif namespace._path != at and not reach.admits(namespace):
                return position, last
            raw_confidence = value.get("confidence")
            out = object.__new__(Hit)
            found = out.__dict__
            if kind is _LEARNING:
                if raw_confidence is not None:
                    try:
                        found["confidence"] = _F32_UNPACK(_F32_PACK(raw_confidence))[0]
                    except OverflowError:  # past the float32 range: to_f32 decides
                        return position, last
                else:
                    found["confidence"] = 0.0
            else:  # a document
                if raw_confidence is not None:
                    return position, last
                title = value.get("title")
                if title is not None and not is_blank(title):
                    text = f"# {title}\n\n{text}"
            # Read: from here on the event is the listing's (skipped or admitted).
            previous = event
            last = eid
            item_id = members[1]
            if item_id in seen:
                continue
            found["id"] = item_id
            found["kind"] = kind
            found["text"] = text
            found["meta"] = meta
            seen.add(item_id)
            hits.append(out)
            if len(hits) >= limit:
                return position + 1, last
        return len(items), last

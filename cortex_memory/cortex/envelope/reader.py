"""Reading envelope JSON back (engine.md §7.2, §7.10): :func:`parse_envelope`.

Every listed event's envelope is read here, so the reader writes its checks out
and builds its values without their constructors' checks (it made them). A value
of the wrong type anywhere makes the whole envelope "not ours" (None).
"""

from __future__ import annotations

import struct
import threading
from typing import Any, Dict, List, Optional, Tuple, TypeVar

from cortex_memory.contract.items import ItemKind, LearningKind, Role
from cortex_memory.contract.jsonfmt import format_timestamp, parse_timestamp, to_f32
from cortex_memory.contract.meta import MemoryMeta, ToolCallRef, common_meta
from cortex_memory.cortex.envelope.envelope import U32_MAX, ChunkInfo, Envelope, TurnInfo
from cortex_memory.errors import Error

__all__ = ["parse_envelope", "parse_scanned"]

_E = TypeVar("_E")

_DEFAULT_META = MemoryMeta()
# to_f32's struct, called without its frame for a float (see _parse).
_F32 = struct.Struct("<f")
_F32_PACK = _F32.pack
_F32_UNPACK = _F32.unpack

# Enum lookups by wire string without Enum.__call__ (a measurable share of decoding).
_KINDS = {kind.value: kind for kind in ItemKind}
_ROLES = {role.value: role for role in Role}
_LEARNING_KINDS = {kind.value: kind for kind in LearningKind}


class _NotOurs(Exception):
    """An object that is not an envelope (never escapes this package)."""


def parse_envelope(value: object, *, text: Optional[str] = None) -> Optional[Envelope]:
    """Read a parsed JSON value as an envelope of any version; None when it is not one.

    Unknown members are ignored; a member of the wrong type makes the whole value
    "not ours". ``text``, when given, replaces the ``text`` member (a v3 envelope's
    text is the event's own). The caller checks ``v``.
    """
    try:
        return _parse(value, text, False)
    except (_NotOurs, Error, TypeError, ValueError):
        # Error: the contract's readers (meta, timestamps, enums); TypeError and
        # ValueError: a contract constructor refusing a value that slipped through.
        return None


def parse_scanned(value: object, *, text: Optional[str] = None) -> Optional[Envelope]:
    """:func:`parse_envelope` of a value the caller has just parsed and holds alone.

    Gives what ``parse_envelope`` gives. The decoder reads its events through this:
    a meta equal to the one the thread read last (a conversation's turns and a
    document's pieces carry one meta, and a listing holds them in a row) is that
    meta again, without reading it anew (see :class:`_LastMeta`). The value is
    kept for that comparison until the thread's next read, so nobody else may
    hold (and change) it.
    """
    try:
        return _parse(value, text, True)
    except (_NotOurs, Error, TypeError, ValueError):
        return None


def _parse(value: object, text: Optional[str], scanned: bool) -> Envelope:
    # Runs for every listed event: the member checks are written out rather than
    # made through one helper call each. A value of the wrong type is "not ours".
    if type(value) is not dict:
        raise _NotOurs
    get = value.get
    version = get("v")
    item_id = get("id")
    own_text = get("text")
    kind = get("kind")
    if (
        type(version) is not int
        or type(item_id) is not str
        or type(own_text) is not str
        or type(kind) is not str
    ):
        raise _NotOurs
    kind = _KINDS.get(kind)
    if kind is None:
        raise _NotOurs
    ws = get("ws")
    title = get("title")
    mime = get("mime")
    evidence = get("evidence")
    if not ws is title is mime is evidence is None:  # (all four absent: the common case)
        for optional in (ws, title, mime, evidence):
            if optional is not None and type(optional) is not str:
                raise _NotOurs
    raw_confidence = get("confidence")
    confidence: Optional[float] = None
    if raw_confidence is not None:
        if type(raw_confidence) is float:
            try:
                confidence = _F32_UNPACK(_F32_PACK(raw_confidence))[0]
            except OverflowError:  # past the float32 range: to_f32 gives an infinity
                confidence = to_f32(raw_confidence)
        elif type(raw_confidence) is int:
            confidence = to_f32(raw_confidence)
        else:
            raise _NotOurs
    learning_kind = get("learning_kind")
    if learning_kind is not None:
        learning_kind = _LEARNING_KINDS.get(learning_kind) if type(learning_kind) is str else None
        if learning_kind is None:
            raise _NotOurs
    fp = get("fp")
    fd = get("fd")
    turn = get("turn")
    chunk = get("chunk")
    # Envelope's __init__ only assigns its fields, with no checks, so they are set
    # directly (a fraction of a frozen dataclass's fifteen object.__setattr__
    # calls). A member left at its default is not set at all: every field but
    # the first four has a default, which the class holds, and equality, hashing,
    # repr and replace() read fields as attributes.
    env = object.__new__(Envelope)
    found = env.__dict__
    found["id"] = item_id
    found["kind"] = kind
    found["text"] = own_text if text is None else text
    found["meta"] = _meta(get("meta"), scanned)
    if ws is not None:
        found["ws"] = ws
    if fp is not None:
        found["fp"] = _str_tuple(fp)
    if fd is not None:
        found["fd"] = _str_tuple(fd)
    if title is not None:
        found["title"] = title
    if mime is not None:
        found["mime"] = mime
    if learning_kind is not None:
        found["learning_kind"] = learning_kind
    if confidence is not None:
        found["confidence"] = confidence
    if evidence is not None:
        found["evidence"] = evidence
    if turn is not None:
        found["turn"] = _turn(turn)
    if chunk is not None:
        found["chunk"] = _chunk(chunk)
    if version != 3:
        found["v"] = version
    return env


class _LastMeta(threading.local):
    """The meta a thread read last through :func:`parse_scanned`: its JSON and its value.

    A meta's JSON that equals (``==``) the JSON kept here reads as the meta kept:
    ``common_meta`` read the kept JSON, and every member it reads is a string, a
    list of strings or an object of strings, which equal only the same strings
    (JSON's other values never equal a string), so an equal JSON holds the same
    members and is read the same (the members it ignores may differ: ignored both
    times). A meta with ``derive`` (a boolean, which equals 1 and 1.0) is not
    kept, nor one the full read had to read. One per thread: threads share nothing.
    """

    raw: Optional[Dict[str, Any]] = None
    meta: MemoryMeta = _DEFAULT_META


_LAST_META = _LastMeta()


def _meta(value: object, scanned: bool = False) -> MemoryMeta:
    """The wire meta, reading ``observed_at`` truncated to microseconds when it must be.

    The contract refuses non-zero sub-microsecond digits (right for user input, which
    must round-trip), but other writers of the log (TinyMemory, in Rust) may keep
    nanoseconds; such an event is still ours. The strict read runs first, so the
    common case parses each time once. ``scanned``: the value is the caller's alone
    (:func:`parse_scanned`): the thread's last meta may answer (:class:`_LastMeta`).
    """
    o = _obj(value)
    if not o:
        return _DEFAULT_META
    if scanned:
        last = _LAST_META
        if o == last.raw:
            return last.meta
        quick = common_meta(o)
        if quick is not None:
            if "derive" not in o:
                last.raw = o
                last.meta = quick
            return quick
    else:
        quick = common_meta(o)
        if quick is not None:
            return quick
    try:
        return MemoryMeta._read(o)  # common_meta said None: the full read, once
    except Error:
        observed = o.get("observed_at")
        if type(observed) is not str:
            raise
        lenient = dict(o)
        lenient["observed_at"] = format_timestamp(parse_timestamp(observed, truncate=True))
        return MemoryMeta.from_json(lenient)


def _turn(value: object) -> Optional[TurnInfo]:
    if value is None:
        return None
    if type(value) is not dict:
        raise _NotOurs
    get = value.get
    index = get("index")
    count = get("count")
    role = get("role")
    role = _ROLES.get(role) if type(role) is str else None
    at = get("at")
    calls = get("tool_calls")
    if (
        type(index) is not int
        or not 0 <= index <= U32_MAX
        or type(count) is not int
        or not 0 <= count <= U32_MAX
        or role is None
        or (at is not None and type(at) is not str)
        or (calls is not None and type(calls) is not list)
    ):
        raise _NotOurs
    # TurnInfo's __init__ only assigns (no checks), and every value was checked
    # above: set directly, defaults left to the class (as for the envelope).
    turn = object.__new__(TurnInfo)
    found = turn.__dict__
    found["index"] = index
    found["count"] = count
    found["role"] = role
    if at is not None:
        # Other writers may keep nanoseconds; a datetime holds microseconds.
        found["at"] = parse_timestamp(at, truncate=True)
    if calls:
        found["tool_calls"] = tuple([_tool_call(call) for call in calls])
    return turn


def _tool_call(value: object) -> ToolCallRef:
    """``ToolCallRef.from_json(value)``, its checks written out (a refusal is "not ours")."""
    if type(value) is not dict:
        raise _NotOurs
    name = value.get("name")
    call_id = value.get("id")
    if type(name) is not str or (call_id is not None and type(call_id) is not str):
        raise _NotOurs
    # ToolCallRef's checks (a str name, an optional str id) passed: set directly.
    call = object.__new__(ToolCallRef)
    found = call.__dict__
    found["name"] = name
    if call_id is not None:
        found["id"] = call_id
    return call


def _chunk(value: object) -> Optional[ChunkInfo]:
    if value is None:
        return None
    o = _obj(value)
    raw_pages = o.get("pages")
    pages: Optional[Tuple[int, int]] = None
    if raw_pages is not None:
        if type(raw_pages) is not list or len(raw_pages) != 2:
            raise _NotOurs
        pages = (_u32(raw_pages[0]), _u32(raw_pages[1]))
    return ChunkInfo(
        index=_u32(o.get("index")),
        count=_u32(o.get("count")),
        pages=pages,
        section=_opt_str(o, "section"),
    )


def _member(members: Dict[str, _E], value: object) -> _E:
    member = members.get(value) if type(value) is str else None
    if member is None:
        raise _NotOurs
    return member


def _obj(value: object) -> Dict[str, Any]:
    if type(value) is not dict:
        raise _NotOurs
    return value


def _opt_str(o: Dict[str, Any], key: str) -> Optional[str]:
    value = o.get(key)
    if value is None or type(value) is str:
        return value
    raise _NotOurs


def _str_tuple(value: object) -> Tuple[str, ...]:
    if value is None:
        return ()
    if type(value) is not list:
        raise _NotOurs
    items: List[str] = value
    for item in items:
        if type(item) is not str:
            raise _NotOurs
    return tuple(items)


def _u32(value: object) -> int:
    if type(value) is not int or not 0 <= value <= U32_MAX:
        raise _NotOurs
    return value

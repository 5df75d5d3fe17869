"""Events of the item decoded last (siblings) decode exactly as each decodes alone.

``decode_event`` reads an event whose JSON repeats the last kept one's but for its
turn or chunk (and, in v2, its text) from those alone (``envelope/siblings.py``).
Here runs of events, written and hostile (duplicate and escaped keys, a turn
nested or inside strings, whitespace, more after the member, values of every
kind), are decoded in a row and compared with each decoded alone: in a thread of
its own, whose memos are empty.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory.contract.items import Document, Role, StoreItem, TextBody, Turn
from cortex_memory.contract.meta import MemoryMeta, ToolCallRef
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.envelope import codec
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import decode_event, encode, encode_checked, part_labels
from cortex_memory.cortex.envelope.envelope import ChunkInfo, Envelope

from .test_read_fast_paths import JSON, SCALARS, metas_json


def alone(event: Dict[str, Any]) -> str:
    """``repr(decode_event(event))`` in a new thread: nothing decoded before it."""
    out: List[str] = []
    thread = threading.Thread(target=lambda: out.append(repr(decode_event(event))))
    thread.start()
    thread.join()
    return out[0]


def decoded_in_a_thread(events: List[Dict[str, Any]]) -> List[Optional[Envelope]]:
    """``decode_event`` of each of ``events`` in a row, in a new thread: nothing kept before."""
    out: List[Optional[Envelope]] = []
    thread = threading.Thread(target=lambda: out.extend(map(decode_event, events)))
    thread.start()
    thread.join()
    return out


def v3_event(json_text: str, text: str) -> Dict[str, Any]:
    labels = ["tm:i:x", "kind:conversation", *part_labels(json_text)]
    return {"id": "e", "content": {"text": text}, "context": {"labels": labels}}


def v2_event(json_text: str) -> Dict[str, Any]:
    return {"id": "e", "content": {"text": json_text}, "context": {"labels": ["tm:i:x"]}}


_CALLS = st.fixed_dictionaries({"name": st.text(max_size=3)}, optional={"id": st.text(max_size=2)})
_GOOD_TURNS = st.fixed_dictionaries(
    {"index": st.integers(0, 3), "count": st.integers(1, 4), "role": st.just("user")},
    optional={"at": st.just("2025-01-02T03:04:05Z"), "tool_calls": st.lists(_CALLS, max_size=2)},
)
_ODD_CALLS = st.fixed_dictionaries({"name": SCALARS}, optional={"id": SCALARS, "x": JSON})
_ODD_ROLES = st.sampled_from(["tool", "x"])
_TURNS = _GOOD_TURNS | st.fixed_dictionaries(
    {"index": st.integers(-1, 3), "count": st.integers(1, 4), "role": _ODD_ROLES},
    optional={
        "at": st.sampled_from(["2025-01-02T03:04:05.123456789Z", "x"]),
        "tool_calls": st.lists(_ODD_CALLS | JSON, max_size=2),
        "x": JSON,
    },
)
_CHUNKS = st.fixed_dictionaries(
    {"index": st.integers(0, 3), "count": st.integers(1, 4)},
    optional={"pages": st.lists(st.integers(0, 3), max_size=3), "section": SCALARS, "x": JSON},
)
_METAS = st.sampled_from(
    [{}, {"source": {"kind": "agent"}}, {"namespace": "team:a", "tags": ["x"], "derive": True}]
)
_KEYS = ['"turn"', '"\\u0074urn"', '"chunk"', '"text"', '"\\u0074ext"', '"x"', '"meta"']
_ENDS = ["}", "}", "}", " }", "} ", "}}", ',"x":1}', "", "]", " ", "x"]


@st.composite
def member_lists(draw: st.DrawFn, version: int) -> List[Tuple[str, str]]:
    """An envelope as (key, value) JSON texts: mostly as written, sometimes odd."""
    kind = draw(st.sampled_from(["conversation", "document"]))
    members = [
        ('"v"', str(version)),
        ('"id"', _dumps(draw(st.sampled_from(["abc", "a\u00e9\\"])))),
        ('"kind"', _dumps(kind)),
        ('"text"', '""' if version == 3 else _dumps(draw(st.text(max_size=4)))),
        ('"meta"', _dumps(draw(_METAS | metas_json()))),
    ]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # more members, keys of interest
        key = draw(st.sampled_from(_KEYS))
        value = draw((st.text(max_size=3) if "ext" in key else JSON) | _TURNS | st.just('"turn":'))
        at = draw(st.integers(1, len(members)))
        members.insert(at, (key, _dumps(value)))
    member = '"turn"' if kind == "conversation" else '"chunk"'
    value = _dumps(draw(_GOOD_TURNS if member == '"turn"' else _CHUNKS))
    members.append((member, value))
    # Maybe a member after the turn: ignored, read, or holding a "turn" of its own.
    after = [None, None, None, ('"x"', "1"), ('"ws"', '"w"'), ('"x"', f"{{{member}:{value}}}")]
    extra = draw(st.sampled_from(after))
    if extra is not None:
        members.append(extra)
    return members


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def joined(members: List[Tuple[str, str]], end: str = "}", sep: str = ",") -> str:
    return "{" + sep.join(f"{key}:{value}" for key, value in members) + end


@st.composite
def runs(draw: st.DrawFn, version: int) -> List[str]:
    """A first envelope's JSON, then JSON texts like it: another last member (and v2
    text), maybe another end, separator, or earlier member."""
    members = draw(member_lists(version))
    out = [joined(members)]
    for _ in range(draw(st.integers(1, 5))):
        changed = list(members)
        key, _ = changed[-1]
        strategy = _TURNS if key == '"turn"' else _CHUNKS
        changed[-1] = (key, _dumps(draw(strategy | JSON)))
        if version == 2 and draw(st.booleans()):
            changed[3] = ('"text"', _dumps(draw(st.text(max_size=4) | SCALARS)))
        if draw(st.integers(0, 4)) == 0:
            at = draw(st.integers(0, len(changed) - 2))
            changed[at] = (changed[at][0], _dumps(draw(JSON)))
        end = draw(st.sampled_from(_ENDS)) if draw(st.integers(0, 3)) == 0 else "}"
        sep = draw(st.sampled_from([",", ", "])) if draw(st.integers(0, 5)) == 0 else ","
        out.append(joined(changed, end, sep))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(3), st.lists(st.text(max_size=3), min_size=6, max_size=6))
def test_v3_siblings_decode_as_each_alone(texts: List[str], own: List[str]) -> None:
    for json_text, text in zip(texts, own):
        event = v3_event(json_text, text)
        assert repr(decode_event(event)) == alone(event), json_text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(2))
def test_v2_siblings_decode_as_each_alone(texts: List[str]) -> None:
    for json_text in texts:
        event = v2_event(json_text)
        assert repr(decode_event(event)) == alone(event), json_text


@st.composite
def cut_runs(draw: st.DrawFn, version: int) -> List[str]:
    """A first envelope's JSON, then texts made as a sibling is read: that JSON cut at its
    last ``,"turn":`` (or chunk; in v2 also around its first ``"text":`` value), with
    new values put in and any end, whatever the first JSON holds."""
    first = joined(draw(member_lists(version)))
    out = [first]
    member = ',"turn":' if ',"turn":' in first else ',"chunk":'
    at = first.rfind(member) + len(member)
    text_at = first.find('"text":') + len('"text":')
    try:
        _, after = json.JSONDecoder().raw_decode(first, text_at)
    except ValueError:
        after = -1
    for _ in range(draw(st.integers(1, 4))):
        value = _dumps(draw(_GOOD_TURNS | _TURNS | _CHUNKS | JSON))
        end = draw(st.sampled_from(_ENDS)) if draw(st.integers(0, 2)) == 0 else "}"
        head = first[:at]
        if version == 2 and 0 < after <= at and draw(st.integers(0, 3)):
            own = _dumps(draw(st.text(max_size=4) | SCALARS))
            # Maybe another middle: a member more, or one changed (its length kept).
            more = draw(st.sampled_from(["", "", "", ',"ws":"w"', ',"x":1', ',"text":"t"']))
            was, now = draw(st.sampled_from([("", "")] * 3 + [("team:a", "team:b"), ("nt", "nx")]))
            head = first[:text_at] + own + more + first[after:at].replace(was, now)
        out.append(head + value + end)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut_runs(3), st.lists(st.text(max_size=3), min_size=5, max_size=5))
def test_v3_texts_cut_as_siblings_decode_as_each_alone(texts: List[str], own: List[str]) -> None:
    for json_text, text in zip(texts, own):
        event = v3_event(json_text, text)
        assert repr(decode_event(event)) == alone(event), json_text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut_runs(2))
def test_v2_texts_cut_as_siblings_decode_as_each_alone(texts: List[str]) -> None:
    for json_text in texts:
        event = v2_event(json_text)
        assert repr(decode_event(event)) == alone(event), json_text


_TURN = '"turn":{"index":0,"count":2,"role":"user"}'
_OTHER_TURN = '"turn":{"index":1,"count":2,"role":"user"}'


def test_a_v2_text_a_later_key_overrides_is_never_a_siblings_text() -> None:
    """A ``text`` key after the first (as written, or escaped) is the text the reader
    reads: such a JSON is never kept, and its siblings decode as each alone."""
    for later in ('"text":"real"', '"\\u0074ext":"real"', '"te\\u0078t":"real"'):
        start = '{"v":2,"id":"abc","kind":"conversation","text":"hi","meta":{},'
        first = f"{start}{later},{_TURN}}}"
        other = first.replace('"hi"', '"other"').replace(_TURN, _OTHER_TURN)
        for json_text in (first, other):
            event = v2_event(json_text)
            got = decode_event(event)
            assert repr(got) == alone(event)
            assert got is not None
            assert got.text == "real"


def test_a_v2_json_with_another_middle_is_no_sibling() -> None:
    """Members between the text and the turn that differ (the same length, or not) from
    the kept ones': read from the JSON, not the kept envelope."""
    start = '{"v":2,"id":"abc","kind":"conversation","text":"hi","meta":'
    first = f'{start}{{"namespace":"team:a"}},"ws":"w",{_TURN}}}'
    for middle in ('{"namespace":"team:b"},"ws":"w"', '{"namespace":"team:a"},"ws":"v"', "{}"):
        other = f'{start}{middle},{_OTHER_TURN}}}'.replace('"hi"', '"yo"')
        for json_text in (first, other):
            event = v2_event(json_text)
            assert repr(decode_event(event)) == alone(event)
        got = decode_event(v2_event(other))
        assert got is not None
        assert (str(got.meta.namespace), got.ws) != ("team:a", "w")


def test_a_v2_json_that_does_not_start_as_written_is_never_kept() -> None:
    """A JSON whose members come in another order is not cut where the written head
    would end (here inside a string, on a number): its siblings read whole."""
    head = '{"v":2,"id":"abc","kind":"conversation","text":'
    start = '{"text":"hi","ws":"'
    pad = "w" * (len(head) - len(start))  # the head's end falls on the "1" below
    middle = '","v":2,"id":"abc","kind":"conversation","meta":{},'
    first = f"{start}{pad}123{middle}{_TURN}}}"
    assert first[len(head)] == "1"
    other = f'{head}"yo"{middle}{_OTHER_TURN}}}'  # not JSON: "yo"" ...
    for json_text in (first, other):
        event = v2_event(json_text)
        assert repr(decode_event(event)) == alone(event)
    assert decode_event(v2_event(first)) is not None
    assert decode_event(v2_event(other)) is None


def _whole_reads(monkeypatch: Any, json_texts: List[str]) -> int:
    """How many of ``json_texts`` (v3 events in a row, in a new thread: nothing kept
    before) were read whole; each decodes as it does alone."""
    whole: List[Optional[str]] = []
    parse = getattr(codec, "parse_scanned")  # noqa: B009 (patched below)

    def counting(value: Any, *, text: Optional[str] = None) -> Any:
        whole.append(text)
        return parse(value, text=text)

    monkeypatch.setattr(codec, "parse_scanned", counting)
    events = [v3_event(json_text, "t") for json_text in json_texts]
    got = [repr(env) for env in decoded_in_a_thread(events)]
    count = len(whole)
    monkeypatch.setattr(codec, "parse_scanned", parse)
    assert got == [alone(event) for event in events]
    assert "None" not in got
    return count


def test_only_shallow_envelopes_and_turns_are_read_as_siblings(monkeypatch: Any) -> None:
    """Kept only: a JSON of at most 64 brackets; read so only: a turn of known members
    (deeper values go to the full read, whose parser's recursion decides)."""
    start = '{"v":3,"id":"abc","kind":"conversation","text":"","meta":{}'
    turns = [_TURN, _OTHER_TURN, _TURN]
    assert _whole_reads(monkeypatch, [f"{start},{turn}}}" for turn in turns]) == 1
    deep = ',"x":' + "[" * 70 + "]" * 70
    assert _whole_reads(monkeypatch, [f"{start}{deep},{turn}}}" for turn in turns]) == 3
    calls = ',"tool_calls":[{"name":"g","x":1}]}'
    odd = [_TURN, _OTHER_TURN[:-1] + ',"x":[[1]]}', _TURN[:-1] + calls]
    odd_reads = _whole_reads(monkeypatch, [f"{start},{turn}}}" for turn in [_TURN, *odd]])
    assert odd_reads == 3  # the first, and the two with members the reader ignores


def _runs() -> List[List[Envelope]]:
    """A written conversation's envelopes, and a document's pieces (built as the codec
    builds them, smaller)."""
    meta = MemoryMeta(namespace=Namespace.parse("team:acme"), tags=("a",))
    turns = [
        Turn(Role.USER, "hi"),
        Turn(Role.ASSISTANT, "yes", None, (ToolCallRef("grep", "c1"),)),
        Turn(Role.TOOL, "out"),
        Turn(Role.USER, "bye"),
    ]
    whole = envelopes(Document(TextBody("x"), "T", "text/plain", meta))[0]
    pieces = [
        replace(whole, text=f"piece {n}", chunk=ChunkInfo(n, 3, (n + 1, n + 2), "Intro"))
        for n in range(3)
    ]
    return [envelopes(StoreItem.conversation(turns, meta)), pieces]


def _event(env: Envelope, fmt: int) -> Dict[str, Any]:
    if fmt == 2:
        return v2_event(encode(env))
    encoded = encode_checked(env)
    context = {"labels": list(encoded.labels)}
    return {"id": "e", "content": {"text": encoded.text}, "context": context}


def test_written_siblings_are_read_from_their_own_members(monkeypatch: Any) -> None:
    """Not vacuous: a written conversation's turns and a document's pieces, v3 and v2,
    are read whole once (the first; the others from their turn or chunk), and
    decode to the envelopes built."""
    whole: List[Optional[str]] = []
    parse = getattr(codec, "parse_scanned")  # noqa: B009 (patched below)

    def counting(value: Any, *, text: Optional[str] = None) -> Any:
        whole.append(text)
        return parse(value, text=text)

    monkeypatch.setattr(codec, "parse_scanned", counting)
    for built in _runs():
        for fmt in (3, 2):
            events = [_event(env, fmt) for env in built]
            whole.clear()
            got = decoded_in_a_thread(events)
            assert len(whole) == 1, (fmt, len(whole))  # the first alone
            assert [repr(env) for env in got] == [alone(event) for event in events]
            assert got == [replace(env, v=fmt) for env in built]

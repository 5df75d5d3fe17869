"""The decoder's last meta (a thread's meta read again when the next is equal) changes nothing.

Events decoded one after another, each meta equal to the one before, one of two
twins (a member changed to a value Python finds equal but the reader may not:
``true`` then ``1``, ``0`` then ``-0.0``...) or a new one, decode exactly as the reference
reader decodes each alone; the memo is per thread and keeps only the metas
``common_meta`` read (no ``derive``, no full read); a value the caller holds is
never kept.
"""

from __future__ import annotations

import copy
import json
import threading
from typing import Any, Dict, List, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.cortex.envelope import reader as reader_module
from cortex_memory.cortex.envelope.codec import decode_event
from cortex_memory.cortex.envelope.reader import parse_envelope, parse_scanned

from .test_read_fast_paths import envelopes_json, metas_json, reference_parse_envelope

# A member set to one value, then to another that Python finds equal (or nearly),
# which the reader may read differently: the second meta must not be the first's.
_TWINS: List[Tuple[str, Any, Any]] = [
    ("derive", True, 1), ("derive", 1, True), ("derive", False, 0), ("derive", True, 1.0),
    ("language", "1", 1), ("tags", ["a"], ["a", 1]), ("tags", ["1"], [1]),
    ("tags", [], None), ("source", {"kind": "agent", "id": "x"}, {"kind": "agent", "id": 1}),
    ("source", {"kind": "agent", "n": 1}, {"kind": "agent", "n": True}),
    ("unknown", 1, True), ("unknown", 0, -0.0),
    ("observed_at", "2025-01-02T03:04:05Z", "2025-01-02T03:04:05.000000001Z"),
    ("turns", {"first": 0, "last": 1}, {"first": 0.0, "last": True}),
    ("namespace", "team:alpha", None), ("namespace", "team:alpha", "nope"),
]  # fmt: skip


@st.composite
def meta_runs(draw: st.DrawFn) -> List[Dict[str, Any]]:
    """Metas in a row: each a copy of the one before, a twin pair, or a new one."""
    out = [draw(metas_json())]
    for _ in range(draw(st.integers(1, 6))):
        step = draw(st.sampled_from(["copy", "twins", "new"]))
        if step == "new":
            out.append(draw(metas_json()))
        elif step == "copy":
            out.append(copy.deepcopy(out[-1]))
        else:
            key, first, second = draw(st.sampled_from(_TWINS))
            for member in (first, second):
                meta = copy.deepcopy(out[-1])
                meta[key] = copy.deepcopy(member)
                out.append(meta)
    return out


def _run_envelopes(draw_env: Dict[str, Any], metas: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for meta in metas:
        value = dict(draw_env)
        value["meta"] = meta
        out.append(value)
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(envelopes_json(), meta_runs(), st.text(max_size=4))
def test_metas_in_a_row_decode_as_each_alone(
    value: Dict[str, Any], metas: List[Dict[str, Any]], text: str
) -> None:
    for one in _run_envelopes(value, metas):
        # What the decoder hands it: a value it has just parsed (a JSON round trip).
        got = parse_scanned(json.loads(json.dumps(one)), text=text)
        expected = reference_parse_envelope(one, text=text)
        assert repr(got) == repr(expected)
        if got is not None and got.confidence == got.confidence:  # NaN never equals itself
            assert got == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta_runs(), st.text(min_size=1, max_size=6))
def test_events_in_a_row_decode_as_each_alone(metas: List[Dict[str, Any]], text: str) -> None:
    """Through decode_event: v3 parts (written order, one part) and v2 texts."""
    for meta in metas:
        value = {"v": 3, "id": "abc", "kind": "learning", "text": "", "meta": meta}
        part = "tm:e:00:" + json.dumps(value, separators=(",", ":"))
        event = {"id": "e", "content": {"text": text}, "context": {"labels": ["tm:i:1", part]}}
        v2 = dict(value, v=2, text=text)
        event2 = {"id": "e", "content": {"text": json.dumps(v2)}}
        for got_event, reference in ((event, value), (event2, v2)):
            got = decode_event(got_event)
            own_text = text if reference is value else None  # v3: the event's text
            expected = reference_parse_envelope(reference, text=own_text)
            assert repr(got) == repr(expected)


def test_an_equal_meta_is_the_meta_read_before() -> None:
    meta = {"namespace": "team:alpha", "tags": ["a"], "source": {"kind": "file", "id": "f"},
            "observed_at": "2025-01-02T03:04:05Z"}  # fmt: skip
    value = {"v": 3, "id": "abc", "kind": "learning", "text": "", "meta": meta}
    first = parse_scanned(json.loads(json.dumps(value)))
    second = parse_scanned(json.loads(json.dumps(value)))
    assert first is not None
    assert second is not None
    assert second.meta is first.meta  # read once
    assert second.meta == MemoryMeta.from_json(meta)
    # Not for a value the caller holds (it may change it), nor a meta with derive.
    held = parse_envelope(json.loads(json.dumps(value)))
    assert held is not None
    assert held.meta is not first.meta
    derived = dict(value, meta=dict(meta, derive=True))
    a, b = (parse_scanned(json.loads(json.dumps(derived))) for _ in range(2))
    assert a is not None
    assert b is not None
    assert a.meta == b.meta
    assert a.meta is not b.meta
    # derive: 1 after derive: true is not ours (a boolean is asked), as read alone.
    wrong = dict(value, meta=dict(meta, derive=1))
    parse_scanned(json.loads(json.dumps(derived)))
    assert parse_scanned(json.loads(json.dumps(wrong))) is None
    assert parse_envelope(wrong) is None


def test_each_thread_has_its_own_last_meta() -> None:
    value = {"v": 3, "id": "abc", "kind": "learning", "text": "", "meta": {"language": "en"}}
    assert parse_scanned(json.loads(json.dumps(value))) is not None
    here = reader_module._LAST_META.raw
    assert here == {"language": "en"}
    seen: List[Any] = []

    def other() -> None:
        seen.append(reader_module._LAST_META.raw)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [None]

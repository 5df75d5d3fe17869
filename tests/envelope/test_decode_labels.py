"""``decode_event``'s reading of an event's labels gives what the general reader gives.

The decoder looks at the last label first: a written part (``tm:e:NN:``) sends it to
the written layout's shortcut (parts last and in order, no other label holding
``tm:e:``), anything else to a check that no label holds ``tm:e:`` at all (a v2
event's labels), where from_labels would find no part either. Every other
arrangement goes to from_labels. Each is compared with the reference reader (the
code from_labels replaced, then the v2 text).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory.contract.items import LearningKind, Role, StoreItem, Turn
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.cortex.envelope import codec
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import decode, decode_event, encode_checked

from .test_read_fast_paths import envelopes_json, reference_from_labels

# Labels before the parts: no part (some holding tm:e: further in or nearly starting
# with it), or a stray part that from_labels would read (a number, none, a gap).
_OTHERS = st.sampled_from(
    ["tm:i:0123", "kind:learning", "x-tm:e:00:", "tm:e", "tm:E:00:{}", "", "tm:k:tm:e:", "\x00"]
) | st.sampled_from(["tm:e:00:{}", "tm:e:05:x", "tm:e:x", "tm:e:01:"])
_LABEL = _OTHERS | st.text(max_size=12) | st.integers(0, 9) | st.none()


def _reference(text: str, labels: List[Any]) -> Any:
    expected = reference_from_labels(text, labels)
    return expected if expected is not None else decode(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(envelopes_json(), st.lists(_LABEL, min_size=1, max_size=6), st.booleans())
def test_labels_without_a_part_last_decode_as_the_general_reader_reads(
    value: Dict[str, Any], labels: List[Any], with_part: bool
) -> None:
    """The last label no part: the v2 text decides when no label holds a part, and
    from_labels when one may (one placed first, or a label that is not a string)."""
    text = json.dumps(dict(value, v=2), ensure_ascii=False)
    if with_part:
        labels = ["tm:e:00:" + json.dumps(dict(value, v=3)), *labels]
    for got_labels in (labels, [*labels, "tm:i:x"]):
        event = {"id": "e", "content": {"text": text}, "context": {"labels": got_labels}}
        assert repr(decode_event(event)) == repr(_reference(text, got_labels))


def test_written_v2_events_decode_without_the_general_reader(monkeypatch: Any) -> None:
    """Not vacuous: v2 events as the codec writes them (an empty text; more labels than
    fit) decode to their envelopes with the general reader switched off."""

    def general(text: str, labels: Any) -> None:
        raise AssertionError("the general reader ran")

    # About 17 KB of tags: more than 64 parts of 240 bytes.
    meta = MemoryMeta(tags=tuple(f"t{n:03d}" + "x" * 200 for n in range(80)))
    items: List[StoreItem] = [
        StoreItem.conversation([Turn(Role.USER, "")]),
        StoreItem.learning("prefers helix", LearningKind.FACT, 0.5, meta),
    ]
    events = []
    for item in items:
        for env in envelopes(item):
            encoded = encode_checked(env)
            assert not any(label.startswith("tm:e:") for label in encoded.labels)
            context = {"labels": list(encoded.labels)}
            events.append((env, {"id": "e", "content": {"text": encoded.text}, "context": context}))
    assert events
    monkeypatch.setattr(codec, "from_labels", general)
    for env, event in events:
        assert codec.decode_event(event) == replace(env, v=2)  # read as v2


# An 8-character prefix in place of a part's own: another number, a near miss, no part.
_PREFIXES = ["tm:e:00:", "tm:e:01:", "tm:e:07:", "tm:e:0a:", "tm:e:00 ", "xxxxxxxx", "tm:i:00:"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(envelopes_json(), st.integers(1, 4), st.text(max_size=4), st.data())
def test_parts_near_the_written_layout_decode_as_the_general_reader_reads(
    value: Dict[str, Any], cut: int, text: str, data: st.DataObject
) -> None:
    """Written parts (one to four), maybe one prefix changed, other labels before them:
    the shortcut reads only what from_labels would read, as it reads it."""
    joined = json.dumps(dict(value, v=3), ensure_ascii=False)
    step = max(1, -(-len(joined) // cut))
    pieces = [joined[at : at + step] for at in range(0, len(joined), step)]
    labels: List[Any] = [f"tm:e:{n:02d}:{piece}" for n, piece in enumerate(pieces)]
    at = data.draw(st.integers(-1, len(labels) - 1))
    if at >= 0:
        labels[at] = data.draw(st.sampled_from(_PREFIXES)) + pieces[at]
    labels = data.draw(st.lists(_LABEL, max_size=3)) + labels
    event = {"id": "e", "content": {"text": text}, "context": {"labels": labels}}
    assert repr(decode_event(event)) == repr(_reference(text, labels))


def _written_events() -> List[Dict[str, Any]]:
    """Events as the codec writes them, in one, two and three parts."""
    meta = MemoryMeta(tags=("plan", "release"), thread_id="t" * 200)
    items: List[StoreItem] = [
        StoreItem.learning("prefers helix", LearningKind.FACT, 0.5),
        StoreItem.learning("prefers helix", LearningKind.FACT, 0.5, meta),
        StoreItem.conversation([Turn(Role.USER, "hi"), Turn(Role.ASSISTANT, "yes")], meta),
        StoreItem.document("a document", replace(meta, tags=("x" * 300,))),
    ]
    out = []
    for item in items:
        for env in envelopes(item):
            encoded = encode_checked(env)
            context = {"labels": list(encoded.labels)}
            out.append({"id": "e", "content": {"text": encoded.text}, "context": context})
    counts = {sum(str(x).startswith("tm:e:") for x in e["context"]["labels"]) for e in out}
    assert counts >= {1, 2, 3}
    return out


_STRAYS: List[Any] = ["tm:e:00:{}", "tm:e:05:x", "tm:e:x", "tm:e:01:", "x-tm:e:00:", 7, None]


def test_written_parts_after_a_stray_label_decode_as_the_general_reader_reads() -> None:
    """Written events, a stray label put first or one part's prefix changed: the same
    envelope or None as the general reader, and the written ones unchanged decode."""
    for event in _written_events():
        labels = event["context"]["labels"]
        text = event["content"]["text"]
        parts = [n for n, label in enumerate(labels) if label.startswith("tm:e:")]
        variants = [[stray, *labels] for stray in _STRAYS]
        for at in parts:
            for prefix in _PREFIXES:
                changed = list(labels)
                changed[at] = prefix + labels[at][8:]
                variants.append(changed)
        assert decode_event(event) is not None
        for got in [labels, *variants]:
            changed_event = {"id": "e", "content": {"text": text}, "context": {"labels": got}}
            assert repr(decode_event(changed_event)) == repr(_reference(text, got)), got

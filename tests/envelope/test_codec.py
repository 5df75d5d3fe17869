"""v3 labels and parts, the v2 fallback, lookup and readable labels, decoding (§7.6–§7.10)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind, LearningKind, Role, StoreItem, Turn
from cortex_memory.contract.jsonfmt import dumps
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind, ToolCallRef
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import (
    MAX_EVENT_BYTES,
    Encoded,
    decode,
    decode_event,
    encode,
    encode_checked,
    from_labels,
    part_labels,
)
from cortex_memory.cortex.envelope.digests import path_digest
from cortex_memory.cortex.envelope.envelope import ChunkInfo, Envelope, TurnInfo
from cortex_memory.cortex.envelope.labels import (
    item_label,
    lookup_labels,
    narrowing,
    readable_labels,
)
from cortex_memory.cortex.envelope.request import experience_request
from cortex_memory.errors import InvalidRequestError

TEA_ID = "126a17b5bee85d0816f1fcdf6269c39c791aff3f"  # contract.md §5.4


def h16(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


def event(enc: Encoded, event_id: str = "evt_1") -> Dict[str, Any]:
    return {"id": event_id, "content": {"text": enc.text}, "context": {"labels": list(enc.labels)}}


def one(item: StoreItem) -> Envelope:
    [env] = envelopes(item)
    return env


# ------------------------------------------------------------------ golden v3


def test_tea_learning_v3_golden() -> None:
    env = one(StoreItem.learning("tea", LearningKind.PREFERENCE, 0.9))
    assert env.id == TEA_ID
    enc = encode_checked(env)
    assert enc.version == 3
    assert enc.text == "tea"
    assert enc.labels == (
        "tm:i:" + h16(TEA_ID),
        "tm:k:" + h16("agent"),
        "kind:learning",
        'tm:e:00:{"v":3,"id":"126a17b5bee85d0816f1fcdf6269c39c791aff3f","kind":"learning",'
        '"text":"","meta":{"source":{"kind":"agent"}},"learning_kind":"preference",'
        '"confidence":0.9}',
    )
    assert encode(env) == (
        '{"v":2,"id":"126a17b5bee85d0816f1fcdf6269c39c791aff3f","kind":"learning",'
        '"text":"tea","meta":{"source":{"kind":"agent"}},"learning_kind":"preference",'
        '"confidence":0.9}'
    )


def test_envelope_member_order_with_every_member() -> None:
    meta = MemoryMeta(
        namespace=Namespace.parse("team:acme"),
        workspace="/w",
        folder="/w/d",
        file_path="/w/d/f.md",
        observed_at=datetime(2025, 1, 2, 3, 4, 5, 120000, tzinfo=timezone.utc),
        derive=False,
        tags=("a",),
    )
    env = Envelope(
        id="i",
        kind=ItemKind.CONVERSATION,
        text="t",
        meta=MemoryMeta(),
        title="T",
        mime="text/plain",
        learning_kind=LearningKind.FACT,
        confidence=0.1,
        evidence="e",
        turn=TurnInfo(
            1, 2, Role.TOOL, datetime(2025, 1, 2, tzinfo=timezone.utc), (ToolCallRef("n", "c"),)
        ),
        chunk=ChunkInfo(0, 3, (1, 2), "S"),
    )
    [built] = envelopes(StoreItem.document("x", meta))
    env = replace(env, meta=built.meta, ws=built.ws, fp=built.fp, fd=built.fd)
    text = encode(env)
    keys = list(json.loads(text))
    assert keys == [
        "v", "id", "kind", "text", "meta", "ws", "fp", "fd", "title", "mime",
        "learning_kind", "confidence", "evidence", "turn", "chunk",
    ]  # fmt: skip
    assert '"meta":{"namespace":"team:acme","file_path":"f.md","source":{"kind":"agent"},' in text
    assert '"tags":["a"],"observed_at":"2025-01-02T03:04:05.120Z","derive":false}' in text
    assert '"confidence":0.1,' in text
    assert (
        '"turn":{"index":1,"count":2,"role":"tool","at":"2025-01-02T00:00:00Z",'
        '"tool_calls":[{"name":"n","id":"c"}]},"chunk":{"index":0,"count":3,"pages":[1,2],'
        '"section":"S"}}'
    ) in text


# --------------------------------------------------------------------- parts


def test_part_labels_ascii() -> None:
    text = "a" * 500
    labels = part_labels(text)
    assert labels == ["tm:e:00:" + "a" * 240, "tm:e:01:" + "a" * 240, "tm:e:02:" + "a" * 20]


@pytest.mark.parametrize("char", ["é", "€", "😀"])
@pytest.mark.parametrize("lead", [0, 1, 2, 3])
def test_part_labels_cut_on_character_boundaries(char: str, lead: int) -> None:
    text = "x" * lead + char * 200
    labels = part_labels(text)
    slices = [label.split(":", 3)[3] for label in labels]
    assert "".join(slices) == text
    for n, (label, piece) in enumerate(zip(labels, slices)):
        assert label.startswith(f"tm:e:{n:02d}:")
        size = len(piece.encode("utf-8"))
        assert size <= 240
        if n < len(slices) - 1:
            # Backed off at most one character short of 240 bytes.
            assert size > 240 - len(char.encode("utf-8"))


def test_part_labels_empty() -> None:
    assert part_labels("") == []


# ---------------------------------------------------------- lookup labels


def test_lookup_labels_in_field_order() -> None:
    meta = MemoryMeta(
        workspace="team-handbook",
        language="rust",
        repo="o/r",
        thread_id="t1",
        agent_id="a1",
        source=Source(SourceKind.FOLDER, "src_1"),
    )
    assert lookup_labels("ID", meta) == [
        "tm:i:" + h16("ID"),
        "tm:t:" + h16("t1"),
        "tm:s:" + h16("src_1"),
        "tm:r:" + h16("o/r"),
        "tm:w:" + h16("team-handbook"),
        "tm:a:" + h16("a1"),
        "tm:l:" + h16("rust"),
        "tm:k:" + h16("folder"),
    ]
    assert lookup_labels("ID", MemoryMeta()) == ["tm:i:" + h16("ID"), "tm:k:" + h16("agent")]
    assert item_label("ID") == "tm:i:" + h16("ID")


def test_absolute_workspace_label_comes_after_the_source_kind() -> None:
    env = one(StoreItem.document("body", MemoryMeta(workspace="/Users/ann/w", language="en")))
    labels = encode_checked(env).labels
    assert labels[:4] == (
        "tm:i:" + h16(env.id),
        "tm:l:" + h16("en"),
        "tm:k:" + h16("agent"),
        "tm:w:" + h16("/Users/ann/w"),
    )
    assert env.ws == path_digest("/Users/ann/w")
    logical = one(StoreItem.document("body", MemoryMeta(workspace="wk", language="en")))
    assert encode_checked(logical).labels[:4] == (
        "tm:i:" + h16(logical.id),
        "tm:w:" + h16("wk"),
        "tm:l:" + h16("en"),
        "tm:k:" + h16("agent"),
    )


def test_redacted_ids_are_hashed_as_sent() -> None:
    env = one(StoreItem.document("b", MemoryMeta(thread_id="+15551234567")))
    assert env.meta.thread_id == "tm-redacted:8a59780bb8cd2ba022bfa5ba2ea3b6e0"
    assert encode_checked(env).labels[1] == "tm:t:" + h16(
        "tm-redacted:8a59780bb8cd2ba022bfa5ba2ea3b6e0"
    )


# -------------------------------------------------------- readable labels

APP_THREAD = "thread-0f8fad5b-d9cb-469f-a165-70867728950e"


def test_readable_labels_in_order() -> None:
    meta = MemoryMeta(
        agent_id="writer", thread_id=APP_THREAD, file_path="/a/b/notes.md", language="en"
    )
    env = replace(one(StoreItem.document("b", meta)), chunk=ChunkInfo(0, 2, (3, 4), "Intro"))
    assert readable_labels(env) == [
        "kind:document",
        "agent:writer",
        "thread:" + APP_THREAD,
        "file:notes.md",
        "page:3-4",
        "section:Intro",
    ]
    assert readable_labels(replace(env, chunk=ChunkInfo(1, 2, (5, 5), None)))[-1] == "page:5"
    assert not any(label.startswith("lang:") for label in readable_labels(env))


@pytest.mark.parametrize(
    "thread",
    ["t1", "thread-0F8FAD5B-D9CB-469F-A165-70867728950E", APP_THREAD + "\n", "x" + APP_THREAD],
)
def test_thread_label_only_for_app_threads(thread: str) -> None:
    env = one(StoreItem.document("b", MemoryMeta(thread_id=thread)))
    assert not any(label.startswith("thread:") for label in readable_labels(env))


@pytest.mark.parametrize("agent", ["", "  ", "\u3000"])
def test_no_agent_label_for_a_blank_agent(agent: str) -> None:
    env = one(StoreItem.document("b", MemoryMeta(agent_id=agent)))
    assert readable_labels(env) == ["kind:document"]


def test_readable_label_over_256_bytes_is_dropped() -> None:
    fits = "é" * 125  # "file:" + 250 bytes = 255
    env = one(StoreItem.document("b", MemoryMeta(file_path=fits)))
    assert "file:" + fits in readable_labels(env)
    env = one(StoreItem.document("b", MemoryMeta(file_path=fits + "é")))  # 257 bytes
    assert readable_labels(env) == ["kind:document"]
    env = one(StoreItem.document("b", MemoryMeta(file_path="x" * 251)))  # 256 bytes: kept
    assert len(readable_labels(env)) == 2


# ---------------------------------------------------------------- v2 fallback


def test_v2_for_an_empty_text() -> None:
    env = one(StoreItem.document("body"))
    enc = encode_checked(replace(env, text=""))
    assert enc.version == 2
    assert enc.text == encode(replace(env, text=""))
    assert enc.labels == ("tm:i:" + h16(env.id), "tm:k:" + h16("agent"))


def test_v2_when_more_than_64_labels() -> None:
    # lookup (2) + readable (1) + parts: 61 parts fit in 64 labels, 62 do not.
    base = one(StoreItem.document("body"))
    empty_tag = len(part_json(replace(base, meta=MemoryMeta(tags=("",)))))
    for parts_wanted, version in ((61, 3), (62, 2)):
        # A JSON of 240 × (k − 1) + 1 bytes is cut into exactly k parts.
        tag = "x" * (240 * (parts_wanted - 1) + 1 - empty_tag)
        env = replace(base, meta=MemoryMeta(tags=(tag,)))
        assert len(part_labels(part_json(env))) == parts_wanted
        enc = encode_checked(env)
        assert enc.version == version
        if version == 2:
            assert enc.text == encode(env)
            assert enc.labels == tuple(lookup_labels(env.id, env.meta))
        else:
            assert len(enc.labels) == 64
            assert enc.text == "body"


def part_json(env: Envelope) -> str:
    return dumps(env.to_json(3, text=""))


def test_too_large_an_event_is_refused() -> None:
    env = one(StoreItem.learning("x" * (MAX_EVENT_BYTES - 100), LearningKind.FACT, 0.5))
    with pytest.raises(InvalidRequestError, match="786432") as info:
        encode_checked(env)
    assert "x" * 50 not in str(info.value)


# ------------------------------------------------------------------ decoding


def test_v3_round_trip_for_every_kind() -> None:
    meta = MemoryMeta(language="en", tags=("a", "b"), source=Source(SourceKind.CONVERSATION, "s"))
    items: List[StoreItem] = [
        StoreItem.document("a document body", meta),
        StoreItem.learning("a fact 😀", LearningKind.FACT, 0.33, meta),
        StoreItem.conversation(
            [
                Turn(Role.USER, "hi", datetime(2025, 5, 6, 7, 8, 9, tzinfo=timezone.utc)),
                Turn(Role.ASSISTANT, "yo", None, (ToolCallRef("grep", "c1"), ToolCallRef("ls"))),
            ],
            meta,
        ),
    ]
    for item in items:
        for env in envelopes(item):
            enc = encode_checked(env)
            assert enc.version == 3
            assert decode_event(event(enc)) == env
            assert from_labels(enc.text, list(reversed(enc.labels))) == env


def test_v2_round_trip_and_bracketed_prefix() -> None:
    env = one(StoreItem.document("body"))
    text = encode(env)
    assert decode(text) == replace(env, v=2)
    assert decode("[user] " + text) == replace(env, v=2)
    assert decode("[anything at all] " + text) == replace(env, v=2)
    assert decode(" \n" + text) == replace(env, v=2)
    assert decode_event({"id": "e", "content": {"text": text}}) == replace(env, v=2)
    assert decode_event(
        {"id": "e", "content": {"text": text}, "context": {"labels": ["tm:i:x"]}}
    ) == (replace(env, v=2))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain text",
        "[user] plain text",
        "[user]" + '{"v":2}',
        "{}",
        "[]",
        "{not json",
        '{"v":3,"id":"i","kind":"document","text":"t","meta":{}}',  # v3 in the text
        '{"v":2,"id":"i","kind":"nope","text":"t","meta":{}}',
        '{"v":2,"id":"i","kind":"document","text":"t"}',  # meta is required
        '{"v":2.0,"id":"i","kind":"document","text":"t","meta":{}}',
        '{"v":true,"id":"i","kind":"document","text":"t","meta":{}}',
        '{"v":2,"id":1,"kind":"document","text":"t","meta":{}}',
        '{"v":2,"id":"i","kind":"document","text":"t","meta":{},"turn":{"index":-1}}',
        '{"v":2,"id":"i","kind":"document","text":"t","meta":{},"chunk":{"index":0,"count":4294967296}}',
        '{"v":2,"id":"i","kind":"document","text":"t","meta":{},"chunk":{"index":0,"count":1,"pages":[1]}}',
        '{"v":2,"id":"i","kind":"learning","text":"t","meta":{},"confidence":"high"}',
        '{"v":2,"id":"i","kind":"learning","text":"t","meta":{},"learning_kind":"guess"}',
        '{"v":2,"id":"i","kind":"document","text":"t","meta":{"namespace":"robot:x"}}',
        '{"v":2,"id":"i","kind":"document","text":"t","meta":{},"fp":"abc"}',
        '{"v":2,"id":"i","kind":"conversation","text":"t","meta":{},'
        '"turn":{"index":0,"count":1,"role":"user","tool_calls":{"name":"x"}}}',
        '{"v":2,"id":"i","kind":"conversation","text":"t","meta":{},'
        '"turn":{"index":0,"count":1,"role":"pilot"}}',
        "[" * 100_000,
    ],
)
def test_decode_refuses_what_is_not_a_v2_envelope(text: str) -> None:
    assert decode(text) is None
    assert decode_event({"id": "e", "content": {"text": text}}) is None


def test_decode_accepts_minimal_and_unknown_members() -> None:
    env = decode('{"v":2,"id":"i","kind":"learning","text":"t","meta":{},"extra":[1,{}]}')
    assert env is not None
    assert env.meta == MemoryMeta()
    assert env.learning_kind is None
    assert env.confidence is None
    env = decode('{"v":2,"id":"i","kind":"document","text":"t","meta":{},"confidence":1e400}')
    assert env is not None
    assert env.confidence == float("inf")


def test_v3_parts_must_be_numbered_0_to_n_minus_1() -> None:
    env = one(
        StoreItem.learning("tea", LearningKind.PREFERENCE, 0.9, MemoryMeta(tags=("x" * 400,)))
    )
    enc = encode_checked(env)
    parts = [label for label in enc.labels if label.startswith("tm:e:")]
    others = [label for label in enc.labels if not label.startswith("tm:e:")]
    assert len(parts) == 3
    assert from_labels("tea", others + parts[::-1]) == env
    assert from_labels("tea", parts[:2]) is None  # cut short: not JSON
    assert from_labels("tea", [parts[0], parts[2]]) is None  # gap
    assert from_labels("tea", [*parts, parts[1]]) is None  # duplicate
    assert from_labels("tea", parts[1:]) is None  # no 0
    assert from_labels("tea", others) is None  # no parts at all
    renumbered = ["tm:e:" + p[5:7].lstrip("0").rjust(1, "0") + p[7:] for p in parts]
    assert from_labels("tea", renumbered) == env  # "0", "1", "2" are numbers too
    assert from_labels("tea", [*parts, "tm:e:3"]) is None  # a part without ':'
    assert from_labels("tea", [*parts, "tm:e:x3:{}"]) is None  # not a number
    assert from_labels("tea", [*parts, "tm:e:٣:{}"]) is None  # not an ASCII number
    assert from_labels("tea", [*parts, "tm:e::{}"]) is None
    # The text is the event's, whatever the parts say.
    assert from_labels("other", parts) == replace(env, text="other")


def test_v3_parts_of_a_v2_envelope_are_refused() -> None:
    env = one(StoreItem.document("body"))
    v2 = encode(env)
    assert from_labels("body", part_labels(v2)) is None


def test_decode_event_shapes() -> None:
    enc = encode_checked(one(StoreItem.document("body")))
    good = event(enc)
    assert decode_event(good) is not None
    assert decode_event(None) is None
    assert decode_event([good]) is None
    assert decode_event({**good, "id": 7}) is None
    assert decode_event({**good, "content": {"text": None}}) is None
    assert decode_event({**good, "content": "body"}) is None
    assert decode_event({k: v for k, v in good.items() if k != "id"}) is None
    # Non-string labels are ignored; a context that is not an object means no labels.
    assert decode_event({**good, "context": {"labels": [1, None, *enc.labels]}}) is not None
    assert decode_event({**good, "context": "x"}) is None
    assert decode_event({**good, "context": {"labels": "tm:e:00:"}}) is None
    # A broken v3 event whose text is v2 JSON still decodes as v2.
    env = one(StoreItem.document("body"))
    mixed = {"id": "e", "content": {"text": encode(env)}, "context": {"labels": ["tm:e:00:{"]}}
    assert decode_event(mixed) == replace(env, v=2)


def test_turn_time_with_nanoseconds_is_read() -> None:
    text = (
        '{"v":2,"id":"i","kind":"conversation","text":"t","meta":{},'
        '"turn":{"index":0,"count":1,"role":"user","at":"2025-01-02T03:04:05.123456789Z"}}'
    )
    env = decode(text)
    assert env is not None
    assert env.turn is not None
    assert env.turn.at == datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)


NANOS = "2026-01-02T03:04:05.123456789Z"
MICROS = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)


def test_meta_time_with_nanoseconds_is_read_truncated_in_v2_and_v3() -> None:
    # Another writer (TinyMemory, in Rust) may keep nanoseconds; the event is still ours.
    meta = MemoryMeta(observed_at=datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc))
    env = one(StoreItem.learning("nano fact", LearningKind.FACT, 0.5, meta))
    v2 = encode(env).replace("05.123456Z", "05.123456789Z")
    assert NANOS in v2
    decoded = decode(v2)
    assert decoded is not None
    assert decoded.meta.observed_at == MICROS
    assert decoded.id == env.id
    v3_json = dumps(env.to_json(3, text="")).replace("05.123456Z", "05.123456789Z")
    labels = [*lookup_labels(env.id, env.meta), *part_labels(v3_json)]
    v3 = from_labels("nano fact", labels)
    assert v3 is not None
    assert v3.meta.observed_at == MICROS
    assert v3.text == "nano fact"
    assert v3 == replace(env, v=3)


def test_other_bad_meta_still_makes_an_event_not_ours() -> None:
    for meta in (
        '{"observed_at":"yesterday"}',
        '{"observed_at":"2026-01-02T03:04:05.1234567891Z"}',
        '{"observed_at":"' + NANOS + '","tags":"not a list"}',
        '{"observed_at":7}',
    ):
        text = '{"v":2,"id":"i","kind":"learning","text":"t","meta":' + meta + "}"
        assert decode(text) is None, meta


def test_user_input_with_nanoseconds_stays_refused() -> None:
    with pytest.raises(InvalidRequestError, match="sub-microsecond"):
        MemoryMeta.from_json({"observed_at": NANOS})


# ------------------------------------------------------------------ narrowing


def test_narrowing_takes_the_first_set_field_only() -> None:
    both = MetaFilter(thread_id="t1", repo="o/r", language="en", sources=(SourceKind.FILE,))
    assert narrowing(both) == ["tm:t:" + h16("t1")]
    assert narrowing(MetaFilter(repo="o/r", agent_id="a")) == ["tm:r:" + h16("o/r")]
    assert narrowing(MetaFilter(agent_id="a", language="en")) == ["tm:a:" + h16("a")]
    assert narrowing(MetaFilter(language="en")) == ["tm:l:" + h16("en")]
    assert narrowing(MetaFilter(source_id="s", workspace="w")) == ["tm:s:" + h16("s")]
    assert narrowing(MetaFilter(workspace="w", agent_id="a")) == ["tm:w:" + h16("w")]


def test_narrowing_adds_the_redacted_form_of_a_phone_number() -> None:
    value = "+15551234567"
    assert narrowing(MetaFilter(source_id=value)) == [
        "tm:s:" + h16(value),
        "tm:s:" + h16("tm-redacted:8a59780bb8cd2ba022bfa5ba2ea3b6e0"),
    ]


def test_narrowing_by_source_kinds_or_nothing() -> None:
    kinds = (SourceKind.FILE, SourceKind.IMPORT, SourceKind.FILE)
    assert narrowing(MetaFilter(sources=kinds)) == ["tm:k:" + h16("file"), "tm:k:" + h16("import")]
    assert narrowing(MetaFilter()) == []
    assert narrowing(MetaFilter(folder="/a", file_path="/a/b", tags_any=("x",))) == []
    assert narrowing(MetaFilter(kinds=(ItemKind.DOCUMENT,))) == []


@pytest.mark.parametrize(
    ("meta", "flt"),
    [
        (MemoryMeta(workspace="/Users/ann/w"), MetaFilter(workspace="/Users/ann/w")),
        (MemoryMeta(workspace="handbook"), MetaFilter(workspace="handbook")),
        (MemoryMeta(thread_id="+15551234567"), MetaFilter(thread_id="+15551234567")),
        (MemoryMeta(agent_id="writer"), MetaFilter(agent_id="writer")),
        (MemoryMeta.from_source(SourceKind.IMPORT), MetaFilter(sources=(SourceKind.IMPORT,))),
    ],
)
def test_narrowing_labels_are_carried_by_matching_events(meta: MemoryMeta, flt: MetaFilter) -> None:
    labels = encode_checked(one(StoreItem.document("body", meta))).labels
    assert set(narrowing(flt)) & set(labels)


def test_worked_example_of_docs_wire_md() -> None:
    meta = MemoryMeta(
        namespace=Namespace.parse("team:acme/agent:writer"),
        workspace="/Users/ann/work",
        file_path="/Users/ann/notes/prefs.md",
        language="en",
        agent_id="writer",
    )
    env = one(StoreItem.learning("prefers helix", LearningKind.PREFERENCE, 0.8, meta))
    assert env.id == "54c865e9dd8b36846f0f680d1e9d3a01fe1c9836"
    enc = encode_checked(env)
    assert enc.text == "prefers helix"
    doc = (Path(__file__).resolve().parents[2] / "docs" / "wire.md").read_text(encoding="utf-8")
    # The fence's first line holds its language tag (if any), not a label.
    block = doc.split("## 9. Worked example")[1].split("```")[1].split("\n", 1)[1]
    documented = [line.split("  ")[0] for line in block.strip().splitlines()]
    assert documented == list(enc.labels)
    request = experience_request(env, enc)
    assert request.scope == "app:tinymemory/team:acme/agent:writer/app:learnings"
    assert request.idempotency_key in doc

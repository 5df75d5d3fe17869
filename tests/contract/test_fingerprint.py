"""The fingerprint reproduces every golden vector of contract.md §5.4 byte for byte."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from cortex_memory.contract import (
    Conversation,
    Document,
    Learning,
    LearningKind,
    MemoryMeta,
    Namespace,
    ObservedActor,
    Role,
    Source,
    SourceKind,
    StoreItem,
    TextBody,
    ToolCallRef,
    Turn,
    TurnRange,
    fingerprint,
    fingerprint_json,
    is_item_id,
)

AGENT = '"meta":{"source":{"kind":"agent"}}'
PLAN_AT = datetime(2025, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
WORKSPACE = "tinymemory-conformance/abc"


def round_trip_document() -> Document:
    return Document(
        TextBody("tmconfabc document body"),
        title="Round trip",
        mime="text/markdown",
        meta=MemoryMeta(workspace=WORKSPACE, tags=("roundtrip",)),
    )


def round_trip_conversation() -> Conversation:
    return Conversation(
        (
            Turn(Role.USER, "tmconfabc what is in the plan", PLAN_AT),
            Turn(
                Role.ASSISTANT,
                "the plan has three steps",
                PLAN_AT,
                (ToolCallRef("read_plan", "call-1"),),
            ),
        ),
        MemoryMeta(workspace=WORKSPACE, source=Source(SourceKind.CONVERSATION, "tmconfabc-thread")),
    )


def tricky_learning() -> Learning:
    text = 'Ünïcode "quoted" back\\slash tab\t nl\n ctl\x01 del\x7f emoji 😀 </script>'
    meta = MemoryMeta(
        namespace=Namespace.parse("team:acme/agent:writer"),
        workspace="w",
        folder="/a/b",
        file_path="/a/b/c.rs",
        language="rust",
        repo="o/r",
        commit="abc",
        url="https://x.test/a?b=1&c=2",
        thread_id="t1",
        turns=TurnRange(4, 5),
        agent_id="a1",
        tool_call=ToolCallRef("grep"),
        source=Source(SourceKind.FOLDER, "src_1"),
        tags=("x", "y"),
        derive=False,
    )
    return Learning(text, LearningKind.FACT, 0.75, "said so twice", meta)


def test_document_same() -> None:
    item = StoreItem.document("same")
    assert fingerprint_json(item) == '{"type":"document","body":{"text":"same"},' + AGENT + "}"
    assert item.fingerprint() == "38b3ec78a0b76a31c5ca5c96403d8135d5d44390"


def test_learning_tea() -> None:
    item = StoreItem.learning("tea", LearningKind.PREFERENCE, 0.9)
    assert fingerprint_json(item) == (
        '{"type":"learning","text":"tea","kind":"preference","confidence":0.9,' + AGENT + "}"
    )
    assert item.fingerprint() == "126a17b5bee85d0816f1fcdf6269c39c791aff3f"


def test_learning_clears_observation_and_tool_call_id() -> None:
    item = StoreItem.learning(
        "Prefers tea",
        LearningKind.PREFERENCE,
        0.8,
        MemoryMeta(
            namespace=Namespace.parse("user:alice"),
            tool_call=ToolCallRef("memory", "call-first"),
            observed_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        ),
    )
    assert fingerprint_json(item).endswith(
        '"confidence":0.8,"meta":{"namespace":"user:alice","tool_call":{"name":"memory"},'
        '"source":{"kind":"agent"}}}'
    )
    assert item.fingerprint() == "43c117767a12f3cc4db40e75f586368f0f89e92c"
    # The item's own JSON still carries what the fingerprint leaves out.
    assert item.to_json()["meta"]["tool_call"] == {"name": "memory", "id": "call-first"}
    assert item.to_json()["meta"]["observed_at"] == "2026-01-02T03:04:05Z"


def test_round_trip_document() -> None:
    item = round_trip_document()
    assert fingerprint_json(item) == (
        '{"type":"document","title":"Round trip","body":{"text":"tmconfabc document body"},'
        '"mime":"text/markdown","meta":{"workspace":"tinymemory-conformance/abc",'
        '"source":{"kind":"agent"},"tags":["roundtrip"]}}'
    )
    assert item.fingerprint() == "e750a2cfb300d85f28a5a5101c3e20e2967e420d"


def test_round_trip_conversation() -> None:
    item = round_trip_conversation()
    assert fingerprint_json(item) == (
        '{"type":"conversation","turns":[{"role":"user","text":"tmconfabc what is in the plan",'
        '"at":"2025-05-06T07:08:09Z"},{"role":"assistant","text":"the plan has three steps",'
        '"at":"2025-05-06T07:08:09Z","tool_calls":[{"name":"read_plan","id":"call-1"}]}],'
        '"meta":{"workspace":"tinymemory-conformance/abc",'
        '"source":{"kind":"conversation","id":"tmconfabc-thread"}}}'
    )
    assert item.fingerprint() == "e178648757935c3169d21948a7f40caa92ee1ca1"


@pytest.mark.parametrize(
    ("confidence", "written", "expected"),
    [
        (0.0, "0.0", "c7ea5acec6647ef0814d3c737299f758ee9b9528"),
        (1.0, "1.0", "cf90a154f8f743380a48b0c2a5365b25c086509a"),
        (0.1, "0.1", "d39e6033aa8bbffd799daeab75c617606032f87e"),
        (0.33, "0.33", "bb28dabaf5d88dae140c621bc9361f0f9980d5c9"),
        (0.123456789, "0.12345679", "674fd2d9e3b67ce2c965ce9cc51b4b8981bf27a6"),
        (1e-6, "0.000001", "76f49cdb107c62656b8218a20833acce08db0783"),
    ],
)
def test_confidence_vectors(confidence: float, written: str, expected: str) -> None:
    item = StoreItem.learning("x", LearningKind.OTHER, confidence)
    assert f'"confidence":{written},' in fingerprint_json(item)
    assert item.fingerprint() == expected


def test_conversation_with_millisecond_and_microsecond_times() -> None:
    item = Conversation(
        (
            Turn(Role.SYSTEM, "s", datetime(2023, 11, 14, 22, 13, 20, 120000, tzinfo=timezone.utc)),
            Turn(
                Role.TOOL,
                "t",
                datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=timezone.utc),
                (ToolCallRef("n"),),
            ),
        )
    )
    assert datetime.fromtimestamp(1700000000, timezone.utc) == datetime(
        2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc
    )
    text = fingerprint_json(item)
    assert '"at":"2023-11-14T22:13:20.120Z"' in text
    assert '"at":"2023-11-14T22:13:20.123456Z"' in text
    assert item.fingerprint() == "3058da62442505881635430cad869fcec9549b42"


def test_all_fields_learning_with_the_tricky_string() -> None:
    item = tricky_learning()
    text = fingerprint_json(item)
    assert text.startswith('{"type":"learning","text":"Ünïcode \\"quoted\\" back\\\\slash tab\\t')
    assert "ctl\\u0001 del\x7f emoji 😀 </script>" in text
    assert text.endswith(
        '"meta":{"namespace":"team:acme/agent:writer","workspace":"w","folder":"/a/b",'
        '"file_path":"/a/b/c.rs","language":"rust","repo":"o/r","commit":"abc",'
        '"url":"https://x.test/a?b=1&c=2","thread_id":"t1","turns":{"first":4,"last":5},'
        '"agent_id":"a1","tool_call":{"name":"grep"},"source":{"kind":"folder","id":"src_1"},'
        '"tags":["x","y"],"derive":false}}'
    )
    assert item.fingerprint() == "fc5269f6e8f15678e01b0f5e0a9cbdaf4dd81342"


def test_excluded_fields_do_not_change_the_id() -> None:
    base = tricky_learning()
    actor = ObservedActor("user:priya@acme.com", "Priya")
    changed = base.with_meta(
        MemoryMeta(
            **{
                **{f: getattr(base.meta, f) for f in base.meta.__dataclass_fields__},
                "observed_at": datetime(2001, 1, 1, tzinfo=timezone.utc),
                "observed_actor": actor,
                "tool_call": ToolCallRef("grep", "another-call"),
            }
        )
    )
    assert changed != base
    assert changed.fingerprint() == base.fingerprint()


def test_consequences() -> None:
    root = StoreItem.document("same")
    placed = StoreItem.document("same", MemoryMeta(namespace=Namespace.parse("agent:a")))
    assert placed.fingerprint() != root.fingerprint()
    assert StoreItem.document("same", MemoryMeta(derive=False)).fingerprint() != root.fingerprint()
    assert StoreItem.document("same", MemoryMeta(derive=None)).fingerprint() == root.fingerprint()
    assert StoreItem.document("same", MemoryMeta(tags=("t",))).fingerprint() != root.fingerprint()
    # Tool-call ids inside turns are conversation content and count.
    with_id = Conversation((Turn(Role.TOOL, "t", None, (ToolCallRef("n", "1"),)),))
    other_id = Conversation((Turn(Role.TOOL, "t", None, (ToolCallRef("n", "2"),)),))
    assert with_id.fingerprint() != other_id.fingerprint()
    # Confidence counts after float32 rounding only.
    a = StoreItem.learning("x", LearningKind.FACT, 1.00000001)
    assert a.fingerprint() == StoreItem.learning("x", LearningKind.FACT, 1.0).fingerprint()


def test_helpers() -> None:
    item = StoreItem.document("same")
    assert fingerprint(item) == item.fingerprint()
    assert is_item_id(item.fingerprint())
    assert not is_item_id(item.fingerprint().upper())
    assert not is_item_id(item.fingerprint()[:-1])
    assert not is_item_id(None)


def test_fingerprint_is_stable_across_copies() -> None:
    import copy
    import pickle

    item = round_trip_conversation()
    first = item.fingerprint()
    for clone in (copy.deepcopy(item), pickle.loads(pickle.dumps(item))):
        assert clone == item
        assert clone.fingerprint() == first
    assert StoreItem.from_json(item.to_json()).fingerprint() == first


def test_lone_surrogates_hash_without_raising() -> None:
    assert is_item_id(StoreItem.document("\ud800").fingerprint())


def test_long_texts_are_written_and_hashed_in_pieces_with_the_same_bytes() -> None:
    from cortex_memory.contract.fingerprint import hash_json, hash_value
    from cortex_memory.contract.jsonfmt import LONG_STR, dumps, write

    # Escapes, non-ASCII, astral characters and lone surrogates across piece boundaries.
    unit = 'a"b\\c\nd\u00e9\u4e2d\U0001f600\ud800\x01'
    long_text = (unit * (3 * LONG_STR // len(unit) + 7))[: 3 * LONG_STR + 5]
    values = [
        long_text,
        {"type": "document", "body": {"text": long_text}, "meta": {"tags": [long_text, "x"]}},
        [long_text, 1, None, {"k": long_text[:10]}],
    ]
    for value in values:
        pieces: list = []
        write(value, pieces.append)
        assert "".join(pieces) == dumps(value)
        assert max(len(p) for p in pieces) <= 6 * LONG_STR + 64  # never the whole text
        assert hash_value(value) == hash_json(dumps(value))
    item = StoreItem.document(long_text)
    assert item.fingerprint() == hash_json(dumps(item.identity_json()))

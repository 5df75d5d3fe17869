"""Items: construction, validation messages, render_text and exact JSON round trips."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any, List

import pytest

from cortex_memory.contract import (
    Conversation,
    Document,
    DocumentBody,
    ItemKind,
    Learning,
    LearningKind,
    MemoryMeta,
    Role,
    StoreItem,
    StoreReceipt,
    TextBody,
    ToolCallRef,
    Turn,
    UriBody,
    validate_many,
)
from cortex_memory.contract.jsonfmt import F32, dumps
from cortex_memory.errors import InvalidRequestError

CONFIDENCE = "learning confidence must be between 0 and 1"
AT = datetime(2025, 5, 6, 7, 8, 9, 123000, tzinfo=timezone.utc)


def sample_items() -> List[StoreItem]:
    return [
        StoreItem.document("body"),
        Document(UriBody("https://x.test/doc"), title="T", mime="text/plain"),
        Document(TextBody(""), title=""),
        StoreItem.conversation([Turn.new(Role.USER, "hi")]),
        Conversation(
            (
                Turn(Role.SYSTEM, "s", AT),
                Turn(Role.TOOL, "t", None, (ToolCallRef("shell", "c1"), ToolCallRef("grep"))),
            ),
            MemoryMeta(tags=("a",)),
        ),
        Conversation(()),
        StoreItem.learning("tea", LearningKind.PREFERENCE, 0.9),
        Learning("x", LearningKind.CORRECTION, 0.1, "because", MemoryMeta(workspace="w")),
        Learning("nan", LearningKind.OTHER, math.nan),
    ]


def test_kinds_and_accessors() -> None:
    assert [k.value for k in ItemKind] == ["document", "conversation", "learning"]
    assert ItemKind.all() == tuple(ItemKind)
    assert [r.value for r in Role] == ["user", "assistant", "system", "tool"]
    assert [k.value for k in LearningKind] == [
        "preference", "fact", "procedure", "correction", "other",
    ]
    doc, conv, learning = (
        StoreItem.document("d"),
        StoreItem.conversation([Turn.new(Role.USER, "u")]),
        StoreItem.learning("l", LearningKind.FACT, 0.5),
    )
    assert (doc.item_kind, conv.item_kind, learning.item_kind) == (
        ItemKind.DOCUMENT, ItemKind.CONVERSATION, ItemKind.LEARNING,
    )
    assert doc.item_confidence is None
    assert conv.item_confidence is None
    assert learning.item_confidence == 0.5
    assert doc.meta == MemoryMeta()
    assert str(ItemKind.DOCUMENT) == "document"
    assert f"{Role.USER}" == "user"


@pytest.mark.parametrize("item", sample_items(), ids=lambda i: type(i).__name__)
def test_json_round_trip_is_exact(item: StoreItem) -> None:
    wire = item.to_json()
    back = StoreItem.from_json(wire)
    if isinstance(item, Learning) and math.isnan(item.confidence):
        assert isinstance(back, Learning)
        return  # NaN is written as null and cannot come back (only unvalidated items hold it)
    assert back == item
    assert dumps(back.to_json()) == dumps(wire)
    assert type(back).from_json(wire) == item


def test_json_shapes_and_order() -> None:
    doc = Document(TextBody("b"), title="T", mime="m")
    assert list(doc.to_json()) == ["type", "title", "body", "mime", "meta"]
    assert list(StoreItem.document("b").to_json()) == ["type", "body", "meta"]
    learning = Learning("t", LearningKind.FACT, 0.9, "e")
    wire = learning.to_json()
    assert list(wire) == ["type", "text", "kind", "confidence", "evidence", "meta"]
    assert isinstance(wire["confidence"], F32)
    turn = Turn(Role.ASSISTANT, "x", AT, (ToolCallRef("a", "1"),))
    assert turn.to_json() == {
        "role": "assistant",
        "text": "x",
        "at": "2025-05-06T07:08:09.123Z",
        "tool_calls": [{"name": "a", "id": "1"}],
    }
    assert Turn.new(Role.USER, "x").to_json() == {"role": "user", "text": "x"}
    assert StoreReceipt("id1", True).to_json() == {"id": "id1", "replayed": True}
    assert StoreReceipt.from_json({"id": "id1", "replayed": False}) == StoreReceipt("id1", False)


def test_missing_meta_reads_as_default() -> None:
    item = StoreItem.from_json({"type": "document", "body": {"text": "x"}})
    assert item.meta == MemoryMeta()


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        {},
        {"type": "memo", "body": {"text": "x"}},
        {"type": 3},
        {"type": "document"},
        {"type": "document", "body": "x"},
        {"type": "document", "body": {"text": 1}},
        {"type": "document", "body": {"text": "x", "uri": "y"}},
        {"type": "document", "body": {"html": "x"}},
        {"type": "document", "body": {"text": "x"}, "title": 5},
        {"type": "document", "body": {"text": "x"}, "meta": []},
        {"type": "conversation"},
        {"type": "conversation", "turns": {}},
        {"type": "conversation", "turns": [{"role": "robot", "text": "x"}]},
        {"type": "conversation", "turns": [{"role": "user"}]},
        {"type": "conversation", "turns": [{"role": "user", "text": "x", "at": "now"}]},
        {"type": "conversation", "turns": [{"role": "user", "text": "x", "tool_calls": [{}]}]},
        {"type": "learning", "text": "x", "kind": "fact"},
        {"type": "learning", "text": "x", "kind": "hunch", "confidence": 0.5},
        {"type": "learning", "text": "x", "kind": "fact", "confidence": "0.5"},
        {"type": "learning", "text": "x", "kind": "fact", "confidence": True},
        {"type": "learning", "kind": "fact", "confidence": 0.5},
    ],
)
def test_from_json_refusals(bad: Any) -> None:
    with pytest.raises(InvalidRequestError):
        StoreItem.from_json(bad)


def test_variant_from_json_checks_the_type_tag() -> None:
    with pytest.raises(InvalidRequestError):
        Document.from_json({"type": "learning", "body": {"text": "x"}})
    assert Document.from_json({"body": {"text": "x"}}) == StoreItem.document("x")
    with pytest.raises(InvalidRequestError):
        DocumentBody.from_json({})


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (StoreItem.document(""), "document body must not be empty"),
        (StoreItem.document(" \n\t\u3000"), "document body must not be empty"),
        (Document(UriBody("file:///x")), "unresolved uri; resolve it through a source first"),
        (Conversation(()), "a conversation needs at least one turn"),
        (
            StoreItem.conversation([Turn.new(Role.USER, "a"), Turn.new(Role.ASSISTANT, " ")]),
            "conversation turn text must not be empty",
        ),
        (StoreItem.learning("  ", LearningKind.FACT, 0.5), "learning text must not be empty"),
        (StoreItem.learning("x", LearningKind.FACT, 1.5), CONFIDENCE),
        (StoreItem.learning("x", LearningKind.FACT, -0.1), CONFIDENCE),
        (StoreItem.learning("x", LearningKind.FACT, math.nan), CONFIDENCE),
        (StoreItem.learning("x", LearningKind.FACT, math.inf), CONFIDENCE),
    ],
)
def test_validate_refusals(item: StoreItem, message: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        item.validate()
    assert caught.value.message == message


@pytest.mark.parametrize(
    "item",
    [
        StoreItem.document("\x1f"),  # not Unicode White_Space, so not blank
        StoreItem.document("x", MemoryMeta(workspace="")),
        StoreItem.conversation([Turn.new(Role.USER, "x")]),
        StoreItem.learning("x", LearningKind.FACT, 1.00000001),
        StoreItem.learning("x", LearningKind.FACT, 0.0),
        StoreItem.learning("x", LearningKind.FACT, -0.0),
    ],
)
def test_validate_accepts(item: StoreItem) -> None:
    item.validate()


def test_float32_rounding_on_construction() -> None:
    learning = StoreItem.learning("x", LearningKind.FACT, 1.00000001)
    assert learning.confidence == 1.0
    assert StoreItem.learning("x", LearningKind.FACT, 0.9) == StoreItem.learning(
        "x", LearningKind.FACT, 0.9000000001
    )
    assert StoreItem.learning("x", LearningKind.FACT, 1).confidence == 1.0
    assert StoreItem.learning("x", LearningKind.FACT, 1e300).confidence == math.inf


def test_render_text() -> None:
    assert StoreItem.conversation(
        [Turn.new(Role.USER, "hi"), Turn.new(Role.ASSISTANT, "yo")]
    ).render_text() == "user: hi\nassistant: yo"
    done = Turn(Role.ASSISTANT, "done", None, (ToolCallRef("shell", "call-1"), ToolCallRef("grep")))
    assert StoreItem.conversation([done]).render_text() == (
        "assistant: done [tools: shell (call-1), grep]"
    )
    assert Document(TextBody("body"), title="Title").render_text() == "# Title\n\nbody"
    assert Document(TextBody("body"), title="  ").render_text() == "body"
    assert Document(TextBody("body")).render_text() == "body"
    assert Document(UriBody("https://x.test")).render_text() == "https://x.test"
    assert StoreItem.learning("l", LearningKind.FACT, 0.5).render_text() == "l"


def test_constructors_normalise_and_refuse_wrong_types() -> None:
    conv = Conversation([Turn("user", "x")])  # type: ignore[arg-type,list-item]
    assert conv.turns == (Turn(Role.USER, "x"),)
    plus_one = timezone(timedelta(hours=1))
    turn = Turn(Role.USER, "x", datetime(2025, 1, 1, 1, 0, tzinfo=plus_one))
    assert turn.at == datetime(2025, 1, 1, tzinfo=timezone.utc)
    with pytest.raises(TypeError):
        Turn(Role.USER, "x", datetime(2025, 1, 1))
    with pytest.raises(TypeError):
        Document("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Conversation("turns")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Conversation([("user", "x")])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        Learning("x", LearningKind.FACT, "0.5")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Learning("x", LearningKind.FACT, True)
    with pytest.raises(TypeError):
        StoreItem.document(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError):
        Learning("x", "hunch", 0.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        StoreReceipt("id", "yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        StoreReceipt(7, False)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        StoreReceipt("id", 1)  # type: ignore[arg-type]
    assert StoreReceipt("id", False, []).replaced == ()  # type: ignore[arg-type]


def test_with_meta_and_hashing() -> None:
    item = StoreItem.learning("x", LearningKind.FACT, 0.5)
    moved = item.with_meta(MemoryMeta(workspace="w"))
    assert isinstance(moved, Learning)
    assert moved.meta.workspace == "w"
    assert moved.text == "x"
    assert len({item, StoreItem.learning("x", LearningKind.FACT, 0.5), moved}) == 2


def test_validate_many() -> None:
    good = StoreItem.document("x")
    assert validate_many(iter([good, good])) == (good, good)
    with pytest.raises(InvalidRequestError) as caught:
        validate_many([])
    assert caught.value.message == "store_many takes between 1 and 100 items"
    with pytest.raises(InvalidRequestError):
        validate_many([good] * 101)
    validate_many([good] * 100)
    with pytest.raises(InvalidRequestError) as caught:
        validate_many([good, StoreItem.document(" "), Conversation(())])
    assert caught.value.message == "document body must not be empty"
    with pytest.raises(TypeError):
        validate_many(["x"])  # type: ignore[list-item]


def test_an_item_over_16_mib_of_text_is_refused() -> None:
    from cortex_memory.contract import MAX_ITEM_BYTES

    assert MAX_ITEM_BYTES == 16 * 1024 * 1024
    refused = "an item's text may hold at most 16777216 bytes of UTF-8 (16 MiB)"
    fits = [
        StoreItem.document("x" * MAX_ITEM_BYTES),
        Document(TextBody("é" * (MAX_ITEM_BYTES // 2 - 2)), "ab" + "c" * 2),  # 2 bytes each
        StoreItem.conversation([Turn(Role.USER, "y" * (MAX_ITEM_BYTES // 2))] * 2),
        # 4 bytes a character, MAX_ITEM_BYTES in all: the characters alone prove it fits.
        StoreItem.conversation([Turn(Role.USER, "😀" * (MAX_ITEM_BYTES // 8))] * 2),
        Learning("z" * (MAX_ITEM_BYTES - 8), LearningKind.FACT, 0.5, evidence="12345678"),
    ]
    for item in fits:
        item.validate()
    over = [
        StoreItem.document("x" * (MAX_ITEM_BYTES + 1)),
        Document(TextBody("x" * MAX_ITEM_BYTES), "t"),  # the title counts
        Document(TextBody("é" * (MAX_ITEM_BYTES // 2) + "x")),  # UTF-8 bytes, not characters
        StoreItem.document("😀" * (MAX_ITEM_BYTES // 4 + 1)),
        StoreItem.conversation([Turn(Role.USER, "y" * (MAX_ITEM_BYTES // 2 + 1))] * 2),
        StoreItem.conversation(
            [Turn(Role.USER, "😀" * (MAX_ITEM_BYTES // 8))] * 2 + [Turn(Role.USER, "x")]
        ),
        Learning("z" * (MAX_ITEM_BYTES - 8), LearningKind.FACT, 0.5, evidence="123456789"),
        StoreItem.document("\ud800" * (MAX_ITEM_BYTES // 3 + 1)),  # 3 bytes each, surrogatepass
    ]
    for item in over:
        with pytest.raises(InvalidRequestError) as caught:
            item.validate()
        assert caught.value.message.startswith(refused), caught.value.message
    with pytest.raises(InvalidRequestError, match="16 MiB"):
        validate_many([StoreItem.document("fine"), over[0]])

"""Storing: ids are fingerprints, replays, batches, round trips, validation first."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from cortex_memory.contract import (
    Conversation,
    Document,
    ExportPage,
    GetRequest,
    Learning,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
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
    UriBody,
    WaitFor,
)
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine

AT = datetime(2025, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)

FULL_META = MemoryMeta(
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
    tool_call=ToolCallRef("grep", "call-9"),
    source=Source(SourceKind.FOLDER, "src_1"),
    tags=("x", "y", "x"),
    observed_at=AT,
    derive=False,
    observed_actor=ObservedActor("user:priya@acme.com", "Priya"),
)

ITEMS = [
    Document(TextBody("Ünïcode \"quoted\" back\\slash\ttab 😀 </script>"), title="T", mime="text/x",
             meta=FULL_META),
    Conversation(
        (
            Turn(Role.USER, "what is in the plan", AT),
            Turn(Role.ASSISTANT, "three steps", AT, (ToolCallRef("read_plan", "call-1"),)),
            Turn(Role.TOOL, "done"),
        ),
        MemoryMeta(observed_at=AT),
    ),
    Learning(
        "prefers tea", LearningKind.PREFERENCE, 0.123456789, evidence="said so", meta=FULL_META
    ),
    StoreItem.learning("x", LearningKind.OTHER, 1e-6),
    StoreItem.document("same"),
]


def _export_all(engine: LocalEngine) -> ExportPage:
    return engine.export(ListRequest(MetaFilter(), 100))


def test_items_round_trip_exactly(engine: LocalEngine) -> None:
    receipts = engine.store_many(ITEMS)
    assert [r.id for r in receipts] == [item.fingerprint() for item in ITEMS]
    assert not any(r.replayed for r in receipts)
    page = _export_all(engine)
    # The root and the default-reach view leave out nothing here (no sandboxes).
    assert [e.item for e in page.items] == ITEMS
    assert [e.id for e in page.items] == [r.id for r in receipts]
    hits = engine.get(GetRequest(tuple(r.id for r in receipts)))
    for hit, item in zip(hits, ITEMS):
        assert hit.text == item.render_text()
        assert hit.meta == item.meta
        assert hit.kind is item.item_kind
        assert hit.confidence == item.item_confidence
        assert hit.score == 0.0


def test_golden_id_is_the_receipt_id(mem: LocalEngine) -> None:
    receipt = mem.store(StoreItem.document("same"))
    assert receipt.id == "38b3ec78a0b76a31c5ca5c96403d8135d5d44390"


def test_replay_writes_nothing(engine: LocalEngine) -> None:
    item = StoreItem.document("once")
    first = engine.store(item)
    again = engine.store(item, wait=WaitFor.ACCEPTED)
    assert (first.replayed, again.replayed) == (False, True)
    assert first.id == again.id
    assert len(engine.list(ListRequest(MetaFilter(), 10)).items) == 1


def test_observed_at_does_not_change_identity(mem: LocalEngine) -> None:
    plain = StoreItem.document("fact")
    dated = StoreItem.document("fact", MemoryMeta(observed_at=AT))
    assert mem.store(plain).id == mem.store(dated).id  # a replay, the first copy kept
    (hit,) = mem.list(ListRequest(MetaFilter(), 10)).items
    assert hit.meta.observed_at is None


def test_batch_duplicates_replay_their_first_copy(engine: LocalEngine) -> None:
    a, b = StoreItem.document("a"), StoreItem.document("b")
    receipts = engine.store_many([a, b, a])
    assert [(r.id, r.replayed) for r in receipts] == [
        (a.fingerprint(), False), (b.fingerprint(), False), (a.fingerprint(), True),
    ]
    assert [r.replayed for r in engine.store_many([b, a])] == [True, True]


def test_invalid_batches_write_nothing(engine: LocalEngine) -> None:
    good = StoreItem.document("good")
    with pytest.raises(InvalidRequestError, match="at least one item"):
        engine.store_many([])
    # (More than 100 items is no longer refused: store_many batches them, issue 14.)
    with pytest.raises(InvalidRequestError, match="document body must not be empty"):
        engine.store_many([good, StoreItem.document("  \n")])
    with pytest.raises(InvalidRequestError, match="unresolved uri"):
        engine.store(Document(UriBody("file:///x")))
    with pytest.raises(InvalidRequestError):
        engine.store(StoreItem.learning("t", LearningKind.FACT, 1.5))
    with pytest.raises(InvalidRequestError):
        engine.store(Conversation(()))
    assert engine.list(ListRequest(MetaFilter(), 10)).items == ()


def test_a_failing_item_keeps_the_ones_before_it(engine: LocalEngine) -> None:
    first, second = StoreItem.document("first"), StoreItem.document("second")
    # A lone surrogate passes validation but cannot be written as UTF-8.
    broken = StoreItem.document("broken \ud800 text")
    with pytest.raises(InvalidRequestError, match="lone surrogate"):
        engine.store_many([first, second, broken, StoreItem.document("after")])
    listed = [hit.id for hit in engine.list(ListRequest(MetaFilter(), 10)).items]
    assert listed == [first.fingerprint(), second.fingerprint()]
    receipts = engine.store_many([first, second])
    assert all(r.replayed for r in receipts)


def test_store_type_errors(mem: LocalEngine) -> None:
    with pytest.raises(TypeError):
        mem.store("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        mem.store_many(["text"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        mem.store(StoreItem.document("x"), wait="visible")  # type: ignore[arg-type]


def test_long_texts_are_written_whole_and_indexed(engine: LocalEngine) -> None:
    from cortex_memory.contract import FetchMode, FetchRequest
    from cortex_memory.local.store import LONG_TEXT

    words = "alpha bravo charlie delta echo foxtrot golf hotel\n"
    ascii_doc = StoreItem.document(words * (LONG_TEXT // len(words) + 2) + " zanzibar")
    line = "café crème brûlée ünïcode 中文 😀\n"
    accented = StoreItem.document(line * (LONG_TEXT // 20) + "quokka")
    titled = Document(TextBody("résumé " * (LONG_TEXT // 5)), "Long and titled")
    short = StoreItem.document("a short note")
    batch = [short, ascii_doc, accented, titled, StoreItem.document("another short note")]
    receipts = engine.store_many(batch)
    assert [r.id for r in receipts] == [item.fingerprint() for item in batch]
    listed = engine.list(ListRequest(MetaFilter(), 10)).items
    assert [hit.id for hit in listed] == [item.fingerprint() for item in batch]  # no extra row
    assert [hit.text for hit in listed] == [item.render_text() for item in batch]
    for word, item in (("zanzibar", ascii_doc), ("quokka", accented)):
        hits = engine.fetch(FetchRequest(word, FetchMode.KEYWORD, 5)).hits
        assert [hit.id for hit in hits] == [item.fingerprint()]
    assert all(r.replayed for r in engine.store_many(batch))


def test_a_long_text_with_a_lone_surrogate_keeps_the_items_before_it(engine: LocalEngine) -> None:
    from cortex_memory.local.store import LONG_TEXT

    first = StoreItem.document("first")
    broken = StoreItem.document("é" * LONG_TEXT + "\ud800")
    with pytest.raises(InvalidRequestError, match="lone surrogate"):
        engine.store_many([first, broken])
    assert [hit.id for hit in engine.list(ListRequest(MetaFilter(), 10)).items] == [
        first.fingerprint()
    ]

"""Consolidation on demand and beliefs: support, confidence, reach, and forgetting."""

from __future__ import annotations

import pytest

from cortex_memory.contract import (
    BELIEF_TAG,
    BeliefsRequest,
    ConsolidateRequest,
    ConsolidateStatus,
    Conversation,
    EraseRequest,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    ItemKind,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    Role,
    StoreItem,
    Turn,
    to_f32,
)
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine
from cortex_memory.local.consolidate import statements

ROOT = Namespace.root()
A = Namespace.parse("agent:a")
JOB = Namespace.parse("agent:a/service:job")


def _beliefs(engine: LocalEngine, reach: Reach, query: str = "") -> dict:
    request = BeliefsRequest(reach, 50, query or None)
    return {hit.text: hit for hit in engine.beliefs(request)}


def test_consolidate_builds_beliefs_at_the_node_of_their_sources(engine: LocalEngine) -> None:
    engine.store_many([
        StoreItem.document("Tea is served at noon. Short", MemoryMeta(namespace=A)),
        StoreItem.document("Tea is served at noon!", MemoryMeta(namespace=A, workspace="w")),
        StoreItem.document("The root holds this fact."),
    ])
    receipt = engine.consolidate(ConsolidateRequest(Reach.of(A)))
    assert receipt.status is ConsolidateStatus.COMPLETED
    assert receipt.scopes == 2 * 3  # root and agent:a, every kind
    assert receipt.built == 2
    held = _beliefs(engine, Reach.of(A))
    assert set(held) == {"Tea is served at noon.", "The root holds this fact."}
    tea = held["Tea is served at noon."]
    assert tea.kind is ItemKind.LEARNING
    assert tea.meta.tags == (BELIEF_TAG,)
    assert tea.meta.namespace == A
    assert tea.confidence == to_f32(0.75)  # two sources of 0.5 each
    assert held["The root holds this fact."].confidence == 0.5
    assert set(_beliefs(engine, Reach.exact(ROOT))) == {"The root holds this fact."}
    again = engine.consolidate(ConsolidateRequest(Reach.of(A)))
    assert again.built == 0
    assert _beliefs(engine, Reach.of(A))["Tea is served at noon."].confidence == to_f32(0.75)


def test_beliefs_are_not_items(mem: LocalEngine) -> None:
    mem.store(StoreItem.document("Green tea is good for mornings."))
    mem.consolidate(ConsolidateRequest(Reach.subtree(ROOT)))
    (belief,) = mem.beliefs(BeliefsRequest(Reach.subtree(ROOT), 5))
    assert belief.id not in {h.id for h in mem.list(ListRequest(MetaFilter(), 10)).items}
    assert mem.get(GetRequest((belief.id,))) == []
    assert mem.forget(ForgetTarget.ids([belief.id])).forgotten == 0
    assert mem.beliefs(BeliefsRequest(Reach.subtree(ROOT), 5)) == [belief]
    hits = mem.fetch(FetchRequest("green tea", FetchMode.HYBRID, 10)).hits
    assert belief.id not in {h.id for h in hits}


def test_learnings_conversations_and_derive_false(mem: LocalEngine) -> None:
    mem.store_many([
        StoreItem.learning("The user prefers short answers", LearningKind.PREFERENCE, 0.8),
        Conversation((
            Turn(Role.USER, "I live in Lisbon. ok"),
            Turn(Role.ASSISTANT, "Noted that you live in Lisbon."),
        )),
        StoreItem.document("Never derive from this one.", MemoryMeta(derive=False)),
    ])
    receipt = mem.consolidate(ConsolidateRequest(Reach.default()))
    assert receipt.built == 2
    held = _beliefs(mem, Reach.default())
    assert set(held) == {"The user prefers short answers", "I live in Lisbon."}
    assert held["The user prefers short answers"].confidence == to_f32(0.8)


def test_kinds_narrow_the_build(mem: LocalEngine) -> None:
    mem.store_many([
        StoreItem.learning("Learned fact here", LearningKind.FACT, 0.6),
        StoreItem.document("Document fact here."),
    ])
    request = ConsolidateRequest(Reach.default()).with_kinds([ItemKind.DOCUMENT])
    receipt = mem.consolidate(request)
    assert (receipt.scopes, receipt.built) == (1, 1)
    assert set(_beliefs(mem, Reach.default())) == {"Document fact here."}
    with pytest.raises(InvalidRequestError):
        mem.consolidate(ConsolidateRequest(Reach.default(), (ItemKind.DOCUMENT,) * 2))


def test_forgetting_sources_weakens_then_removes_beliefs(engine: LocalEngine) -> None:
    first = engine.store(StoreItem.document("Shared claim about tea."))
    second = engine.store(StoreItem.document("Shared claim about tea!", MemoryMeta(workspace="w")))
    engine.consolidate(ConsolidateRequest(Reach.default()))
    assert _beliefs(engine, Reach.default())["Shared claim about tea."].confidence == to_f32(0.75)
    engine.forget(ForgetTarget.ids([first.id]))
    assert _beliefs(engine, Reach.default())["Shared claim about tea."].confidence == 0.5
    engine.forget(ForgetTarget.filter(MetaFilter(workspace="w")))
    assert _beliefs(engine, Reach.default()) == {}
    assert second.id  # the second source went with the filter forget


def test_erase_takes_beliefs_with_their_items(mem: LocalEngine) -> None:
    mem.store(StoreItem.document("Erased node fact.", MemoryMeta(namespace=A)))
    mem.consolidate(ConsolidateRequest(Reach.subtree(A)))
    assert _beliefs(mem, Reach.exact(A))
    mem.erase(EraseRequest(Reach.subtree(A)))
    assert _beliefs(mem, Reach.exact(A)) == {}


def test_beliefs_order_query_and_reach(mem: LocalEngine) -> None:
    mem.store_many([
        StoreItem.learning("Cats sleep a lot", LearningKind.FACT, 0.3),
        StoreItem.learning("Dogs like walks", LearningKind.FACT, 0.9),
        StoreItem.learning("Birds can fly far", LearningKind.FACT, 0.3),
        StoreItem.document("Sandboxed job fact.", MemoryMeta(namespace=JOB)),
    ])
    mem.consolidate(ConsolidateRequest(Reach.subtree(ROOT)))
    mem.consolidate(ConsolidateRequest(Reach.exact(JOB)))
    unranked = mem.beliefs(BeliefsRequest(Reach.subtree(ROOT), 10))
    # Most confident first, then newest (Birds was built after Cats).
    assert [h.text for h in unranked] == [
        "Dogs like walks", "Birds can fly far", "Cats sleep a lot",
    ]
    assert all(h.score == 0.0 for h in unranked)
    ranked = mem.beliefs(BeliefsRequest(Reach.subtree(ROOT), 10, "do dogs like walks"))
    assert ranked[0].text == "Dogs like walks"
    assert ranked[0].score > 0
    assert [h.text for h in mem.beliefs(BeliefsRequest(Reach.exact(JOB), 10))] == [
        "Sandboxed job fact."
    ]
    assert len(mem.beliefs(BeliefsRequest(Reach.subtree(ROOT), 2))) == 2
    with pytest.raises(InvalidRequestError):
        mem.beliefs(BeliefsRequest(Reach.default(), 0))
    with pytest.raises(InvalidRequestError):
        mem.beliefs(BeliefsRequest(Reach.default(), 5, " "))


def test_fetch_returns_beliefs_within_the_filter_reach(mem: LocalEngine) -> None:
    mem.store_many([
        StoreItem.document("Green tea calms the mind."),
        StoreItem.document("Green tea is sold here.", MemoryMeta(namespace=JOB)),
    ])
    mem.consolidate(ConsolidateRequest(Reach.subtree(ROOT)))
    mem.consolidate(ConsolidateRequest(Reach.exact(JOB)))
    page = mem.fetch(FetchRequest("green tea", FetchMode.HYBRID, 5, beliefs=5))
    assert [b.text for b in page.beliefs] == ["Green tea calms the mind."]
    assert all(BELIEF_TAG in b.meta.tags for b in page.beliefs)
    inside = mem.fetch(
        FetchRequest(
            "green tea", FetchMode.KEYWORD, 5, MetaFilter(reach=Reach.exact(JOB)), beliefs=1
        )
    )
    assert [b.text for b in inside.beliefs] == ["Green tea is sold here."]
    assert mem.fetch(FetchRequest("green tea", FetchMode.HYBRID, 5)).beliefs == ()


def test_statements() -> None:
    long = "word " * 80
    (cut, weight), = statements(StoreItem.document(long.strip() + "."))
    assert len(cut) <= 240
    assert weight == 0.5
    assert statements(StoreItem.document("One")) == []
    learning = StoreItem.learning("  spaced   out  text ", LearningKind.FACT, 0.25)
    assert statements(learning) == [("spaced out text", 0.25)]

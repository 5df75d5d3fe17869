"""Recall: an extractive answer from the best sentences, with citations that resolve."""

from __future__ import annotations

import pytest

from cortex_memory.contract import (
    Conversation,
    Document,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    RecallRequest,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine
from cortex_memory.local.recall import MODEL, NOTHING_FOUND, passages


def _notes(engine: LocalEngine) -> None:
    engine.store_many([
        Document(
            TextBody("The office opens at nine. Parking is behind the building! Bring a badge."),
            title="Office guide",
        ),
        Conversation((
            Turn(Role.USER, "Which tea do I like? I forget."),
            Turn(Role.ASSISTANT, "You like green tea without sugar."),
        )),
        StoreItem.learning("The user prefers green tea", LearningKind.PREFERENCE, 0.9),
        StoreItem.document("Quarterly budget review is on Friday."),
    ])


def test_answer_quotes_the_best_sentences(engine: LocalEngine) -> None:
    _notes(engine)
    answer = engine.recall(RecallRequest("what tea does the user like?", 3))
    assert answer.model == MODEL
    assert 1 <= len(answer.citations) <= 3
    assert "green tea" in answer.answer.lower()
    texts = {c.snippet for c in answer.citations}
    assert "The user prefers green tea" in texts
    listed = {h.id: h.kind for h in engine.list(ListRequest(MetaFilter(), 100)).items}
    for citation in answer.citations:
        assert listed[citation.id] is citation.kind
        assert citation.score is not None
        assert citation.score > 0
    scores = [c.score for c in answer.citations]
    assert scores == sorted(scores, reverse=True)


def test_answer_picks_a_sentence_not_the_whole_item(mem: LocalEngine) -> None:
    _notes(mem)
    answer = mem.recall(RecallRequest("where is parking?", 1))
    assert answer.citations[0].snippet == "Parking is behind the building!"
    assert answer.answer.startswith("Parking is behind the building!")


def test_nothing_matching_says_so(engine: LocalEngine) -> None:
    empty = engine.recall(RecallRequest("what is the capital of peru", 5))
    assert (empty.answer, empty.citations) == (NOTHING_FOUND, ())
    _notes(engine)
    unrelated = engine.recall(RecallRequest("xylophone quantum zebra", 5))
    assert (unrelated.answer, unrelated.citations) == (NOTHING_FOUND, ())


def test_recall_obeys_the_filter_and_the_limit(mem: LocalEngine) -> None:
    team = Namespace.parse("team:t")
    mem.store_many([
        StoreItem.document(f"green tea note {i}", MemoryMeta(namespace=team)) for i in range(8)
    ] + [StoreItem.document("green tea at the root")])
    answer = mem.recall(
        RecallRequest("green tea", 5, MetaFilter(reach=Reach.exact(team)))
    )
    assert len(answer.citations) == 5
    assert all(c.meta.namespace == team for c in answer.citations)
    assert "root" not in answer.answer


def test_recall_validates_first(mem: LocalEngine) -> None:
    with pytest.raises(InvalidRequestError, match="recall question must not be empty"):
        mem.recall(RecallRequest("  ", 5))
    with pytest.raises(InvalidRequestError, match="recall limit must be positive"):
        mem.recall(RecallRequest("tea", 0))


def test_stopword_only_questions_still_rank(mem: LocalEngine) -> None:
    mem.store(StoreItem.document("what is it"))
    answer = mem.recall(RecallRequest("what is it", 2))
    assert answer.citations
    assert answer.answer != NOTHING_FOUND


def test_passages_by_kind() -> None:
    assert passages(Document(TextBody("# Head\n\nOne. Two?"), title="T")) == ["One.", "Two?"]
    assert passages(Document(TextBody("# Only a heading"))) == ["Only a heading"]
    talk = Conversation((Turn(Role.USER, "a b. c d"), Turn(Role.ASSISTANT, "e f")))
    assert passages(talk) == ["a b.", "c d", "e f"]
    assert passages(StoreItem.learning("x y", LearningKind.FACT, 0.5)) == ["x y"]

"""Recall: an extractive answer from the best sentences, with citations that resolve."""

from __future__ import annotations

from typing import List

import pytest

from cortex_memory.contract import (
    Conversation,
    Document,
    Hit,
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
from cortex_memory.local.recall import MODEL, NOTHING_FOUND, answer, passages
from cortex_memory.local.search import Query


def _notes(engine: LocalEngine) -> None:
    engine.store_many([
        Document(
            TextBody("The office opens at nine.\nParking is behind the building!\nBring a badge."),
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


def test_answer_picks_a_passage_not_the_whole_item(mem: LocalEngine) -> None:
    _notes(mem)
    answer = mem.recall(RecallRequest("where is parking?", 1))
    assert answer.citations[0].snippet == "Parking is behind the building!"
    assert answer.answer.startswith("Parking is behind the building!")


def test_a_long_line_is_quoted_sentence_by_sentence(mem: LocalEngine) -> None:
    filler = " ".join(f"Filler sentence number {n} says nothing useful." for n in range(8))
    mem.store(StoreItem.document(f"{filler} The spare key hangs in the shed. {filler}"))
    answer = mem.recall(RecallRequest("where is the spare key?", 1))
    assert answer.answer == "The spare key hangs in the shed."


def test_the_question_is_never_the_answer(mem: LocalEngine) -> None:
    mem.store(Conversation((Turn(Role.USER, "Which port?"),)))
    only_asks = mem.recall(RecallRequest("Which port?", 3))
    assert only_asks.answer == NOTHING_FOUND
    assert len(only_asks.citations) == 1  # it matched; it just does not answer
    mem.store(Conversation((
        Turn(Role.USER, "Which port does staging use?"),
        Turn(Role.ASSISTANT, "Staging listens on 8443."),
    )))
    answer = mem.recall(RecallRequest("Which port does staging use?", 3))
    assert answer.answer == "Staging listens on 8443."


def test_the_turn_that_answers_beats_the_turn_that_asks(mem: LocalEngine) -> None:
    mem.store(Conversation((
        Turn(Role.USER, "Do you remember where the team dinner is?"),
        Turn(Role.ASSISTANT, "The team dinner is at Luigi's on Friday."),
        Turn(Role.USER, "Great, thanks."),
    )))
    answer = mem.recall(RecallRequest("where is the team dinner", 3))
    assert answer.answer.startswith("The team dinner is at Luigi's on Friday.")
    assert "Do you remember" not in answer.answer


def test_the_reply_to_a_matching_stored_question_answers_in_other_words(
    mem: LocalEngine,
) -> None:
    # The reply holds none of the question's words; the stored question it follows does.
    mem.store(Conversation((
        Turn(Role.USER, "Where did I park the car?"),
        Turn(Role.ASSISTANT, "Level 3 of the airport garage, spot B12."),
    )))
    mem.store(StoreItem.document("The car needs new tyres before winter."))
    answer = mem.recall(RecallRequest("where is my car parked?", 3))
    assert answer.answer.startswith("Level 3 of the airport garage, spot B12.")
    # A reply to a question that does not match the query answers nothing.
    mem.store(Conversation((
        Turn(Role.USER, "What should we cook tonight?"),
        Turn(Role.ASSISTANT, "Lentil soup with bread."),
    )))
    assert "Lentil" not in mem.recall(RecallRequest("where is my car parked?", 3)).answer


def test_a_stored_question_steps_aside_once_a_statement_answers(mem: LocalEngine) -> None:
    # The demo's case: the user's stored question shares the question's words and adds
    # one ("usually"), so it is not the question's own text, yet it answers nothing.
    mem.store(Conversation((
        Turn(Role.USER, "When do we usually ship releases?"),
        Turn(Role.ASSISTANT, "We ship on Tuesday mornings, after the weekly planning."),
    )))
    mem.store(StoreItem.learning("The team ships releases on Tuesday mornings.",
                                 LearningKind.FACT, 0.9))
    answer = mem.recall(RecallRequest("When do we ship releases?", 3))
    assert "usually" not in answer.answer
    assert "?" not in answer.answer
    assert "We ship on Tuesday mornings" in answer.answer


def test_near_duplicates_are_dropped_and_every_sentence_is_cited(mem: LocalEngine) -> None:
    mem.store_many([
        StoreItem.document("The backup runs every night at two."),
        StoreItem.document("The backup runs every night at two!"),
        StoreItem.document("Backups are kept for thirty days."),
        StoreItem.document("Lunch is at noon."),
    ])
    answer = mem.recall(RecallRequest("when does the backup run and how long is it kept", 3))
    assert answer.answer.lower().count("every night at two") == 1
    assert "thirty days" in answer.answer
    assert "Lunch" not in answer.answer
    snippets = {c.snippet for c in answer.citations}
    for quoted in ("The backup runs every night at two", "Backups are kept for thirty days."):
        assert any(s.startswith(quoted) for s in snippets), quoted


def _answer_of(question: str, items: List[StoreItem]) -> str:
    """The answer composed from ``items`` ranked in this order."""
    ranked = [
        (Hit(item.fingerprint(), item.item_kind, item.render_text(), item.meta, 1.0), item)
        for item in items
    ]
    return answer(Query.of(question), ranked).answer


def test_a_sentence_that_only_restates_the_answer_is_left_out() -> None:
    # The demo's answer once read "We ship on Tuesday mornings, after the weekly
    # planning. The team ships releases on Tuesday mornings.": the second sentence's
    # content words are the question's and the first's, but for one ("team").
    first = StoreItem.document("We ship releases on Tuesday mornings, after the weekly planning.")
    restated = StoreItem.document("The team ships releases on Tuesday mornings.")
    assert _answer_of("When do we ship releases?", [first, restated]) == (
        "We ship releases on Tuesday mornings, after the weekly planning."
    )


def test_a_sentence_with_new_facts_joins_the_answer(mem: LocalEngine) -> None:
    mem.store(StoreItem.document("We ship releases on Tuesday mornings."))
    mem.store(StoreItem.document("We ship releases from main once two reviewers approve."))
    answer = mem.recall(RecallRequest("When do we ship releases?", 3))
    assert "Tuesday" in answer.answer
    assert "two reviewers" in answer.answer


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
    mem.store_many([StoreItem.document("what is it"), StoreItem.document("it is a kettle")])
    answer = mem.recall(RecallRequest("what is it", 2))
    assert len(answer.citations) == 2
    assert answer.answer == "it is a kettle."


def test_passages_by_kind() -> None:
    def texts(item: StoreItem) -> List[str]:
        return [p.text for p in passages(item)]

    assert texts(Document(TextBody("# Head\n\nOne. Two?\nThree."), title="T")) == [
        "One. Two?", "Three.",
    ]
    assert texts(Document(TextBody("# Only a heading"))) == ["Only a heading"]
    long_line = "A b c. " * 50
    assert texts(Document(TextBody(long_line))) == ["A b c."] * 50
    talk = Conversation((Turn(Role.USER, "a b? c d?"), Turn(Role.ASSISTANT, "e f")))
    assert [(p.text, p.asks, p.answers) for p in passages(talk)] == [
        ("a b? c d?", True, False), ("e f", False, True),
    ]
    assert texts(StoreItem.learning("x y", LearningKind.FACT, 0.5)) == ["x y"]
    # A CJK character weighs as a short word: 60 characters are one passage, a
    # line of 4 x 25 is quoted by its sentences (a Latin line that long is whole).
    assert len(texts(Document(TextBody("团队同意了预算。" * 7 + "发布时间定在下周五")))) == 1
    sentence = "发布时间定在下周五之前需要完成测试和文档工作。"  # 23 + 。 = 24 characters
    assert texts(Document(TextBody(sentence * 4))) == [sentence] * 4
    assert len(texts(Document(TextBody("Release notes. " * 7)))) == 1
    # A full-width question mark asks too, and the next turn answers it.
    cjk = Conversation((Turn(Role.USER, "端口是多少？"), Turn(Role.ASSISTANT, "端口是八零八零。")))
    assert [(p.asks, p.answers) for p in passages(cjk)] == [(True, False), (False, True)]


def test_a_cjk_answer_keeps_its_own_full_stop(engine: LocalEngine) -> None:
    engine.store(StoreItem.document("北京是中国的首都。人口超过两千万"))
    answer = engine.recall(RecallRequest("北京是中国的首都吗？", 3))
    assert answer.answer != NOTHING_FOUND
    # Sentences are cut at 。, and one without an end gets 。, never a Latin ".".
    assert "." not in answer.answer
    assert answer.answer.endswith("\u3002")

"""Recall quotes the stored reply to a stored question (a chat logged turn by turn)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import List, Optional

import pytest

from cortex_memory.contract import (
    GetRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    RecallRequest,
    StoreItem,
    TurnRange,
)
from cortex_memory.errors import EngineError
from cortex_memory.local import LocalEngine


def _chat(
    engine: LocalEngine,
    lines: List[str],
    thread: str = "s1",
    namespace: Optional[Namespace] = None,
) -> List[str]:
    """Store each line as one turn of ``thread``; their ids."""
    items = [
        StoreItem.document(
            line,
            MemoryMeta(
                namespace=namespace or Namespace.root(),
                thread_id=thread,
                turns=TurnRange(n, n),
            ),
        )
        for n, line in enumerate(lines)
    ]
    return [receipt.id for receipt in engine.store_many(items)]


@pytest.fixture
def mem() -> LocalEngine:
    engine = LocalEngine(":memory:")
    yield engine
    engine.close()


def test_the_next_turn_answers_a_matching_question(mem: LocalEngine) -> None:
    ids = _chat(mem, [
        "Ana: Where did I park the car this morning?",
        "Ben: Level 3 of the airport garage, spot B12.",
        "Ana: Thanks, see you at lunch.",
    ])
    mem.store(StoreItem.document("The car needs new tyres before winter."))
    answer = mem.recall(RecallRequest("where is my car parked?", 3))
    assert answer.answer.startswith("Ben: Level 3 of the airport garage, spot B12.")
    cited = [c.id for c in answer.citations]
    # The reply is cited (right after its question), and never more than the limit.
    assert ids[1] in cited
    assert cited.index(ids[1]) == cited.index(ids[0]) + 1
    assert len(cited) <= 3
    reply = next(c for c in answer.citations if c.id == ids[1])
    assert reply.snippet == "Ben: Level 3 of the airport garage, spot B12."
    # Every citation resolves, with its kind.
    found = {hit.id: hit.kind for hit in mem.get(GetRequest(tuple(cited)))}
    assert {c.id: c.kind for c in answer.citations} == found


def test_a_limit_of_one_cites_the_reply_alone(mem: LocalEngine) -> None:
    ids = _chat(mem, [
        "Ana: Where did I park the car this morning?",
        "Ben: Level 3 of the airport garage, spot B12.",
    ])
    answer = mem.recall(RecallRequest("where is my car parked?", 1))
    assert answer.answer == "Ben: Level 3 of the airport garage, spot B12."
    assert [c.id for c in answer.citations] == [ids[1]]


def test_a_reply_the_filter_does_not_admit_is_not_read(mem: LocalEngine) -> None:
    ops = Namespace.parse("team:ops")
    mem.store(StoreItem.document(
        "Ana: Where did I park the car this morning?",
        MemoryMeta(namespace=ops, thread_id="s1", turns=TurnRange(0, 0)),
    ))
    hidden = mem.store(StoreItem.document(
        "Ben: Level 3 of the airport garage, spot B12.",
        MemoryMeta(namespace=Namespace.parse("team:private"), thread_id="s1",
                   turns=TurnRange(1, 1)),
    ))
    answer = mem.recall(RecallRequest("where is my car parked?", 3,
                                      MetaFilter(reach=Reach.exact(ops))))
    assert "B12" not in answer.answer
    assert hidden.id not in {c.id for c in answer.citations}


def test_only_the_turn_right_after_a_question_of_the_same_thread_answers(
    mem: LocalEngine,
) -> None:
    _chat(mem, ["Ana: Where did I park the car this morning?"], thread="s1")
    _chat(mem, ["Ana: hello", "Ben: Lentil soup with bread."], thread="s2")
    # Turn 2 of s1 (not the next one) and turn 1 of another thread are no replies.
    mem.store(StoreItem.document(
        "Ben: The blue umbrella is by the door.",
        MemoryMeta(thread_id="s1", turns=TurnRange(2, 2)),
    ))
    answer = mem.recall(RecallRequest("where is my car parked?", 3))
    assert "Lentil" not in answer.answer
    assert "umbrella" not in answer.answer


def test_a_reply_that_also_ranks_is_cited_once(mem: LocalEngine) -> None:
    ids = _chat(mem, [
        "Ana: Where did I park the car this morning?",
        "Ben: The car is on level 3 of the airport garage, spot B12.",
    ])
    answer = mem.recall(RecallRequest("where is my car parked?", 5))
    cited = [c.id for c in answer.citations]
    assert sorted(cited) == sorted(ids)
    assert "spot B12" in answer.answer


def test_an_unreadable_reply_is_reported_not_guessed(tmp_path: Path) -> None:
    path = str(tmp_path / "memory.sqlite3")
    with LocalEngine(path) as engine:
        ids = _chat(engine, [
            "Ana: Where did I park the car this morning?",
            "Ben: Level 3 of the airport garage, spot B12.",
        ])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE items SET item_json = '{' WHERE id = ?", (ids[1],))
    conn.commit()
    conn.close()
    # Limit 1: only the question ranks, so the reply row is read by the reply look-up.
    with LocalEngine(path) as engine, pytest.raises(EngineError, match="unreadable"):
        engine.recall(RecallRequest("where did I park the car?", 1))

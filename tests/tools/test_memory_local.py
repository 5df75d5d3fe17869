"""The local memory backend: its table, stable keys, ranking, paging and threads."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import List

import pytest

from cortex_memory.contract import FetchMode, FetchRequest, Learning, LearningKind
from cortex_memory.errors import EngineError
from cortex_memory.local import LocalEngine
from cortex_memory.tools.memory import LocalMemoryStore, MemoryKey, MemoryRequestError
from cortex_memory.tools.memory.scoring import hybrid_score

from .conftest import MsClock


def test_keys_are_row_ids_and_survive_a_reopen(tmp_path: Path, clock: MsClock) -> None:
    path = tmp_path / "memory.sqlite3"
    store = LocalMemoryStore(path, clock=clock)
    first = store.put("The staging database is restored every night.")
    second = store.put("Dana is the on-call engineer this week.")
    assert (first.key, second.key) == (MemoryKey(1, 1), MemoryKey(2, 1))
    assert first.key.namespace is None
    assert "namespace" not in first.key.to_json()
    store.close()

    again = LocalMemoryStore(path, clock=clock)  # another process, same file
    records = again.read([MemoryKey(2, 1), MemoryKey(1, 1)])
    assert [r.content for r in records] == [
        "Dana is the on-call engineer this week.",
        "The staging database is restored every night.",
    ]
    again.close()


def test_ids_are_never_reused(clock: MsClock) -> None:
    store = LocalMemoryStore(clock=clock)
    first = store.put("Temporary note one.")
    store.delete(first.key)
    second = store.put("Temporary note two.")
    assert second.key.id == first.key.id + 1
    assert store.read([first.key]) == []
    store.close()


def test_unknown_stale_or_namespaced_keys_name_nothing(clock: MsClock) -> None:
    store = LocalMemoryStore(clock=clock)
    record = store.put("Erin maintains the release notes.")
    replaced = store.put("Erin and Frank maintain the release notes.", record.key)
    assert replaced.key == MemoryKey(record.key.id, 2)
    for key in (record.key, MemoryKey(99, 1), MemoryKey(record.key.id, 2, "alice"),
                MemoryKey(2**70, 1)):
        assert store.read([key]) == []
        with pytest.raises(MemoryRequestError, match="memory key was not found"):
            store.delete(key)
        with pytest.raises(MemoryRequestError, match="memory key was not found"):
            store.put("x y z", key)
    assert [r.content for r in store.list()] == ["Erin and Frank maintain the release notes."]
    store.close()


def test_store_refuses_secrets_itself(clock: MsClock) -> None:
    store = LocalMemoryStore(clock=clock)
    with pytest.raises(MemoryRequestError, match="likely secret"):
        store.put("api_key=abcd1234efgh5678")
    assert store.list() == []
    store.close()


def test_scan_abstains_below_the_threshold(clock: MsClock) -> None:
    store = LocalMemoryStore(clock=clock)
    store.put("Grace prefers tea over coffee.")
    assert store.scan("quantum chromodynamics lattice", 5).abstained is True
    hit = store.scan("tea or coffee", 5)
    assert hit.abstained is False
    assert hit.candidates[0].score >= 0.2
    strict = LocalMemoryStore(threshold=0.99, clock=clock)
    strict.put("Grace prefers tea over coffee.")
    assert strict.scan("tea or coffee", 5).abstained is True
    store.close()
    strict.close()


def test_scan_reads_every_page(clock: MsClock) -> None:
    store = LocalMemoryStore(clock=clock)
    for n in range(1203):
        store.put(f"Filler memory number {n} about gardening.")
    target = store.put("The zeppelin hangar code word is aurora.")
    result = store.scan("zeppelin hangar", 1)
    assert [c.key for c in result.candidates] == [target.key]
    assert store.read([target.key])[0].scan_count == 1
    store.close()


def test_local_ranking_agrees_with_the_local_engine(tmp_path: Path) -> None:
    texts = [
        "The build uses make and runs tests on every push.",
        "Heidi likes green tea in the morning.",
        "Deployments are frozen after 5 pm on Fridays.",
    ]
    query = "when are deployments frozen"
    with LocalEngine(str(tmp_path / "e.sqlite3")) as engine:
        for text in texts:
            engine.store(Learning(text, LearningKind.FACT, 0.9))
        page = engine.fetch(FetchRequest(query, FetchMode.HYBRID, 10))
    # The same analysis (stems, n-grams): the engine's best hit is the tool's
    # best too, and every score is in 0..1, so the 0.2 threshold is absolute.
    ranked = sorted(texts, key=lambda t: -hybrid_score(query, t))
    assert ranked[0] == page.hits[0].text
    assert all(0.0 <= hybrid_score(query, t) <= 1.0 for t in texts)
    assert hybrid_score(query, "Deployment freezes start on Friday") > 0.2  # stems meet
    assert hybrid_score(query, "Heidi likes green tea") < 0.2


def test_a_cjk_word_ranks_above_its_characters_apart() -> None:
    # CJK characters are words of their own; a pair of them side by side is one
    # more term, so the text holding the word 公园 ("park") ranks first.
    together = hybrid_score("公园", "我们下周去公园野餐。")
    apart = hybrid_score("公园", "公司的园林很大。")
    assert together > apart > hybrid_score("公园", "天气很好。")
    assert hybrid_score("会議", "東京で会議があります。") > hybrid_score("会議", "会社の議事録")


def test_concurrent_puts_and_reads(clock: MsClock) -> None:
    store = LocalMemoryStore(clock=clock)
    errors: List[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(20):
                record = store.put(f"Worker {n} note {i} about the roadmap.")
                assert store.read([record.key])[0].use_count == 1
                store.scan("roadmap note", 5)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    ids = [r.key.id for r in store.list()]
    assert len(ids) == 120
    assert len(set(ids)) == 120
    store.close()


def test_sqlite_failures_are_engine_errors(tmp_path: Path, clock: MsClock) -> None:
    path = tmp_path / "m.sqlite3"
    store = LocalMemoryStore(path, clock=clock)
    store.put("Ivan writes the changelog.")
    store.close()
    with pytest.raises(EngineError, match="closed"):
        store.list()
    raw = sqlite3.connect(str(path))
    raw.execute("DROP TABLE memories")
    raw.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY)")
    raw.commit()
    raw.close()
    broken = LocalMemoryStore(path, clock=clock)
    with pytest.raises(EngineError, match="local memory store failed"):
        broken.put("Judy reads the changelog.")
    broken.close()

"""32 threads share one engine (quality.md "Threads", engine.md §10).

One ``CortexEngine`` (Direct, with a caller the double checks on every request;
and hosted), one ``LocalEngine`` and one memory tool over the reference engine
each serve 32 threads released together by a barrier. Every thread stores its
own items and the same shared items (racing the others for them), lists, gets,
fetches, recalls and forgets: a few hundred operations per engine. Afterwards
nothing failed, Direct asked whoami exactly once, every item is listable unless
it was forgotten, each shared item exists once, and the log holds no duplicate
event and no half-written item.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Set

import pytest

from cortex_memory import (
    Conversation,
    Document,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    ItemKind,
    Learning,
    LearningKind,
    ListRequest,
    LocalEngine,
    MemoryEngine,
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
from cortex_memory.contract.conformance.reference import ReferenceEngine
from cortex_memory.testing import DirectDouble, HostedDouble
from cortex_memory.tools.memory import AllowAllMutations, MemoryTool, RemoteMemoryStore

from ._support import audit, check_requests, engine_on

THREADS = 32
SHARED = [Document(TextBody(f"shared handbook page {i}"), f"Page {i}") for i in range(3)]
ROOT_ONLY = Reach.exact(Namespace.parse(""))
# Generous timings: 32 threads on a small shared machine are slow, never stuck.
ROOMY = {"request_timeout": 20.0, "connect_timeout": 10.0, "settle": 1.0, "visibility": 20.0}


def own_items(n: int) -> List[StoreItem]:
    """Four items in the thread's own namespace: two documents, a conversation, a learning."""
    meta = MemoryMeta(namespace=Namespace.parse(f"user:t{n:02d}"), thread_id=f"t{n}")
    return [
        Document(TextBody(f"thread {n} note one about oolong tea"), f"One {n}", None, meta),
        Document(TextBody(f"thread {n} note two about green tea"), f"Two {n}", None, meta),
        Conversation(
            (Turn(Role.USER, f"thread {n}: which tea?"), Turn(Role.ASSISTANT, "oolong")), meta
        ),
        Learning(f"thread {n} prefers oolong tea", LearningKind.PREFERENCE, 0.6, None, meta),
    ]


def listed(engine: MemoryEngine, flt: MetaFilter) -> List[str]:
    """Every id the filter admits, page after page."""
    ids: List[str] = []
    cursor = None
    while True:
        page = engine.list(ListRequest(flt, 50, cursor))
        ids += [hit.id for hit in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return ids


def worker(engine: MemoryEngine, n: int, between: threading.Barrier) -> Set[str]:
    """Twelve mixed operations; returns the ids of this thread's items that must survive.

    Forgets wait at ``between`` until every thread has recalled: any forget drops
    every recall pack on the server (doubles.md §4), so a recall racing 32 forgets
    may see its pack vanish three rounds running and answer ``NotFoundError``, as
    documented (engine.md §9.9).
    """
    items = own_items(n)
    ids = [item.fingerprint() for item in items]
    mine = MetaFilter(reach=Reach.exact(items[0].meta.namespace))
    receipts = engine.store_many(items[:2])
    assert [r.id for r in receipts] == ids[:2]
    for item in items[2:]:
        assert engine.store(item).id == item.fingerprint()
    for shared in SHARED:  # every thread races the others for the same three items
        assert engine.store(shared).id == shared.fingerprint()
    assert sorted(listed(engine, mine)) == sorted(ids)
    assert [hit.id for hit in engine.get(GetRequest(tuple(ids), mine.reach))] == ids
    hits = engine.fetch(FetchRequest(f"thread {n} oolong tea", FetchMode.HYBRID, 5, mine)).hits
    assert hits
    assert {hit.id for hit in hits} <= set(ids)
    answer = engine.recall(RecallRequest("which tea", 3, mine))
    assert {c.id for c in answer.citations} <= set(ids)
    between.wait(timeout=120)
    if n % 4 == 0:  # by ids: the engine looks everywhere
        report = engine.forget(ForgetTarget.ids([ids[0]]))
    else:  # by filter: only inside the thread's own namespace
        documents = MetaFilter(reach=mine.reach, kinds=(ItemKind.DOCUMENT,))
        report = engine.forget(ForgetTarget.filter(documents))
    forgotten = {ids[0]} if n % 4 == 0 else set(ids[:2])
    assert report.forgotten == len(forgotten)
    survivors = set(ids) - forgotten
    assert set(listed(engine, mine)) == survivors
    return survivors


def phases() -> threading.Barrier:
    """The barrier between a worker's reads and its forgets."""
    return threading.Barrier(THREADS)


def run_threads(task: Callable[[int], Any]) -> Dict[int, Any]:
    """Run ``task(n)`` on 32 threads released together; re-raise the first failure."""
    barrier = threading.Barrier(THREADS)
    results: Dict[int, Any] = {}
    errors: List[BaseException] = []

    def body(n: int) -> None:
        try:
            barrier.wait(timeout=60)
            results[n] = task(n)
        except BaseException as exc:  # collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(n,), name=f"t{n}") for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    if errors:
        raise errors[0]
    assert len(results) == THREADS
    return results


def check_survivors(engine: MemoryEngine, survivors: Dict[int, Set[str]]) -> None:
    everything = set().union(*survivors.values())
    shared = {item.fingerprint() for item in SHARED}
    assert sorted(listed(engine, MetaFilter(reach=ROOT_ONLY))) == sorted(shared)
    for n, expected in survivors.items():
        flt = MetaFilter(reach=Reach.exact(Namespace.parse(f"user:t{n:02d}")))
        assert set(listed(engine, flt)) == expected
    total = listed(engine, MetaFilter(reach=Reach(Namespace.parse(""), descendants=True)))
    assert len(total) == len(set(total))
    assert set(total) == everything | shared


@pytest.mark.parametrize("wire", ["direct", "hosted"])
def test_32_threads_share_one_cortex_engine(wire: str) -> None:
    if wire == "direct":
        double = DirectDouble(whoami_caller="user:local").start()
    else:
        double = HostedDouble(rate_limit_requests=None).start()
    try:
        engine = engine_on(double, **ROOMY)
        between = phases()
        survivors = run_threads(lambda n: worker(engine, n, between))
        check_survivors(engine, survivors)
        state = double.state
        # Direct: the actor was looked up once, for all 32 threads; hosted never asks.
        assert state.counters["whoami_calls"] == (1 if wire == "direct" else 0)
        if wire == "direct":
            assert set(state.seen.actors) == {"user:local"}
        log = audit(state)
        assert log.duplicates == {}
        assert log.incomplete() == []
        assert log.foreign == 0
        assert check_requests(state) == []
    finally:
        double.close()


def test_32_threads_share_one_local_engine(tmp_path: Path) -> None:
    with LocalEngine(tmp_path / "threads.sqlite3") as engine:
        between = phases()
        survivors = run_threads(lambda n: worker(engine, n, between))
        check_survivors(engine, survivors)


def test_32_threads_share_one_memory_store_and_tool() -> None:
    """One store over the reference engine and one tool for reads, shared by 32 agents.

    A scan arms one put per tool instance (tools.md), so each agent mutates
    through its own tool, over the shared store; scans and reads go through the
    shared tool.
    """
    store = RemoteMemoryStore(ReferenceEngine(), "team:acme/agent:crew")
    shared = MemoryTool(store, AllowAllMutations())

    def task(n: int) -> List[Dict[str, Any]]:
        own = MemoryTool(store, AllowAllMutations())

        def call(tool: MemoryTool, **arguments: Any) -> Dict[str, Any]:
            return tool.execute(json.dumps(arguments), f"session-{n}")

        facts = [f"agent {n} fact {i}: kettle {n}-{i}" for i in range(3)]
        keys = []
        for fact in facts:
            call(own, operation="scan", query=fact)  # each put needs a fresh scan
            keys.append(call(own, operation="put", content=fact)["memory"]["key"])
        found = call(shared, operation="scan", query=f"kettle {n}-1")
        assert keys[1] in [candidate["key"] for candidate in found["candidates"]]
        read = call(shared, operation="read", keys=keys)
        assert sorted(m["content"] for m in read["memories"]) == sorted(facts)
        call(own, operation="delete", key=keys[0])
        return keys[1:]

    kept = run_threads(task)
    expected = sorted(json.dumps(key, sort_keys=True) for keys in kept.values() for key in keys)
    records = store.list()
    assert sorted(json.dumps(r.key.to_json(), sort_keys=True) for r in records) == expected
    store.close()

"""Many threads on one engine, and several processes on one file: nothing lost or doubled."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections import Counter
from typing import Dict, List

import pytest

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    RecallRequest,
    StoreItem,
)
from cortex_memory.local import LocalEngine

from .conftest import EngineFactory

THREADS = 24
SHARED = [StoreItem.document(f"shared note {i}") for i in range(10)]


def _all_ids(engine: LocalEngine) -> List[str]:
    ids: List[str] = []
    cursor = None
    while True:
        page = engine.list(ListRequest(MetaFilter(), 1000, cursor))
        ids.extend(h.id for h in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return ids


def _worker(engine: LocalEngine, n: int, created: Counter, lock: threading.Lock) -> List[str]:
    """Mixed traffic; returns the ids this thread expects to survive."""
    mine = [
        StoreItem.document(f"thread {n} item {i} tea", MemoryMeta(workspace=f"t{n}"))
        for i in range(12)
    ]
    receipts = engine.store_many(mine[:6])
    assert [r.id for r in receipts] == [i.fingerprint() for i in mine[:6]]
    for item in mine[6:]:
        assert not engine.store(item).replayed
    shared = engine.store_many(SHARED)
    with lock:
        created.update(r.id for r in shared if not r.replayed)
    flt = MetaFilter(workspace=f"t{n}")
    assert len(engine.list(ListRequest(flt, 100)).items) == 12
    hits = engine.fetch(FetchRequest(f"thread {n} tea", FetchMode.HYBRID, 5, flt)).hits
    assert hits
    assert all(h.meta.workspace == f"t{n}" for h in hits)
    assert engine.recall(RecallRequest("tea", 3, flt)).citations
    got = engine.get(GetRequest(tuple(r.id for r in receipts)))
    assert [h.id for h in got] == [r.id for r in receipts]
    forgotten = engine.forget(ForgetTarget.ids([mine[0].fingerprint(), mine[1].fingerprint()]))
    assert forgotten.forgotten == 2
    assert engine.forget(ForgetTarget.filter(MetaFilter(workspace=f"t{n}", tags_any=("no",)))
                         ).forgotten == 0
    return [item.fingerprint() for item in mine[2:]]


def _run_threads(engine: LocalEngine) -> None:
    created: Counter = Counter()
    lock = threading.Lock()
    errors: List[BaseException] = []
    survivors: Dict[int, List[str]] = {}
    barrier = threading.Barrier(THREADS)

    def body(n: int) -> None:
        try:
            barrier.wait()
            survivors[n] = _worker(engine, n, created, lock)
        except BaseException as exc:  # collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(t.is_alive() for t in threads)
    if errors:
        raise errors[0]
    # Each shared item was created exactly once, whatever the interleaving.
    assert created == Counter({item.fingerprint(): 1 for item in SHARED})
    ids = _all_ids(engine)
    assert len(ids) == len(set(ids))
    expected = {i for n in survivors for i in survivors[n]} | {s.fingerprint() for s in SHARED}
    assert set(ids) == expected


@pytest.mark.parametrize("place", ["file", "memory"])
def test_many_threads_share_one_engine(make_engine: EngineFactory, place: str) -> None:
    engine = make_engine(":memory:" if place == "memory" else "", pool_size=4)
    _run_threads(engine)


def test_threads_wait_for_a_small_pool(make_engine: EngineFactory) -> None:
    engine = make_engine(pool_size=1)
    _run_threads(engine)


_CHILD = textwrap.dedent(
    """
    import sys
    from cortex_memory.contract import ListRequest, MetaFilter, StoreItem, MemoryMeta
    from cortex_memory.local import LocalEngine
    path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with LocalEngine(path, timeout=30) as engine:
        for start in range(0, count, 20):
            batch = [
                StoreItem.document(f"{name} item {i}", MemoryMeta(workspace=name))
                for i in range(start, min(start + 20, count))
            ]
            assert not any(r.replayed for r in engine.store_many(batch))
            engine.store(StoreItem.document("the same in every process"))
            engine.list(ListRequest(MetaFilter(), 50))
    print("done", name)
    """
)


def test_processes_share_one_file(make_engine: EngineFactory, db_path: str) -> None:
    engine = make_engine(timeout=30)
    engine.store(StoreItem.document("created first"))  # the schema exists before the race
    count = 200
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, db_path, f"p{k}", str(count)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for k in range(2)
    ]
    mine = [
        StoreItem.document(f"parent item {i}", MemoryMeta(workspace="parent")) for i in range(60)
    ]
    for start in range(0, len(mine), 10):
        engine.store_many(mine[start : start + 10])
        engine.fetch(FetchRequest("item", FetchMode.KEYWORD, 5))
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert out.startswith("done")
    ids = _all_ids(engine)
    assert len(ids) == len(set(ids)) == 1 + 2 * count + 60 + 1
    for name, expected in (("p0", count), ("p1", count), ("parent", 60)):
        listed = engine.list(ListRequest(MetaFilter(workspace=name), 1000)).items
        assert len(listed) == expected
    # Keyword ranking sees the other processes' writes (the FTS5 index is shared).
    hits = engine.fetch(FetchRequest("p1", FetchMode.KEYWORD, 1000)).hits
    assert len(hits) == count

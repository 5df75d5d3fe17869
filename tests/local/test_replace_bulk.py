"""Replace on re-store, bulk store_many and deadline= on the local engine (issue 14
items 1-2, issue 15 item 2)."""

from __future__ import annotations

import sqlite3
import threading
from typing import Iterator, List, Optional, Tuple

import pytest

from cortex_memory import InvalidRequestError, UnavailableError
from cortex_memory.contract import (
    Deadline,
    FetchMode,
    FetchRequest,
    HealthState,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Source,
    SourceKind,
    StoreItem,
    StoreReceipt,
    redacted_id,
)
from cortex_memory.contract.conformance.checks_writes import past_deadline
from cortex_memory.local import LocalEngine
from cortex_memory.local.engine import LOCAL_BATCH

from .conftest import EngineFactory


def doc(text: str, **meta: object) -> StoreItem:
    return StoreItem.document(text, MemoryMeta(**meta))  # type: ignore[arg-type]


def listed(engine: LocalEngine) -> List[str]:
    ids: List[str] = []
    cursor: Optional[str] = None
    while True:
        page = engine.list(ListRequest(MetaFilter(), 1000, cursor))
        ids.extend(hit.id for hit in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return ids


# --------------------------------------------------------------------- replace


def test_replace_by_file_path_removes_only_the_other_versions(engine: LocalEngine) -> None:
    path = "/home/ada/notes/plan.md"
    v1, v2 = doc("plan one", file_path=path), doc("plan two", file_path=path)
    kept = [
        doc("plan one", file_path=path, namespace=Namespace.parse("agent:bob")),
        StoreItem.learning("plan fact", LearningKind.FACT, 0.9, MemoryMeta(file_path=path)),
        doc("appendix", file_path=f"{path}/appendix.md"),
        doc("named", file_path=path, source=Source(SourceKind.FILE, "plan-id")),
        doc("other", file_path="/home/ada/notes/other.md"),
    ]
    engine.store_many([v1, *kept])
    receipt = engine.store(v2, replace=True)
    assert receipt == StoreReceipt(v2.fingerprint(), False, (v1.fingerprint(),))
    assert sorted(listed(engine)) == sorted([v2.fingerprint(), *(k.fingerprint() for k in kept)])
    assert engine.store(v2, replace=True) == StoreReceipt(v2.fingerprint(), True)


def test_replace_by_source_id_matches_a_redacted_copy(mem: LocalEngine) -> None:
    phone = "+1 555 123 4567"
    imported = doc("call log, as exported", source=Source(SourceKind.IMPORT, redacted_id(phone)))
    fresh = doc("call log, today", source=Source(SourceKind.IMPORT, phone), file_path="a.md")
    mem.store(imported)
    assert mem.store(fresh, replace=True).replaced == (imported.fingerprint(),)
    assert listed(mem) == [fresh.fingerprint()]


def test_replace_stays_inside_the_tenant(make_engine: EngineFactory) -> None:
    a, b = make_engine(tenant="a"), make_engine(tenant="b")
    a_copy, b_copy = doc("a's note", file_path="n.md"), doc("b's note", file_path="n.md")
    a.store(a_copy)
    b.store(doc("b's first", file_path="n.md"))
    assert b.store(b_copy, replace=True).replaced != ()
    assert listed(a) == [a_copy.fingerprint()]
    assert listed(b) == [b_copy.fingerprint()]


def test_a_batch_keeps_the_last_version_of_each_source(engine: LocalEngine) -> None:
    old = doc("zero", file_path="x.md")
    engine.store(old)
    v1, v2 = doc("one", file_path="x.md"), doc("two", file_path="x.md")
    receipts = engine.store_many([v1, v2, v1], replace=True)
    assert receipts == [
        StoreReceipt(v1.fingerprint(), False),
        StoreReceipt(v2.fingerprint(), False),
        # A copy of the first item: a replay of it, replacing the rest.
        StoreReceipt(v1.fingerprint(), True, tuple(sorted([old.fingerprint(), v2.fingerprint()]))),
    ]
    assert listed(engine) == [v1.fingerprint()]


def test_an_item_without_a_source_identity_is_refused_before_anything_is_written(
    mem: LocalEngine,
) -> None:
    with pytest.raises(InvalidRequestError, match="the document has neither"):
        mem.store_many([doc("fine", file_path="f.md"), doc("nameless")], replace=True)
    with pytest.raises(InvalidRequestError, match=r"meta\.source\.id is blank"):
        mem.store(doc("blank", source=Source(SourceKind.FILE, " ")), replace=True)
    assert listed(mem) == []


# ------------------------------------------------------------------------ bulk


def counted(items: List[StoreItem], taken: List[int]) -> Iterator[StoreItem]:
    for item in items:
        taken[0] += 1
        yield item


def test_a_generator_is_stored_one_transaction_at_a_time(mem: LocalEngine) -> None:
    items = [doc(f"line {i}") for i in range(2 * LOCAL_BATCH + 7)]
    taken = [0]
    calls: List[Tuple[int, Optional[int], int]] = []
    receipts = mem.store_many(
        counted(items, taken), progress=lambda done, total: calls.append((done, total, taken[0]))
    )
    assert [r.id for r in receipts] == [item.fingerprint() for item in items]
    total = len(items)
    assert [(done, t) for done, t, _ in calls] == [
        (LOCAL_BATCH, None), (2 * LOCAL_BATCH, None), (total, None)
    ]
    assert all(seen <= done + 1 for done, _, seen in calls)  # never more than a batch ahead
    assert len(listed(mem)) == total


def test_an_unwritable_item_reports_every_item_stored_before_it(mem: LocalEngine) -> None:
    items = [doc(f"row {i}") for i in range(LOCAL_BATCH + 10)]
    # Passes validation, cannot be written as UTF-8: found only while writing.
    items[LOCAL_BATCH + 3] = doc("broken \ud800 row")
    with pytest.raises(InvalidRequestError, match="lone surrogate") as caught:
        mem.store_many(iter(items))
    stored = [r.id for r in caught.value.receipts]
    assert stored == [item.fingerprint() for item in items[: LOCAL_BATCH + 3]]
    assert sorted(listed(mem)) == sorted(stored)


# -------------------------------------------------------------------- deadline


class StepClock:
    """A clock at 0 s for its first ``calls`` readings, then an hour later."""

    def __init__(self, calls: int) -> None:
        self.left = calls
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            self.left -= 1
            return 0.0 if self.left >= 0 else 3600.0


def test_every_call_past_its_deadline_is_unavailable(engine: LocalEngine) -> None:
    held = doc("held")
    engine.store(held)
    with pytest.raises(UnavailableError, match="deadline exceeded"):
        engine.store(doc("late"), deadline=past_deadline())
    with pytest.raises(UnavailableError, match="deadline exceeded"):
        engine.list(ListRequest(MetaFilter(), 10), deadline=past_deadline())
    health = engine.health(deadline=past_deadline())
    assert health.state is HealthState.DEGRADED
    assert listed(engine) == [held.fingerprint()]
    assert engine.store(doc("in time"), deadline=30).replayed is False


def test_a_deadline_interrupts_a_write_and_rolls_it_back(make_engine: EngineFactory) -> None:
    engine = make_engine()
    old = doc("old version", file_path="big.md")
    engine.store(old)
    batch = [doc(f"big {i} " + "words " * 50, file_path=f"big-{i}.md") for i in range(300)]
    batch.append(doc("new version", file_path="big.md"))
    # Expires a few readings in: inside the write transaction, from the progress handler.
    deadline = Deadline(5.0, clock=StepClock(6))
    with pytest.raises(UnavailableError, match="deadline exceeded") as caught:
        engine.store_many(batch, replace=True, deadline=deadline)
    cause = caught.value.__cause__
    assert isinstance(cause, sqlite3.OperationalError)
    assert "interrupted" in str(cause)
    assert listed(engine) == [old.fingerprint()]  # nothing half-written, the old one kept


def test_a_deadline_interrupts_a_long_read(make_engine: EngineFactory) -> None:
    engine = make_engine()
    engine.store_many(doc(f"note {i} about apples and pears") for i in range(3000))
    request = FetchRequest("apples pears", FetchMode.KEYWORD, 10)
    assert engine.fetch(request, deadline=30).hits  # within its deadline: served
    with pytest.raises(UnavailableError, match="deadline exceeded") as caught:
        engine.fetch(request, deadline=Deadline(5.0, clock=StepClock(4)))
    assert "interrupted" in str(caught.value.__cause__)


def test_a_deadline_cuts_the_wait_for_another_writer(make_engine: EngineFactory, db_path: str):
    engine = make_engine(timeout=30.0)  # without the deadline a write would wait 30 s
    engine.store(doc("first"))
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(UnavailableError, match="deadline exceeded") as caught:
            engine.store(doc("queued"), deadline=0.2)
        assert "locked" in str(caught.value.__cause__)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert len(listed(engine)) == 1
    assert engine.store(doc("queued")).replayed is False  # the engine's own timeout is back


def test_a_deadline_cuts_the_wait_for_a_free_connection(mem: LocalEngine) -> None:
    mem.health()
    with mem._pool.connection():  # the in-memory engine's only connection, taken
        with pytest.raises(UnavailableError, match="free connection: deadline exceeded"):
            mem.list(ListRequest(MetaFilter(), 10), deadline=0.05)
    assert mem.list(ListRequest(MetaFilter(), 10), deadline=5).items == ()

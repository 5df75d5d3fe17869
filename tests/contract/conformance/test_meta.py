"""The suite's meta-test (contract.md §9.5): every injected fault is caught by its own check.

Each fault wraps a fresh ReferenceEngine and changes one behaviour; the run
must raise CheckFailure naming exactly the check in the table, and cleanup
must still leave the store as it found it.
"""

from __future__ import annotations

import builtins
from dataclasses import replace
from typing import Callable, Dict, Iterable, List, Tuple

import pytest

from cortex_memory.contract import (
    BELIEF_TAG,
    BeliefsRequest,
    Bucket,
    ConsolidateReceipt,
    ConsolidateRequest,
    Consolidation,
    EngineDescriptor,
    EngineHealth,
    EraseReport,
    EraseRequest,
    ExplorePage,
    ExploreRequest,
    ExportPage,
    FetchMode,
    FetchPage,
    FetchRequest,
    ForgetFilter,
    ForgetIds,
    ForgetReport,
    ForgetTarget,
    GetRequest,
    Hit,
    ItemId,
    ItemKind,
    ListPage,
    ListRequest,
    MemoryEngine,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    RecallAnswer,
    RecallRequest,
    StoreItem,
    StoreReceipt,
    WaitFor,
)
from cortex_memory.contract.conformance import (
    CHECK_NAMES,
    CheckFailure,
    ReferenceEngine,
    run,
)


class Wrapped(MemoryEngine):
    """Forwards every call to an inner ReferenceEngine; faults override one method."""

    def __init__(self, inner: ReferenceEngine) -> None:
        self.inner = inner

    def descriptor(self) -> EngineDescriptor:
        return self.inner.descriptor()

    def health(self) -> EngineHealth:
        return self.inner.health()

    def recall(self, request: RecallRequest) -> RecallAnswer:
        return self.inner.recall(request)

    def fetch(self, request: FetchRequest) -> FetchPage:
        return self.inner.fetch(request)

    def store(self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE) -> StoreReceipt:
        return self.inner.store(item, wait=wait)

    def store_many(
        self, items: Iterable[StoreItem], *, wait: WaitFor = WaitFor.VISIBLE
    ) -> builtins.list[StoreReceipt]:
        return self.inner.store_many(items, wait=wait)

    def forget(self, target: ForgetTarget) -> ForgetReport:
        return self.inner.forget(target)

    def forget_within(self, ids: Iterable[ItemId], reach: Reach) -> ForgetReport:
        return self.inner.forget_within(ids, reach)

    def list(self, request: ListRequest) -> ListPage:
        return self.inner.list(request)

    def get(self, request: GetRequest) -> builtins.list[Hit]:
        return self.inner.get(request)

    def explore(self, request: ExploreRequest) -> ExplorePage:
        return self.inner.explore(request)

    def export(self, request: ListRequest) -> ExportPage:
        return self.inner.export(request)

    def erase(self, request: EraseRequest) -> EraseReport:
        return self.inner.erase(request)

    def consolidate(self, request: ConsolidateRequest) -> ConsolidateReceipt:
        return self.inner.consolidate(request)

    def beliefs(self, request: BeliefsRequest) -> builtins.list[Hit]:
        return self.inner.beliefs(request)


# ------------------------------------------------------------------ the faults


class IgnoreFetchFilter(Wrapped):
    def fetch(self, request: FetchRequest) -> FetchPage:
        return self.inner.fetch(replace(request, filter=MetaFilter()))


class NeverReplay(Wrapped):
    def store(self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE) -> StoreReceipt:
        return StoreReceipt(self.inner.store(item, wait=wait).id, False)

    def store_many(
        self, items: Iterable[StoreItem], *, wait: WaitFor = WaitFor.VISIBLE
    ) -> builtins.list[StoreReceipt]:
        return [StoreReceipt(r.id, False) for r in self.inner.store_many(items, wait=wait)]


class AcceptEmptyForget(Wrapped):
    def forget(self, target: ForgetTarget) -> ForgetReport:
        if isinstance(target, ForgetIds) and not target.ids:
            return ForgetReport(0)
        if isinstance(target, ForgetFilter) and target.filter.is_empty():
            return ForgetReport(0)
        return self.inner.forget(target)


class HybridOnlyServesAny(Wrapped):
    def descriptor(self) -> EngineDescriptor:
        return replace(self.inner.descriptor(), fetch_modes=(FetchMode.HYBRID,))


class CiteUnknownIds(Wrapped):
    def recall(self, request: RecallRequest) -> RecallAnswer:
        answer = self.inner.recall(request)
        bogus = tuple(replace(c, id="f" * 40) for c in answer.citations)
        return replace(answer, citations=bogus)


class ReportDown(Wrapped):
    def health(self) -> EngineHealth:
        return EngineHealth.down("injected outage")


class UndercountExplore(Wrapped):
    def explore(self, request: ExploreRequest) -> ExplorePage:
        page = self.inner.explore(request)
        buckets = tuple(Bucket(b.value, b.count - 1) for b in page.buckets)
        return replace(page, buckets=buckets)


class GetOutOfOrder(Wrapped):
    def get(self, request: GetRequest) -> List[Hit]:
        return list(reversed(self.inner.get(request)))


class ReverseStoreManyReceipts(Wrapped):
    def store_many(
        self, items: Iterable[StoreItem], *, wait: WaitFor = WaitFor.VISIBLE
    ) -> builtins.list[StoreReceipt]:
        return list(reversed(self.inner.store_many(items, wait=wait)))


class ListIgnoringReach(Wrapped):
    def list(self, request: ListRequest) -> ListPage:
        return self.inner.list(replace(request, filter=request.filter.with_reach(None)))


class GetIgnoringReach(Wrapped):
    def get(self, request: GetRequest) -> List[Hit]:
        return self.inner.get(replace(request, reach=None))


class AcceptedWrongId(Wrapped):
    def store(self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE) -> StoreReceipt:
        receipt = self.inner.store(item, wait=wait)
        if wait is WaitFor.ACCEPTED:
            return StoreReceipt(receipt.id[::-1], receipt.replayed)
        return receipt


class ScheduledWhileOnDemand(Wrapped):
    def consolidate(self, request: ConsolidateRequest) -> ConsolidateReceipt:
        request.validate()
        return ConsolidateReceipt.scheduled()


class DeclareNoneButAnswer(Wrapped):
    def descriptor(self) -> EngineDescriptor:
        return replace(self.inner.descriptor(), consolidation=Consolidation.NONE)


class BuildWithoutValidating(Wrapped):
    def consolidate(self, request: ConsolidateRequest) -> ConsolidateReceipt:
        # Drop the repeated kinds so the inner engine's validation never sees them.
        return self.inner.consolidate(replace(request, kinds=tuple(dict.fromkeys(request.kinds))))


def _belief(request: BeliefsRequest, meta: MemoryMeta) -> Hit:
    return Hit("b" * 40, ItemKind.LEARNING, "a belief", meta, 0.5, 0.5)


class UntaggedBeliefs(Wrapped):
    def beliefs(self, request: BeliefsRequest) -> List[Hit]:
        request.validate()
        return [_belief(request, MemoryMeta(namespace=request.reach.at))]


class BeliefsOutsideReach(Wrapped):
    def beliefs(self, request: BeliefsRequest) -> List[Hit]:
        request.validate()
        elsewhere = Namespace.parse("agent:somewhere-else")
        return [_belief(request, MemoryMeta(namespace=elsewhere, tags=(BELIEF_TAG,)))]


#: contract.md §9.5, row by row: the fault and the check that must catch it.
FAULTS: Tuple[Tuple[str, Callable[[ReferenceEngine], MemoryEngine], str], ...] = (
    ("ignore the fetch filter", IgnoreFetchFilter, "fetch_filters"),
    ("never report a replay", NeverReplay, "replay"),
    ("accept an empty forget", AcceptEmptyForget, "empty_forget"),
    ("declare only hybrid but serve any mode", HybridOnlyServesAny, "unsupported_modes"),
    ("cite unknown ids", CiteUnknownIds, "recall"),
    ("report Down", ReportDown, "health"),
    ("undercount explore buckets by one", UndercountExplore, "explore"),
    ("return get hits out of order", GetOutOfOrder, "get"),
    ("reverse the store_many receipts", ReverseStoreManyReceipts, "store_many"),
    ("list ignoring the reach", ListIgnoringReach, "namespaces"),
    ("get ignoring the reach", GetIgnoringReach, "namespaces"),
    ("answer an accepted store with a wrong id", AcceptedWrongId, "store_with"),
    ("answer scheduled while declaring on_demand", ScheduledWhileOnDemand, "consolidate"),
    ("declare none but answer", DeclareNoneButAnswer, "consolidate"),
    ("build without validating", BuildWithoutValidating, "consolidate"),
    ("return untagged beliefs", UntaggedBeliefs, "consolidate"),
    ("return beliefs outside the reach", BeliefsOutsideReach, "consolidate"),
)


def test_the_unwrapped_engine_passes_through_the_wrapper() -> None:
    inner = ReferenceEngine()
    run(Wrapped(inner))
    assert inner.snapshot() == ()


@pytest.mark.parametrize(
    ("fault", "wrap", "check"), FAULTS, ids=[row[0].replace(" ", "_") for row in FAULTS]
)
def test_each_fault_is_caught_by_its_own_check(
    fault: str, wrap: Callable[[ReferenceEngine], MemoryEngine], check: str
) -> None:
    inner = ReferenceEngine(Consolidation.ON_DEMAND)
    foreign = StoreItem.document(f"stored before the run: {fault}")
    inner.store(foreign)
    with pytest.raises(CheckFailure) as caught:
        run(wrap(inner))
    assert caught.value.check == check, str(caught.value)
    assert str(caught.value).startswith(f"conformance check `{check}` failed: ")
    # Cleanup ran although a check failed: only the foreign item is left.
    assert inner.snapshot() == (foreign,)


def test_the_table_covers_checks_across_the_suite() -> None:
    caught: Dict[str, int] = {}
    for _, _, check in FAULTS:
        assert check in CHECK_NAMES
        caught[check] = caught.get(check, 0) + 1
    assert len(FAULTS) == 17
    assert caught["consolidate"] == 5
    assert caught["namespaces"] == 2

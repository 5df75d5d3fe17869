"""The suite's meta-test (contract.md §9.5): every injected fault is caught by its own check.

Each fault wraps a fresh ReferenceEngine and changes one behaviour; the run
must raise CheckFailure naming exactly the check in the table, and cleanup
must still leave the store as it found it.
"""

from __future__ import annotations

import builtins
from dataclasses import replace
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import pytest

from cortex_memory import InvalidRequestError
from cortex_memory.contract import (
    BELIEF_TAG,
    BeliefsRequest,
    Bucket,
    ConsolidateReceipt,
    ConsolidateRequest,
    Consolidation,
    Deadline,
    DeadlineLike,
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
    Progress,
    Reach,
    RecallAnswer,
    RecallRequest,
    StoreItem,
    StoreReceipt,
    WaitFor,
    path_matches,
    validate_many,
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

    def health(self, *, deadline: DeadlineLike = None) -> EngineHealth:
        return self.inner.health(deadline=deadline)

    def recall(self, request: RecallRequest, *, deadline: DeadlineLike = None) -> RecallAnswer:
        return self.inner.recall(request, deadline=deadline)

    def fetch(self, request: FetchRequest, *, deadline: DeadlineLike = None) -> FetchPage:
        return self.inner.fetch(request, deadline=deadline)

    def store(
        self,
        item: StoreItem,
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        deadline: DeadlineLike = None,
    ) -> StoreReceipt:
        return self.inner.store(item, replace=replace, wait=wait, deadline=deadline)

    def store_many(
        self,
        items: Iterable[StoreItem],
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        progress: Optional[Progress] = None,
        deadline: DeadlineLike = None,
    ) -> builtins.list[StoreReceipt]:
        return self.inner.store_many(
            items, replace=replace, wait=wait, progress=progress, deadline=deadline
        )

    def forget(self, target: ForgetTarget, *, deadline: DeadlineLike = None) -> ForgetReport:
        return self.inner.forget(target, deadline=deadline)

    def forget_within(
        self, ids: Iterable[ItemId], reach: Reach, *, deadline: DeadlineLike = None
    ) -> ForgetReport:
        return self.inner.forget_within(ids, reach, deadline=deadline)

    def list(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        return self.inner.list(request, deadline=deadline)

    def get(self, request: GetRequest, *, deadline: DeadlineLike = None) -> builtins.list[Hit]:
        return self.inner.get(request, deadline=deadline)

    def explore(self, request: ExploreRequest, *, deadline: DeadlineLike = None) -> ExplorePage:
        return self.inner.explore(request, deadline=deadline)

    def export(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ExportPage:
        return self.inner.export(request, deadline=deadline)

    def erase(self, request: EraseRequest, *, deadline: DeadlineLike = None) -> EraseReport:
        return self.inner.erase(request, deadline=deadline)

    def consolidate(
        self, request: ConsolidateRequest, *, deadline: DeadlineLike = None
    ) -> ConsolidateReceipt:
        return self.inner.consolidate(request, deadline=deadline)

    def beliefs(
        self, request: BeliefsRequest, *, deadline: DeadlineLike = None
    ) -> builtins.list[Hit]:
        return self.inner.beliefs(request, deadline=deadline)


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


# -------------------------------------------- faults of the second-wave checks


class IgnoreReplace(Wrapped):
    def store(self, item: StoreItem, **kwargs: Any) -> StoreReceipt:
        kwargs.pop("replace", None)
        return self.inner.store(item, **kwargs)

    def store_many(self, items: Iterable[StoreItem], **kwargs: Any) -> List[StoreReceipt]:
        kwargs.pop("replace", None)
        return self.inner.store_many(items, **kwargs)


def _forget_where(inner: ReferenceEngine, keep: str, doomed: Callable[[StoreItem], bool]) -> None:
    ids = [it.fingerprint() for it in inner.snapshot() if doomed(it) and it.fingerprint() != keep]
    if ids:
        inner.forget(ForgetIds(tuple(ids)))


class ReplaceAcrossNamespaces(Wrapped):
    def store(self, item: StoreItem, **kwargs: Any) -> StoreReceipt:
        receipt = self.inner.store(item, **kwargs)
        if kwargs.get("replace") and item.meta.file_path is not None:
            _forget_where(
                self.inner, receipt.id,
                lambda it: it.item_kind is item.item_kind
                and it.meta.file_path == item.meta.file_path,
            )
        return receipt


class ReplaceByPathPrefix(Wrapped):
    def store(self, item: StoreItem, **kwargs: Any) -> StoreReceipt:
        receipt = self.inner.store(item, **kwargs)
        path = item.meta.file_path
        if kwargs.get("replace") and path is not None:
            _forget_where(
                self.inner, receipt.id,
                lambda it: it.item_kind is item.item_kind
                and it.meta.namespace == item.meta.namespace
                and path_matches(it.meta.file_path, path),
            )
        return receipt


class ReplaceWithoutIdentity(Wrapped):
    def store(self, item: StoreItem, **kwargs: Any) -> StoreReceipt:
        if item.meta.source.id is None and item.meta.file_path is None:
            kwargs.pop("replace", None)
        return self.inner.store(item, **kwargs)


class StoreManyCapped(Wrapped):
    def store_many(self, items: Iterable[StoreItem], **kwargs: Any) -> List[StoreReceipt]:
        return self.inner.store_many(validate_many(items), **kwargs)


class SilentProgress(Wrapped):
    def store_many(self, items: Iterable[StoreItem], **kwargs: Any) -> List[StoreReceipt]:
        kwargs.pop("progress", None)
        return self.inner.store_many(items, **kwargs)


class ForgetfulFailure(Wrapped):
    def store_many(self, items: Iterable[StoreItem], **kwargs: Any) -> List[StoreReceipt]:
        try:
            return self.inner.store_many(items, **kwargs)
        except InvalidRequestError as err:
            err.receipts = ()
            raise


class IgnoreDeadline(Wrapped):
    def __getattribute__(self, name: str) -> Any:
        method = object.__getattribute__(self, name)
        if name.startswith("_") or name in ("inner", "descriptor") or not callable(method):
            return method

        def without_deadline(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("deadline", None)
            return method(*args, **kwargs)

        return without_deadline


class WriteThenCheckDeadline(Wrapped):
    def store(self, item: StoreItem, **kwargs: Any) -> StoreReceipt:
        deadline = kwargs.pop("deadline", None)
        receipt = self.inner.store(item, **kwargs)
        Deadline.of(deadline).check("store")
        return receipt


#: The faults of the checks that follow §9.3's seventeen (replace, deadline, bulk).
SECOND_WAVE_FAULTS: Tuple[Tuple[str, Callable[[ReferenceEngine], MemoryEngine], str], ...] = (
    ("store ignoring replace", IgnoreReplace, "replace"),
    ("replace across namespaces", ReplaceAcrossNamespaces, "replace"),
    ("replace by path prefix", ReplaceByPathPrefix, "replace"),
    ("replace an item without source identity", ReplaceWithoutIdentity, "replace"),
    ("store_many capped at 100 items", StoreManyCapped, "bulk"),
    ("store_many never reporting progress", SilentProgress, "bulk"),
    ("store_many forgetting what a failure kept", ForgetfulFailure, "bulk"),
    ("every call ignoring its deadline", IgnoreDeadline, "deadline"),
    ("a store writing before it checks its deadline", WriteThenCheckDeadline, "deadline"),
)


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
    ("fault", "wrap", "check"),
    FAULTS + SECOND_WAVE_FAULTS,
    ids=[row[0].replace(" ", "_") for row in FAULTS + SECOND_WAVE_FAULTS],
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


def test_every_second_wave_check_has_faults_it_catches() -> None:
    checks = {check for _, _, check in SECOND_WAVE_FAULTS}
    assert checks == {"replace", "deadline", "bulk"}
    assert checks <= set(CHECK_NAMES)

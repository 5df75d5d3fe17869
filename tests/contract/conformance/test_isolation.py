"""run_isolation(a, b): two tenants of one reference store pass; leaks are caught."""

from __future__ import annotations

from dataclasses import replace
from typing import List, Tuple

import pytest

from cortex_memory.contract import (
    ExplorePage,
    ExploreRequest,
    FetchMode,
    FetchPage,
    FetchRequest,
    ForgetReport,
    ForgetTarget,
    GetRequest,
    Hit,
    ListPage,
    ListRequest,
    RecallAnswer,
    RecallRequest,
    StoreItem,
    StoreReceipt,
    WaitFor,
)
from cortex_memory.contract.conformance import (
    CheckFailure,
    ReferenceEngine,
    ReferenceStore,
    Run,
    run,
    run_isolation,
)


def _pair(store: ReferenceStore) -> Tuple[ReferenceEngine, ReferenceEngine]:
    return ReferenceEngine(store=store, tenant="a"), ReferenceEngine(store=store, tenant="b")


def test_two_tenants_of_one_store_are_isolated_and_cleaned_up() -> None:
    store = ReferenceStore()
    a, b = _pair(store)
    a_own, b_own = StoreItem.document("A's own note"), StoreItem.document("B's own note")
    a.store(a_own)
    b.store(b_own)
    run_isolation(a, b)
    assert a.snapshot() == (a_own,)
    assert b.snapshot() == (b_own,)
    assert store.count() == 2


def test_the_same_engine_twice_fails_at_once() -> None:
    engine = ReferenceEngine()
    with pytest.raises(CheckFailure) as caught:
        run_isolation(engine, engine)
    assert caught.value.check == "isolation"
    assert "given one engine twice" in caught.value.detail
    assert engine.snapshot() == ()


def test_two_engines_on_one_partition_leak_and_are_cleaned_up() -> None:
    store = ReferenceStore()
    a = ReferenceEngine(store=store, tenant="shared")
    b = ReferenceEngine(store=store, tenant="shared")
    with pytest.raises(CheckFailure) as caught:
        run_isolation(a, b)
    assert caught.value.check == "isolation"
    assert caught.value.detail.startswith("B lists A's items with reach none: [`")
    assert store.count() == 0


class _Spy(ReferenceEngine):
    """B with a peephole into A's partition through one operation."""

    def __init__(self, store: ReferenceStore, a: ReferenceEngine) -> None:
        super().__init__(store=store, tenant="b")
        self.a = a


class GetLeak(_Spy):
    def get(self, request: GetRequest) -> List[Hit]:
        return self.a.get(request)


class FetchLeak(_Spy):
    def fetch(self, request: FetchRequest) -> FetchPage:
        if request.mode is FetchMode.VECTOR:
            return self.a.fetch(request)
        return super().fetch(request)


class ForgetLeak(_Spy):
    def forget(self, target: ForgetTarget) -> ForgetReport:
        return self.a.forget(target)


class RecallLeak(_Spy):
    def recall(self, request: RecallRequest) -> RecallAnswer:
        return self.a.recall(request)


class ExploreLeak(_Spy):
    def explore(self, request: ExploreRequest) -> ExplorePage:
        return self.a.explore(request)


class StoreReplaysAcrossTenants(_Spy):
    def store(self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE) -> StoreReceipt:
        receipt = super().store(item, wait=wait)
        held = {i.fingerprint() for i in self.a.snapshot()}
        return replace(receipt, replayed=receipt.replayed or receipt.id in held)


class UserNodeLeak(ReferenceEngine):
    """A that also lists B's items when asked with an exact reach."""

    def __init__(self, store: ReferenceStore) -> None:
        super().__init__(store=store, tenant="a")
        self.b: List[ReferenceEngine] = []

    def list(self, request: ListRequest) -> ListPage:
        page = super().list(request)
        reach = request.filter.reach
        if self.b and reach is not None and not reach.inherit and not reach.descendants:
            extra = self.b[0].list(request)
            return replace(page, items=page.items + extra.items)
        return page


@pytest.mark.parametrize(
    ("spy", "detail"),
    [
        (GetLeak, "B gets A's items with reach none: [`"),
        (FetchLeak, "B's vector fetch of A's marker finds [`"),
        (ForgetLeak, "B's forget of A's ids forgot 3 items"),
        (RecallLeak, "B's recall of A's marker cites"),
        (ExploreLeak, "B's namespace facet over the run counts 3 items"),
        (StoreReplaysAcrossTenants, "B storing A's first item was a replay of A's copy"),
    ],
)
def test_each_leak_is_named(spy: type, detail: str) -> None:
    store = ReferenceStore()
    a = ReferenceEngine(store=store, tenant="a")
    b = spy(store, a)
    with pytest.raises(CheckFailure) as caught:
        run_isolation(a, b)
    assert caught.value.check == "isolation"
    assert caught.value.detail.startswith(detail), caught.value.detail
    assert store.count() == 0


def test_a_seeing_bs_user_node_is_caught() -> None:
    store = ReferenceStore()
    a = UserNodeLeak(store)
    b = ReferenceEngine(store=store, tenant="b")
    a.b.append(b)
    with pytest.raises(CheckFailure) as caught:
        run_isolation(a, b, identity=Run("iso2"))
    assert caught.value.check == "isolation"
    assert caught.value.detail.startswith("A lists B's item `")
    assert caught.value.detail.endswith("with reach exact(user:tmconfiso2-a)")
    assert store.count() == 0


def test_a_must_list_exactly_the_round_trip_items() -> None:
    store = ReferenceStore()
    a, b = _pair(store)
    identity = Run("iso3")
    a.store(identity.document("left over"))
    with pytest.raises(CheckFailure) as caught:
        run_isolation(a, b, identity=identity)
    assert caught.value.check == "isolation"
    assert caught.value.detail.startswith("A lists [`")
    assert "after storing the round-trip items" in caught.value.detail
    assert store.count() == 0


def test_b_listing_more_than_its_own_copy_is_caught() -> None:
    class SeesExtra(ReferenceEngine):
        def list(self, request: ListRequest) -> ListPage:
            page = super().list(request)
            if request.cursor is None and page.items and request.filter.reach is None:
                return replace(page, items=page.items + page.items[:1])
            return page

    store = ReferenceStore()
    a = ReferenceEngine(store=store, tenant="a")
    with pytest.raises(CheckFailure) as caught:
        run_isolation(a, SeesExtra(store=store, tenant="b"))
    assert "after storing A's first item, B lists" in caught.value.detail


def test_the_suite_still_passes_on_each_tenant() -> None:
    store = ReferenceStore()
    a, b = _pair(store)
    run(a)
    run(b)
    assert store.count() == 0

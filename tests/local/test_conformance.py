"""The local engine passes the contract's conformance suite and the isolation check."""

from __future__ import annotations

import pytest

from cortex_memory.contract import ListRequest, MetaFilter, StoreItem
from cortex_memory.contract.conformance import ConformanceError, run, run_isolation
from cortex_memory.local import LocalEngine

from .conftest import EngineFactory


def test_suite_passes_on_every_flavour(engine: LocalEngine) -> None:
    run(engine)


def test_suite_leaves_foreign_items_and_an_empty_run(engine: LocalEngine) -> None:
    foreign = engine.store(StoreItem.document("a note from before the run"))
    run(engine)
    listed = engine.list(ListRequest(MetaFilter(), 100)).items
    assert [hit.id for hit in listed] == [foreign.id]


@pytest.mark.parametrize(("fts_a", "fts_b"), [(True, True), (False, True)])
def test_isolation_two_tenants_on_one_file(
    make_engine: EngineFactory, fts_a: bool, fts_b: bool
) -> None:
    a = make_engine(tenant="a", use_fts=fts_a)
    b = make_engine(tenant="b", use_fts=fts_b)
    run_isolation(a, b)
    run_isolation(b, a)


def test_isolation_refuses_one_engine_twice(mem: LocalEngine) -> None:
    with pytest.raises(ConformanceError):
        run_isolation(mem, mem)


def test_same_item_in_two_tenants_is_two_rows(make_engine: EngineFactory) -> None:
    a = make_engine(tenant="a")
    b = make_engine(tenant="b")
    item = StoreItem.document("shared words")
    assert not a.store(item).replayed
    assert not b.store(item).replayed  # not a replay: b never held it
    assert a.store(item).replayed
    assert len(a.list(ListRequest(MetaFilter(), 10)).items) == 1
    assert len(b.list(ListRequest(MetaFilter(), 10)).items) == 1

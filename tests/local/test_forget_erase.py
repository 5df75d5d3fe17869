"""Forget (by ids, by filter, within a reach) and erase (hard delete by node and kind)."""

from __future__ import annotations

from typing import Dict, List

import pytest

from cortex_memory.contract import (
    EraseRequest,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    ItemKind,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    StoreItem,
)
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine

ROOT = Namespace.root()
NODES: Dict[str, Namespace] = {
    "root": ROOT,
    "a": Namespace.parse("agent:a"),
    "b": Namespace.parse("agent:b"),
    "scout": Namespace.parse("agent:a/agent:scout"),
    "job": Namespace.parse("agent:a/service:job"),
}


def _store(engine: LocalEngine) -> Dict[str, str]:
    items = {
        label: StoreItem.learning(f"{label} shared fact", LearningKind.FACT, 0.9,
                                  MemoryMeta(namespace=ns, tags=("t",)))
        for label, ns in NODES.items()
    }
    receipts = engine.store_many(list(items.values()))
    return {label: r.id for label, r in zip(items, receipts)}


def _labels(engine: LocalEngine, ids: Dict[str, str], reach: Reach) -> List[str]:
    by_id = {v: k for k, v in ids.items()}
    page = engine.list(ListRequest(MetaFilter(reach=reach), 100))
    return sorted(by_id[h.id] for h in page.items)


def test_forget_ids_reach_sandboxes_and_count_only_removed(engine: LocalEngine) -> None:
    ids = _store(engine)
    report = engine.forget(ForgetTarget.ids([ids["job"], ids["job"], "unknown", ids["b"]]))
    assert report.forgotten == 2
    assert engine.forget(ForgetTarget.ids([ids["job"]])).forgotten == 0
    assert _labels(engine, ids, Reach.subtree(ROOT)) == ["a", "root", "scout"]
    assert _labels(engine, ids, Reach.exact(NODES["job"])) == []
    hits = engine.fetch(FetchRequest("shared fact", FetchMode.KEYWORD, 10)).hits
    assert ids["b"] not in {h.id for h in hits}


def test_forget_filter_is_confined_by_its_reach(engine: LocalEngine) -> None:
    ids = _store(engine)
    report = engine.forget(ForgetTarget.filter(MetaFilter(reach=Reach.subtree(NODES["a"]))))
    assert report.forgotten == 2  # a and scout; the job sandbox is not entered
    assert _labels(engine, ids, Reach.subtree(ROOT)) == ["b", "root"]
    assert _labels(engine, ids, Reach.exact(NODES["job"])) == ["job"]
    assert engine.forget(ForgetTarget.filter(MetaFilter(tags_any=("t",)))).forgotten == 2
    assert _labels(engine, ids, Reach.exact(NODES["job"])) == ["job"]


def test_empty_forgets_are_refused(engine: LocalEngine) -> None:
    ids = _store(engine)
    with pytest.raises(InvalidRequestError, match="at least one id"):
        engine.forget(ForgetTarget.ids([]))
    with pytest.raises(InvalidRequestError, match="empty filter"):
        engine.forget(ForgetTarget.filter(MetaFilter()))
    with pytest.raises(TypeError):
        engine.forget("everything")  # type: ignore[arg-type]
    assert len(_labels(engine, ids, Reach.subtree(ROOT))) == 4


def test_forget_within_looks_only_inside_the_reach(engine: LocalEngine) -> None:
    ids = _store(engine)
    outside = [ids["a"], ids["scout"], ids["job"]]
    assert engine.forget_within(outside, Reach.of(NODES["b"])).forgotten == 0
    assert engine.forget_within([ids["scout"], ids["root"], ids["scout"]],
                                Reach.subtree(NODES["a"])).forgotten == 1
    assert engine.forget_within([ids["job"]], Reach.exact(NODES["job"])).forgotten == 1
    assert _labels(engine, ids, Reach.subtree(ROOT)) == ["a", "b", "root"]
    with pytest.raises(InvalidRequestError):
        engine.forget_within([], Reach.default())
    with pytest.raises(InvalidRequestError, match="blank"):
        engine.forget_within([" "], Reach.default())
    with pytest.raises(TypeError):
        engine.forget_within([ids["a"]], "agent:a")  # type: ignore[arg-type]


def test_erase_counts_node_kind_pairs_and_never_goes_up(engine: LocalEngine) -> None:
    ids = _store(engine)
    engine.store_many([
        StoreItem.document("a doc", MemoryMeta(namespace=NODES["a"])),
        StoreItem.document("another a doc", MemoryMeta(namespace=NODES["a"])),
    ])
    # inherit is ignored: of(a) erases a only, never the root above it.
    report = engine.erase(EraseRequest(Reach.of(NODES["a"])))
    assert report.erased_scopes == 2  # (a, learning) and (a, document)
    assert _labels(engine, ids, Reach.subtree(ROOT)) == ["b", "root", "scout"]
    report = engine.erase(EraseRequest(Reach.subtree(NODES["a"]), (ItemKind.DOCUMENT,)))
    assert report.erased_scopes == 0
    report = engine.erase(EraseRequest(Reach.subtree(NODES["a"])))
    assert report.erased_scopes == 1  # scout; the job sandbox is not entered
    assert _labels(engine, ids, Reach.exact(NODES["job"])) == ["job"]
    again = StoreItem.learning("scout shared fact", LearningKind.FACT, 0.9,
                               MemoryMeta(namespace=NODES["scout"], tags=("t",)))
    assert not engine.store(again).replayed  # hard-deleted: storing again is new


def test_erase_whole_tree_interlock(engine: LocalEngine) -> None:
    ids = _store(engine)
    with pytest.raises(InvalidRequestError, match="whole_tree"):
        engine.erase(EraseRequest(Reach.subtree(ROOT)))
    assert len(_labels(engine, ids, Reach.subtree(ROOT))) == 4
    kinds_only = engine.erase(EraseRequest(Reach.subtree(ROOT), (ItemKind.DOCUMENT,)))
    assert kinds_only.erased_scopes == 0
    report = engine.erase(EraseRequest(Reach.subtree(ROOT), whole_tree=True))
    assert report.erased_scopes == 4
    assert _labels(engine, ids, Reach.exact(NODES["job"])) == ["job"]

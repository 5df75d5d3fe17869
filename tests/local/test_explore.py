"""Explore in SQL gives exactly what the contract's ``explore_by_listing`` gives."""

from __future__ import annotations

import random

import pytest

from cortex_memory.contract import (
    ExploreRequest,
    Facet,
    LearningKind,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    Source,
    SourceKind,
    StoreItem,
    ToolCallRef,
    explore_by_listing,
)
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine

NODES = [Namespace.parse(p) for p in ("root", "agent:a", "agent:a/agent:b", "agent:a/service:s")]


def _fill(engine: LocalEngine) -> None:
    rng = random.Random(3)
    items = []
    for i in range(230):
        pick = rng.choice
        meta = MemoryMeta(
            namespace=pick(NODES),
            workspace=pick([None, "w1", "w2"]),
            folder=pick([None, "/a", "/b"]),
            file_path=pick([None, "/a/x.rs"]),
            language=pick([None, "en", "rust"]),
            repo=pick([None, "o/r"]),
            url=pick([None, "https://x.test"]),
            thread_id=pick([None, "t1", "t2"]),
            agent_id=pick([None, "ag"]),
            tool_call=pick([None, ToolCallRef("grep"), ToolCallRef("sed", "1")]),
            source=Source(pick(list(SourceKind)), pick([None, "s1", "s2"])),
            tags=tuple(rng.sample(["x", "y", "z", "x"], rng.randint(0, 3))),
        )
        if i % 4 == 0:
            items.append(StoreItem.learning(f"fact {i}", LearningKind.FACT, 0.5, meta))
        else:
            items.append(StoreItem.document(f"doc {i}", meta))
    for start in range(0, len(items), 100):
        engine.store_many(items[start : start + 100])


def test_sql_explore_equals_explore_by_listing(mem: LocalEngine) -> None:
    engine = mem
    _fill(engine)
    filters = [
        MetaFilter(),
        MetaFilter(workspace="w1"),
        MetaFilter(reach=Reach.subtree(NODES[1])),
        MetaFilter(reach=Reach.exact(NODES[3])),
        MetaFilter(tags_any=("x",)),
    ]
    for facet in Facet:
        for flt in filters:
            for limit, scan in ((500, 5000), (2, 5000), (3, 40), (1, 1), (500, 137)):
                request = ExploreRequest(facet, limit, flt, scan)
                assert engine.explore(request) == explore_by_listing(engine, request), (
                    facet, flt, limit, scan,
                )


def test_explore_validates(mem: LocalEngine) -> None:
    with pytest.raises(InvalidRequestError):
        mem.explore(ExploreRequest(Facet.KIND, 0))
    with pytest.raises(InvalidRequestError):
        mem.explore(ExploreRequest(Facet.KIND, 5, scan_limit=50_001))
    page = mem.explore(ExploreRequest(Facet.NAMESPACE, 5))
    assert (page.total, page.buckets, page.truncated) == (0, (), False)

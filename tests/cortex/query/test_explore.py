"""explore over the doubles (engine.md §9.11): facet counts from each item's first event."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from cortex_memory.contract.explore import ExploreRequest
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import (
    Document,
    ItemKind,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.errors import InvalidRequestError
from cortex_memory.testing import LoopbackServer


def meta(ns: str = "", **fields: Any) -> MemoryMeta:
    return MemoryMeta(namespace=Namespace.parse(ns), **fields)


def explore(engine: Any, facet: Facet, limit: int = 10, **changes: Any) -> Any:
    return engine.explore(ExploreRequest(facet, limit, **changes))


def sample(h: Any, double: Any) -> None:
    talk = StoreItem.conversation(
        [Turn(Role.USER, "which editor"), Turn(Role.ASSISTANT, "helix"), Turn(Role.USER, "ok")],
        meta(tags=("chat",)),
    )
    h.seed(
        double,
        StoreItem.document("one", meta(tags=("a", "b"))),
        StoreItem.document("two", meta("agent:x", tags=("a",))),
        talk,
        StoreItem.learning("tea", LearningKind.PREFERENCE, 0.5, meta("agent:x")),
        StoreItem.document("boxed", meta("service:job", tags=("a",))),
    )


def test_kind_counts_each_item_once(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    sample(h, double)
    page = explore(engine, Facet.KIND)
    assert page.facet is Facet.KIND
    # The service sandbox is not read without a reach that names it.
    assert [(b.value, b.count) for b in page.buckets] == [
        ("document", 2),
        ("conversation", 1),
        ("learning", 1),
    ]
    assert page.total == 4
    assert page.missing == 0
    assert page.more_buckets == 0
    assert page.truncated is False


def test_multi_valued_and_missing_values(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    sample(h, double)
    page = explore(engine, Facet.TAG)
    assert [(b.value, b.count) for b in page.buckets] == [("a", 2), ("b", 1), ("chat", 1)]
    assert page.total == 4
    assert page.missing == 1  # the learning has no tag
    cut = explore(engine, Facet.TAG, 1)
    assert [(b.value, b.count) for b in cut.buckets] == [("a", 2)]
    assert cut.more_buckets == 2


def test_namespace_facet_and_reach(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    sample(h, double)
    page = explore(engine, Facet.NAMESPACE)
    assert {(b.value, b.count) for b in page.buckets} == {("root", 2), ("agent:x", 2)}
    boxed = explore(
        engine,
        Facet.NAMESPACE,
        filter=MetaFilter(reach=Reach.exact(Namespace.parse("service:job"))),
    )
    assert [(b.value, b.count) for b in boxed.buckets] == [("service:job", 1)]


def test_a_filter_is_applied_to_each_event(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    sample(h, double)
    page = explore(engine, Facet.KIND, filter=MetaFilter(tags_any=("a",)))
    assert [(b.value, b.count) for b in page.buckets] == [("document", 2)]
    kinds = explore(engine, Facet.NAMESPACE, filter=MetaFilter(kinds=(ItemKind.LEARNING,)))
    assert [(b.value, b.count) for b in kinds.buckets] == [("agent:x", 1)]


def test_a_chunked_document_missing_a_piece_still_counts(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    body = "first page " + "a " * 100_000 + "\f" + "second page " + "b " * 100_000
    item = Document(TextBody(body), None, None, MemoryMeta())
    h.seed(double, item)
    assert double.state.event_count() >= 2
    with double.state.lock:
        double.state.log.lose_last("app:tinymemory/app:documents")
    page = explore(engine, Facet.KIND)
    assert [(b.value, b.count) for b in page.buckets] == [("document", 1)]


def test_an_item_whose_first_event_is_gone_is_not_counted(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    talk = StoreItem.conversation([Turn(Role.USER, "a"), Turn(Role.ASSISTANT, "b")], meta())
    bodies = h.bodies_of(talk)
    h.seed_bodies(double, bodies[1:])  # only turn 1
    assert explore(engine, Facet.KIND).total == 0


def test_scan_limit_truncates(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, *(StoreItem.document(f"doc {i}") for i in range(5)))
    h.seed(double, StoreItem.learning("x", LearningKind.FACT, 0.5))
    page = explore(engine, Facet.KIND, scan_limit=3)
    assert page.total == 3
    assert page.truncated is True
    exact = explore(engine, Facet.KIND, scan_limit=6)
    assert exact.total == 6
    assert exact.truncated is False
    assert [(b.value, b.count) for b in exact.buckets] == [("document", 5), ("learning", 1)]


def test_counts_survive_paging_through_the_doubled_listing(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    # 250 items: 500 listed copies, three pages of 200.
    items = [StoreItem.learning(f"fact {i}", LearningKind.FACT, 0.5) for i in range(250)]
    h.seed(double, *items)
    page = explore(engine, Facet.KIND, scan_limit=50_000)
    assert [(b.value, b.count) for b in page.buckets] == [("learning", 250)]
    assert page.truncated is False
    listings = [line for line in double.state.requests() if "/events?" in line]
    assert len([line for line in listings if "app%3Alearnings" in line]) == 3


def test_scopes_are_walked_four_at_a_time(h: Any) -> None:
    from cortex_memory.testing import DirectDouble

    with DirectDouble(listing_delay_ms=40) as double:
        h.seed(double, *(StoreItem.document(f"d{i}", meta(f"agent:a{i}")) for i in range(6)))
        page = explore(double.engine(), Facet.KIND)
        peak = double.state.counters["listings_peak"]
    assert page.total == 6
    assert 1 < peak <= 4


def test_the_page_cap_warns_and_truncates(caplog: pytest.LogCaptureFixture, h: Any) -> None:
    counter = {"pages": 0}

    def handler(request: Any) -> Any:
        if request.path == "/v1/events":
            counter["pages"] += 1
            return 200, {}, {"items": [], "has_more": True, "next_cursor": str(counter["pages"])}
        return 404, {}, b""

    flt = MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.DOCUMENT,))
    with LoopbackServer(handler) as server:
        engine = h.engine_for(server.url)
        with caplog.at_level(logging.WARNING, logger="cortex_memory"):
            page = explore(engine, Facet.KIND, filter=flt)
        engine.close()
    assert counter["pages"] == 500
    assert page.truncated is True
    assert page.total == 0
    assert any("500 pages" in record.getMessage() for record in caplog.records)


def test_an_invalid_explore_sends_nothing(on_wire: Any) -> None:
    engine, double = on_wire
    for bad in (ExploreRequest(Facet.KIND, 0), ExploreRequest(Facet.KIND, 5, scan_limit=0)):
        with pytest.raises(InvalidRequestError):
            engine.explore(bad)
    assert double.state.requests() == []

"""The doubles' knobs that concern the query side (doubles.md §8.2), on both wires."""

from __future__ import annotations

from typing import Any, Iterator, Tuple

import pytest

from cortex_memory.contract.explore import ExploreRequest
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind, Role, StoreItem, Turn
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import FetchMode, FetchRequest, RecallRequest
from cortex_memory.errors import UnavailableError
from cortex_memory.testing import DirectDouble, HostedDouble


@pytest.fixture(params=["direct", "hosted"])
def make(request: pytest.FixtureRequest) -> Iterator[Any]:
    """``make(**knobs)`` → ``(engine, double)`` on a fresh double of the parametrized wire."""
    opened = []

    def build(**knobs: Any) -> Tuple[Any, Any]:
        if request.param == "direct":
            double = DirectDouble(**knobs)
        else:
            knobs.setdefault("rate_limit_requests", None)
            double = HostedDouble(**knobs)
        double.start()
        opened.append(double)
        return double.engine(), double

    yield build
    for double in opened:
        double.close()


def at(ns: str, **fields: Any) -> MemoryMeta:
    return MemoryMeta(namespace=Namespace.parse(ns), **fields)


def fetch(engine: Any, query: str, limit: int = 10, **changes: Any) -> Any:
    return engine.fetch(FetchRequest(query, FetchMode.HYBRID, limit, **changes))


def test_padding_scopes_are_discovered_and_max_scopes_bounds_the_packs(make: Any, h: Any) -> None:
    engine, double = make(padding_scopes=20)
    h.seed(double, StoreItem.document("notes about alpha", at("agent:alpha")))
    page = fetch(engine, "alpha notes", max_scopes=2)
    packed = h.recalls_by_scope(double)
    assert len(packed) == 2
    assert "app:tinymemory/agent:alpha/app:documents" in packed
    assert [hit.text for hit in page.hits] == ["notes about alpha"]
    # 20 padded learnings scopes + the root's 3 + agent:alpha's documents were probed.
    assert sum(line.endswith("&limit=20") for line in double.state.requests()) == 24
    counts = engine.explore(ExploreRequest(Facet.NAMESPACE, 10))
    assert [(b.value, b.count) for b in counts.buckets] == [("agent:alpha", 1)]


def test_a_string_prefix_backend_never_leaks_a_sibling(make: Any, h: Any) -> None:
    engine, double = make(string_prefix_scopes=True)
    h.seed(
        double,
        StoreItem.document("alpha of ann", at("user:ann")),
        StoreItem.document("alpha of anna", at("user:anna")),
    )
    ann = MetaFilter(reach=Reach.subtree(Namespace.parse("user:ann")))
    page = fetch(engine, "alpha", filter=ann)
    assert [hit.text for hit in page.hits] == ["alpha of ann"]
    counts = engine.explore(ExploreRequest(Facet.NAMESPACE, 10, ann))
    assert [(b.value, b.count) for b in counts.buckets] == [("user:ann", 1)]
    answer = engine.recall(RecallRequest("alpha", 5, ann))
    assert [c.snippet for c in answer.citations] == ["alpha of ann"]
    assert not any("anna" in scope for scope in h.recalls_by_scope(double))


def test_rate_limited_listings_are_retried(make: Any, h: Any) -> None:
    engine, double = make()
    talk = StoreItem.conversation(
        [Turn(Role.USER, "alpha question"), Turn(Role.ASSISTANT, "alpha answer")], MemoryMeta()
    )
    ids = h.seed(double, talk, StoreItem.document("alpha doc"))
    double.state.rate_limit_events = 2
    page = fetch(engine, "alpha")  # the discovery listing and the assembly lookup hit 429
    assert {hit.id for hit in page.hits} == set(ids)
    assert double.state.counters["rate_limited"] == 2
    double.state.rate_limit_events = 2
    assert engine.explore(ExploreRequest(Facet.KIND, 10)).total == 2


def test_recall_down_fails_fetch_as_unavailable(make: Any, h: Any) -> None:
    engine, double = make(recall_down=True)
    h.seed(double, StoreItem.document("alpha"))
    with pytest.raises(UnavailableError):
        fetch(engine, "alpha", filter=MetaFilter(kinds=(ItemKind.DOCUMENT,)))
    # One scope, three attempts (a read is retried), then the error.
    assert len(double.state.seen.recalls) == 3


def test_conversations_are_assembled_four_lookups_at_a_time(make: Any, h: Any) -> None:
    engine, double = make(listing_delay_ms=40)
    talks = [
        StoreItem.conversation(
            [Turn(Role.USER, f"alpha {i}"), Turn(Role.ASSISTANT, "ok")], at(f"agent:a{i}")
        )
        for i in range(6)
    ]
    h.seed(double, *talks)
    page = fetch(engine, "alpha", filter=MetaFilter(kinds=(ItemKind.CONVERSATION,)))
    assert {hit.id for hit in page.hits} == {talk.fingerprint() for talk in talks}
    assert 1 < double.state.counters["listings_peak"] <= 4


def test_writes_made_visible_by_the_engine_are_fetched_and_recalled(make: Any) -> None:
    engine, double = make(index_delay_seconds=0.05)
    engine.store_many(
        [
            StoreItem.document("alpha document stored through the engine"),
            StoreItem.conversation(
                [Turn(Role.USER, "alpha asked"), Turn(Role.ASSISTANT, "alpha told")], MemoryMeta()
            ),
        ]
    )
    page = fetch(engine, "alpha")
    assert len(page.hits) == 2
    answer = engine.recall(RecallRequest("alpha", 5))
    assert len(answer.citations) == 2
    assert double.state.event_count() == 3


def test_recent_writes_win_a_capped_fetch(make: Any) -> None:
    engine, double = make()
    engine.store(StoreItem.document("old notes", at("agent:first")))
    engine.store(StoreItem.document("new notes", at("agent:second")))
    page = fetch(engine, "notes", max_scopes=1)
    assert [hit.text for hit in page.hits] == ["new notes"]
    # Our own writes dated both scopes: neither was probed.
    probes = [line for line in double.state.requests() if line.endswith("&limit=20")]
    assert not any("agent%3Afirst" in line or "agent%3Asecond" in line for line in probes)

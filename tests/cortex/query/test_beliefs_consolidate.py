"""beliefs and consolidate over the doubles (engine.md §9.12, §9.13)."""

from __future__ import annotations

from typing import Any, Dict, List
from urllib.parse import parse_qs

import pytest

from cortex_memory.contract.consolidation import (
    BeliefsRequest,
    ConsolidateReceipt,
    ConsolidateRequest,
    ConsolidateStatus,
)
from cortex_memory.contract.items import ItemKind, LearningKind, StoreItem
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.errors import InvalidRequestError, UnavailableError
from cortex_memory.testing import LoopbackServer

EVERYTHING = Reach.subtree(Namespace.root())


def at(ns: str) -> MemoryMeta:
    return MemoryMeta(namespace=Namespace.parse(ns))


def seed_and_build(h: Any, double: Any) -> None:
    h.seed(
        double,
        StoreItem.document("prefers helix", at("agent:a")),
        StoreItem.document("uses tea", at("agent:a")),
        StoreItem.learning("prefers helix too", LearningKind.FACT, 0.5, at("agent:b")),
        StoreItem.document("boxed helix", at("service:job")),
    )
    state = double.state
    with state.lock:
        for scope in state.log.scopes_holding_events():
            state.log.build_beliefs(scope, state.clock())


def test_beliefs_with_a_query_merge_each_held_scopes_pack(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    seed_and_build(h, double)
    found = engine.beliefs(BeliefsRequest(EVERYTHING, 10, "helix"))
    assert [b.text for b in found] == ["user said prefers helix", "user said prefers helix too"]
    for belief in found:
        assert belief.kind is ItemKind.LEARNING
        assert belief.meta.tags == ("belief",)
        assert belief.confidence == 0.8999999761581421
        assert belief.score == 1.0
        assert belief.meta.observed_at is not None
    assert [b.meta.namespace for b in found] == [
        Namespace.parse("agent:a"),
        Namespace.parse("agent:b"),
    ]
    bodies = h.recalls_by_scope(double)
    # Held scopes only (the sandbox is outside subtree(root)); one beliefs-only pack each.
    assert set(bodies) == {
        "app:tinymemory/agent:a/app:documents",
        "app:tinymemory/agent:b/app:learnings",
    }
    for _scope, (body,) in bodies.items():
        assert body["include"] == ["beliefs"]
        assert body["query"] == "helix"
        assert body["budgets"]["per_layer_limits"] == {
            "events": 0,
            "facts": 0,
            "episodes": 0,
            "understanding": 0,
            "beliefs": 10,
        }
        assert body["budgets"]["max_tokens"] == 10 * 786_432
    assert double.state.seen.answers == []


def test_beliefs_text_is_deduped_case_insensitively_and_cut(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(
        double,
        StoreItem.document("Likes Tea", at("agent:a")),
        StoreItem.document("likes tea", at("agent:b")),
        StoreItem.document("likes coffee", at("agent:b")),
    )
    state = double.state
    with state.lock:
        for scope in state.log.scopes_holding_events():
            state.log.build_beliefs(scope, state.clock())
    found = engine.beliefs(BeliefsRequest(EVERYTHING, 10, "likes"))
    assert [b.text for b in found] == ["user said Likes Tea", "user said likes coffee"]
    assert len(engine.beliefs(BeliefsRequest(EVERYTHING, 1, "likes"))) == 1


def test_beliefs_without_a_query_read_the_direct_listing(on_direct: Any, h: Any) -> None:
    engine, double = on_direct
    seed_and_build(h, double)
    state = double.state
    with state.lock:
        confidence = {"prefers helix": 0.95, "prefers helix too": 0.2}
        for belief in state.log.beliefs:
            belief["confidence"] = confidence.get(belief["claim"]["object"]["value"], 0.9)
    state.clear_seen()
    found = engine.beliefs(BeliefsRequest(EVERYTHING, 5))
    listings = [line for line in state.requests() if line.startswith("GET /v1/beliefs?")]
    assert sorted(listings) == [
        "GET /v1/beliefs?scope=app%3Atinymemory%2Fagent%3Aa%2Fapp%3Adocuments&limit=5",
        "GET /v1/beliefs?scope=app%3Atinymemory%2Fagent%3Ab%2Fapp%3Alearnings&limit=5",
    ]
    assert [b.text for b in found] == [
        "user said prefers helix",
        "user said uses tea",
        "user said prefers helix too",
    ]
    assert found[-1].confidence == pytest.approx(0.2)
    assert len(engine.beliefs(BeliefsRequest(EVERYTHING, 2))) == 2


def test_beliefs_without_a_query_on_hosted_are_empty_and_send_nothing(
    on_hosted: Any, h: Any
) -> None:
    engine, double = on_hosted
    seed_and_build(h, double)
    double.state.clear_seen()
    assert engine.beliefs(BeliefsRequest(EVERYTHING, 5)) == []
    assert double.state.requests() == []


def test_beliefs_within_an_exact_reach(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    seed_and_build(h, double)
    found = engine.beliefs(BeliefsRequest(Reach.exact(Namespace.parse("agent:b")), 5, "helix"))
    assert [b.text for b in found] == ["user said prefers helix too"]


def test_nothing_held_means_no_beliefs_and_no_pack(on_wire: Any) -> None:
    engine, double = on_wire
    assert engine.beliefs(BeliefsRequest(EVERYTHING, 5, "helix")) == []
    assert double.state.seen.recalls == []


SCOPES = [
    "app:tinymemory/agent:a/app:documents",
    "app:tinymemory/agent:b/app:learnings",
]


def _server(answers: Dict[str, Any], seen: List[Any]) -> LoopbackServer:
    def handler(request: Any) -> Any:
        if request.path == "/v1/scopes/list":
            return 200, {}, {"items": [{"path": p} for p in SCOPES]}
        if request.path == "/v1/beliefs":
            scope = parse_qs(request.query)["scope"][0]
            seen.append(scope)
            if scope == SCOPES[0]:
                return 404, {}, b""
            return (
                200,
                {},
                {
                    "items": [
                        {
                            "id": "b1",
                            "scope": scope,
                            "confidence": 0.4,
                            "claim": {"predicate": "is", "object": "x"},
                        }
                    ]
                },
            )
        if request.path == "/v1/beliefs/build":
            scope = request.json()["scope"]
            seen.append(scope)
            return 200, {}, answers[scope]
        return 404, {}, b""

    return LoopbackServer(handler)


def test_a_missing_beliefs_listing_reads_as_empty(h: Any) -> None:
    seen: List[Any] = []
    with _server({}, seen) as server:
        engine = h.engine_for(server.url)
        found = engine.beliefs(BeliefsRequest(EVERYTHING, 5))
        engine.close()
    assert sorted(seen) == SCOPES
    assert [b.text for b in found] == ["is x"]


def test_consolidate_on_hosted_is_scheduled_and_sends_nothing(on_hosted: Any, h: Any) -> None:
    engine, double = on_hosted
    h.seed(double, StoreItem.document("x", at("agent:a")))
    receipt = engine.consolidate(ConsolidateRequest(EVERYTHING))
    assert receipt == ConsolidateReceipt.scheduled()
    assert double.state.requests() == []


def test_consolidate_builds_each_held_scope_once(on_direct: Any, h: Any) -> None:
    engine, double = on_direct
    h.seed(
        double,
        StoreItem.document("one", at("agent:a")),
        StoreItem.document("two", at("agent:a")),
        StoreItem.learning("three", LearningKind.FACT, 0.5, at("agent:a/agent:c")),
        StoreItem.document("four", at("agent:z")),
    )
    receipt = engine.consolidate(ConsolidateRequest(Reach.subtree(Namespace.parse("agent:a"))))
    assert receipt == ConsolidateReceipt.completed(2, 3)
    assert double.state.seen.builds == [
        {"scope": "app:tinymemory/agent:a/app:documents"},
        {"scope": "app:tinymemory/agent:a/agent:c/app:learnings"},
    ]
    assert len(double.state.log.beliefs) == 3
    narrowed = engine.consolidate(
        ConsolidateRequest(Reach.subtree(Namespace.parse("agent:a")), (ItemKind.LEARNING,))
    )
    # Already built: nothing new, but the scope was still asked.
    assert narrowed == ConsolidateReceipt.completed(1, 0)


def test_consolidate_with_nothing_held_is_completed_empty(on_direct: Any) -> None:
    engine, double = on_direct
    assert engine.consolidate(ConsolidateRequest(EVERYTHING)) == ConsolidateReceipt.completed(0, 0)
    assert double.state.seen.builds == []


def test_consolidate_started_with_job_handles(h: Any) -> None:
    seen: List[Any] = []
    answers = {SCOPES[0]: {"job_id": "job-1", "built": 2}, SCOPES[1]: {"id": 7}}
    with _server(answers, seen) as server:
        engine = h.engine_for(server.url)
        receipt = engine.consolidate(ConsolidateRequest(EVERYTHING))
        engine.close()
    assert receipt.status is ConsolidateStatus.STARTED
    assert receipt.jobs == ("job-1", "7")
    assert receipt.scopes == 2
    assert receipt.built is None
    assert seen == SCOPES


@pytest.mark.parametrize(
    ("answer", "handle"),
    [
        ({"build_id": "b", "id": "i"}, "b"),
        ({"job_id": "", "build_id": 3.0}, "3"),
        ({"job_id": True, "id": "x"}, "x"),
        ({"job_id": None}, None),
        ([], None),
    ],
)
def test_job_handle_order(answer: Any, handle: Any) -> None:
    from cortex_memory.cortex.engine.consolidate import job_handle

    assert job_handle(answer) == handle


def test_a_transient_build_failure_is_not_retried(h: Any) -> None:
    builds: List[Any] = []

    def handler(request: Any) -> Any:
        if request.path == "/v1/scopes/list":
            return 200, {}, {"items": [{"path": SCOPES[0]}]}
        if request.path == "/v1/beliefs/build":
            builds.append(request.json())
            return 503, {}, {"error_code": "UNAVAILABLE"}
        return 404, {}, b""

    with LoopbackServer(handler) as server:
        engine = h.engine_for(server.url)
        with pytest.raises(UnavailableError):
            engine.consolidate(ConsolidateRequest(EVERYTHING))
        engine.close()
    assert builds == [{"scope": SCOPES[0]}]


def test_an_invalid_consolidate_or_beliefs_sends_nothing(on_wire: Any) -> None:
    engine, double = on_wire
    with pytest.raises(InvalidRequestError):
        engine.consolidate(ConsolidateRequest(EVERYTHING, (ItemKind.DOCUMENT, ItemKind.DOCUMENT)))
    with pytest.raises(InvalidRequestError):
        engine.beliefs(BeliefsRequest(EVERYTHING, 0))
    with pytest.raises(InvalidRequestError):
        engine.beliefs(BeliefsRequest(EVERYTHING, 3, "  "))
    assert double.state.requests() == []

"""recall over the doubles (engine.md §9.9): packs, the chosen pack, rounds, citations."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind, LearningKind, Role, StoreItem, Turn
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import RecallRequest
from cortex_memory.errors import EngineError, InvalidRequestError, NotFoundError, UnavailableError
from cortex_memory.testing import LoopbackServer

ROOT_DOCS = "app:tinymemory/app:documents"
ROOT_LEARNINGS = "app:tinymemory/app:learnings"
DEEP_DOCS = "app:tinymemory/agent:a/agent:b/app:documents"


def doc(text: str, ns: str = "", **meta: Any) -> StoreItem:
    return StoreItem.document(text, MemoryMeta(namespace=Namespace.parse(ns), **meta))


def learning(text: str, ns: str = "") -> StoreItem:
    meta = MemoryMeta(namespace=Namespace.parse(ns))
    return StoreItem.learning(text, LearningKind.FACT, 0.5, meta)


def recall(engine: Any, question: str, limit: int = 5, **changes: Any) -> Any:
    return engine.recall(RecallRequest(question, limit, **changes))


def test_an_unscoped_recall_packs_every_held_scope_and_answers_once(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha root"), learning("alpha fact"), doc("alpha deep", "agent:a/agent:b"))
    answer = recall(engine, "alpha question", 6)
    state = double.state
    assert answer.answer == "grounded answer for alpha question"
    assert answer.model == "reasoning"
    bodies = h.recalls_by_scope(double)
    assert set(bodies) == {ROOT_DOCS, ROOT_LEARNINGS, DEEP_DOCS}
    for scope, (body,) in bodies.items():
        assert body == {
            "scope": scope,
            "query": "alpha question",
            "view": "granular",
            "include": ["events", "facts", "beliefs", "episodes", "understanding"],
            "budgets": {
                "max_tokens": 8_388_608,
                "per_layer_limits": {
                    "events": 12,
                    "facts": 2,
                    "beliefs": 2,
                    "episodes": 1,
                    "understanding": 1,
                },
            },
        }
    (sent,) = state.seen.answers
    # Every pack admits one event: the tie goes to the deepest scope (packed first).
    assert sent["scope"] == DEEP_DOCS
    issued = {f"pack_{n}" for n in range(1, 4)}
    assert sent["use_pack_id"] in issued
    assert sent["cite_sources"] is True
    assert sent["include_context"] is True
    assert sent["question"] == "alpha question"
    assert {c.snippet for c in answer.citations} == {"alpha root", "alpha fact", "alpha deep"}
    assert all(c.score is None for c in answer.citations)


def test_the_answer_comes_from_the_pack_with_most_admitted_events(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha one"), doc("alpha two"), doc("alpha deep", "agent:a/agent:b"))
    recall(engine, "alpha")
    (sent,) = double.state.seen.answers
    assert sent["scope"] == ROOT_DOCS
    pack_of_root = [
        pid for pid, pack in double.state.log.packs.items() if pack["scope"] == ROOT_DOCS
    ]
    assert sent["use_pack_id"] == pack_of_root[0]


def test_answer_instructions_null_on_direct_omitted_on_hosted(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha"))
    recall(engine, "alpha")
    (plain,) = double.state.seen.answers
    if double.wire == "hosted":
        assert "answer_instructions" not in plain
    else:
        assert "answer_instructions" in plain
        assert plain["answer_instructions"] is None
    double.state.clear_seen()
    recall(engine, "alpha", instructions="be brief")
    (steered,) = double.state.seen.answers
    assert steered["answer_instructions"] == "be brief"
    # The hosted answer is sent once under a fresh claim; the recall carries none.
    if double.wire == "hosted":
        seen = double.state.seen
        claims = {
            line: headers.get("idempotency-key")
            for line, headers in zip(seen.requests, seen.headers)
        }
        assert claims["POST /memory/answer"].startswith("tm-")
        assert claims["POST /memory/recall"] is None


def test_nothing_held_answers_empty_without_a_pack(on_wire: Any) -> None:
    engine, double = on_wire
    answer = recall(engine, "alpha")
    assert answer.answer == ""
    assert answer.citations == ()
    assert answer.model is None
    state = double.state
    assert state.seen.recalls == []
    assert state.seen.answers == []
    assert len(state.requests()) == 1  # the one scope listing
    assert "scopes" in state.requests()[0]


def test_a_reach_reads_its_scopes_without_a_listing(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha there", "agent:a"), doc("alpha elsewhere", "agent:z"))
    reach = Reach.exact(Namespace.parse("agent:a"))
    answer = recall(engine, "alpha", filter=MetaFilter(reach=reach))
    assert [c.snippet for c in answer.citations] == ["alpha there"]
    assert not any("scopes" in line for line in double.state.requests())
    assert set(h.recalls_by_scope(double)) == {
        "app:tinymemory/agent:a/app:documents",
        "app:tinymemory/agent:a/app:conversations",
        "app:tinymemory/agent:a/app:learnings",
    }


def test_a_service_sandbox_is_not_recalled_without_a_reach(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha open"), doc("alpha sandboxed", "service:job"))
    answer = recall(engine, "alpha")
    assert [c.snippet for c in answer.citations] == ["alpha open"]
    assert set(h.recalls_by_scope(double)) == {ROOT_DOCS}


def test_expired_pack_repacks_every_scope_once_more(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha"))
    double.state.expire_packs = 1
    answer = recall(engine, "alpha")
    assert answer.answer == "grounded answer for alpha"
    state = double.state
    assert len(state.seen.recalls) == 2
    assert len(state.seen.answers) == 2
    first, second = state.seen.answers
    assert first["use_pack_id"] != second["use_pack_id"]


def test_expired_packs_with_two_scopes_repack_both(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha"), learning("alpha fact"))
    double.state.expire_packs = 1
    recall(engine, "alpha")
    assert len(double.state.seen.recalls) == 4
    assert len(double.state.seen.answers) == 2


def test_three_expired_packs_raise_not_found_after_three_answers(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha"))
    double.state.expire_packs = 3
    with pytest.raises(NotFoundError):
        recall(engine, "alpha")
    assert len(double.state.seen.answers) == 3
    assert len(double.state.seen.recalls) == 3


def test_a_forget_between_pack_and_answer_is_survived(on_wire: Any, h: Any) -> None:
    """A real expiry: every pack is dropped (as any forget does) just before the answer."""
    engine, double = on_wire
    h.seed(double, doc("alpha"))
    state = double.state
    original = state.log.live_pack
    dropped: List[bool] = []

    def drop_once(pack_id: Any, now: float, ttl: float) -> Any:
        if not dropped:
            dropped.append(True)
            state.log.packs.clear()
        return original(pack_id, now, ttl)

    state.log.live_pack = drop_once  # type: ignore[method-assign]
    try:
        answer = recall(engine, "alpha")
    finally:
        state.log.live_pack = original  # type: ignore[method-assign]
    assert answer.answer == "grounded answer for alpha"
    assert len(state.seen.answers) == 2


def test_recall_down_is_unavailable_after_three_attempts(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha"))
    double.state.recall_down = True
    with pytest.raises(UnavailableError):
        recall(engine, "alpha")
    assert len(double.state.seen.recalls) == 3
    assert double.state.seen.answers == []


def test_citations_interleave_dedupe_and_stop_at_the_limit(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    talk = StoreItem.conversation(
        [Turn(Role.USER, "alpha turn zero"), Turn(Role.ASSISTANT, "alpha turn one")],
        MemoryMeta(),
    )
    h.seed(
        double,
        talk,
        doc("alpha beta doc"),
        doc("alpha plain doc"),
        learning("alpha beta fact"),
    )
    answer = recall(engine, "alpha beta", 3)
    cited = [(c.kind, c.snippet) for c in answer.citations]
    # Rank 0 of each scope (documents, conversations, learnings), then rank 1.
    assert cited == [
        (ItemKind.DOCUMENT, "alpha beta doc"),
        (ItemKind.CONVERSATION, "alpha turn one"),
        (ItemKind.LEARNING, "alpha beta fact"),
    ]
    assert len({c.id for c in answer.citations}) == 3
    everything = recall(engine, "alpha beta", 10)
    ids = [c.id for c in everything.citations]
    assert len(ids) == len(set(ids)) == 4  # the conversation's two turns cite it once
    assert talk.fingerprint() in ids


def test_citation_meta_is_located_for_a_piece(on_wire: Any, h: Any) -> None:
    from cortex_memory.contract.items import Document, TextBody
    from cortex_memory.cortex.envelope import envelopes

    engine, double = on_wire
    body = "needle first page " + "a " * 100_000 + "\f" + "second page " + "b " * 100_000
    item = Document(TextBody(body), None, None, MemoryMeta(tags=("t",)))
    first = envelopes(item)[0]
    h.seed(double, item)
    answer = recall(engine, "needle", 2)
    (citation,) = answer.citations
    assert citation.snippet == first.text
    assert citation.meta.tags[0] == "t"
    assert "page:1" in citation.meta.tags


def _server(recall_answer: Dict[str, Any], answer: Any) -> LoopbackServer:
    def handler(request: Any) -> Any:
        if request.path == "/v1/recall":
            return 200, {}, recall_answer
        if request.path == "/v1/answer":
            return 200, {}, answer
        return 404, {}, b""

    return LoopbackServer(handler)


ROOT_ONLY = MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.DOCUMENT,))


def test_a_pack_without_pack_id_is_an_engine_error(h: Any) -> None:
    with _server({"layers": {}}, {"answer": "x"}) as server:
        engine = h.engine_for(server.url)
        with pytest.raises(EngineError, match="pack_id"):
            recall(engine, "alpha", filter=ROOT_ONLY)
        engine.close()
        assert not any(raw.startswith(b"POST /v1/answer") for raw in server.raw_requests)


@pytest.mark.parametrize("answer", [{"answer": 5}, {}, [], {"answer": None}])
def test_an_answer_without_text_is_an_engine_error(answer: Any, h: Any) -> None:
    with _server({"pack_id": "p1", "layers": {"events": []}}, answer) as server:
        engine = h.engine_for(server.url)
        with pytest.raises(EngineError, match="answer"):
            recall(engine, "alpha", filter=ROOT_ONLY)
        engine.close()


def test_a_missing_model_is_none(h: Any) -> None:
    with _server({"pack_id": "p1"}, {"answer": "ok", "diagnostics": {"answer_model": 3}}) as srv:
        engine = h.engine_for(srv.url)
        answer = recall(engine, "alpha", filter=ROOT_ONLY)
        engine.close()
    assert answer.answer == "ok"
    assert answer.model is None
    assert answer.citations == ()


def test_an_invalid_recall_sends_nothing(on_wire: Any) -> None:
    engine, double = on_wire
    for bad in (RecallRequest("  ", 5), RecallRequest("q", 0)):
        with pytest.raises(InvalidRequestError):
            engine.recall(bad)
    assert double.state.requests() == []


def test_packs_fan_out_four_at_a_time_and_deepest_first(h: Any) -> None:
    import threading
    import time

    lock = threading.Lock()
    live = {"now": 0, "peak": 0}
    started: List[str] = []
    paths = [f"app:tinymemory/agent:a{i}/app:learnings" for i in range(7)]
    paths.append("app:tinymemory/agent:a0/agent:deep/app:learnings")

    def handler(request: Any) -> Any:
        if request.path == "/v1/scopes/list":
            return 200, {}, {"items": [{"path": p} for p in paths]}
        if request.path == "/v1/recall":
            with lock:
                started.append(request.json()["scope"])
                live["now"] += 1
                live["peak"] = max(live["peak"], live["now"])
            time.sleep(0.05)
            with lock:
                live["now"] -= 1
            return 200, {}, {"pack_id": "p", "layers": {"events": []}}
        if request.path == "/v1/answer":
            answered.append(request.json()["scope"])
            return 200, {}, {"answer": "fine"}
        return 404, {}, b""

    answered: List[str] = []
    with LoopbackServer(handler) as server:
        engine = h.engine_for(server.url)
        answer = recall(engine, "alpha")
        engine.close()
    assert answer.answer == "fine"
    assert len(started) == 8
    assert 1 < live["peak"] <= 4
    # The deepest scope is packed in the first wave and wins the all-empty tie.
    assert paths[-1] in started[:4]
    assert answered == [paths[-1]]

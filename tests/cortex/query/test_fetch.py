"""fetch over the doubles (engine.md §9.8): packs, budgets, interleave, pages, assembly."""

from __future__ import annotations

import threading
import time
from typing import Any, List

import pytest

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
from cortex_memory.contract.requests import FetchMode, FetchRequest
from cortex_memory.cortex.engine.cursor import FetchCursor, ListCursor
from cortex_memory.cortex.envelope import envelopes
from cortex_memory.errors import InvalidRequestError, UnsupportedError
from cortex_memory.testing import LoopbackServer

DOCS = "app:tinymemory/app:documents"
CONVS = "app:tinymemory/app:conversations"
LEARNINGS = "app:tinymemory/app:learnings"
F32_THIRD = 0.3333333432674408
# Documents are packed before learnings; each scope's rank 0, then each rank 1.
RANKED = ["alpha beta gamma", "alpha beta", "alpha only", "gamma"]


def fetch(engine: Any, query: str, limit: int, **changes: Any) -> Any:
    req = FetchRequest(query, FetchMode.HYBRID, limit, **changes)
    return engine.fetch(req)


def learning(text: str, ns: str = "") -> StoreItem:
    meta = MemoryMeta(namespace=Namespace.parse(ns))
    return StoreItem.learning(text, LearningKind.FACT, 0.5, meta)


def doc(text: str, ns: str = "", **meta: Any) -> StoreItem:
    return StoreItem.document(text, MemoryMeta(namespace=Namespace.parse(ns), **meta))


def conversation(*texts: str, **meta: Any) -> StoreItem:
    roles = [Role.USER, Role.ASSISTANT]
    turns = [Turn(roles[i % 2], text) for i, text in enumerate(texts)]
    return StoreItem.conversation(turns, MemoryMeta(**meta))


def test_packs_each_scope_granular_with_the_budget(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha note"))
    page = fetch(engine, "alpha", 5)
    assert [hit.text for hit in page.hits] == ["alpha note"]
    bodies = h.recalls_by_scope(double)
    assert set(bodies) == {DOCS, CONVS, LEARNINGS}
    for scope, sent in bodies.items():
        assert len(sent) == 1
        assert sent[0] == {
            "scope": scope,
            "query": "alpha",
            "view": "granular",
            "include": ["events"],
            # A first page of 5 asks (5 + 1) × 3 = 18 events, past the token cap.
            "budgets": {"max_tokens": 8_388_608, "per_layer_limits": {"events": 18}},
        }


def test_a_narrowing_filter_travels_as_metadata_labels(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha in thread", thread_id="t-1"), doc("alpha elsewhere"))
    page = fetch(engine, "alpha", 5, filter=MetaFilter(thread_id="t-1", kinds=(ItemKind.DOCUMENT,)))
    assert [hit.text for hit in page.hits] == ["alpha in thread"]
    (body,) = h.recalls_by_scope(double)[DOCS]
    (label,) = body["filters"]["metadata"]["labels"]
    assert label.startswith("tm:t:")
    # kinds narrows the scopes read: only documents were packed.
    assert set(h.recalls_by_scope(double)) == {DOCS}


def test_interleave_round_robin_with_global_ranks_and_scores(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    # The double ranks by how many query words an event holds, newest first on ties.
    h.seed(
        double,
        doc("alpha beta gamma"),
        doc("alpha only"),
        learning("alpha beta"),
        learning("gamma"),
    )
    page = fetch(engine, "alpha beta gamma", 10)
    assert [hit.text for hit in page.hits] == RANKED
    assert [hit.score for hit in page.hits] == [1.0, 0.5, F32_THIRD, 0.25]
    assert [hit.kind for hit in page.hits] == [
        ItemKind.DOCUMENT,
        ItemKind.LEARNING,
        ItemKind.DOCUMENT,
        ItemKind.LEARNING,
    ]
    assert page.hits[1].confidence == 0.5
    assert page.next_cursor is None


def test_pages_follow_the_cursor_with_global_ranks(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc(RANKED[0]), doc(RANKED[2]), learning(RANKED[1]), learning(RANKED[3]))
    seen: List[Any] = []
    cursor = None
    cursors = set()
    for _ in range(10):
        page = fetch(engine, "alpha beta gamma", 1, cursor=cursor)
        seen.extend(page.hits)
        if page.next_cursor is None:
            break
        assert page.next_cursor not in cursors
        cursors.add(page.next_cursor)
        cursor = page.next_cursor
    assert [hit.text for hit in seen] == RANKED
    assert [hit.score for hit in seen] == [1.0, 0.5, F32_THIRD, 0.25]
    # Page 2 (offset 1, end 2) asked (2 + 1) × 3 = 9 events per scope.
    assert FetchCursor.decode(sorted(cursors)[0]).offset in (1, 2, 3)
    events_asked = sorted(
        {b["budgets"]["per_layer_limits"]["events"] for b in h.recalls_by_scope(double)[DOCS]}
    )
    assert events_asked == [6, 9, 12, 15]
    assert {b["budgets"]["max_tokens"] for b in h.recalls_by_scope(double)[DOCS]} == {
        6 * 786_432,
        9 * 786_432,
        8_388_608,
    }


def test_an_item_in_two_scopes_is_listed_once(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    item = doc("alpha twice")
    bodies = h.bodies_of(item)
    copy = dict(bodies[0], scope="app:tinymemory/agent:x/app:documents", idempotency_key="k2")
    h.seed_bodies(double, [*bodies, copy])
    page = fetch(engine, "alpha", 5)
    assert [hit.id for hit in page.hits] == [item.fingerprint()]


def test_a_chunk_piece_is_shown_as_the_piece_with_its_location(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    body = (
        "# Intro\nneedle first page "
        + "a " * 100_000
        + "\f"
        + "# Later\nsecond page "
        + "b " * 100_000
    )
    item = Document(TextBody(body), "Guide", None, MemoryMeta(tags=("t",)))
    pieces = envelopes(item)
    assert len(pieces) >= 2
    h.seed(double, item)
    page = fetch(engine, "needle", 5)
    (found,) = page.hits
    first = pieces[0]
    assert found.id == item.fingerprint()
    assert found.text == "# Guide\n\n" + first.text
    assert first.text.startswith("# Intro\nneedle")
    assert not first.text.endswith("b ")  # the piece, not the whole document
    assert found.meta.tags == ("t", "page:1", "section:Intro")
    later = fetch(engine, "second", 5)
    (second,) = later.hits
    assert second.meta.tags[-1] == "section:Later"
    assert second.meta.tags[1].startswith("page:2")


def test_conversations_are_whole_hits(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    talk = conversation("which editor do I use", "you use helix", "right, helix")
    h.seed(double, talk)
    double.state.clear_seen()
    page = fetch(engine, "editor", 5, filter=MetaFilter(kinds=(ItemKind.CONVERSATION,)))
    (found,) = page.hits
    assert found.id == talk.fingerprint()
    assert found.text == talk.render_text()
    assert found.score == 1.0
    # Assembly looked the conversation up by its item label.
    assert any(
        line.split("?")[0].endswith("/events") and "labels=" in line
        for line in double.state.requests()
    )


def test_a_one_turn_conversation_needs_no_lookup(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    talk = conversation("remember the milk")
    h.seed(double, talk)
    double.state.clear_seen()
    page = fetch(engine, "milk", 5)
    assert [hit.text for hit in page.hits] == ["user: remember the milk"]
    assert not any("/events" in line for line in double.state.requests())


def test_an_unassemblable_conversation_is_dropped(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    talk = conversation("lost milk question", "lost milk answer")
    bodies = h.bodies_of(talk)
    for body in bodies:
        # Without its tm:i: label the item cannot be found again to assemble it.
        body["context"]["labels"] = body["context"]["labels"][1:]
    h.seed_bodies(double, bodies)
    h.seed(double, doc("milk is fine"))
    page = fetch(engine, "milk", 5)
    assert [hit.text for hit in page.hits] == ["milk is fine"]
    # The dropped conversation kept its rank: the document is rank 0 in its scope.
    assert page.hits[0].score == 1.0


def test_beliefs_come_on_the_first_page_only(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha one"), doc("alpha two"), learning("alpha three"))
    state = double.state
    with state.lock:
        for scope in (DOCS, LEARNINGS):
            state.log.build_beliefs(scope, state.clock())
    page = fetch(engine, "alpha", 1, beliefs=2)
    assert len(page.beliefs) == 2
    for found in page.beliefs:
        assert found.kind is ItemKind.LEARNING
        assert found.text.startswith("user said ")
        assert found.meta.tags == ("belief",)
    # Round robin across scopes: the documents' best, then the learnings' best.
    assert page.beliefs[1].text == "user said alpha three"
    for body in state.seen.recalls:
        assert body["include"] == ["events", "beliefs"]
        assert body["budgets"]["per_layer_limits"]["beliefs"] == 2
    state.clear_seen()
    second = fetch(engine, "alpha", 1, beliefs=2, cursor=page.next_cursor)
    assert second.beliefs == ()
    assert len(second.hits) == 1
    for body in state.seen.recalls:
        assert body["include"] == ["events"]
        assert "beliefs" not in body["budgets"]["per_layer_limits"]


def test_beliefs_outside_the_reach_are_dropped(h: Any) -> None:
    def handler(request: Any) -> Any:
        if request.path == "/v1/recall":
            scope = request.json()["scope"]
            beliefs = [
                {"id": "in", "scope": scope, "claim": {"predicate": "p", "object": "kept"}},
                {
                    "id": "out",
                    "scope": "app:tinymemory/agent:other/app:documents",
                    "claim": {"predicate": "p", "object": "dropped"},
                },
            ]
            return 200, {}, {"pack_id": "p", "layers": {"events": [], "beliefs": beliefs}}
        return 404, {}, b""

    with LoopbackServer(handler) as server:
        from_h = h.engine_for(server.url)
        page = from_h.fetch(
            FetchRequest(
                "q", FetchMode.HYBRID, 3, MetaFilter(reach=Reach.exact(Namespace.root())), beliefs=5
            )
        )
        from_h.close()
    assert [b.id for b in page.beliefs] == ["in"]


def test_max_scopes_picks_named_scopes_and_the_cursor_keeps_them(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(
        double,
        doc("notes one", "agent:alpha"),
        doc("notes one", "agent:beta"),
        doc("notes two", "agent:beta"),
        doc("notes one", "agent:gamma"),
    )
    state = double.state
    page = fetch(engine, "beta notes", 1, max_scopes=1)
    beta = "app:tinymemory/agent:beta/app:documents"
    assert set(h.recalls_by_scope(double)) == {beta}
    assert [hit.meta.namespace for hit in page.hits] == [Namespace.parse("agent:beta")]
    # Every scope without a fresh recency entry was probed for its newest events.
    probes = [line for line in state.requests() if line.endswith("&limit=20")]
    assert len(probes) == 6
    assert page.next_cursor is not None
    assert FetchCursor.decode(page.next_cursor).scopes == (beta,)
    state.clear_seen()
    second = fetch(engine, "beta notes", 1, max_scopes=1, cursor=page.next_cursor)
    assert set(h.recalls_by_scope(double)) == {beta}
    assert not any(line.endswith("&limit=20") for line in state.requests())
    assert [hit.meta.namespace for hit in second.hits] == [Namespace.parse("agent:beta")]
    assert second.next_cursor is None


def test_max_scopes_above_the_scope_count_changes_nothing(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha 1"), doc("alpha 2"))
    page = fetch(engine, "alpha", 1, max_scopes=3)
    assert not any(line.endswith("&limit=20") for line in double.state.requests())
    assert page.next_cursor is not None
    assert FetchCursor.decode(page.next_cursor) == FetchCursor(1, ())


@pytest.mark.parametrize("cursor", ["zz", "f0", "fzz", ListCursor().encode(), "f" + b"[1]".hex()])
def test_a_malformed_cursor_is_refused_before_any_request(on_wire: Any, cursor: str) -> None:
    engine, double = on_wire
    with pytest.raises(InvalidRequestError, match="cursor is malformed"):
        fetch(engine, "alpha", 5, cursor=cursor)
    assert double.state.requests() == []


@pytest.mark.parametrize("mode", [FetchMode.KEYWORD, FetchMode.VECTOR])
def test_other_modes_are_refused_before_any_request(on_wire: Any, mode: FetchMode) -> None:
    engine, double = on_wire
    with pytest.raises(UnsupportedError):
        engine.fetch(FetchRequest("alpha", mode, 5))
    with pytest.raises(UnsupportedError):
        engine.fetch(FetchRequest("  ", mode, 0))  # the mode gate comes first
    assert double.state.requests() == []


def test_an_invalid_fetch_sends_nothing(on_wire: Any) -> None:
    engine, double = on_wire
    for bad in (
        FetchRequest(" ", FetchMode.HYBRID, 5),
        FetchRequest("q", FetchMode.HYBRID, 0),
        FetchRequest("q", FetchMode.HYBRID, 5, max_scopes=0),
    ):
        with pytest.raises(InvalidRequestError):
            engine.fetch(bad)
    assert double.state.requests() == []


def test_packs_fan_out_four_at_a_time(h: Any) -> None:
    lock = threading.Lock()
    live = {"now": 0, "peak": 0, "recalls": 0}
    paths = [f"app:tinymemory/agent:a{i}/app:learnings" for i in range(8)]

    def handler(request: Any) -> Any:
        if request.path == "/v1/scopes/list":
            return 200, {}, {"items": [{"path": p} for p in paths]}
        if request.path == "/v1/recall":
            with lock:
                live["now"] += 1
                live["recalls"] += 1
                live["peak"] = max(live["peak"], live["now"])
            time.sleep(0.05)
            with lock:
                live["now"] -= 1
            return 200, {}, {"pack_id": "p", "layers": {"events": []}}
        return 404, {}, b""

    with LoopbackServer(handler) as server:
        engine = h.engine_for(server.url)
        page = engine.fetch(
            FetchRequest("q", FetchMode.HYBRID, 5, MetaFilter(kinds=(ItemKind.LEARNING,)))
        )
        engine.close()
    assert page.hits == ()
    assert live["recalls"] == 9  # the root's learnings plus the 8 listed
    assert 1 < live["peak"] <= 4


def test_nothing_matching_gives_an_empty_page(on_wire: Any) -> None:
    engine, _ = on_wire
    page = fetch(engine, "nothing", 5)
    assert page.hits == ()
    assert page.next_cursor is None
    assert page.beliefs == ()


def test_hits_are_decoded_with_the_stored_meta(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    item = doc("alpha tagged", "agent:x", tags=("t1",), language="en")
    h.seed(double, item)
    page = fetch(engine, "alpha", 5, filter=MetaFilter(reach=Reach.of(Namespace.parse("agent:x"))))
    (found,) = page.hits
    assert found.meta == item.meta
    assert found.text == "alpha tagged"


def test_a_filter_drops_events_the_server_returned(on_wire: Any, h: Any) -> None:
    engine, double = on_wire
    h.seed(double, doc("alpha keep", tags=("keep",)), doc("alpha drop", tags=("drop",)))
    page = fetch(engine, "alpha", 5, filter=MetaFilter(tags_any=("keep",)))
    assert [hit.text for hit in page.hits] == ["alpha keep"]

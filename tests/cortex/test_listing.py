"""list, list_preview and get over both wires (engine.md §9.6, §9.7)."""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs

import pytest

from cortex_memory.contract import (
    ForgetTarget,
    GetRequest,
    ItemKind,
    ListRequest,
    MetaFilter,
    Namespace,
    Reach,
)
from cortex_memory.cortex import CortexEngine, EngineCredential, Timing
from cortex_memory.cortex.engine.cursor import FetchCursor, ListCursor
from cortex_memory.errors import EngineError, InvalidRequestError, UnavailableError
from cortex_memory.testing import LoopbackServer, sample_items
from cortex_memory.testing.hostile import RawRequest

FAST = Timing(poll_interval=0.005, read_backoff=0.005, visibility=2.0, settle=2.0)


def _walk(engine: CortexEngine, flt: MetaFilter, limit: int, preview: bool = False) -> List[Any]:
    hits: List[Any] = []
    cursor: Optional[str] = None
    for _ in range(100):
        request = ListRequest(flt, limit, cursor)
        page = engine.list_preview(request) if preview else engine.list(request)
        assert len(page.items) <= limit
        hits.extend(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return hits
        assert cursor.startswith("l")
    raise AssertionError("the listing did not end")


def test_list_pages_through_every_item_once(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    items = [*sample_items(), kit.learning("another"), kit.document("second doc")]
    items.append(kit.conversation(4, "chat two"))
    ids = [r.id for r in engine.store_many(items)]
    for limit in (1, 2, 3, 50):
        hits = _walk(engine, MetaFilter(), limit)
        assert sorted(hit.id for hit in hits) == sorted(ids)
        # Kind-major order: documents, conversations, learnings.
        order = {ItemKind.DOCUMENT: 0, ItemKind.CONVERSATION: 1, ItemKind.LEARNING: 2}
        kinds = [order[hit.kind] for hit in hits]
        assert kinds == sorted(kinds)
        assert all(hit.score == 0.0 for hit in hits)
    chat = next(hit for hit in hits if hit.id == ids[1])
    assert chat.text == "user: which editor do I use\nassistant: you use helix\nuser: right, helix"


def test_list_filters_and_narrows_by_label(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    engine.store_many(sample_items())
    double.state.clear_seen()
    page = engine.list(ListRequest(MetaFilter(thread_id="t-chat"), 10))
    assert [hit.kind for hit in page.items] == [ItemKind.CONVERSATION]
    listings = [line for line in double.state.requests() if "/events?" in line]
    walked = [line for line in listings if "labels=tm%3Ai%3A" not in line]
    assert walked
    assert all("labels=tm%3At%3A" in line for line in walked)


def test_malformed_cursors_are_refused_before_any_request(direct) -> None:
    engine = direct.engine()
    for cursor in ("x", "l0", "lzz", "l" + "7b7d"[:-1], FetchCursor(3).encode(), "l" + b"[]".hex()):
        with pytest.raises(InvalidRequestError, match="cursor is malformed"):
            engine.list(ListRequest(MetaFilter(), 5, cursor))
    assert direct.state.requests() == []


def test_cursor_vector() -> None:
    cursor = ListCursor("app:tinymemory/app:documents", "c2", 3, "evt_9")
    expected = '{"scope":"app:tinymemory/app:documents","engine":"c2","offset":3,"last":"evt_9"}'
    assert cursor.encode() == "l" + expected.encode().hex()
    assert ListCursor.decode(cursor.encode().upper().replace("L", "l", 1)) == cursor
    assert ListCursor().encode() == "l" + b'{"offset":0}'.hex()
    assert FetchCursor(4, ("a", "b")).encode() == "f" + b'{"offset":4,"scopes":["a","b"]}'.hex()
    assert FetchCursor.decode(FetchCursor(4).encode()) == FetchCursor(4)


def test_listing_resumes_after_a_scope_that_vanished(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    a, b, c = (kit.learning(f"in {n}", namespace=Namespace.parse(f"agent:{n}")) for n in "abc")
    ids = [r.id for r in engine.store_many([a, b, c])]
    flt = MetaFilter(reach=Reach.subtree(Namespace.root()))
    first = engine.list(ListRequest(flt, 1))
    assert [hit.id for hit in first.items] == [ids[0]]
    assert first.next_cursor is not None
    engine.forget(ForgetTarget.ids([ids[1]]))
    rest = engine.list(ListRequest(flt, 5, first.next_cursor))
    assert [hit.id for hit in rest.items] == [ids[2]]
    assert rest.next_cursor is None


def _long_text(pieces: int) -> str:
    paragraph = ("lorem ipsum dolor sit amet " * 40).strip()
    return "\n\n".join(f"{n} {paragraph}" for n in range(pieces * 260))


def test_chunked_document_is_assembled_and_a_lost_piece_drops_it(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    text = _long_text(3)
    doc = kit.document(text, "Big")
    other = kit.learning("small")
    doc_id, other_id = (r.id for r in engine.store_many([doc, other]))
    assert double.state.event_count() >= 4
    [whole] = [hit for hit in engine.list(ListRequest(MetaFilter(), 10)).items if hit.id == doc_id]
    assert whole.text == "# Big\n\n" + text
    double.state.log.lose_last("app:tinymemory/app:documents")
    listed = engine.list(ListRequest(MetaFilter(), 10))
    assert [hit.id for hit in listed.items] == [other_id]
    preview = engine.list_preview(ListRequest(MetaFilter(), 10))
    assert [hit.id for hit in preview.items] == [doc_id, other_id]
    assert preview.items[0].text != whole.text
    assert engine.get(GetRequest((doc_id, other_id))) == [listed.items[0]]
    # Storing it again fills in the lost piece.
    engine.store(doc)
    [again] = engine.get(GetRequest((doc_id,)))
    assert again.text == whole.text


def test_get_in_request_order_omits_unknown_and_out_of_reach(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    ids = [r.id for r in engine.store_many(sample_items())]
    away = kit.learning("sandboxed", namespace=Namespace.parse("agent:far/service:box"))
    away_id = engine.store(away).id
    asked = (ids[2], "0" * 40, ids[0], ids[1], away_id, ids[2])
    hits = engine.get(GetRequest(asked))
    assert [hit.id for hit in hits] == [ids[2], ids[0], ids[1]]
    reach = Reach.of(Namespace.parse("agent:far/service:box"))
    assert [hit.id for hit in engine.get(GetRequest((away_id, ids[0]), reach))] == [away_id, ids[0]]


def test_get_stops_once_every_id_is_found(direct, kit) -> None:
    engine = direct.engine()
    doc_id = engine.store(kit.document("first kind")).id
    direct.state.clear_seen()
    engine.get(GetRequest((doc_id,)))
    assert direct.state.count("GET /v1/events") == 1


def test_get_lists_labels_in_chunks_of_50(direct) -> None:
    engine = direct.engine()
    ids = tuple(f"{n:040x}" for n in range(120))
    engine.get(GetRequest(ids, Reach.exact(Namespace.root())))
    lines = [line for line in direct.state.requests() if line.startswith("GET /v1/events")]
    assert len(lines) == 9  # 3 scopes x 3 chunks (50, 50, 20)
    counts = [len(parse_qs(line.split("?", 1)[1])["labels"][0].split(",")) for line in lines]
    assert counts == [50, 50, 20] * 3


def test_reads_retry_a_rate_limit(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    engine.store_many(sample_items())
    double.state.rate_limit_events = 2
    assert len(engine.list(ListRequest(MetaFilter(), 10)).items) == 3


@pytest.mark.parametrize(("times", "ok"), [(5, True), (6, False)])
def test_state_change_retries_up_to_six_attempts(wire, make_double, times: int, ok: bool) -> None:
    double = make_double(wire, state_change_events=times)
    engine = double.engine()
    route = "GET /memory/events" if double.hosted else "GET /v1/events"
    if ok:
        engine.list(ListRequest(MetaFilter(kinds=(ItemKind.LEARNING,)), 10))
        assert double.state.count(route) == 6
        return
    with pytest.raises(UnavailableError) as info:
        engine.list(ListRequest(MetaFilter(kinds=(ItemKind.LEARNING,)), 10))
    assert double.state.count(route) == 6
    assert info.value.code == "AUTHORIZATION_STATE_CHANGED"
    if double.hosted:
        assert info.value.message.startswith("[AUTHORIZATION_STATE_CHANGED]")


def test_unavailable_read_makes_three_attempts(wire, make_double) -> None:
    double = make_double(wire, fail_all=(500, "INTERNAL"))
    engine = double.engine()
    with pytest.raises(UnavailableError):
        engine.list(ListRequest(MetaFilter(kinds=(ItemKind.LEARNING,)), 10))
    assert len(double.state.requests()) == 3


def test_subtree_discovery_lists_scopes_once_and_drops_siblings(wire, make_double, kit) -> None:
    double = make_double(wire, string_prefix_scopes=True)
    engine = double.engine()
    ann = kit.learning("ann's", namespace=Namespace.parse("user:ann"))
    anna = kit.learning("anna's", namespace=Namespace.parse("user:anna"))
    deep = kit.learning("deeper", namespace=Namespace.parse("user:ann/agent:w"))
    box = kit.learning("sandboxed", namespace=Namespace.parse("user:ann/service:box"))
    ids = [r.id for r in engine.store_many([ann, anna, deep, box])]
    double.state.clear_seen()
    hits = engine.list(
        ListRequest(MetaFilter(reach=Reach.subtree(Namespace.parse("user:ann"))), 10)
    )
    assert sorted(hit.id for hit in hits.items) == sorted([ids[0], ids[2]])
    scope_listings = [line for line in double.state.requests() if "scopes" in line]
    assert len(scope_listings) == 1
    assert "prefix=app%3Atinymemory%2Fuser%3Aann&limit=1000" in scope_listings[0]


def test_a_full_scope_listing_is_a_warning_for_reads(wire, make_double, caplog) -> None:
    double = make_double(wire, padding_scopes=1000)
    engine = double.engine()
    with caplog.at_level(logging.WARNING, logger="cortex_memory"):
        engine.list(ListRequest(MetaFilter(reach=Reach.subtree(Namespace.root())), 1))
    assert "may be truncated" in caplog.text
    with pytest.raises(EngineError, match="more than 999 scopes"):
        engine.forget(ForgetTarget.ids(["0" * 40]))


# -- a fake Direct server with tiny pages -------------------------------------------------


class _FakeLog:
    """Serves ``GET /v1/events`` over ``events`` (doubled, newest first) ``size`` at a time."""

    def __init__(self, events: List[Dict[str, Any]], size: int, stuck: bool = False) -> None:
        self.events = events
        self.size = size
        self.stuck = stuck
        self.listings = 0

    def __call__(self, request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        if request.path == "/v1/auth/whoami":
            return 404, [], b""
        if request.path == "/v1/scopes/list":
            return 200, [], {"items": []}
        query = parse_qs(request.query)
        self.listings += 1
        stream = [e for e in reversed(self.events) if e["scope"] == query["scope"][0]]
        doubled = [e for event in stream for e in (event, event)]
        start = int(query.get("cursor", ["0"])[0])
        if self.stuck:
            return 200, [], {"items": [], "has_more": True, "next_cursor": str(start + 1)}
        page = doubled[start : start + self.size]
        end = start + len(page)
        following = str(start) if start and self.size == 0 else str(end)
        return 200, [], {"items": page, "has_more": end < len(doubled), "next_cursor": following}


def _events_of(engine_items: List[Any]) -> List[Dict[str, Any]]:
    from cortex_memory.cortex.engine.store import plan_item

    events = []
    for n, item in enumerate(engine_items):
        for _, request in plan_item(item).events:
            body = request.to_json()
            events.append(
                {
                    "id": f"evt_{n}_{len(events)}",
                    "scope": body["scope"],
                    "content": body["content"],
                    "context": body["context"],
                }
            )
    return events


def test_doubled_events_split_across_pages_are_admitted_once(kit) -> None:
    items = [kit.learning(f"note {n}") for n in range(7)]
    fake = _FakeLog(_events_of(items), size=3)
    with LoopbackServer(fake) as server:
        engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
        flt = MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.LEARNING,))
        for limit in (1, 2, 4):
            hits = _walk(engine, flt, limit)
            assert [hit.text for hit in hits] == [f"note {n}" for n in reversed(range(7))]
        engine.close()


def test_a_page_that_fills_at_the_last_item_has_no_cursor(kit) -> None:
    """Filled at the last item, whose repeated copy ends the server's page, with no page
    or scope after it: nothing could follow, so no cursor (no empty page to ask for).
    With one more item left, or a copy followed by an event, the cursor remains."""
    flt = MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.LEARNING,))
    items = [kit.learning(f"note {n}") for n in range(3)]
    fake = _FakeLog(_events_of(items), size=100)
    with LoopbackServer(fake) as server:
        engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
        whole = engine.list(ListRequest(flt, 3))
        assert [hit.text for hit in whole.items] == ["note 2", "note 1", "note 0"]
        assert whole.next_cursor is None
        first = engine.list(ListRequest(flt, 2))
        assert [hit.text for hit in first.items] == ["note 2", "note 1"]
        assert first.next_cursor is not None
        rest = engine.list(ListRequest(flt, 2, first.next_cursor))
        assert [hit.text for hit in rest.items] == ["note 0"]
        assert rest.next_cursor is None
        engine.close()
    # A server page that ends after the copy but says more follows keeps the cursor.
    fake = _FakeLog(_events_of(items), size=4)
    with LoopbackServer(fake) as server:
        engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
        page = engine.list(ListRequest(flt, 2))
        assert page.next_cursor is not None
        assert ListCursor.decode(page.next_cursor).engine == "4"
        assert [hit.text for hit in engine.list(ListRequest(flt, 5, page.next_cursor)).items] == [
            "note 0"
        ]
        engine.close()


def test_a_listing_that_never_fills_stops_at_the_page_budget() -> None:
    fake = _FakeLog([], size=3, stuck=True)
    with LoopbackServer(fake) as server:
        engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
        flt = MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.LEARNING,))
        with pytest.raises(EngineError, match="read 501 pages"):
            engine.list(ListRequest(flt, 5))
        engine.close()
    assert fake.listings == 501


def test_a_cursor_that_does_not_advance_is_an_engine_error() -> None:
    def handler(request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        query = parse_qs(request.query)
        cursor = query.get("cursor", ["c1"])[0]
        return 200, [], {"items": [], "has_more": True, "next_cursor": cursor}

    with LoopbackServer(handler) as server:
        engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
        flt = MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.LEARNING,))
        with pytest.raises(EngineError, match="does not advance"):
            engine.list(ListRequest(flt, 5))
        engine.close()

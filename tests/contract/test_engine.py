"""MemoryEngine's defaults and the shared helpers, on a small in-memory engine."""

from __future__ import annotations

import threading
from typing import List, Optional

import pytest

from cortex_memory.contract import (
    SCAN_PAGE,
    BeliefsRequest,
    ConsolidateRequest,
    EngineDescriptor,
    EngineHealth,
    EraseRequest,
    ExploreRequest,
    Facet,
    FetchMode,
    FetchPage,
    FetchRequest,
    ForgetFilter,
    ForgetIds,
    ForgetReport,
    ForgetTarget,
    GetRequest,
    Hit,
    ItemKind,
    LearningKind,
    ListPage,
    ListRequest,
    MemoryEngine,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    RecallAnswer,
    RecallRequest,
    Segment,
    SegmentKind,
    StoreItem,
    StoreReceipt,
    WaitFor,
    cursor_from_offset,
    explore_by_listing,
    explore_page_of,
    forget_within_by_get,
    forget_within_ids,
    get_by_listing,
    in_request_order,
    offset_from_cursor,
)
from cortex_memory.errors import EngineError, InvalidRequestError, UnsupportedError


class TinyEngine(MemoryEngine):
    """Seven methods over a list, with a decimal offset cursor; records its calls."""

    def __init__(self) -> None:
        self.items: List[StoreItem] = []
        self.lock = threading.Lock()
        self.list_calls: List[ListRequest] = []
        self.get_calls: List[GetRequest] = []
        self.forgets: List[ForgetTarget] = []
        self.waits: List[WaitFor] = []
        self.fail_on: Optional[str] = None
        self.closed = 0

    def descriptor(self) -> EngineDescriptor:
        return EngineDescriptor("tiny", "Tiny", "test engine", fetch_modes=(FetchMode.KEYWORD,))

    def health(self) -> EngineHealth:
        return EngineHealth.ok()

    def recall(self, request: RecallRequest) -> RecallAnswer:
        request.validate()
        return RecallAnswer("nothing")

    def fetch(self, request: FetchRequest) -> FetchPage:
        self.descriptor().ensure_mode(request.mode)
        request.validate()
        return FetchPage(())

    def store(self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE) -> StoreReceipt:
        item.validate()
        if self.fail_on is not None and item.render_text() == self.fail_on:
            raise EngineError("store failed")
        self.waits.append(wait)
        with self.lock:
            held = any(i.fingerprint() == item.fingerprint() for i in self.items)
            if not held:
                self.items.append(item)
        return StoreReceipt(item.fingerprint(), held)

    def forget(self, target: ForgetTarget) -> ForgetReport:
        target.validate()
        self.forgets.append(target)
        with self.lock:
            before = len(self.items)
            if isinstance(target, ForgetIds):
                self.items = [i for i in self.items if i.fingerprint() not in target.ids]
            elif isinstance(target, ForgetFilter):
                flt = target.filter
                self.items = [i for i in self.items if not flt.matches(i.item_kind, i.meta)]
            return ForgetReport(before - len(self.items))

    def list(self, request: ListRequest) -> ListPage:
        request.validate()
        self.list_calls.append(request)
        start = int(request.cursor or 0)
        with self.lock:
            matched = [i for i in self.items if request.filter.matches(i.item_kind, i.meta)]
        page = matched[start : start + request.limit]
        end = start + len(page)
        return ListPage(
            tuple(Hit.of(i) for i in page), str(end) if end < len(matched) else None
        )

    def get(self, request: GetRequest) -> List[Hit]:
        self.get_calls.append(request)
        return super().get(request)

    def close(self) -> None:
        self.closed += 1


def doc(text: str, **meta: object) -> StoreItem:
    return StoreItem.document(text, MemoryMeta(**meta))  # type: ignore[arg-type]


def filled(count: int, **meta: object) -> TinyEngine:
    engine = TinyEngine()
    for i in range(count):
        engine.store(doc(f"item {i}", **meta))
    return engine


def test_memory_engine_is_abstract() -> None:
    with pytest.raises(TypeError):
        MemoryEngine()  # type: ignore[abstract]
    abstract = MemoryEngine.__abstractmethods__
    assert abstract == {"descriptor", "health", "recall", "fetch", "store", "forget", "list"}


# -------------------------------------------------------------- store_many


def test_store_many_stores_in_order_and_passes_wait() -> None:
    engine = TinyEngine()
    items = [doc("a"), doc("b"), doc("a")]
    receipts = engine.store_many(iter(items), wait=WaitFor.ACCEPTED)
    assert [r.id for r in receipts] == [i.fingerprint() for i in items]
    assert [r.replayed for r in receipts] == [False, False, True]
    assert engine.waits == [WaitFor.ACCEPTED] * 3
    assert [r.replayed for r in engine.store_many(items[:2])] == [True, True]


def test_store_many_validates_the_whole_batch_first() -> None:
    engine = TinyEngine()
    with pytest.raises(InvalidRequestError) as caught:
        engine.store_many([doc("a"), doc(" ")])
    assert caught.value.message == "document body must not be empty"
    assert engine.items == []
    with pytest.raises(InvalidRequestError):
        engine.store_many([])
    # More than one batch (issue 14): stored in batches of 100, receipts in order.
    many = [doc(str(i)) for i in range(101)]
    assert [r.id for r in engine.store_many(many)] == [d.fingerprint() for d in many]


def test_store_many_stops_at_the_first_error_and_keeps_earlier_items() -> None:
    engine = TinyEngine()
    engine.fail_on = "b"
    with pytest.raises(EngineError):
        engine.store_many([doc("a"), doc("b"), doc("c")])
    assert [i.render_text() for i in engine.items] == ["a"]
    engine.fail_on = None
    assert [r.replayed for r in engine.store_many([doc("a"), doc("b"), doc("c")])] == [
        True, False, False,
    ]


# ------------------------------------------------------- refusing defaults


def test_refusing_defaults_validate_first_then_refuse() -> None:
    engine = TinyEngine()
    with pytest.raises(InvalidRequestError):
        engine.export(ListRequest(MetaFilter(), 0))
    with pytest.raises(UnsupportedError) as caught:
        engine.export(ListRequest(MetaFilter(), 5))
    assert caught.value.message == "engine `tiny` does not export items"
    with pytest.raises(InvalidRequestError):
        engine.erase(EraseRequest.new(Reach.subtree(Namespace.root())))
    with pytest.raises(UnsupportedError) as caught:
        engine.erase(EraseRequest.new(Reach.exact(Namespace.parse("agent:a"))))
    assert caught.value.message == "engine `tiny` does not erase"
    bad = ConsolidateRequest(Reach.default(), (ItemKind.DOCUMENT, ItemKind.DOCUMENT))
    with pytest.raises(InvalidRequestError):
        engine.consolidate(bad)
    with pytest.raises(UnsupportedError) as caught:
        engine.consolidate(ConsolidateRequest.new(Reach.default()))
    assert caught.value.message == "engine `tiny` does not consolidate memory"
    with pytest.raises(InvalidRequestError):
        engine.beliefs(BeliefsRequest.new(Reach.default(), 0))
    assert engine.beliefs(BeliefsRequest.new(Reach.default(), 5)) == []


def test_list_preview_is_list_and_close_via_context_manager() -> None:
    engine = filled(3)
    request = ListRequest(MetaFilter(), 2)
    assert engine.list_preview(request) == engine.list(request)
    with engine as entered:
        assert entered is engine
    assert engine.closed == 1
    with pytest.raises(RuntimeError), engine:
        raise RuntimeError("boom")
    assert engine.closed == 2


# ------------------------------------------------------------------ explore


def test_explore_page_of_orders_by_count_then_utf8_bytes() -> None:
    counts = {"b": 2, "a": 2, "\U0001f600": 1, "\uffff": 1, "é": 1, "Z": 3}
    page = explore_page_of(Facet.TAG, counts, 4, 10, 1, False)
    assert [(b.value, b.count) for b in page.buckets] == [("Z", 3), ("a", 2), ("b", 2), ("é", 1)]
    assert page.more_buckets == 2
    assert (page.total, page.missing, page.truncated) == (10, 1, False)
    by_bytes = sorted(counts, key=lambda v: v.encode("utf-8"))
    assert sorted(counts) == by_bytes
    assert explore_page_of(Facet.TAG, counts, 500, 10, 0, True).more_buckets == 0


def test_explore_by_listing_counts_and_defaults_to_it() -> None:
    engine = TinyEngine()
    engine.store(doc("a", tags=("x", "y")))
    engine.store(doc("b", tags=("x",)))
    engine.store(doc("c"))
    engine.store(StoreItem.learning("l", LearningKind.FACT, 0.5))
    page = engine.explore(ExploreRequest.new(Facet.TAG, 10))
    assert [(b.value, b.count) for b in page.buckets] == [("x", 2), ("y", 1)]
    assert (page.total, page.missing, page.more_buckets, page.truncated) == (4, 2, 0, False)
    kinds = explore_by_listing(engine, ExploreRequest(Facet.KIND, 1, MetaFilter()))
    assert [(b.value, b.count) for b in kinds.buckets] == [("document", 3)]
    assert kinds.more_buckets == 1
    with pytest.raises(InvalidRequestError):
        engine.explore(ExploreRequest.new(Facet.KIND, 0))


def test_explore_by_listing_pages_and_truncates_at_scan_limit() -> None:
    engine = filled(450, workspace="w")
    page = engine.explore(ExploreRequest(Facet.WORKSPACE, 5, MetaFilter(), 250))
    assert page.truncated
    assert page.total == 250
    assert [r.limit for r in engine.list_calls] == [SCAN_PAGE, 50]
    engine.list_calls.clear()
    whole = engine.explore(ExploreRequest(Facet.WORKSPACE, 5, MetaFilter(), 450))
    assert whole.total == 450
    assert [(b.value, b.count) for b in whole.buckets] == [("w", 450)]
    # The listing ended exactly at the scan limit: nothing was left unread.
    assert not whole.truncated
    engine.list_calls.clear()
    full = engine.explore(ExploreRequest(Facet.WORKSPACE, 5, MetaFilter(), 5000))
    assert (full.total, full.truncated) == (450, False)
    assert [r.cursor for r in engine.list_calls] == [None, "200", "400"]


def test_explore_passes_the_filter() -> None:
    engine = TinyEngine()
    engine.store(doc("a", workspace="w1"))
    engine.store(doc("b", workspace="w2"))
    page = engine.explore(ExploreRequest(Facet.WORKSPACE, 5, MetaFilter(workspace="w1")))
    assert [(b.value, b.count) for b in page.buckets] == [("w1", 1)]


# ---------------------------------------------------------------------- get


def test_get_by_listing_in_request_order() -> None:
    engine = filled(5)
    ids = [i.fingerprint() for i in engine.items]
    asked = [ids[3], "missing", ids[0], ids[3]]
    hits = engine.get(GetRequest(asked))
    assert [h.id for h in hits] == [ids[3], ids[0]]
    assert hits[0] == Hit.of(engine.items[3])
    with pytest.raises(InvalidRequestError):
        engine.get(GetRequest(()))
    with pytest.raises(InvalidRequestError):
        engine.get(GetRequest([" "]))


def test_get_by_listing_stops_once_everything_is_found() -> None:
    engine = filled(450)
    first = engine.items[0].fingerprint()
    assert [h.id for h in get_by_listing(engine, GetRequest([first]))] == [first]
    assert len(engine.list_calls) == 1
    assert engine.list_calls[0].limit == SCAN_PAGE
    engine.list_calls.clear()
    assert get_by_listing(engine, GetRequest(["nope"])) == []
    assert len(engine.list_calls) == 3


def test_get_by_listing_respects_reach_and_sandboxes() -> None:
    engine = TinyEngine()
    root = doc("root")
    job = doc("job", namespace=Namespace.parse("agent:a/service:job"))
    agent = doc("agent", namespace=Namespace.parse("agent:a"))
    for item in (root, job, agent):
        engine.store(item)
    ids = [root.fingerprint(), job.fingerprint(), agent.fingerprint()]
    assert [h.id for h in engine.get(GetRequest(ids))] == [ids[0], ids[2]]
    assert [h.id for h in engine.get(GetRequest(ids, Reach.default()))] == [ids[0]]
    exact_job = Reach.exact(Namespace.parse("agent:a/service:job"))
    assert [h.id for h in engine.get(GetRequest(ids, exact_job))] == [ids[1]]
    assert engine.list_calls[-1].filter == MetaFilter(reach=exact_job)


def test_in_request_order() -> None:
    hits = [Hit(i, ItemKind.DOCUMENT, i, MemoryMeta()) for i in ("a", "b", "c")]
    duplicate = Hit("a", ItemKind.DOCUMENT, "second a", MemoryMeta())
    ordered = in_request_order(["c", "x", "a", "c", "a"], [*hits, duplicate])
    assert [h.id for h in ordered] == ["c", "a"]
    assert ordered[1].text == "a"


# ------------------------------------------------------------ forget_within


def test_forget_within_ids() -> None:
    assert forget_within_ids(iter(["b", "a", "b"])) == ["b", "a"]
    with pytest.raises(InvalidRequestError) as caught:
        forget_within_ids([])
    assert caught.value.message == "forget needs at least one id"
    with pytest.raises(InvalidRequestError) as caught:
        forget_within_ids(["a", "\t"])
    assert caught.value.message == "an id must not be blank"


def test_forget_within_sends_no_forget_when_nothing_is_in_reach() -> None:
    engine = TinyEngine()
    item = doc("at a", namespace=Namespace.parse("agent:a"))
    engine.store(item)
    report = engine.forget_within([item.fingerprint()], Reach.of(Namespace.parse("agent:b")))
    assert report == ForgetReport(0)
    assert engine.forgets == []
    assert len(engine.items) == 1


def test_forget_within_forgets_only_what_the_reach_admits() -> None:
    engine = TinyEngine()
    a = Namespace.parse("agent:a")
    scout = a.child(Segment(SegmentKind.AGENT, "scout"))
    inside = [doc("x", namespace=a), doc("y", namespace=scout)]
    outside = doc("z", namespace=Namespace.parse("agent:b"))
    for item in (*inside, outside):
        engine.store(item)
    ids = [i.fingerprint() for i in (*inside, outside)] + ["unknown"]
    report = forget_within_by_get(engine, ids, Reach.subtree(a))
    assert report == ForgetReport(2)
    assert engine.forgets == [ForgetIds(tuple(i.fingerprint() for i in inside))]
    assert engine.items == [outside]


def test_forget_within_asks_get_in_chunks_of_200() -> None:
    engine = filled(3)
    ids = [*(f"id-{i}" for i in range(450)), engine.items[0].fingerprint()]
    report = engine.forget_within(ids, Reach.subtree(Namespace.root()))
    assert report == ForgetReport(1)
    assert [len(r.ids) for r in engine.get_calls] == [200, 200, 51]


# --------------------------------------------------------- misbehaving list


class StuckEngine(TinyEngine):
    def list(self, request: ListRequest) -> ListPage:
        self.list_calls.append(request)
        return ListPage((), "same")


def test_a_repeated_cursor_fails_instead_of_looping() -> None:
    engine = StuckEngine()
    with pytest.raises(EngineError) as caught:
        engine.explore(ExploreRequest.new(Facet.KIND, 5))
    assert caught.value.message == "engine `tiny` repeated a listing cursor"
    with pytest.raises(EngineError):
        engine.get(GetRequest(["x"]))
    assert len(engine.list_calls) == 4


def test_other_items_are_untouched_by_forget_by_filter() -> None:
    engine = TinyEngine()
    keep = doc("keep")
    drop = doc("drop", tags=("drop",))
    engine.store_many([keep, drop])
    assert engine.forget(ForgetTarget.filter(MetaFilter(tags_any=("drop",)))) == ForgetReport(1)
    assert engine.items == [keep]


def test_offset_cursors() -> None:
    assert offset_from_cursor(None) == 0
    assert offset_from_cursor("0") == 0
    assert offset_from_cursor("200") == 200
    for bad in ("x", "-1", "+1", " 1", "1.0", "\u0661", "", "9" * 19):
        with pytest.raises(InvalidRequestError) as caught:
            offset_from_cursor(bad)
        assert caught.value.message.startswith("unknown cursor `")
    with pytest.raises(InvalidRequestError) as caught:
        offset_from_cursor("x")
    assert caught.value.message == "unknown cursor `x`"
    assert cursor_from_offset(2, 5) == "2"
    assert cursor_from_offset(5, 5) is None

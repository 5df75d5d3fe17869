"""ReferenceEngine: exactly contract.md §9.6 (descriptor, storage, scoring, answers,
consolidation), thread safety and tenants."""

from __future__ import annotations

import math
import threading
from datetime import date, datetime, timezone
from typing import List

import pytest

from cortex_memory.contract import (
    CONSOLIDATED_TAG,
    BeliefsRequest,
    ConsolidateReceipt,
    ConsolidateRequest,
    ConsolidateStatus,
    Consolidation,
    Conversation,
    Document,
    EraseRequest,
    FetchMode,
    FetchRequest,
    ForgetFilter,
    ForgetIds,
    ItemKind,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    RecallRequest,
    Role,
    Segment,
    SegmentKind,
    StoreItem,
    TextBody,
    TimeHint,
    Turn,
    UriBody,
    WaitFor,
    to_f32,
)
from cortex_memory.contract.conformance import REFERENCE_ENGINE_ID, ReferenceEngine
from cortex_memory.contract.conformance.distil import distil, first_sentence
from cortex_memory.contract.conformance.scoring import (
    Query,
    _fnv1a,
    cosine,
    keyword_score,
    score,
    trigram_vector,
    words,
)
from cortex_memory.errors import EngineError, InvalidRequestError, UnsupportedError

# ------------------------------------------------------------------ descriptor


def test_descriptor() -> None:
    d = ReferenceEngine().descriptor()
    assert d.to_json() == {
        "id": "reference",
        "label": "Reference (in-memory)",
        "description": d.description,
        "hosted": False,
        "needs_endpoint": False,
        "needs_key": False,
        "default_endpoint": None,
        "fetch_modes": ["keyword", "vector", "hybrid"],
        "consolidation": "on_demand",
    }
    assert REFERENCE_ENGINE_ID == "reference"
    assert ReferenceEngine(Consolidation.SCHEDULED).descriptor().consolidation is (
        Consolidation.SCHEDULED
    )
    assert ReferenceEngine().health().is_serving()
    assert "tenant='default'" in repr(ReferenceEngine())


def test_constructor_types() -> None:
    with pytest.raises(TypeError):
        ReferenceEngine(store=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ReferenceEngine(tenant=3)  # type: ignore[arg-type]


# --------------------------------------------------------------------- storage


def test_store_replays_by_fingerprint_and_validates() -> None:
    engine = ReferenceEngine()
    item = StoreItem.document("hello")
    first = engine.store(item)
    assert (first.id, first.replayed) == (item.fingerprint(), False)
    assert engine.store(item, wait=WaitFor.ACCEPTED).replayed
    with pytest.raises(InvalidRequestError, match="document body must not be empty"):
        engine.store(StoreItem.document("  "))
    with pytest.raises(InvalidRequestError, match="unresolved uri"):
        engine.store(Document(UriBody("file:///x")))
    with pytest.raises(TypeError):
        engine.store("text")  # type: ignore[arg-type]
    assert engine.snapshot() == (item,)


def test_store_many_validates_once_and_replays_duplicates_in_the_batch() -> None:
    engine = ReferenceEngine()
    a, b = StoreItem.document("a"), StoreItem.document("b")
    receipts = engine.store_many([a, b, a])
    assert [(r.id, r.replayed) for r in receipts] == [
        (a.fingerprint(), False), (b.fingerprint(), False), (a.fingerprint(), True),
    ]
    with pytest.raises(InvalidRequestError, match="at least one item"):
        engine.store_many([])
    # One bad item refuses the whole batch before anything is written.
    with pytest.raises(InvalidRequestError):
        engine.store_many([StoreItem.document("c"), StoreItem.document("")])
    assert engine.snapshot() == (a, b)


def test_forget_by_ids_and_by_filter() -> None:
    engine = ReferenceEngine()
    keep = StoreItem.document("keep", MemoryMeta(tags=("k",)))
    drop = StoreItem.document("drop", MemoryMeta(tags=("d",)))
    job = Namespace.parse("agent:a").child(Segment(SegmentKind.SERVICE, "job"))
    boxed = StoreItem.document("boxed", MemoryMeta(namespace=job, tags=("d",)))
    engine.store_many([keep, drop, boxed])
    # A filter without a reach does not enter the sandbox; ids reach anywhere.
    assert engine.forget(ForgetFilter(MetaFilter(tags_any=("d",)))).forgotten == 1
    assert engine.forget(ForgetIds((boxed.fingerprint(), boxed.fingerprint(), "x"))).forgotten == 1
    assert engine.snapshot() == (keep,)
    with pytest.raises(InvalidRequestError, match="at least one id"):
        engine.forget(ForgetIds(()))
    with pytest.raises(InvalidRequestError, match="empty filter"):
        engine.forget(ForgetFilter(MetaFilter()))


def test_list_pages_by_decimal_offset_with_score_zero() -> None:
    engine = ReferenceEngine()
    items = [StoreItem.document(f"note {i}") for i in range(5)]
    engine.store_many(items)
    page = engine.list(ListRequest(MetaFilter(), 2))
    assert [h.id for h in page.items] == [i.fingerprint() for i in items[:2]]
    assert page.next_cursor == "2"
    assert all(h.score == 0.0 for h in page.items)
    page = engine.list(ListRequest(MetaFilter(), 2, "4"))
    assert [h.id for h in page.items] == [items[4].fingerprint()]
    assert page.next_cursor is None
    assert engine.list(ListRequest(MetaFilter(), 2, "99")).items == ()


@pytest.mark.parametrize("cursor", ["x", "-1", "1.5", " 1", "1" * 19, ""])
def test_an_unknown_cursor_is_refused_with_the_cursor_quoted(cursor: str) -> None:
    engine = ReferenceEngine()
    for call in (
        lambda: engine.list(ListRequest(MetaFilter(), 2, cursor)),
        lambda: engine.export(ListRequest(MetaFilter(), 2, cursor)),
        lambda: engine.fetch(FetchRequest("q", FetchMode.HYBRID, 2, cursor=cursor)),
    ):
        with pytest.raises(InvalidRequestError) as caught:
            call()
        assert caught.value.message == f"unknown cursor `{cursor}`"


def test_export_gives_items_whole() -> None:
    engine = ReferenceEngine()
    item = StoreItem.learning("tea", LearningKind.PREFERENCE, 0.9)
    engine.store(item)
    page = engine.export(ListRequest(MetaFilter(), 10))
    assert [(e.id, e.item) for e in page.items] == [(item.fingerprint(), item)]
    assert page.incomplete == ()
    assert page.next_cursor is None


def test_erase_never_reaches_up_and_counts_node_kind_pairs() -> None:
    engine = ReferenceEngine()
    node = Namespace.parse("agent:x")
    child = node.child(Segment(SegmentKind.AGENT, "c"))
    items = [
        StoreItem.document("root doc"),
        StoreItem.document("node doc", MemoryMeta(namespace=node)),
        StoreItem.document("node doc 2", MemoryMeta(namespace=node)),
        StoreItem.learning("node fact", LearningKind.FACT, 0.5, MemoryMeta(namespace=node)),
        StoreItem.document("child doc", MemoryMeta(namespace=child)),
    ]
    engine.store_many(items)
    # of(child) inherits, but an erase never reaches up: only the child goes.
    assert engine.erase(EraseRequest(Reach.of(child))).erased_scopes == 1
    report = engine.erase(EraseRequest(Reach.subtree(node), (ItemKind.DOCUMENT,)))
    assert report.erased_scopes == 1
    assert [i.render_text() for i in engine.snapshot()] == ["root doc", "node fact"]
    with pytest.raises(InvalidRequestError, match="whole_tree"):
        engine.erase(EraseRequest(Reach.subtree(Namespace.root())))


# --------------------------------------------------------------------- scoring


def test_words_split_on_non_alphanumerics_and_lowercase() -> None:
    assert words("Hello, Wörld! 42x_y--Z") == ["hello", "wörld", "42x", "y", "z"]
    assert words("  ...  ") == []


def test_keyword_score_is_the_fraction_of_distinct_query_words() -> None:
    text = frozenset(words("the cat sat"))
    assert keyword_score(frozenset(words("cat dog cat")), text) == 0.5
    assert keyword_score(frozenset(), text) == 0.0


def test_fnv1a_over_code_points() -> None:
    # Standard 32-bit FNV-1a vectors (ASCII code points equal the bytes).
    assert _fnv1a("a") == 0xE40C292C
    assert _fnv1a("foobar") == 0xBF9CF968
    # "é" hashes its code point 0xE9, not its UTF-8 bytes C3 A9.
    assert _fnv1a("é") == ((0x811C9DC5 ^ 0xE9) * 0x01000193) & 0xFFFFFFFF


def test_trigram_vector_counts_padded_trigrams_and_normalises() -> None:
    one = trigram_vector(["a"])  # " a " is the only trigram
    assert sum(1 for v in one if v) == 1
    assert one[_fnv1a(" a ") % 64] == 1.0
    vec = trigram_vector(["abc", "abc"])  # " ab", "abc", "bc " twice each
    assert math.isclose(sum(v * v for v in vec), 1.0)
    assert len(vec) == 64
    assert trigram_vector([]) == (0.0,) * 64
    assert math.isclose(cosine(vec, vec), 1.0)


def test_modes_thresholds_and_hybrid_mean() -> None:
    query = Query("plan")
    kw, hit = score(query, "the plan has steps", FetchMode.KEYWORD)
    assert (kw, hit) == (1.0, True)
    assert score(query, "nothing related", FetchMode.KEYWORD) == (0.0, False)
    vec, vhit = score(query, "the plan has steps", FetchMode.VECTOR)
    assert vhit
    assert 0.2 <= vec < 1.0
    assert vec == to_f32(vec)
    hy, hhit = score(query, "the plan has steps", FetchMode.HYBRID)
    assert hhit
    assert hy == to_f32((kw + vec) / 2)
    # "plans" shares trigrams with "plan" but is another word: vector only.
    v2, v2hit = score(query, "plans", FetchMode.VECTOR)
    assert v2hit
    assert score(query, "plans", FetchMode.KEYWORD) == (0.0, False)
    h2, h2hit = score(query, "plans", FetchMode.HYBRID)
    assert h2hit
    assert h2 == to_f32(v2 / 2)
    assert score(Query("zzzz"), "abc", FetchMode.VECTOR)[1] is False


def test_fetch_ranks_best_first_with_ties_in_insertion_order() -> None:
    engine = ReferenceEngine()
    a = StoreItem.document("alpha beta")
    b = StoreItem.document("alpha")
    c = StoreItem.document("beta alpha")
    d = StoreItem.document("gamma")
    engine.store_many([a, b, c, d])
    page = engine.fetch(FetchRequest("alpha beta", FetchMode.KEYWORD, 10))
    assert [h.id for h in page.hits] == [a.fingerprint(), c.fingerprint(), b.fingerprint()]
    assert [h.score for h in page.hits] == [1.0, 1.0, 0.5]
    assert page.beliefs == ()
    first = engine.fetch(FetchRequest("alpha beta", FetchMode.KEYWORD, 2))
    assert first.next_cursor == "2"
    rest = engine.fetch(FetchRequest("alpha beta", FetchMode.KEYWORD, 2, cursor="2"))
    assert [h.id for h in rest.hits] == [b.fingerprint()]
    assert rest.next_cursor is None


@pytest.mark.parametrize("mode", list(FetchMode))
def test_fetch_serves_every_mode_and_validates(mode: FetchMode) -> None:
    engine = ReferenceEngine()
    engine.store(StoreItem.document("plan"))
    assert len(engine.fetch(FetchRequest("plan", mode, 1)).hits) == 1
    with pytest.raises(InvalidRequestError, match="query must not be empty"):
        engine.fetch(FetchRequest(" ", mode, 1))
    with pytest.raises(InvalidRequestError, match="limit must be positive"):
        engine.fetch(FetchRequest("plan", mode, 0))


def test_fetch_time_hint_reorders_and_never_filters() -> None:
    engine = ReferenceEngine()
    early = StoreItem.document("plan early", MemoryMeta(observed_at=_at(2024, 1, 1)))
    late = StoreItem.document("plan late", MemoryMeta(observed_at=_at(2024, 3, 3)))
    engine.store_many([early, late])
    hint = TimeHint(date(2024, 3, 1), date(2024, 3, 31))
    page = engine.fetch(FetchRequest("plan", FetchMode.KEYWORD, 10, refers_to=hint))
    assert [h.id for h in page.hits] == [late.fingerprint(), early.fingerprint()]


def _at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=timezone.utc)


# ---------------------------------------------------------------------- recall


def test_recall_answer_format_and_citations() -> None:
    engine = ReferenceEngine()
    a = StoreItem.document("the plan has three steps")
    b = StoreItem.learning("plan carefully", LearningKind.FACT, 0.5)
    engine.store_many([a, b, StoreItem.document("unrelated")])
    answer = engine.recall(RecallRequest("plan", 5))
    assert answer.model == "reference"
    # "plan" is one of the doc's 5 words and one of the learning's 2: same keyword
    # score (1.0), so the vector decides; either way both are cited.
    assert {c.id for c in answer.citations} == {a.fingerprint(), b.fingerprint()}
    snippets = [c.snippet for c in answer.citations]
    assert answer.answer == f"From 2 stored items: {snippets[0]} | {snippets[1]}"
    assert all(c.score is not None and c.score > 0 for c in answer.citations)
    assert [c.kind for c in answer.citations] == [
        ItemKind.DOCUMENT if c.id == a.fingerprint() else ItemKind.LEARNING
        for c in answer.citations
    ]
    limited = engine.recall(RecallRequest("plan", 1))
    assert len(limited.citations) == 1
    assert limited.answer == f"From 1 stored items: {limited.citations[0].snippet}"


def test_recall_with_nothing_to_cite() -> None:
    answer = ReferenceEngine().recall(RecallRequest("anything", 3))
    assert answer.answer == "Nothing stored answers this question."
    assert answer.citations == ()
    assert answer.model == "reference"
    with pytest.raises(InvalidRequestError, match="recall limit must be positive"):
        ReferenceEngine().recall(RecallRequest("x", 0))


# ----------------------------------------------------------------- consolidate


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("tm consolidate. A fact to build on. note", "tm consolidate."),
        ("# Title\n\nFirst line\ncontinues here! Second.", "First line continues here!"),
        ("# Only a heading\n## and another", "Only a heading and another"),
        ("no end at all   here", "no end at all here"),
        ("What now? Then this.", "What now?"),
        ("x" * 300, "x" * 240),
        ("   \n  ", None),
        ("###", None),
    ],
)
def test_first_sentence_rules(text: str, sentence: str) -> None:
    assert first_sentence(text) == sentence


def test_distil_builds_a_tagged_fact_with_evidence() -> None:
    meta = MemoryMeta(workspace="w", tags=("t",), namespace=Namespace.parse("agent:x"))
    doc = Document(TextBody("Body first. More."), title="Heading", meta=meta)
    learning = distil(doc)
    assert learning is not None
    assert learning.text == "Body first."
    assert learning.kind is LearningKind.FACT
    assert learning.confidence == 0.5
    assert learning.evidence == doc.fingerprint()
    assert learning.meta == MemoryMeta(
        workspace="w", tags=("t", CONSOLIDATED_TAG), namespace=Namespace.parse("agent:x")
    )
    chat = Conversation(
        (Turn.new(Role.ASSISTANT, "Hi there."), Turn.new(Role.USER, "Remember tea. Please."))
    )
    chat_learning = distil(chat)
    assert chat_learning is not None
    assert chat_learning.text == "Remember tea."
    assert distil(Conversation((Turn.new(Role.ASSISTANT, "only me."),))) is None
    assert distil(StoreItem.learning("x", LearningKind.FACT, 0.5)) is None


def test_consolidate_on_demand_distils_admitted_items_in_reach() -> None:
    engine = ReferenceEngine(Consolidation.ON_DEMAND)
    node = Namespace.parse("agent:n")
    doc = StoreItem.document("Doc fact. Rest.", MemoryMeta(namespace=node))
    chat = Conversation((Turn.new(Role.USER, "Chat fact. Rest."),), MemoryMeta(namespace=node))
    quiet = StoreItem.document("Quiet fact.", MemoryMeta(namespace=node, derive=False))
    elsewhere = MemoryMeta(namespace=Namespace.parse("agent:o"))
    outside = StoreItem.document("Elsewhere fact.", elsewhere)
    engine.store_many([doc, chat, quiet, outside])
    receipt = engine.consolidate(ConsolidateRequest(Reach.exact(node), (ItemKind.DOCUMENT,)))
    assert receipt == ConsolidateReceipt.completed(1, 1)
    learnings = [i for i in engine.snapshot() if i.item_kind is ItemKind.LEARNING]
    assert [item.render_text() for item in learnings] == ["Doc fact."]
    # All kinds, inheriting: nodes (root, agent:n) × 3 kinds; the doc's learning replays.
    receipt = engine.consolidate(ConsolidateRequest(Reach.of(node)))
    assert receipt.status is ConsolidateStatus.COMPLETED
    assert (receipt.scopes, receipt.built) == (6, 2)
    texts = sorted(i.render_text() for i in engine.snapshot() if i.item_kind is ItemKind.LEARNING)
    assert texts == ["Chat fact.", "Doc fact."]
    assert engine.beliefs(BeliefsRequest(Reach.exact(node), 5)) == []


def test_consolidate_answers_as_declared_and_validates_first() -> None:
    bad = ConsolidateRequest(Reach.default(), (ItemKind.DOCUMENT, ItemKind.DOCUMENT))
    good = ConsolidateRequest(Reach.default())
    for consolidation in Consolidation:
        engine = ReferenceEngine(consolidation)
        with pytest.raises(InvalidRequestError, match="twice"):
            engine.consolidate(bad)
    with pytest.raises(UnsupportedError) as caught:
        ReferenceEngine(Consolidation.NONE).consolidate(good)
    assert str(caught.value) == "unsupported: engine `reference` does not consolidate memory"
    assert ReferenceEngine(Consolidation.SCHEDULED).consolidate(good) == (
        ConsolidateReceipt.scheduled()
    )
    automatic = ReferenceEngine(Consolidation.AUTOMATIC).consolidate(good)
    assert automatic.status is ConsolidateStatus.COMPLETED


# ------------------------------------------------------ threads, tenants, poison


def test_many_threads_share_one_engine() -> None:
    engine = ReferenceEngine()
    errors: List[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(50):
                item = StoreItem.document(f"thread {n} note {i % 25}")
                engine.store(item)
                engine.list(ListRequest(MetaFilter(), 5))
                engine.fetch(FetchRequest("note", FetchMode.HYBRID, 3))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(engine.snapshot()) == 8 * 25


def test_tenants_share_a_store_but_not_items() -> None:
    a = ReferenceEngine(tenant="a")
    b = ReferenceEngine(store=a.backing_store, tenant="b")
    item = StoreItem.document("same text")
    assert not a.store(item).replayed
    assert not b.store(item).replayed
    assert b.forget(ForgetIds((item.fingerprint(),))).forgotten == 1
    assert a.snapshot() == (item,)
    assert b.snapshot() == ()
    assert a.backing_store.count() == 1
    assert (a.tenant, b.tenant) == ("a", "b")


def test_an_unexpected_failure_under_the_lock_poisons_the_store() -> None:
    engine = ReferenceEngine()
    engine.store(StoreItem.document("x"))

    class Boom(MetaFilter):
        def matches(self, kind: ItemKind, meta: MemoryMeta) -> bool:
            raise RuntimeError("bug in a filter")

    with pytest.raises(RuntimeError):
        engine.list(ListRequest(Boom(), 1))
    with pytest.raises(EngineError, match="poisoned"):
        engine.list(ListRequest(MetaFilter(), 1))

"""Ranking: stems and exact forms, BM25 scores, fusion, context, paging, time hints, filters."""

from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta, timezone
from typing import Any, List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    Hit,
    MemoryMeta,
    MetaFilter,
    StoreItem,
    TimeHint,
    TurnRange,
)
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine, NgramEmbedder, bm25, lexical, search
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.search import hint_window, pool_size
from cortex_memory.local.sqlfilter import filter_condition, micros
from cortex_memory.local.text import content_words, query_words, stem, stems_of, words_of

from .conftest import EngineFactory

VOCAB = ["plan", "plans", "planned", "tea", "teas", "coffee", "Garden", "gardens", "ÉCOLE",
         "école", "straße", "数据", "x1", "ünï", "the", "ships", "shipping"]  # fmt: skip


def _fetch_all(engine: LocalEngine, query: str, mode: FetchMode, limit: int = 7,
               hint: Optional[TimeHint] = None, flt: Optional[MetaFilter] = None) -> List[Hit]:
    hits: List[Hit] = []
    cursor: Optional[str] = None
    while True:
        page = engine.fetch(FetchRequest(query, mode, limit, flt or MetaFilter(), cursor=cursor,
                                         refers_to=hint))  # fmt: skip
        hits.extend(page.hits)
        if page.next_cursor is None:
            return hits
        assert page.next_cursor != cursor
        cursor = page.next_cursor


def _texts(hits: List[Hit]) -> List[str]:
    return [h.text for h in hits]


def test_plurals_and_inflections_find_each_other(engine: LocalEngine) -> None:
    engine.store_many([
        StoreItem.document("The team ships releases on Tuesdays"),
        StoreItem.document("Vehicles must be parked behind the building."),
        StoreItem.document("Lunch is at noon."),
    ])
    for query, expected in (
        ("When do we ship?", "The team ships releases on Tuesdays"),
        ("shipping day", "The team ships releases on Tuesdays"),
        ("release", "The team ships releases on Tuesdays"),
        ("where does my vehicle go", "Vehicles must be parked behind the building."),
        ("PARKING", "Vehicles must be parked behind the building."),
    ):
        for mode in (FetchMode.KEYWORD, FetchMode.HYBRID):
            hits = engine.fetch(FetchRequest(query, mode, 5)).hits
            assert hits, (query, mode)
            assert hits[0].text == expected, (query, mode)


def test_the_form_the_query_used_ranks_first(mem: LocalEngine) -> None:
    mem.store_many([
        StoreItem.document("She planned the garden"),
        StoreItem.document("She plans the garden"),
    ])
    assert _texts(mem.fetch(FetchRequest("plans", FetchMode.KEYWORD, 5)).hits) == [
        "She plans the garden", "She planned the garden",
    ]
    assert _texts(mem.fetch(FetchRequest("planned", FetchMode.KEYWORD, 5)).hits) == [
        "She planned the garden", "She plans the garden",
    ]


def test_stop_words_are_left_out_unless_nothing_else_is_left(mem: LocalEngine) -> None:
    mem.store_many([StoreItem.document("what is it"), StoreItem.document("the ferry leaves")])
    hits = mem.fetch(FetchRequest("when is the ferry", FetchMode.KEYWORD, 5)).hits
    assert _texts(hits) == ["the ferry leaves"]
    assert _texts(mem.fetch(FetchRequest("what is it", FetchMode.KEYWORD, 5)).hits) == [
        "what is it"
    ]


def test_diacritics_and_case_do_not_matter(mem: LocalEngine) -> None:
    mem.store(StoreItem.document("Café au lait at the ÉCOLE"))
    for query in ("cafe", "CAFÉ", "ecole", "école"):
        assert mem.fetch(FetchRequest(query, FetchMode.KEYWORD, 5)).hits, query


def test_keyword_scores_follow_bm25(mem: LocalEngine) -> None:
    texts = ["green tea", "green tea with lemon and honey and mint", "black coffee", "tea"]
    mem.store_many([StoreItem.document(t) for t in texts])
    hits = mem.fetch(FetchRequest("green tea", FetchMode.KEYWORD, 10)).hits
    got = {h.text: h.score for h in hits}
    assert set(got) == {"green tea", "green tea with lemon and honey and mint", "tea"}
    # By hand: N = 4 rows, 13 words in all; idf = ln(1 + (N - n + 0.5) / (n + 0.5)).
    avg = 13 / 4
    idf_green = math.log(1 + (4 - 2 + 0.5) / 2.5)
    idf_tea = math.log(1 + (4 - 3 + 0.5) / 3.5)
    ideal = (idf_green + idf_tea) * 1.25

    def part(idf: float, length: int) -> float:
        return idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * length / avg)) * 1.25

    expected = {
        "green tea": min(1.0, (part(idf_green, 2) + part(idf_tea, 2)) / ideal),
        "green tea with lemon and honey and mint": (part(idf_green, 8) + part(idf_tea, 8))
        / ideal,
        "tea": min(1.0, part(idf_tea, 1) / ideal),
    }
    assert got == pytest.approx(expected, abs=1e-6)
    assert [h.text for h in hits][:2] == ["green tea", "green tea with lemon and honey and mint"]


@pytest.mark.parametrize("mode", list(FetchMode))
def test_scores_are_in_range_and_ordered(engine: LocalEngine, mode: FetchMode) -> None:
    rng = random.Random(5)
    texts = list(dict.fromkeys(" ".join(rng.choices(VOCAB, k=rng.randint(1, 6)))
                               for _ in range(60)))  # fmt: skip
    engine.store_many([StoreItem.document(t) for t in texts])
    for query in ("plan tea", "ECOLE", "straße 数据", "coffee garden x1 zzz", "ship"):
        hits = _fetch_all(engine, query, mode)
        scores = [h.score for h in hits]
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)
        if mode is FetchMode.KEYWORD:
            held = {stem(w) for w in content_words(query_words(query))}
            for hit in hits:
                words = {stem(w) for w in words_of(hit.text)}
                assert words & held, (query, hit.text)


def test_keyword_hits_need_a_word(mem: LocalEngine) -> None:
    mem.store_many([StoreItem.document("planning ahead"), StoreItem.document("the plan")])
    assert {h.text for h in mem.fetch(FetchRequest("plan", FetchMode.KEYWORD, 10)).hits} == {
        "planning ahead", "the plan",
    }
    assert mem.fetch(FetchRequest("???", FetchMode.KEYWORD, 10)).hits == ()
    assert mem.fetch(FetchRequest("???", FetchMode.HYBRID, 10)).hits == ()
    assert mem.fetch(FetchRequest("nothing", FetchMode.KEYWORD, 10)).hits == ()


@pytest.mark.parametrize("fts", [True, False])
def test_ties_go_to_the_older_item(make_engine: EngineFactory, fts: bool) -> None:
    engine = make_engine(":memory:", use_fts=fts)
    engine.store_many(
        [StoreItem.document("alpha beta", MemoryMeta(workspace=w)) for w in "abc"]
    )
    for mode in FetchMode:
        hits = engine.fetch(FetchRequest("alpha beta", mode, 10)).hits
        assert [h.meta.workspace for h in hits] == ["a", "b", "c"], mode


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(VOCAB), min_size=1, max_size=5).map(" ".join),
        min_size=1, max_size=12, unique=True,
    ),
    query=st.lists(st.sampled_from([*VOCAB, "planning", "none"]), min_size=1, max_size=3).map(
        " ".join
    ),
)
def test_fts_and_fallback_agree(texts: List[str], query: str) -> None:
    with LocalEngine(":memory:") as fts, LocalEngine(":memory:", use_fts=False) as plain:
        for engine in (fts, plain):
            engine.store_many([StoreItem.document(t) for t in texts])
        assert fts.uses_fts
        assert not plain.uses_fts
        for mode in FetchMode:
            with_fts = {h.id: h.score for h in _fetch_all(fts, query, mode)}
            without = {h.id: h.score for h in _fetch_all(plain, query, mode)}
            assert with_fts == pytest.approx(without, abs=1e-6), mode


def test_paging_a_ranking_equals_one_big_page(engine: LocalEngine) -> None:
    rng = random.Random(9)
    engine.store_many(
        [StoreItem.document(" ".join(rng.choices(VOCAB, k=4)) + f" n{i}") for i in range(40)]
    )
    for mode in FetchMode:
        whole = engine.fetch(FetchRequest("plan tea école", mode, 100))
        assert whole.next_cursor is None
        assert [h.id for h in _fetch_all(engine, "plan tea école", mode, 3)] == [
            h.id for h in whole.hits
        ]


def test_pool_sizes_come_in_steps() -> None:
    assert [pool_size(n) for n in (1, 50, 51, 500, 501, 1001)] == [100, 100, 1000, 1000, 1002,
                                                                    2002]  # fmt: skip


def test_time_hint_puts_covered_items_first_across_pages(engine: LocalEngine) -> None:
    day = datetime(2024, 3, 10, tzinfo=timezone.utc)
    stamps = [day - timedelta(days=3), day, None, day + timedelta(hours=23, minutes=59),
              day + timedelta(days=1), day - timedelta(microseconds=1)]
    items = [
        StoreItem.document(f"plan item {i}", MemoryMeta(observed_at=at))
        for i, at in enumerate(stamps * 3)
    ]
    engine.store_many(items)
    hint = TimeHint(date(2024, 3, 10), date(2024, 3, 10))
    for mode in FetchMode:
        plain = _fetch_all(engine, "plan item", mode, 100)
        hinted = _fetch_all(engine, "plan item", mode, 4, hint)
        assert [h.id for h in hinted] == [h.id for h in hint.rank(plain)]
        covered = [h for h in hinted if h.meta.observed_at is not None and hint.covers(
            h.meta.observed_at)]
        assert len(covered) == 6
        assert hinted[:6] == covered


@pytest.mark.parametrize("zone", [None, "Asia/Kolkata", "America/New_York", "Pacific/Apia"])
def test_hint_window_matches_covers(zone: Optional[str]) -> None:
    hint = TimeHint(date(2011, 12, 29), date(2011, 12, 31), zone)  # Apia skipped Dec 30 2011
    lo, hi = hint_window(hint)  # type: ignore[misc]
    start = datetime(2011, 12, 27, tzinfo=timezone.utc)
    for minutes in range(0, 7 * 24 * 60, 17):
        at = start + timedelta(minutes=minutes)
        assert (lo <= micros(at) < hi) == hint.covers(at), at


def test_fetch_validates_and_ignores_max_scopes(mem: LocalEngine) -> None:
    mem.store(StoreItem.document("plan"))
    with pytest.raises(InvalidRequestError):
        mem.fetch(FetchRequest(" ", FetchMode.HYBRID, 5))
    with pytest.raises(InvalidRequestError):
        mem.fetch(FetchRequest("plan", FetchMode.HYBRID, 0))
    with pytest.raises(InvalidRequestError):
        mem.fetch(FetchRequest("plan", FetchMode.HYBRID, 5, max_scopes=0))
    page = mem.fetch(FetchRequest("plan", FetchMode.HYBRID, 5, max_scopes=1))
    assert len(page.hits) == 1
    assert page.beliefs == ()


def test_long_queries_and_filters(mem: LocalEngine) -> None:
    mem.store_many([
        StoreItem.document("alpha beta", MemoryMeta(workspace="w")),
        StoreItem.document("alpha beta", MemoryMeta(workspace="v")),
    ])
    query = " ".join(f"w{i}" for i in range(200)) + " alpha"
    assert mem.fetch(FetchRequest(query, FetchMode.KEYWORD, 5)).hits == ()  # alpha is word 201
    assert len(query_words(query)) == 64
    for mode in FetchMode:
        hits = mem.fetch(FetchRequest("alpha", mode, 5, MetaFilter(workspace="v"))).hits
        assert [h.meta.workspace for h in hits] == ["v"], mode


def test_a_selective_filter_still_fills_the_page(mem: LocalEngine) -> None:
    # Most matching rows are outside the filter: the page must still come from
    # the rows it admits, in every mode.
    mem.store_many([StoreItem.document(f"note about tea {i}") for i in range(95)])
    mem.store_many([
        StoreItem.document(f"note about tea {i} kept", MemoryMeta(workspace="mine"))
        for i in range(5)
    ])
    for mode in FetchMode:
        hits = mem.fetch(FetchRequest("tea note", mode, 5, MetaFilter(workspace="mine"))).hits
        assert len(hits) == 5, mode
        assert {h.meta.workspace for h in hits} == {"mine"}


def test_broad_terms_do_not_make_candidates_in_hybrid(
    mem: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical, "BROAD_TERM_ROWS", 10)
    # The oldest row is the best match of "common" (the shortest); 150 newer follow.
    mem.store(StoreItem.document("common"))
    for start in (0, 75):
        mem.store_many(
            [StoreItem.document(f"common word number {i}") for i in range(start, start + 75)]
        )
    mem.store(StoreItem.document("common word and a rare zebra"))
    hits = mem.fetch(FetchRequest("common zebra", FetchMode.HYBRID, 5)).hits
    assert hits[0].text == "common word and a rare zebra"
    # Keyword mode ranks every match: the short old row comes first.
    assert mem.fetch(FetchRequest("common", FetchMode.KEYWORD, 5)).hits[0].text == "common"
    # A bounded plan with only broad terms takes the newest rows that hold them.
    with mem._session("testing") as conn:
        where = filter_condition(MetaFilter(), "default")
        terms = lexical.Terms.of("common")
        _stats, counts = lexical.document_counts(conn, ITEMS, terms.stems)
        assert counts == {"common": 152}
        bounded = lexical.candidates(conn, ITEMS, terms, where, 20, bounded=True, counts=counts)
        exhaustive = lexical.candidates(
            conn, ITEMS, terms, where, 20, bounded=False, counts=counts
        )
    # seq 152 is the zebra, the newest
    assert [row[0] for row in bounded] == list(range(152, 132, -1))
    assert exhaustive[0][0] == 1  # the short old row, by BM25
    assert exhaustive[0][3] == "common"  # rows come whole: the text is the fourth column


def _turns(engine: LocalEngine, thread: str, lines: List[str]) -> None:
    engine.store_many([
        StoreItem.document(line, MemoryMeta(thread_id=thread, turns=TurnRange(n, n)))
        for n, line in enumerate(lines)
    ])


def test_the_reply_to_a_matching_question_ranks_in_hybrid(mem: LocalEngine) -> None:
    _turns(mem, "chat-1", [
        "Sam: How was the weekend?",
        "Ana: Busy. Which port did you pick for the staging server?",
        "Sam: 8443, like the old one.",
        "Ana: Nice. Lunch tomorrow?",
    ])
    mem.store(StoreItem.document("Port wine is sweet."))
    hybrid = _texts(mem.fetch(FetchRequest("staging server port", FetchMode.HYBRID, 3)).hits)
    assert hybrid[0] == "Ana: Busy. Which port did you pick for the staging server?"
    assert "Sam: 8443, like the old one." in hybrid
    keyword = _texts(mem.fetch(FetchRequest("staging server port", FetchMode.KEYWORD, 5)).hits)
    assert "Sam: 8443, like the old one." not in keyword  # keyword ranks words only


def test_context_stays_inside_the_filter(mem: LocalEngine) -> None:
    mem.store_many([
        StoreItem.document(
            "Which port did you pick?",
            MemoryMeta(thread_id="t", turns=TurnRange(0, 0), workspace="a"),
        ),
        StoreItem.document(
            "8443.", MemoryMeta(thread_id="t", turns=TurnRange(1, 1), workspace="b")
        ),
    ])
    hits = mem.fetch(FetchRequest("port", FetchMode.HYBRID, 5, MetaFilter(workspace="a"))).hits
    assert _texts(hits) == ["Which port did you pick?"]


def _stored_ngrams() -> NgramEmbedder:
    # The n-gram embedder, made to store its vectors: vector search then runs
    # on the stored rows (the NumPy index when the backend allows it).
    embedder = NgramEmbedder()
    embedder.stores_vectors = True
    return embedder


@pytest.mark.parametrize("backend", ["python", "numpy"])
@pytest.mark.parametrize("stored", [False, True])
def test_vector_search_backends(make_engine: EngineFactory, backend: str, stored: bool) -> None:
    if backend == "numpy":
        pytest.importorskip("numpy", reason="NumPy is not installed: the NumPy index is not tested")
    embedder = _stored_ngrams() if stored else NgramEmbedder()
    engine = make_engine(":memory:", vector_backend=backend, embedder=embedder)
    engine.health()
    assert engine._vectors.numpy == (stored and backend == "numpy")
    engine.store_many([
        StoreItem.document("planning the garden beds"),
        StoreItem.document("quarterly budget review"),
        StoreItem.document("garden planning notes", MemoryMeta(workspace="w")),
    ])
    hits = engine.fetch(FetchRequest("garden planing", FetchMode.VECTOR, 5)).hits  # a typo
    assert {h.text for h in hits} >= {"planning the garden beds", "garden planning notes"}
    assert "quarterly budget review" not in {h.text for h in hits}
    flt = MetaFilter(workspace="w")
    assert _texts(engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5, flt)).hits) == [
        "garden planning notes"
    ]


def test_the_numpy_index_follows_writes_and_forgets(make_engine: EngineFactory) -> None:
    pytest.importorskip("numpy", reason="NumPy is not installed: the NumPy index is not tested")
    from cortex_memory.contract import ForgetTarget

    engine = make_engine("", vector_backend="numpy", embedder=_stored_ngrams())
    first = engine.store(StoreItem.document("garden planning"))
    assert engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits
    index = engine._vectors._indexes["items"]
    loaded = index._epoch
    second = engine.store(StoreItem.document("garden planting"))
    ids = [h.id for h in engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits]
    assert set(ids) == {first.id, second.id}
    # The new row was appended as a block of its own: nothing was reloaded.
    assert index._epoch == loaded
    assert len(index._blocks) == 2
    engine.forget(ForgetTarget.ids([first.id]))
    ids = [h.id for h in engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits]
    assert ids == [second.id]
    assert index._epoch != loaded  # reloaded after the forget
    assert len(index._blocks) == 1
    # Another engine (another process, for all it knows) writes: this one sees it.
    with LocalEngine(engine._path, vector_backend="numpy", embedder=_stored_ngrams()) as other:
        third = other.store(StoreItem.document("garden paths"))
    ids = {h.id for h in engine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits}
    assert ids == {second.id, third.id}


def test_the_numpy_index_holds_one_tenant(make_engine: EngineFactory, db_path: str) -> None:
    pytest.importorskip("numpy", reason="NumPy is not installed: the NumPy index is not tested")
    mine = make_engine(vector_backend="numpy", embedder=_stored_ngrams(), tenant="mine")
    theirs = make_engine(vector_backend="numpy", embedder=_stored_ngrams(), tenant="theirs")
    mine.store(StoreItem.document("garden planning"))
    theirs.store_many([StoreItem.document("garden planting"), StoreItem.document("garden")])
    assert _texts(mine.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits) == [
        "garden planning"
    ]
    assert len(theirs.fetch(FetchRequest("garden", FetchMode.VECTOR, 5)).hits) == 2
    assert sum(len(seqs) for seqs, _m in mine._vectors._indexes["items"]._blocks) == 1


def test_a_filter_the_nearest_rows_miss_searches_the_rows_it_admits(
    make_engine: EngineFactory,
) -> None:
    pytest.importorskip("numpy", reason="NumPy is not installed: the NumPy index is not tested")
    engine = make_engine(":memory:", vector_backend="numpy", embedder=_stored_ngrams())
    engine.store_many([StoreItem.document(f"garden planning {i}") for i in range(40)])
    engine.store(StoreItem.document("garden shed", MemoryMeta(workspace="w")))
    flt = MetaFilter(workspace="w")
    hits = engine.fetch(FetchRequest("garden planning", FetchMode.VECTOR, 3, flt)).hits
    assert _texts(hits) == ["garden shed"]


@pytest.mark.parametrize("stored", [False, True])
def test_without_numpy_vector_search_compares_a_bounded_set(
    make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch, stored: bool
) -> None:
    embedder = _stored_ngrams() if stored else NgramEmbedder()
    engine = make_engine(":memory:", vector_backend="python", embedder=embedder)
    for start in range(0, 400, 100):
        engine.store_many([StoreItem.document(f"note {i}") for i in range(start, start + 100)])
    engine.store_many([StoreItem.document(f"garden bed {i}") for i in range(5)])
    engine.store_many([StoreItem.document(f"late note {i}") for i in range(100)])
    compared: List[int] = []
    name = "scan_candidates" if stored else "live_candidates"
    real = getattr(search, name)

    def counting(*args: object) -> object:
        compared.append(len(args[-1]))  # type: ignore[arg-type]
        return real(*args)

    monkeypatch.setattr(search, name, counting)
    hits = engine.fetch(FetchRequest("garden", FetchMode.HYBRID, 5)).hits
    assert {h.text for h in hits} == {f"garden bed {i}" for i in range(5)}
    # The keyword candidates and the newest rows, not the 505 stored.
    assert compared == [5 + search.RECENT_ROWS]


_VOCABULARY = ["ship", "ships", "shipped", "Shipping", "café", "Cafe", "plan", "plans",
               "planned", "the", "a", "x_ship", "ship2", "release", "releases", "\x02", "\x03"]


def _recording(seen: List[str], real: Any) -> Any:
    def tally(terms: lexical.Terms, text: str) -> Any:
        seen.append(text)
        return real(terms, text)

    return tally


def test_scanned_scores_equal_scores_from_whole_texts(
    mem: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    texts = [" ".join(rng.choices(_VOCABULARY, k=rng.randint(1, 12))) for _ in range(120)]
    mem.store_many([StoreItem.document(t) for t in texts[:100]])
    mem.store_many([StoreItem.document(t) for t in texts[100:]])
    if not mem.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    where = filter_condition(MetaFilter(), "default")
    for question in ("ships", "shipping plans", "Café release", "the plan", "planned ship2"):
        terms = lexical.Terms.of(question)
        with mem._session("testing") as conn:
            stats, counts = lexical.document_counts(conn, ITEMS, terms.stems)
            rows = lexical.candidates(conn, ITEMS, terms, where, 200, bounded=False, counts=counts)
        texts_by = {row[0]: row[3] for row in rows}
        read_whole: List[str] = []
        monkeypatch.setattr(bm25, "_tally_text", _recording(read_whole, bm25._tally_text))
        scanned = bm25.score_rows(terms, texts_by, counts, stats)
        monkeypatch.undo()
        monkeypatch.setattr(bm25, "scan_heads", lambda terms: None)
        whole = bm25.score_rows(terms, texts_by, counts, stats)
        monkeypatch.undo()
        assert scanned == whole, question
        # Only the texts with letters outside ASCII were split whole.
        assert read_whole == [t for t in texts_by.values() if not t.isascii()]
        assert len(read_whole) < len(rows)
        assert len(whole) == len(rows)  # every candidate holds a term


def _candidate_reads(conn: object, seen: List[str]) -> None:
    """Record the candidate reads ``conn`` runs (not FTS5's own statements)."""

    def record(sql: str) -> None:
        if sql.startswith("SELECT c.seq"):
            seen.append(sql)

    conn.set_trace_callback(record)  # type: ignore[attr-defined]


@pytest.mark.parametrize("bounded", [False, True])
def test_candidates_that_fit_are_read_without_sqlite_ranking_them(
    mem: LocalEngine, bounded: bool
) -> None:
    rng = random.Random(5)
    texts = {" ".join(rng.choices(_VOCABULARY[:-2], k=rng.randint(1, 12))) for _ in range(120)}
    mem.store_many([StoreItem.document(t) for t in sorted(texts)])
    if not mem.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    where = filter_condition(MetaFilter(), "default")
    for question in ("shipping plans", "Café release", "the plan", "planned ship2"):
        terms = lexical.Terms.of(question)
        seen: List[str] = []
        with mem._session("testing") as conn:
            _stats, counts = lexical.document_counts(conn, ITEMS, terms.stems)
            holding = sum(counts.values())
            _candidate_reads(conn, seen)
            fitting = lexical.candidates(
                conn, ITEMS, terms, where, holding, bounded=bounded, counts=counts
            )
            short = lexical.candidates(
                conn, ITEMS, terms, where, holding - 1, bounded=bounded, counts=counts
            )
            conn.set_trace_callback(None)
        # Rows that fit are read without SQLite's ranking; one short of them, ranked.
        assert "ORDER BY f.rank" not in seen[0], question
        assert "ORDER BY f.rank" in seen[-1], question
        assert len(short) == min(holding - 1, len(fitting))
        held = {t for t in texts if set(terms.stems) & set(stems_of(words_of(t)))}
        assert {row[3] for row in fitting} == held, question
        assert {row[0] for row in short} <= {row[0] for row in fitting}


def test_counts_that_come_short_fall_back_to_the_ranked_read(mem: LocalEngine) -> None:
    mem.store_many([StoreItem.document(f"garden bed {i}") for i in range(30)])
    if not mem.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    where = filter_condition(MetaFilter(), "default")
    terms = lexical.Terms.of("garden bed")
    seen: List[str] = []
    with mem._session("testing") as conn:
        _candidate_reads(conn, seen)
        # Counts saying nothing holds the terms (as if the index stemmed them
        # differently): the unranked read finds more than fit, so SQLite ranks.
        rows = lexical.candidates(conn, ITEMS, terms, where, 10, bounded=False,
                                  counts={"garden": 0, "bed": 0})
        conn.set_trace_callback(None)
    assert len(rows) == 10
    assert len(seen) == 2
    assert "ORDER BY f.rank" not in seen[0]
    assert "ORDER BY f.rank" in seen[1]


@pytest.mark.parametrize("mode", list(FetchMode))
def test_unranked_candidates_rank_as_sqlite_ranked_ones_do(
    mem: LocalEngine, monkeypatch: pytest.MonkeyPatch, mode: FetchMode
) -> None:
    rng = random.Random(8)
    mem.store_many([
        StoreItem.document(" ".join(rng.choices(_VOCABULARY, k=rng.randint(1, 12))))
        for _ in range(60)
    ])
    questions = ("ships", "shipping plans", "Café release", "the plan", "planned ship2")
    unranked = {q: _fetch_all(mem, q, mode, 4) for q in questions}

    def always_ranked(conn: Any, corpus: Any, expression: str, where: Any, size: int,
                      holding: Optional[int]) -> Any:
        return lexical._fts_rows(conn, corpus, expression, where, "f.rank", size)

    monkeypatch.setattr(lexical, "_best_rows", always_ranked)
    for question in questions:
        ranked = _fetch_all(mem, question, mode, 4)
        assert [(h.id, h.score) for h in ranked] == [
            (h.id, h.score) for h in unranked[question]
        ], question
        if mode is not FetchMode.VECTOR:
            assert ranked, question


def _fetch_traced(engine: LocalEngine, request: FetchRequest) -> Tuple[List[str], List[Hit]]:
    """The candidate reads ``engine`` runs for ``request`` (on its pooled
    connection), and the hits it answers."""
    seen: List[str] = []
    with engine._session("testing") as conn:
        _candidate_reads(conn, seen)
    try:
        hits = list(engine.fetch(request).hits)
    finally:
        with engine._session("testing") as conn:
            conn.set_trace_callback(None)
    return seen, hits


def test_a_lone_keyword_term_is_read_unranked_when_its_matches_fit(mem: LocalEngine) -> None:
    mem.store_many([StoreItem.document(f"note {i} about the garden shed") for i in range(40)])
    mem.store_many([
        StoreItem.document("She planned the garden"),
        StoreItem.document("She plans the garden", MemoryMeta(workspace="home")),
        StoreItem.document("Plans, plans and more PLANS for the garden"),
        StoreItem.document("planning", MemoryMeta(workspace="home")),
    ])
    if not mem.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    seen, hits = _fetch_traced(mem, FetchRequest("plans", FetchMode.KEYWORD, 10))
    # One unranked read: the four matches fit in the candidate pool.
    assert len(seen) == 1
    assert "ORDER BY" not in seen[0]
    by_text = {h.text: h for h in hits}
    assert len(by_text) == 4
    # The query's own form counts more than another form of its stem: of two
    # texts of the same length, the one holding "plans" ranks first (scores are
    # capped at 1; the order follows the uncapped BM25).
    texts = [h.text for h in hits]
    assert texts.index("She plans the garden") < texts.index("She planned the garden")
    assert by_text["She plans the garden"].score >= by_text["She planned the garden"].score
    assert all(0.0 < h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # The filter applies inside the read, and to the hits.
    home = mem.fetch(FetchRequest("plans", FetchMode.KEYWORD, 10, MetaFilter(workspace="home")))
    assert {h.text for h in home.hits} == {"She plans the garden", "planning"}
    # The same hits and scores as SQLite's own ranking would give.
    ranked = mem.fetch(FetchRequest("plans", FetchMode.KEYWORD, 2)).hits
    assert [(h.id, h.score) for h in ranked] == [(h.id, h.score) for h in hits[:2]]


def test_a_lone_keyword_term_holding_more_rows_than_fit_is_ranked_by_sqlite(
    mem: LocalEngine,
) -> None:
    mem.store_many([StoreItem.document(f"garden bed number {i} of many") for i in range(150)])
    mem.store(StoreItem.document("garden"))  # the shortest: BM25's best
    if not mem.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    seen, hits = _fetch_traced(mem, FetchRequest("garden", FetchMode.KEYWORD, 5))
    # The unranked read found more than the pool holds (100): SQLite ranks.
    assert len(seen) == 2
    assert "ORDER BY" not in seen[0]
    assert "ORDER BY f.rank" in seen[1]
    assert hits[0].text == "garden"
    assert len(hits) == 5


def test_fts_and_fallback_give_the_same_lone_term_hits(make_engine: EngineFactory) -> None:
    fts = make_engine()
    rng = random.Random(3)
    fts.store_many([
        StoreItem.document(" ".join(rng.choices(_VOCABULARY, k=rng.randint(1, 12))))
        for _ in range(80)
    ])
    plain = make_engine(use_fts=False)
    for question in ("ships", "Shipping", "café", "plan", "ship2", "x"):
        with_index = _fetch_all(fts, question, FetchMode.KEYWORD, 6)
        without = _fetch_all(plain, question, FetchMode.KEYWORD, 6)
        assert [(h.id, h.score) for h in with_index] == [(h.id, h.score) for h in without]


def test_a_scored_hit_equals_the_checked_one() -> None:
    from cortex_memory.errors import EngineError
    from cortex_memory.local.rows import _decode, hit_of, meta_of, scored_hit

    meta = MemoryMeta(workspace="w", tags=("a",))
    item_json = '{"type":"document","body":{"text":null},"meta":{"workspace":"w","tags":["a"]}}'
    assert meta_of("x", item_json) == meta
    assert meta_of("x", f" \n{item_json}  ") == meta  # what the scanner alone refuses
    with pytest.raises(EngineError, match="unreadable"):
        _decode("x", item_json + " trailing")
    with pytest.raises(EngineError, match="unreadable"):
        _decode("x", "")
    learning = (1, "id-1", "learning", "text", 0.7, item_json)
    for row in (learning, (2, "id-2", "document", "text", None, item_json)):
        for score in (0.0, 1 / 3, 1.0):
            fast, checked = scored_hit(row, meta, score), hit_of(row, meta, score=score)
            assert fast == checked
            assert type(fast.score) is float
            assert fast.score == checked.score
    # Values of other types take the checked path: the same hit, or its error.
    assert scored_hit((1, "id-1", "learning", "text", 1, item_json), meta, 0.5) == hit_of(
        (1, "id-1", "learning", "text", 1, item_json), meta, score=0.5)
    with pytest.raises(KeyError):
        scored_hit((1, "id-1", "nonsense", "text", None, item_json), meta, 0.5)

"""Ranking: keyword, vector and hybrid scores, hits, ties, paging and time hints."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from typing import Dict, List, Optional, Tuple

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
    to_f32,
)
from cortex_memory.contract.conformance.scoring import keyword_score, words
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine
from cortex_memory.local.analysis import cosine, query_words, vector_of, words_of
from cortex_memory.local.search import VECTOR_THRESHOLD, hint_window
from cortex_memory.local.sqlfilter import micros

from .conftest import EngineFactory

VOCAB = ["plan", "tea", "coffee", "Garden", "ÉCOLE", "école", "straße", "数据", "x1", "ünï", "the"]


def _fetch_all(engine: LocalEngine, query: str, mode: FetchMode, limit: int = 7,
               hint: Optional[TimeHint] = None) -> List[Hit]:
    hits: List[Hit] = []
    cursor: Optional[str] = None
    while True:
        page = engine.fetch(FetchRequest(query, mode, limit, cursor=cursor, refers_to=hint))
        hits.extend(page.hits)
        if page.next_cursor is None:
            return hits
        assert page.next_cursor != cursor
        cursor = page.next_cursor


def _expected(text: str, query: str, mode: FetchMode) -> Tuple[float, bool]:
    kw = keyword_score(frozenset(words(query)), frozenset(words(text)))
    vs = cosine(vector_of(words_of(query)), vector_of(words_of(text)))
    if mode is FetchMode.KEYWORD:
        return kw, kw > 0
    if mode is FetchMode.VECTOR:
        return vs, vs >= VECTOR_THRESHOLD
    return (kw + vs) / 2, kw > 0 or vs >= VECTOR_THRESHOLD


def test_scores_and_hits_follow_the_documented_formulas(engine: LocalEngine) -> None:
    rng = random.Random(5)
    texts = [" ".join(rng.choices(VOCAB, k=rng.randint(1, 6))) for _ in range(60)]
    texts += ["unrelated words entirely", "plans planning planned"]
    engine.store_many([StoreItem.document(t) for t in dict.fromkeys(texts)])
    for query in ("plan tea", "ECOLE", "straße 数据", "the", "coffee garden x1 zzz", "plan"):
        for mode in FetchMode:
            hits = _fetch_all(engine, query, mode)
            got = {h.text: h.score for h in hits}
            expected: Dict[str, float] = {}
            for text in dict.fromkeys(texts):
                score, hit = _expected(text, query, mode)
                if hit:
                    expected[text] = to_f32(score)
            assert got == pytest.approx(expected, abs=1e-6), (query, mode)
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)


def test_keyword_needs_a_whole_word(mem: LocalEngine) -> None:
    mem.store_many([StoreItem.document("planning ahead"), StoreItem.document("the plan")])
    hits = mem.fetch(FetchRequest("plan", FetchMode.KEYWORD, 10)).hits
    assert [h.text for h in hits] == ["the plan"]
    assert hits[0].score == 1.0
    assert mem.fetch(FetchRequest("???", FetchMode.KEYWORD, 10)).hits == ()
    assert mem.fetch(FetchRequest("???", FetchMode.HYBRID, 10)).hits == ()
    assert mem.fetch(FetchRequest("nothing", FetchMode.KEYWORD, 10)).hits == ()


@pytest.mark.parametrize("fts", [True, False])
def test_ties_go_to_the_older_item(make_engine: EngineFactory, fts: bool) -> None:
    engine = make_engine(":memory:", use_fts=fts)
    texts = ["alpha beta", "alpha gamma", "beta alpha", "alpha"]
    engine.store_many([StoreItem.document(t) for t in texts])
    hits = engine.fetch(FetchRequest("alpha zzz", FetchMode.KEYWORD, 10)).hits
    assert {h.score for h in hits} == {0.5}
    if not fts:
        assert [h.text for h in hits] == texts
    vector = engine.fetch(FetchRequest("same text", FetchMode.VECTOR, 10))
    assert vector.hits == ()
    engine.store_many([StoreItem.document("same text", MemoryMeta(workspace=w)) for w in "abc"])
    hits = engine.fetch(FetchRequest("same text", FetchMode.VECTOR, 10)).hits
    assert [h.meta.workspace for h in hits] == ["a", "b", "c"]


@settings(max_examples=25, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from([*VOCAB, "Über", "İstanbul", "ǅemal", "𝒜bc"]), min_size=1,
                 max_size=5).map(" ".join),
        min_size=1, max_size=12, unique=True,
    ),
    query=st.lists(st.sampled_from([*VOCAB, "über", "i̇stanbul", "none"]), min_size=1,
                   max_size=3).map(" ".join),
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
            assert with_fts == without


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
    assert mem.fetch(FetchRequest(query, FetchMode.HYBRID, 5)).hits == ()  # alpha is word 201
    assert len(query_words(query)) == 64
    hits = mem.fetch(FetchRequest("alpha", FetchMode.KEYWORD, 5, MetaFilter(workspace="v"))).hits
    assert [h.meta.workspace for h in hits] == ["v"]

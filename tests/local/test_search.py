"""Ranking through ``fetch``: stems and exact forms, BM25 scores, fusion, context, paging,
time hints and filters.

Vector search is tested in ``test_vector_search.py``; how keyword candidates
are read and scored, in ``test_keyword_candidates.py``.
"""

from __future__ import annotations

import math
import random
from datetime import date, datetime, timedelta, timezone
from typing import List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    MemoryMeta,
    MetaFilter,
    StoreItem,
    TimeHint,
    TurnRange,
)
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine, lexical, pending
from cortex_memory.local.connections import write_transaction
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.search import hint_window, pool_size
from cortex_memory.local.sqlfilter import filter_condition, micros
from cortex_memory.local.text import content_words, query_words, stem, words_of

from .conftest import EngineFactory, fetch_all, hit_texts

VOCAB = ["plan", "plans", "planned", "tea", "teas", "coffee", "Garden", "gardens", "ÉCOLE",
         "école", "straße", "数据", "x1", "ünï", "the", "ships", "shipping"]  # fmt: skip


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
    assert hit_texts(mem.fetch(FetchRequest("plans", FetchMode.KEYWORD, 5)).hits) == [
        "She plans the garden", "She planned the garden",
    ]
    assert hit_texts(mem.fetch(FetchRequest("planned", FetchMode.KEYWORD, 5)).hits) == [
        "She planned the garden", "She plans the garden",
    ]


def test_stop_words_are_left_out_unless_nothing_else_is_left(mem: LocalEngine) -> None:
    mem.store_many([StoreItem.document("what is it"), StoreItem.document("the ferry leaves")])
    hits = mem.fetch(FetchRequest("when is the ferry", FetchMode.KEYWORD, 5)).hits
    assert hit_texts(hits) == ["the ferry leaves"]
    assert hit_texts(mem.fetch(FetchRequest("what is it", FetchMode.KEYWORD, 5)).hits) == [
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
        hits = fetch_all(engine, query, mode)
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
            with_fts = {h.id: h.score for h in fetch_all(fts, query, mode)}
            without = {h.id: h.score for h in fetch_all(plain, query, mode)}
            assert with_fts == pytest.approx(without, abs=1e-6), mode


def test_paging_a_ranking_equals_one_big_page(engine: LocalEngine) -> None:
    rng = random.Random(9)
    engine.store_many(
        [StoreItem.document(" ".join(rng.choices(VOCAB, k=4)) + f" n{i}") for i in range(40)]
    )
    for mode in FetchMode:
        whole = engine.fetch(FetchRequest("plan tea école", mode, 100))
        assert whole.next_cursor is None
        assert [h.id for h in fetch_all(engine, "plan tea école", mode, 3)] == [
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
        plain = fetch_all(engine, "plan item", mode, 100)
        hinted = fetch_all(engine, "plan item", mode, 4, hint)
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
    # Short and stored alone: it waits for the index (local/pending.py), and
    # the fetches find it all the same.
    mem.store(StoreItem.document("common word and a rare zebra"))
    hits = mem.fetch(FetchRequest("common zebra", FetchMode.HYBRID, 5)).hits
    assert hits[0].text == "common word and a rare zebra"
    # Keyword mode ranks every match: the short old row comes first.
    assert mem.fetch(FetchRequest("common", FetchMode.KEYWORD, 5)).hits[0].text == "common"
    # A bounded plan with only broad terms takes the newest rows that hold them.
    with mem._session("testing") as conn:
        with write_transaction(conn):  # the index takes the zebra
            assert pending.flush(conn, ITEMS) == 1
        where = filter_condition(MetaFilter(), "default")
        terms = lexical.Terms.of("common")
        _stats, counts, _waiting = lexical.index_counts(conn, ITEMS, terms.stems)
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
    hybrid = hit_texts(mem.fetch(FetchRequest("staging server port", FetchMode.HYBRID, 3)).hits)
    assert hybrid[0] == "Ana: Busy. Which port did you pick for the staging server?"
    assert "Sam: 8443, like the old one." in hybrid
    keyword = hit_texts(mem.fetch(FetchRequest("staging server port", FetchMode.KEYWORD, 5)).hits)
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
    assert hit_texts(hits) == ["Which port did you pick?"]


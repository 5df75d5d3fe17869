"""How keyword candidates are read and scored: scanned scores against whole texts,
candidates read unranked when they fit and ranked by SQLite when they do not,
the lone-term fast path, and a scored hit against the checked one."""

from __future__ import annotations

import random
from typing import Any, List, Optional, Tuple

import pytest

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    Hit,
    MemoryMeta,
    MetaFilter,
    StoreItem,
)
from cortex_memory.local import LocalEngine, bm25, lexical
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.sqlfilter import filter_condition
from cortex_memory.local.text import stems_of, words_of

from .conftest import EngineFactory, fetch_all

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
            stats, counts, _waiting = lexical.index_counts(conn, ITEMS, terms.stems)
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
    """Record the candidate reads ``conn`` runs of the index (not FTS5's own
    statements, nor the read of rows still pending)."""

    def record(sql: str) -> None:
        if sql.startswith("SELECT c.seq") and " MATCH " in sql:
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
            _stats, counts, _waiting = lexical.index_counts(conn, ITEMS, terms.stems)
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
    unranked = {q: fetch_all(mem, q, mode, 4) for q in questions}

    def always_ranked(conn: Any, corpus: Any, expression: str, where: Any, size: int,
                      holding: Optional[int]) -> Any:
        return lexical._fts_rows(conn, corpus, expression, where, "f.rank", size)

    monkeypatch.setattr(lexical, "_best_rows", always_ranked)
    for question in questions:
        ranked = fetch_all(mem, question, mode, 4)
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
        with_index = fetch_all(fts, question, FetchMode.KEYWORD, 6)
        without = fetch_all(plain, question, FetchMode.KEYWORD, 6)
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

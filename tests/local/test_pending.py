"""The keyword index's pending rows (``local/pending.py``): short items stored one at a
time wait for the index, readers find and count them as if indexed, and every way a row
leaves (the index taking it, a forget, a replace, a rebuild) keeps the index exact."""

from __future__ import annotations

import sqlite3
from typing import List, Sequence, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    ForgetTarget,
    MemoryMeta,
    MetaFilter,
    RecallRequest,
    StoreItem,
)
from cortex_memory.local import LocalEngine, pending
from cortex_memory.local.cjk import index_text
from cortex_memory.local.connections import write_transaction
from cortex_memory.local.corpus import ITEMS, decode_varints
from cortex_memory.local.ddl import TOKENIZER
from cortex_memory.local.pending import PENDING_CHARS, PENDING_ROWS
from cortex_memory.local.wordscan import word_count

from .conftest import EngineFactory


def _pending(engine: LocalEngine) -> List[int]:
    with engine._session("testing") as conn:
        return [row[0] for row in conn.execute("SELECT seq FROM items_pending ORDER BY seq")]


def _check_index(engine: LocalEngine) -> None:
    """Every item row is in the index or pending, never both, and the index is sound."""
    with engine._session("testing") as conn:
        waiting = {row[0] for row in conn.execute("SELECT seq FROM items_pending")}
        rows = {row[0] for row in conn.execute("SELECT seq FROM items")}
        assert waiting <= rows
        with write_transaction(conn):
            pending.flush(conn, ITEMS)
        # rank 1: the index must also match its content (every item row)
        conn.execute("INSERT INTO items_fts (items_fts, rank) VALUES ('integrity-check', 1)")
        assert not conn.execute("SELECT 1 FROM items_pending").fetchall()


def _scored(engine: LocalEngine, query: str, mode: FetchMode = FetchMode.KEYWORD,
            flt: MetaFilter = MetaFilter()) -> List[Tuple[str, float]]:  # noqa: B008
    page = engine.fetch(FetchRequest(query, mode, 50, flt))
    return [(hit.id, hit.score) for hit in page.hits]


def _fts_engine(make_engine: EngineFactory, path: str = ":memory:") -> LocalEngine:
    engine = make_engine(path)
    engine.health()  # opens the file: uses_fts is known from then on
    if not engine.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    return engine


def test_a_short_item_stored_alone_waits_and_is_found_at_once(
    make_engine: EngineFactory,
) -> None:
    engine = _fts_engine(make_engine)
    engine.store_many([StoreItem.document(f"garden bed {i}") for i in range(5)])
    note = engine.store(StoreItem.document("The team ships releases on Tuesdays."))
    assert _pending(engine) == [6]
    keyword = engine.fetch(FetchRequest("ship", FetchMode.KEYWORD, 5)).hits
    assert [hit.id for hit in keyword] == [note.id]
    assert engine.fetch(FetchRequest("tuesday releases", FetchMode.HYBRID, 5)).hits[0].id == note.id
    answer = engine.recall(RecallRequest("When do we ship?", 3))
    assert [c.id for c in answer.citations] == [note.id]
    assert "Tuesdays" in answer.answer


def test_scores_are_those_the_index_gives_once_it_holds_the_rows(
    make_engine: EngineFactory,
) -> None:
    engine = _fts_engine(make_engine)
    engine.store_many([StoreItem.document(f"plans for the garden, take {i}") for i in range(9)])
    for text in ("She plans the garden", "garden", "Plans, plans and more plans"):
        engine.store(StoreItem.document(text))
    assert len(_pending(engine)) == 3
    queries = ["plans", "garden plans", "the garden", "take 3"]
    before = {q: _scored(engine, q, mode) for q in queries for mode in FetchMode}
    _check_index(engine)  # the index takes them
    after = {q: _scored(engine, q, mode) for q in queries for mode in FetchMode}
    assert before == after
    assert all(before[q] for q in queries)


def test_the_store_that_fills_the_pending_rows_has_the_index_take_them(
    make_engine: EngineFactory,
) -> None:
    engine = _fts_engine(make_engine)
    for i in range(PENDING_ROWS - 1):
        engine.store(StoreItem.document(f"note number {i} about zebras"))
    assert len(_pending(engine)) == PENDING_ROWS - 1
    engine.store(StoreItem.document("the last note about zebras"))
    assert _pending(engine) == []
    with engine._session("testing") as conn:
        assert conn.execute(
            "SELECT doc FROM items_vocab WHERE term = 'zebra'"
        ).fetchone() == (PENDING_ROWS,)
    _check_index(engine)
    assert len(engine.fetch(FetchRequest("zebras", FetchMode.KEYWORD, 50)).hits) == PENDING_ROWS


def test_a_batch_takes_the_pending_rows_into_the_index(make_engine: EngineFactory) -> None:
    engine = _fts_engine(make_engine)
    engine.store(StoreItem.document("alone, waiting"))
    engine.store_many([StoreItem.document("one of a batch"), StoreItem.document("two of it")])
    assert _pending(engine) == []
    _check_index(engine)


def test_long_texts_are_indexed_at_once(make_engine: EngineFactory) -> None:
    engine = _fts_engine(make_engine)
    engine.store(StoreItem.document("word " * (PENDING_CHARS // 5 + 1)))
    assert _pending(engine) == []
    engine.store(StoreItem.document("w" * (PENDING_CHARS - 1)))
    assert len(_pending(engine)) == 1


@pytest.mark.parametrize("how", ["ids", "filter", "replace"])
def test_a_pending_row_that_goes_leaves_the_index_sound(
    make_engine: EngineFactory, how: str
) -> None:
    engine = _fts_engine(make_engine)
    # A batch of two is indexed at once (a batch of one is a one-item store).
    engine.store_many([StoreItem.document("an indexed zebra note"), StoreItem.document("x")])
    meta = MemoryMeta(file_path="notes/zebra.md", tags=("doomed",))
    doomed = engine.store(StoreItem.document("a pending zebra note", meta))
    kept = engine.store(StoreItem.document("another pending zebra note"))
    assert len(_pending(engine)) == 2
    if how == "ids":
        engine.forget(ForgetTarget.ids([doomed.id]))
    elif how == "filter":
        engine.forget(ForgetTarget.filter(MetaFilter(tags_any=("doomed",))))
    else:
        new = engine.store(StoreItem.document("a new zebra version", meta), replace=True)
        assert new.replaced == (doomed.id,)
    left = [hit.id for hit in engine.fetch(FetchRequest("zebra", FetchMode.KEYWORD, 9)).hits]
    assert doomed.id not in left
    assert kept.id in left
    _check_index(engine)


def test_a_rebuild_takes_the_pending_rows(make_engine: EngineFactory, db_path: str) -> None:
    engine = _fts_engine(make_engine, db_path)
    waiting = engine.store(StoreItem.document("a pending note about lighthouses"))
    # An engine without the index writes: the index goes stale, and the next
    # keyword read rebuilds it from every row.
    make_engine(db_path, use_fts=False).store(StoreItem.document("lighthouses, unindexed"))
    hits = engine.fetch(FetchRequest("lighthouse", FetchMode.KEYWORD, 5)).hits
    assert waiting.id in [hit.id for hit in hits]
    assert len(hits) == 2
    assert _pending(engine) == []
    _check_index(engine)


def test_filters_and_tenants_of_pending_rows(make_engine: EngineFactory, db_path: str) -> None:
    mine = _fts_engine(make_engine, db_path)
    theirs = make_engine(db_path, tenant="other")
    home = mine.store(StoreItem.document("kettle on the stove", MemoryMeta(workspace="home")))
    mine.store(StoreItem.document("kettle in the office", MemoryMeta(workspace="work")))
    theirs.store(StoreItem.document("their kettle"))
    assert len(_pending(mine)) == 3
    at_home = MetaFilter(workspace="home")
    only_home = mine.fetch(FetchRequest("kettle", FetchMode.KEYWORD, 9, at_home))
    assert [hit.id for hit in only_home.hits] == [home.id]
    assert len(mine.fetch(FetchRequest("kettle", FetchMode.KEYWORD, 9)).hits) == 2
    their_hits = theirs.fetch(FetchRequest("kettle", FetchMode.KEYWORD, 9)).hits
    assert [hit.text for hit in their_hits] == ["their kettle"]
    before = _scored(mine, "kettle")
    _check_index(mine)  # another tenant's pending row counted as the index counts it
    assert _scored(mine, "kettle") == before


def test_another_engine_on_the_file_finds_pending_rows(
    make_engine: EngineFactory, db_path: str
) -> None:
    writer = _fts_engine(make_engine, db_path)
    reader = make_engine(db_path)
    note = writer.store(StoreItem.document("parked on level 3, spot B12"))
    assert [hit.id for hit in reader.fetch(FetchRequest("spot", FetchMode.KEYWORD, 3)).hits] == [
        note.id
    ]


# -- the words the index will count ----------------------------------------------------

_PIECES = ["ship", "Ships", "café", "naïve", "über", "2024", "v2", "x_y", "公园", "バックアップ",
           "서울", "。", ",", " ", "  ", "\n", "-", "'", "—", "e\u0301", "Ω", "ß", "İ", "!?"]


def _fts_words(texts: Sequence[str]) -> int:
    """The words FTS5 with the engine's tokenizer counts in ``texts`` (its averages record)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{TOKENIZER}')")
    except sqlite3.OperationalError:
        pytest.skip("this SQLite build has no FTS5")
    conn.executemany("INSERT INTO t (text) VALUES (?)", [(text,) for text in texts])
    conn.commit()  # the index writes its records when the transaction ends
    block = conn.execute("SELECT block FROM t_data WHERE id = 1").fetchone()[0]
    conn.close()
    values = decode_varints(block)
    return values[1] if len(values) >= 2 else 0  # nothing indexed: no token total yet


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join), max_size=5))
def test_a_pending_row_counts_the_words_the_index_will(texts: List[str]) -> None:
    # What the index reads of a text is its index text (CJK characters spaced).
    indexed = [index_text(text) or text for text in texts]
    assert sum(word_count(text) for text in indexed) == _fts_words(indexed)


# -- the same answers with and without pending rows ------------------------------------

_WORDS = ["ship", "ships", "shipped", "plan", "plans", "garden", "gardens", "the", "a", "zebra"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(
    st.tuples(st.sampled_from(["one", "batch", "forget"]),
              st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6)),
    min_size=1, max_size=24,
))
def test_rankings_are_those_of_an_index_that_holds_every_row(
    steps: List[Tuple[str, List[str]]],
) -> None:
    lazy, eager = LocalEngine(":memory:"), LocalEngine(":memory:")
    try:
        lazy.health()
        if not lazy.uses_fts:
            pytest.skip("this SQLite build has no FTS5")
        stored: List[str] = []
        for n, (what, words) in enumerate(steps):
            text = " ".join(words) + f" {n}"
            if what == "forget" and stored:
                target = ForgetTarget.ids([stored.pop(0)])
                lazy.forget(target)
                eager.forget(target)
                continue
            item = StoreItem.document(text)
            filler = StoreItem.document(f"filler {n}")
            # A batch of two is indexed at once (one item alone may wait): the
            # eager engine always stores that way, the lazy one on "batch".
            if what == "one":
                lazy.store(item)
            else:
                lazy.store_many([item, filler])
                lazy.forget(ForgetTarget.ids([filler.fingerprint()]))
            eager.store_many([item, filler])
            eager.forget(ForgetTarget.ids([filler.fingerprint()]))
            stored.append(item.fingerprint())
        for query in ("ship", "plans garden", "the zebra", "a"):
            for mode in (FetchMode.KEYWORD, FetchMode.HYBRID):
                assert _scored(lazy, query, mode) == _scored(eager, query, mode)
        _check_index(lazy)
    finally:
        lazy.close()
        eager.close()


def test_a_pending_seq_whose_row_is_gone_is_only_forgotten(make_engine: EngineFactory) -> None:
    engine = _fts_engine(make_engine)
    engine.store(StoreItem.document("kept and waiting"))
    engine.store(StoreItem.document("removed behind the engine's back"))
    with engine._session("testing") as conn:
        with write_transaction(conn):
            conn.execute("DELETE FROM items WHERE seq = 2")
            assert pending.flush(conn, ITEMS) == 1
            assert pending.flush(conn, ITEMS) == 0
    assert _pending(engine) == []
    _check_index(engine)

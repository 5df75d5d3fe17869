"""Query plans of the local engine's reads: the keyword index drives its reads, at any size."""

from __future__ import annotations

import sqlite3
from typing import List

from cortex_memory.contract import FetchMode, FetchRequest, MemoryMeta, MetaFilter, StoreItem
from cortex_memory.local import LocalEngine

from .conftest import EngineFactory


def _statements(engine: LocalEngine, request: FetchRequest) -> List[str]:
    """Every statement a fetch ran, with its values written in."""
    seen: List[str] = []
    with engine._session("tracing") as conn:
        conn.set_trace_callback(seen.append)
    try:
        engine.fetch(request)
    finally:
        with engine._session("tracing") as conn:
            conn.set_trace_callback(None)
    return seen


def _plan(engine: LocalEngine, sql: str) -> List[str]:
    with engine._session("planning") as conn:
        return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]


def _fill(engine: LocalEngine, count: int) -> None:
    engine.store_many(
        StoreItem.document(f"note {n} about the {'garden' if n % 50 == 0 else 'kitchen'}",
                           MemoryMeta(workspace=f"ws{n % 3}"))
        for n in range(count)
    )  # fmt: skip


def test_a_small_file_reads_the_keyword_index_first(make_engine: EngineFactory) -> None:
    # Under ANALYZE_FROM items there are no planner statistics: SQLite would
    # take ``tenant = ?`` for selective and run the full-text query per row.
    engine = make_engine(pool_size=1)
    _fill(engine, 300)
    for flt in (MetaFilter(), MetaFilter(workspace="ws1")):
        request = FetchRequest("garden", FetchMode.KEYWORD, 5, flt)
        reads = [s for s in _statements(engine, request) if " MATCH " in s and "items c" in s]
        assert reads, "the fetch read no keyword candidates"
        for sql in reads:
            plan = _plan(engine, sql)
            assert "VIRTUAL TABLE" in plan[0], plan
        assert [h.text for h in engine.fetch(request).hits][:1] == [
            "note 0 about the garden" if flt.workspace is None else "note 100 about the garden"
        ]


def test_a_hybrid_fetch_walks_a_small_file_newest_first(make_engine: EngineFactory) -> None:
    engine = make_engine(pool_size=1)
    _fill(engine, 300)
    request = FetchRequest("garden", FetchMode.HYBRID, 5)
    newest = [s for s in _statements(engine, request) if "ORDER BY c.seq DESC" in s]
    assert newest, "the fetch read no newest rows"
    for sql in newest:
        plan = _plan(engine, sql)
        assert plan == ["SCAN c"], plan  # no index walk, no sort


def test_a_file_never_analyzed_gets_typical_statistics(
    make_engine: EngineFactory, db_path: str
) -> None:
    engine = make_engine()
    _fill(engine, 10)
    engine.close()
    with sqlite3.connect(db_path) as conn:  # as a file of an older release
        conn.execute("DELETE FROM sqlite_stat1")
        conn.execute("DELETE FROM engine_info WHERE key = 'analyzed_rows'")
    conn.close()
    make_engine().health()  # opening gives them
    with sqlite3.connect(db_path) as conn:
        stats = dict(
            conn.execute("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'items'").fetchall()
        )
        analyzed = conn.execute(
            "SELECT value FROM engine_info WHERE key = 'analyzed_rows'"
        ).fetchone()
    conn.close()
    assert stats["items_namespace"] == "1000 1000 250"
    assert analyzed == ("0",)

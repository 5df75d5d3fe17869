"""Fixtures for the local engine's tests: engines on files and in memory, closed afterwards,
and the helpers the search tests share (every page of a fetch, the texts of hits)."""

from __future__ import annotations

import os
from typing import Callable, Iterator, List, Optional

import pytest

from cortex_memory.contract import FetchMode, FetchRequest, Hit, MetaFilter, TimeHint
from cortex_memory.local import LocalEngine

#: (path kind, use_fts) for every flavour an engine test runs on.
FLAVOURS = [("memory", True), ("memory", False), ("file", True), ("file", False)]

EngineFactory = Callable[..., LocalEngine]


@pytest.fixture
def db_path(tmp_path: os.PathLike[str]) -> str:
    """A database file path in a fresh temporary folder (the file does not exist yet)."""
    return os.path.join(os.fspath(tmp_path), "memory.sqlite3")


@pytest.fixture
def make_engine(db_path: str) -> Iterator[EngineFactory]:
    """Build engines (on ``db_path`` unless told otherwise) and close them all at teardown."""
    made: List[LocalEngine] = []

    def make(path: str = "", **options: object) -> LocalEngine:
        engine = LocalEngine(path or db_path, **options)  # type: ignore[arg-type]
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.close()


@pytest.fixture(params=FLAVOURS, ids=[f"{p}-{'fts' if f else 'nofts'}" for p, f in FLAVOURS])
def engine(request: pytest.FixtureRequest, make_engine: EngineFactory) -> LocalEngine:
    """One engine of each flavour: file or ``:memory:``, FTS5 or the fallback."""
    place, fts = request.param
    return make_engine(":memory:" if place == "memory" else "", use_fts=fts)


@pytest.fixture
def mem(make_engine: EngineFactory) -> LocalEngine:
    """A plain in-memory engine (FTS5 when the build has it)."""
    return make_engine(":memory:")


def fetch_all(engine: LocalEngine, query: str, mode: FetchMode, limit: int = 7,
              hint: Optional[TimeHint] = None, flt: Optional[MetaFilter] = None) -> List[Hit]:
    """Every hit of a fetch, page after page of ``limit`` (each cursor must move on)."""
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


def hit_texts(hits: List[Hit]) -> List[str]:
    """The texts of ``hits``, in order."""
    return [h.text for h in hits]

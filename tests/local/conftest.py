"""Fixtures for the local engine's tests: engines on files and in memory, closed afterwards."""

from __future__ import annotations

import os
from typing import Callable, Iterator, List

import pytest

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

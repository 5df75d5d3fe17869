"""The engine itself: descriptor, construction, health, closing, failures, schema, FTS5 state."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import sys
from typing import List, Tuple

import pytest

from cortex_memory.contract import (
    Consolidation,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    HealthState,
    ListRequest,
    MetaFilter,
    RecallRequest,
    StoreItem,
)
from cortex_memory.errors import ConfigError, EngineError, InvalidRequestError, UnavailableError
from cortex_memory.local import LOCAL_ENGINE_ID, LocalEngine, local_descriptor
from cortex_memory.local import sessions as sessions_module
from cortex_memory.local.schema import SCHEMA_VERSION, refresh_statistics
from cortex_memory.local.sessions import refresh_statistics_quietly

from .conftest import EngineFactory


def test_descriptor() -> None:
    descriptor = local_descriptor()
    assert descriptor.to_json() == {
        "id": "local",
        "label": "Local (SQLite)",
        "description": descriptor.description,
        "hosted": False,
        "needs_endpoint": False,
        "needs_key": False,
        "default_endpoint": None,
        "fetch_modes": ["keyword", "vector", "hybrid"],
        "consolidation": "on_demand",
    }
    assert descriptor.description.strip()
    assert LOCAL_ENGINE_ID == "local"
    assert descriptor.consolidation is Consolidation.ON_DEMAND
    with LocalEngine(":memory:") as engine:
        assert engine.descriptor() == descriptor


def test_construction_checks_types_and_touches_nothing(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(os.fspath(tmp_path), "sub", "m.sqlite3")
    engine = LocalEngine(path)
    assert not os.path.exists(os.path.dirname(path))  # nothing happens until first use
    engine.close()
    with pytest.raises(TypeError):
        LocalEngine(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LocalEngine(":memory:", tenant=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LocalEngine(":memory:", timeout="soon")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LocalEngine(b"/tmp/x.sqlite3")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError):
        LocalEngine(":memory:", pool_size=0)
    with pytest.raises(InvalidRequestError):
        LocalEngine(":memory:", timeout=-1)
    with pytest.raises(InvalidRequestError):
        LocalEngine(":memory:", timeout=float("nan"))
    with pytest.raises(InvalidRequestError):
        LocalEngine(":memory:", tenant="  ")
    with pytest.raises(InvalidRequestError):
        LocalEngine("")
    assert "tenant" not in repr(LocalEngine(":memory:", tenant="alice@example.com"))


@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX permissions")
def test_new_files_and_folders_are_private(make_engine: EngineFactory, tmp_path: object) -> None:
    path = os.path.join(os.fspath(tmp_path), "deep", "er", "m.sqlite3")  # type: ignore[call-overload]
    engine = make_engine(path)
    assert engine.health().is_serving()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    engine.store(StoreItem.document("x"))
    wal = path + "-wal"
    assert os.path.exists(wal)
    assert stat.S_IMODE(os.stat(wal).st_mode) == 0o600


def test_memory_engines_are_separate(make_engine: EngineFactory) -> None:
    one, two = make_engine(":memory:"), make_engine(":memory:")
    one.store(StoreItem.document("only in one"))
    assert two.list(ListRequest(MetaFilter(), 5)).items == ()


def test_health_is_down_when_the_file_cannot_be_used(
    make_engine: EngineFactory, tmp_path: object, db_path: str
) -> None:
    folder = os.fspath(tmp_path)  # type: ignore[call-overload]
    as_folder = make_engine(folder)  # a directory is no database
    health = as_folder.health()
    assert health.state is HealthState.DOWN
    assert health.reason
    assert "is a folder" in health.reason
    with pytest.raises(ConfigError, match="is a folder"):
        as_folder.store(StoreItem.document("x"))

    with open(db_path, "wb") as garbage:
        garbage.write(b"this is not a database at all" * 200)
    corrupt = make_engine(db_path)
    assert corrupt.health().state is HealthState.DOWN
    with pytest.raises(ConfigError, match="is not a SQLite database") as caught:
        corrupt.list(ListRequest(MetaFilter(), 5))
    assert db_path in caught.value.message
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)

    under_a_file = make_engine(os.path.join(db_path, "inside.sqlite3"))
    assert under_a_file.health().state is HealthState.DOWN
    with pytest.raises(EngineError):
        under_a_file.store(StoreItem.document("x"))


def test_a_newer_schema_is_refused(make_engine: EngineFactory, db_path: str) -> None:
    make_engine().store(StoreItem.document("x"))
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    newer = make_engine()
    health = newer.health()
    assert health.state is HealthState.DOWN
    assert "schema version" in (health.reason or "")
    with pytest.raises(EngineError, match="schema version"):
        newer.list(ListRequest(MetaFilter(), 5))


def test_closing(make_engine: EngineFactory) -> None:
    engine = make_engine()
    with engine as same:
        assert same is engine
        same.store(StoreItem.document("kept"))
    assert engine.health().state is HealthState.DOWN
    with pytest.raises(EngineError, match="closed"):
        engine.list(ListRequest(MetaFilter(), 5))
    engine.close()  # twice is fine
    reopened = make_engine()
    assert len(reopened.list(ListRequest(MetaFilter(), 5)).items) == 1


def test_a_held_write_lock_is_unavailable_after_the_timeout(
    make_engine: EngineFactory, db_path: str
) -> None:
    engine = make_engine(timeout=0.05)
    engine.store(StoreItem.document("before"))
    blocker = sqlite3.connect(db_path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(UnavailableError) as caught:
            engine.store(StoreItem.document("blocked"))
        assert caught.value.is_transient
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        # Readers are not blocked by a writer in WAL mode.
        assert len(engine.list(ListRequest(MetaFilter(), 5)).items) == 1
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert not engine.store(StoreItem.document("blocked")).replayed


def test_keyword_index_catches_up_with_writes_made_without_it(
    make_engine: EngineFactory,
) -> None:
    fts = make_engine()
    fts.store(StoreItem.document("alpha first"))
    assert fts.uses_fts
    plain = make_engine(use_fts=False)
    plain.store(StoreItem.document("alpha second"))
    assert not plain.uses_fts
    doomed = fts.store(StoreItem.document("alpha doomed")).id
    plain.forget(ForgetTarget.ids([doomed]))
    # The long-lived FTS engine notices the stale index and rebuilds it.
    texts = {h.text for h in fts.fetch(FetchRequest("alpha", FetchMode.KEYWORD, 10)).hits}
    assert texts == {"alpha first", "alpha second"}
    fresh = make_engine()
    texts = {h.text for h in fresh.fetch(FetchRequest("alpha", FetchMode.KEYWORD, 10)).hits}
    assert texts == {"alpha first", "alpha second"}


def _stale_for_good(
    make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> Tuple[LocalEngine, List[int]]:
    """An engine whose file another engine wrote without the index, and whose
    rebuilds do nothing (each one counted in the list)."""
    fts = make_engine()
    fts.store(StoreItem.document("alpha first"))
    make_engine(use_fts=False).store(StoreItem.document("alpha second"))
    rebuilt: List[int] = []
    monkeypatch.setattr(sessions_module, "rebuild_fts", lambda conn: rebuilt.append(1))
    return fts, rebuilt


def test_a_read_gives_up_when_the_index_stays_stale(
    make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    fts, rebuilt = _stale_for_good(make_engine, monkeypatch)
    with pytest.raises(UnavailableError, match="keyword index"):
        fts.recall(RecallRequest("alpha?", 3))
    assert len(rebuilt) == 3
    monkeypatch.undo()
    assert "alpha second" in fts.recall(RecallRequest("alpha?", 3)).answer


def test_a_lone_keyword_term_read_checks_the_index_too(
    make_engine: EngineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lone keyword term reads no term counts, and its candidates unranked:
    # the index's state is still checked in the same snapshot.
    fts, rebuilt = _stale_for_good(make_engine, monkeypatch)
    with pytest.raises(UnavailableError, match="keyword index"):
        fts.fetch(FetchRequest("alpha", FetchMode.KEYWORD, 5))
    assert len(rebuilt) == 3
    monkeypatch.undo()
    hits = fts.fetch(FetchRequest("alpha", FetchMode.KEYWORD, 5)).hits
    assert {h.text for h in hits} == {"alpha first", "alpha second"}


def test_fallback_file_gains_an_index_later(make_engine: EngineFactory, db_path: str) -> None:
    plain = make_engine(use_fts=False)
    plain.store(StoreItem.document("beta only"))
    conn = sqlite3.connect(db_path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert "items_fts" not in tables
    fts = make_engine()
    assert [h.text for h in fts.fetch(FetchRequest("beta", FetchMode.KEYWORD, 5)).hits] == [
        "beta only"
    ]
    assert fts.uses_fts


def test_logs_never_carry_content(
    make_engine: EngineFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="cortex_memory")
    secret = "canarycontent7781"
    engine = make_engine(use_fts=False)
    engine.store(StoreItem.document(f"{secret} in a note"))
    fts = make_engine()
    fts.fetch(FetchRequest(secret, FetchMode.HYBRID, 5))
    fts.recall(RecallRequest(secret, 5))
    assert caplog.records  # something was logged (set-up, index rebuild)
    assert all(secret not in record.getMessage() for record in caplog.records)


def test_another_applications_database_is_left_alone(
    make_engine: EngineFactory, db_path: str
) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    engine = make_engine()
    health = engine.health()
    assert health.state is HealthState.DOWN
    assert "another application's SQLite database" in (health.reason or "")
    with pytest.raises(ConfigError, match="another application's SQLite database"):
        engine.store(StoreItem.document("x"))
    conn = sqlite3.connect(db_path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert names == {"invoices"}
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


def test_statistics_are_refreshed_as_the_file_grows(
    make_engine: EngineFactory, db_path: str
) -> None:
    engine = make_engine()
    for start in range(0, 1000, 100):
        engine.store_many([StoreItem.document(f"note {i}") for i in range(start, start + 100)])
    engine.close()
    make_engine().health()  # opening checks the statistics
    conn = sqlite3.connect(db_path)
    try:
        stats = conn.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'items'").fetchone()
        analyzed = conn.execute(
            "SELECT value FROM engine_info WHERE key = 'analyzed_rows'"
        ).fetchone()
    finally:
        conn.close()
    assert stats[0] > 0
    assert analyzed == ("1000",)


def test_an_unreadable_row_is_reported_not_guessed(
    make_engine: EngineFactory, db_path: str
) -> None:
    engine = make_engine()
    good, bad = (engine.store(StoreItem.document(t)).id for t in ("good", "bad"))
    conn = sqlite3.connect(db_path)
    conn.execute(
        "UPDATE items SET item_json = '{' WHERE seq = "
        "(SELECT seq FROM items WHERE id = ?)", (bad,),
    )
    conn.commit()
    conn.close()
    page = engine.export(ListRequest(MetaFilter(), 10))
    assert [e.id for e in page.items] == [good]
    assert page.incomplete == (bad,)
    with pytest.raises(EngineError, match="unreadable"):
        engine.list(ListRequest(MetaFilter(), 10))



def test_a_busy_statistics_refresh_is_skipped_not_raised(
    make_engine: EngineFactory, db_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    engine = make_engine()
    for start in range(0, 1000, 100):
        engine.store_many([StoreItem.document(f"n {i}") for i in range(start, start + 100)])
    engine.close()
    conn = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    blocker = sqlite3.connect(db_path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError):
            refresh_statistics(conn)
        caplog.set_level(logging.INFO, logger="cortex_memory.local")
        refresh_statistics_quietly(conn)  # what the engine calls: logs and carries on
        assert any("not refreshed" in r.getMessage() for r in caplog.records)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        conn.close()

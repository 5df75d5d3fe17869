"""The connection pool and the error mapping, on their own."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import List

import pytest

from cortex_memory.contract import StoreItem
from cortex_memory.errors import EngineError, InvalidRequestError, UnavailableError
from cortex_memory.local import LocalEngine
from cortex_memory.local.connections import (
    CACHE_KIB,
    LARGE_WRITE_CHARS,
    SMALL_CACHE_KIB,
    ConnectionPool,
    small_cache,
    sqlite_errors,
)


def _memory() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", check_same_thread=False)


def test_a_full_pool_makes_callers_wait() -> None:
    opened: List[sqlite3.Connection] = []

    def opener() -> sqlite3.Connection:
        conn = _memory()
        opened.append(conn)
        return conn

    pool = ConnectionPool(opener, 1)
    order: List[str] = []
    with pool.connection() as first:
        waiter = threading.Thread(target=lambda: _borrow(pool, order))
        waiter.start()
        time.sleep(0.05)
        order.append("holder done")
    waiter.join(5)
    assert order == ["holder done", "waiter got it"]
    assert len(opened) == 1  # the waiter reused the one connection
    assert first is opened[0]
    pool.close()


def test_waiters_on_a_full_pool_all_get_a_turn() -> None:
    # The pool signals its condition only when someone waits: eight threads
    # take turns on one connection many times, and none is left waiting.
    pool = ConnectionPool(_memory, 1)
    turns: List[int] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        for _ in range(50):
            with pool.connection() as conn:
                conn.execute("SELECT 1").fetchone()
                with lock:
                    turns.append(n)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    end = time.monotonic() + 20
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))
    assert not any(thread.is_alive() for thread in threads)
    assert sorted(set(turns)) == list(range(8))
    assert len(turns) == 8 * 50
    assert pool._waiting == 0
    pool.close()


def test_a_waiter_takes_the_slot_an_open_failure_frees() -> None:
    gate = threading.Event()
    calls: List[int] = []

    def slow_then_failing() -> sqlite3.Connection:
        calls.append(1)
        if len(calls) == 1:
            gate.wait(5)
            raise sqlite3.OperationalError("unable to open database file")
        return _memory()

    pool = ConnectionPool(slow_then_failing, 1)
    failed: List[BaseException] = []

    def first() -> None:
        try:
            with pool.connection():
                pass
        except sqlite3.OperationalError as exc:
            failed.append(exc)

    got: List[str] = []
    opener = threading.Thread(target=first)
    opener.start()
    end = time.monotonic() + 10
    while not calls and time.monotonic() < end:
        time.sleep(0.001)
    waiter = threading.Thread(target=lambda: _borrow(pool, got))
    waiter.start()
    while pool._waiting == 0 and time.monotonic() < end:
        time.sleep(0.001)  # until the second caller waits for the only slot
    assert pool._waiting == 1
    gate.set()
    opener.join(5)
    waiter.join(5)
    assert len(failed) == 1
    assert got == ["waiter got it"]
    assert len(calls) == 2
    pool.close()


def _borrow(pool: ConnectionPool, order: List[str]) -> None:
    with pool.connection():
        order.append("waiter got it")


def test_close_closes_idle_now_and_busy_on_return() -> None:
    pool = ConnectionPool(_memory, 2)
    with pool.connection() as busy:
        with pool.connection() as idle_one:
            assert idle_one is not busy
        pool.close()
        assert pool.closed
        with pytest.raises(sqlite3.ProgrammingError):
            idle_one.execute("SELECT 1")
        busy.execute("SELECT 1")  # still usable until it comes back
        busy.execute("BEGIN")
    with pytest.raises(sqlite3.ProgrammingError):
        busy.execute("SELECT 1")
    with pytest.raises(EngineError, match="closed"), pool.connection():
        pass


def test_an_open_failure_frees_the_slot() -> None:
    calls = []

    def flaky() -> sqlite3.Connection:
        calls.append(1)
        if len(calls) == 1:
            raise sqlite3.OperationalError("unable to open database file")
        return _memory()

    pool = ConnectionPool(flaky, 1)
    with pytest.raises(sqlite3.OperationalError), pool.connection():
        pass
    with pool.connection() as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    pool.close()


def test_a_borrower_never_leaks_a_transaction() -> None:
    pool = ConnectionPool(_memory, 1)
    with pytest.raises(RuntimeError):
        _fail_inside_a_transaction(pool)
    with pool.connection() as again:
        assert not again.in_transaction
    pool.close()


def _fail_inside_a_transaction(pool: ConnectionPool) -> None:
    with pool.connection() as conn:
        conn.execute("BEGIN")
        raise RuntimeError("boom")


def test_error_mapping() -> None:
    with pytest.raises(UnavailableError, match="locked"), sqlite_errors("writing"):
        raise sqlite3.OperationalError("database is locked")
    with pytest.raises(EngineError, match="while writing: disk I/O error") as caught, \
            sqlite_errors("writing"):
        raise sqlite3.OperationalError("disk I/O error")
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    with pytest.raises(EngineError, match="Permission denied"), sqlite_errors("opening"):
        raise PermissionError(13, "Permission denied")
    with pytest.raises(InvalidRequestError, match="surrogate"), sqlite_errors("writing"):
        "\ud800".encode()
    with pytest.raises(KeyError), sqlite_errors("reading"):
        raise KeyError("not ours to translate")


def _cache_size(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA cache_size").fetchone()[0])


def test_a_large_write_runs_with_a_small_cache_and_gives_it_back() -> None:
    conn = _memory()
    conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
    with small_cache(conn, False):
        assert _cache_size(conn) == -CACHE_KIB  # a small write keeps the cache
    with small_cache(conn, True):
        assert _cache_size(conn) == -SMALL_CACHE_KIB
    assert _cache_size(conn) == -CACHE_KIB
    with pytest.raises(RuntimeError), small_cache(conn, True):
        raise RuntimeError("the write failed")
    assert _cache_size(conn) == -CACHE_KIB  # given back on failure too


def test_the_engine_stores_a_long_text_with_the_small_cache(tmp_path: Path) -> None:
    engine = LocalEngine(tmp_path / "m.sqlite3")
    seen: List[str] = []
    try:
        engine.store(StoreItem.document("a short note"))
        with engine._pool.connection() as conn:  # the pool's one idle connection
            conn.set_trace_callback(seen.append)
        engine.store(StoreItem.document("a note " * (LARGE_WRITE_CHARS // 7 + 1)))
        engine.store(StoreItem.document("another short note"))
    finally:
        engine.close()
    pragmas = [s for s in seen if s.startswith("PRAGMA cache_size")]
    assert pragmas == [
        f"PRAGMA cache_size = {-SMALL_CACHE_KIB}", f"PRAGMA cache_size = {-CACHE_KIB}",
    ]

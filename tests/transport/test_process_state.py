"""Process-wide state: lazy caches built once under a lock, a watchdog a host can replace."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, List

import pytest

from cortex_memory.cortex.transport import exchange, pool
from cortex_memory.cortex.transport.lazy import Lazy
from cortex_memory.cortex.transport.watchdog import (
    WATCHDOG,
    Watch,
    Watchdog,
    current_watchdog,
    install_watchdog,
)
from cortex_memory.errors import UnavailableError
from cortex_memory.testing.hostile import CountingServer, HostileServer

THREADS = 16


def _all_at_once(call: Callable[[], Any]) -> List[Any]:
    """``call`` from THREADS threads released together; every result."""
    barrier = threading.Barrier(THREADS)
    results: List[Any] = [None] * THREADS

    def run(i: int) -> None:
        barrier.wait()
        results[i] = call()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return results


def test_concurrent_first_use_of_no_retries_builds_one_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import urllib3.util

    built: List[Any] = []
    real = urllib3.util.Retry

    class SlowRetry(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            time.sleep(0.02)  # widen the window in which a second builder could start
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(urllib3.util, "Retry", SlowRetry)
    monkeypatch.setattr(pool, "_NO_RETRIES", Lazy(pool._make_no_retries))
    results = _all_at_once(pool.no_retries)
    assert len(built) == 1
    assert all(result is built[0] for result in results)
    assert built[0].total is False


def test_concurrent_first_use_of_urllib3_sets_the_cache_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import urllib3

    monkeypatch.setattr(exchange, "_URLLIB3", Lazy(exchange._import_urllib3))
    results = _all_at_once(exchange._urllib3)
    assert all(result is urllib3 for result in results)
    assert exchange._URLLIB3.peek() is urllib3


def test_lazy_builds_once_for_racing_threads_and_peek_never_builds() -> None:
    calls: List[int] = []

    def build() -> object:
        time.sleep(0.02)  # a window in which a second builder could start
        calls.append(1)
        return object()

    lazy: Lazy[object] = Lazy(build)
    assert lazy.peek() is None
    assert calls == []
    assert "not built" in repr(lazy)
    results = _all_at_once(lazy.get)
    assert len(calls) == 1
    assert all(result is results[0] for result in results)
    assert lazy.peek() is results[0]
    assert "built" in repr(lazy)


def test_the_pool_classes_are_defined_once() -> None:
    first = pool._watched_pool_classes()
    assert pool._watched_pool_classes() is first
    assert set(first) == {"http", "https"}


class CountingWatchdog(Watchdog):
    """A watchdog that counts what the transport asks of it."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = 0
        self.attached = 0

    def arm(self, seconds: float) -> Watch:
        self.armed += 1
        return super().arm(seconds)

    def attach(self, conn: Any) -> None:
        self.attached += 1
        super().attach(conn)


@pytest.fixture
def own_watchdog() -> Any:
    mine = CountingWatchdog()
    previous = install_watchdog(mine)
    try:
        yield mine
    finally:
        assert install_watchdog(previous) is mine
        mine.stop()
    assert current_watchdog() is WATCHDOG


def test_the_default_watchdog_is_the_process_one() -> None:
    assert current_watchdog() is WATCHDOG


def test_an_installed_watchdog_serves_every_exchange(make_client, own_watchdog) -> None:
    assert current_watchdog() is own_watchdog
    with CountingServer(200, json={"events": []}) as server:
        client = make_client(server.url)
        client.once("GET", "v1/events")
        client.once("GET", "v1/events")
    assert own_watchdog.armed >= 2  # the actor lookup too
    assert own_watchdog.attached >= 2  # the connect, then each request
    assert own_watchdog.running


def test_an_installed_watchdog_cuts_a_stalled_exchange(make_client, own_watchdog) -> None:
    with HostileServer("slow_headers", interval=0.05, spare_whoami=True) as server:
        client = make_client(server.url)
        started = time.monotonic()
        with pytest.raises(UnavailableError, match="timed out"):
            client.once("POST", "v1/experience", {"a": 1})
    assert time.monotonic() - started < 0.5 + 3.0
    assert own_watchdog.armed >= 2


def test_install_refuses_what_is_not_a_watchdog() -> None:
    with pytest.raises(TypeError, match="watchdog must be a Watchdog"):
        install_watchdog(object())  # type: ignore[arg-type]
    assert current_watchdog() is WATCHDOG

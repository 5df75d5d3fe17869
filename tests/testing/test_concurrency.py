"""Many threads hammering one double: no lost recording, consistent counters."""

from __future__ import annotations

import json
import threading
import time
from typing import List

import urllib3

from cortex_memory.testing import DirectDouble, HostedDouble

THREADS = 32
ROUNDS = 8


def _hammer(url: str, prefix: str, index: int, errors: List[BaseException]) -> None:
    pool = urllib3.PoolManager(maxsize=1, retries=False, timeout=30.0)
    headers = {"Authorization": "Bearer t", "Content-Type": "application/json"}
    try:
        for round_ in range(ROUNDS):
            body = json.dumps(
                {
                    "scope": f"app:t{index % 4}",
                    "idempotency_key": f"k-{index}-{round_}",
                    "content": {"text": f"w {index} {round_}"},
                }
            ).encode()
            answer = pool.request("POST", f"{url}{prefix}/experience", body=body, headers=headers)
            assert answer.status == 202, answer.data
            answer = pool.request(
                "GET", f"{url}{prefix}/events?scope=app:t{index % 4}&limit=5", headers=headers
            )
            assert answer.status == 200, answer.data
            answer = pool.request(
                "POST",
                f"{url}{prefix}/recall",
                body=b'{"scope":"app:t0","query":"w"}',
                headers=headers,
            )
            assert answer.status == 200, answer.data
    except BaseException as exc:
        errors.append(exc)
    finally:
        pool.clear()


def _run(double, prefix: str) -> None:
    errors: List[BaseException] = []
    threads = [
        threading.Thread(target=_hammer, args=(double.url, prefix, i, errors))
        for i in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    state = double.state
    writes = THREADS * ROUNDS
    assert len(state.requests()) == 3 * writes
    assert state.count(f"POST {prefix}/experience") == writes
    assert state.count(f"GET {prefix}/events") == writes
    for name in ("auth", "actors", "headers", "bodies"):
        assert len(getattr(state.seen, name)) == 3 * writes
    assert len(state.seen.writes) == len(state.seen.idempotency) == writes
    assert len(state.seen.recalls) == writes
    assert state.counters["experience_calls"] == writes
    assert state.event_count() == writes
    ids = [event["id"] for event in state.log.events]
    assert len(set(ids)) == writes
    assert state.counters["packs_issued"] == len(state.log.packs) == writes
    assert state.counters["listings_in_flight"] == 0
    assert 1 <= state.counters["listings_peak"] <= THREADS
    assert state.counters["connections"] >= THREADS


def test_direct_double_under_32_threads() -> None:
    with DirectDouble() as double:
        _run(double, "/v1")


def test_hosted_double_under_32_threads() -> None:
    with HostedDouble(rate_limit_requests=None) as double:
        _run(double, "/memory")


def test_listings_peak_with_a_listing_delay() -> None:
    with DirectDouble(listing_delay_ms=200) as double:
        errors: List[BaseException] = []

        def listing() -> None:
            try:
                pool = urllib3.PoolManager(retries=False)
                answer = pool.request(
                    "GET", f"{double.url}/v1/events?scope=a", headers={"Authorization": "Bearer t"}
                )
                assert answer.status == 200
                pool.clear()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=listing) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == []
        assert 1 < double.state.counters["listings_peak"] <= 8
        assert double.state.counters["listings_in_flight"] == 0


def test_knobs_change_while_threads_run() -> None:
    with DirectDouble() as double:
        stop = threading.Event()
        statuses: List[int] = []

        def reader() -> None:
            pool = urllib3.PoolManager(retries=False)
            while not stop.is_set():
                answer = pool.request(
                    "GET", f"{double.url}/v1/events?scope=a", headers={"Authorization": "Bearer t"}
                )
                statuses.append(answer.status)
            pool.clear()

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for thread in threads:
            thread.start()
        # Flip the knobs until the readers have sent a good number of requests
        # (at least 50 flips), so the flips land while requests are in flight even
        # on a loaded machine; bounded in time.
        give_up = time.monotonic() + 30
        flips = 0
        while (flips < 50 or len(statuses) < 50) and time.monotonic() < give_up:
            double.state.fail_all = (503, "UNAVAILABLE")
            double.state.fail_all = None
            with double.state.lock:
                double.state.rate_limit_events = 1
            flips += 1
            time.sleep(0.0005)
        stop.set()
        for thread in threads:
            thread.join(30)
        assert set(statuses) <= {200, 429, 503}
        assert statuses

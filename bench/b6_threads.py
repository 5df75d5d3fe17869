"""B6: throughput of 1, 4 and 16 threads sharing one CortexEngine, against linear scaling.

A Direct double runs in its own process with ``request_delay_ms=20``: it holds
every gated request 20 ms (outside its lock) before answering, so a request is
I/O-bound the way a real remote call is, and threads that share an engine well
should overlap their waits almost perfectly. Each thread loops, alternating

* ``engine.store(one-turn conversation, wait=WaitFor.ACCEPTED)``: one
  ``POST /v1/experience`` (each thread cycles through 20 turns written once
  before timing, so the double answers replays and its log, which it scans on
  every listing, does not grow from one window to the next), and
* ``engine.list(3 learnings at the root, exact reach)``: one ``GET /v1/events``,

on **one shared engine** for a fixed window. Throughput is operations per
second; the figure is ``throughput(k) / (k × throughput(1))``, the fraction of
linear scaling reached with k threads. The aim is ≥ 0.6 at 16 threads.

To tell the engine's limits from the machine's, the same mix also runs through a
**floor**: a bare ``urllib3.PoolManager(maxsize=8, block=False)`` shared by the
threads, sending the same two requests and parsing the JSON, nothing else. For
every run the benchmark also records the client's CPU (``process_time``), the
server process's CPU (``/proc/<pid>/stat``), the latency percentiles, and how
many connections urllib3 discarded because its pool (``maxsize=8``, shared by
the engine and its copies, engine.md §5.2) was full: with 16 threads up to 8
connections at a time are closed after one use and reopened (a TCP handshake
and a new server thread each time).

Run: ``python bench/b6_threads.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional
from urllib.parse import quote

import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import double_argv, print_table, serve, summary, write_result

NAME = "b6_threads"
TOKEN = "tiny_live_test"  # the doubles' test bearer, not a secret
ACTOR = "user:local"
DELAY_MS = 20
THREADS = (1, 4, 16)
AIM = 0.6
TURNS = 20  # distinct turns per thread, replayed in turn


class DiscardCounter(logging.Handler):
    """Counts urllib3's "Connection pool is full, discarding connection" warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if "pool is full" in record.getMessage():
            with self._lock:
                self.count += 1


def server_cpu(pid: int) -> Optional[float]:
    """CPU seconds (user + system) the server process has used, or None without /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def run_threads(
    threads: int,
    window: float,
    operation: Callable[[int, int], object],
    server_pid: int,
    discards: DiscardCounter,
) -> Dict[str, Any]:
    """``threads`` threads call ``operation(thread, n)`` for ``window`` seconds; the figures."""
    latencies: List[List[float]] = [[] for _ in range(threads)]
    errors: List[BaseException] = []
    ready = threading.Barrier(threads + 1)
    stop_at = [0.0]

    def loop(index: int) -> None:
        mine = latencies[index]
        ready.wait()
        n = 0
        try:
            while True:
                start = time.monotonic()
                if start >= stop_at[0]:
                    return
                operation(index, n)
                mine.append(time.monotonic() - start)
                n += 1
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    discarded_before = discards.count
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    server_before = server_cpu(server_pid)
    client_before = time.process_time()
    begin = time.monotonic()
    stop_at[0] = begin + window
    ready.wait()
    for worker in workers:
        worker.join()
    elapsed = time.monotonic() - begin
    client = time.process_time() - client_before
    server_after = server_cpu(server_pid)
    if errors:
        raise RuntimeError(f"{len(errors)} operations failed; the first: {errors[0]!r}")
    done = sorted(x for per in latencies for x in per)
    ops = len(done)
    server = (
        server_after - server_before
        if server_after is not None and server_before is not None
        else None
    )
    return {
        "threads": threads,
        "ops": ops,
        "seconds": elapsed,
        "ops_per_s": ops / elapsed,
        "latency_ms": {
            "p50": 1000 * done[ops // 2],
            "p95": 1000 * done[min(ops - 1, int(ops * 0.95))],
            "max": 1000 * done[-1],
        },
        "client_cpu_s": client,
        "server_cpu_s": server,
        "cores_busy": (client + (server or 0.0)) / elapsed,
        "pool_discards": discards.count - discarded_before,
        "loadavg_1m_before": load,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter windows, one round")
    parser.add_argument("--window", type=float, default=None, help="seconds per run")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    window = args.window or (1.5 if args.quick else 3.0)
    rounds = args.rounds or (1 if args.quick else 3)

    from cortex_memory.contract import (
        ItemKind,
        LearningKind,
        ListRequest,
        MetaFilter,
        Namespace,
        Reach,
        Role,
        StoreItem,
        Turn,
        WaitFor,
    )
    from cortex_memory.cortex import EngineCredential
    from cortex_memory.cortex.engine.core import CortexEngine
    from cortex_memory.cortex.envelope.scopes import scope_path
    from cortex_memory.cortex.transport.pool import POOL_MAXSIZE

    discards = DiscardCounter()
    pool_log = logging.getLogger("urllib3.connectionpool")
    pool_log.addHandler(discards)
    pool_log.propagate = False  # count the warnings; keep them off stderr

    knobs = {"whoami_caller": ACTOR, "rate_limit_requests": None, "request_delay_ms": DELAY_MS}
    started: List[Any] = []
    runs: Dict[str, Dict[int, List[Dict[str, Any]]]] = {
        "engine": {k: [] for k in THREADS},
        "floor": {k: [] for k in THREADS},
    }
    with serve(double_argv("direct", **knobs), started=started) as url:
        server_pid = started[0].pid
        engine = CortexEngine.direct(url, EngineCredential.static(TOKEN))
        engine.store_many(
            [
                StoreItem.learning(f"prefers helix, setting {i}", LearningKind.PREFERENCE, 0.8)
                for i in range(3)
            ],
            wait=WaitFor.VISIBLE,
        )
        page = ListRequest.new(
            MetaFilter.for_kinds([ItemKind.LEARNING]).with_reach(Reach.exact(Namespace.root())), 3
        )
        # Each thread cycles through TURNS fixed turns, all stored once before any
        # window: every timed store is then a replay on the double, so its log (which
        # it scans on every listing) stays the same size from the first window to the
        # last. The client does the same work either way.
        turns = [
            [
                StoreItem.conversation([Turn(Role.USER, f"thread {t} turn {k}: we agreed")])
                for k in range(TURNS)
            ]
            for t in range(max(THREADS))
        ]

        def engine_op(thread: int, n: int) -> object:
            if n % 2:
                return engine.list(page)
            return engine.store(turns[thread][(n // 2) % TURNS], wait=WaitFor.ACCEPTED)

        floor = urllib3.PoolManager(retries=False, maxsize=POOL_MAXSIZE, block=False)
        headers = {"Authorization": f"Bearer {TOKEN}", "Accept-Encoding": "identity",
                   "X-Cortex-Actor": ACTOR}  # fmt: skip
        post_headers = dict(headers, **{"Content-Type": "application/json"})
        learnings = scope_path(Namespace.root(), ItemKind.LEARNING)
        conversations = scope_path(Namespace.root(), ItemKind.CONVERSATION)
        page_url = f"{url}/v1/events?scope={quote(learnings, safe='')}&limit=200"

        def floor_body(thread: int, k: int) -> bytes:
            text = f"floor thread {thread} turn {k}"
            body = {
                "scope": conversations,
                "modality": "conversation",
                "content": {"kind": "message", "role": "user", "text": text},
                "context": {"labels": ["kind:conversation"]},
                "idempotency_key": f"floor-{thread}-{k}",
            }
            return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

        def floor_op(thread: int, n: int) -> object:
            if n % 2:
                answer = floor.request("GET", page_url, headers=headers)
            else:
                answer = floor.request(
                    "POST",
                    f"{url}/v1/experience",
                    body=floor_body(thread, (n // 2) % TURNS),
                    headers=post_headers,
                )
            if answer.status >= 300:
                raise RuntimeError(f"the double answered {answer.status}")
            return json.loads(answer.data)

        # Warm both paths (the actor lookup, first connections) and write every
        # turn once before any window.
        engine_op(0, 1)  # the actor lookup, once
        floor_op(0, 1)

        def write_turns(thread: int) -> None:
            for n in range(0, 2 * TURNS, 2):  # the even operations are the stores
                engine_op(thread, n)
                floor_op(thread, n)

        with ThreadPoolExecutor(max(THREADS)) as warm:
            list(warm.map(write_turns, range(max(THREADS))))
        for _ in range(rounds):
            for threads in THREADS:
                for name, operation in (("engine", engine_op), ("floor", floor_op)):
                    runs[name][threads].append(
                        run_threads(threads, window, operation, server_pid, discards)
                    )
        engine.close()
        floor.clear()
    pool_log.removeHandler(discards)
    pool_log.propagate = True

    def median_run(name: str, threads: int) -> Dict[str, Any]:
        per = runs[name][threads]
        middle = statistics.median(r["ops_per_s"] for r in per)
        return min(per, key=lambda r: abs(r["ops_per_s"] - middle))

    table = {name: {k: median_run(name, k) for k in THREADS} for name in runs}
    scaling = {
        name: {k: table[name][k]["ops_per_s"] / (k * table[name][1]["ops_per_s"]) for k in THREADS}
        for name in runs
    }
    rows = []
    for name in runs:
        for k in THREADS:
            r = table[name][k]
            server = r["server_cpu_s"]
            rows.append(
                (
                    name,
                    k,
                    f"{r['ops_per_s']:.1f}",
                    f"{scaling[name][k]:.2f}",
                    f"{r['latency_ms']['p50']:.1f}",
                    f"{r['latency_ms']['p95']:.1f}",
                    f"{1e3 * r['client_cpu_s'] / r['ops']:.2f}",
                    f"{1e3 * server / r['ops']:.2f}" if server is not None else "?",
                    f"{r['cores_busy']:.2f}",
                    r["pool_discards"],
                )
            )
    print_table(
        f"B6 throughput, one shared engine, double adds {DELAY_MS} ms per request"
        f" (median of {rounds} x {window:.1f} s windows; {os.cpu_count()} CPUs)",
        ("client", "threads", "ops/s", "x linear", "p50 ms", "p95 ms", "client ms/op",
         "server ms/op", "cores busy", "pool discards"),
        rows,
    )  # fmt: skip
    at16 = scaling["engine"][16]
    # The floor meets the same machine (cores, other load, the double's own GIL):
    # engine scaling over floor scaling is the share of what the machine allowed
    # that the engine kept.
    kept = at16 / scaling["floor"][16]
    loads = [r["loadavg_1m_before"] for per in runs["engine"].values() for r in per]
    load = max((x for x in loads if x is not None), default=None)
    print(
        f"engine scaling at 16 over bare urllib3 scaling at 16: {kept:.2f}"
        + (f"; highest 1-minute load average seen: {load:.2f}" if load is not None else "")
    )
    verdict = "pass" if at16 >= AIM else "miss"
    row = summary(
        f"{at16:.2f}x linear at 16 threads ({scaling['engine'][4]:.2f}x at 4;"
        f" bare urllib3 {scaling['floor'][16]:.2f}x at 16, so {kept:.2f} of it kept)",
        f">= {AIM}x linear at 16",
        verdict,
    )
    path = write_result(
        NAME,
        {
            "summary": row,
            "delay_ms": DELAY_MS,
            "window_s": window,
            "rounds": rounds,
            "pool_maxsize": POOL_MAXSIZE,
            "scaling": scaling,
            "engine_over_floor_at_16": kept,
            "max_loadavg_1m": load,
            "median_runs": table,
            "runs": runs,
        },
    )
    print(f"verdict: {verdict}; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

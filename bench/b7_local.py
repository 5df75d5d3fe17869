"""B7: the local engine's latency at 10k and 100k items, and how it grows.

One database file is filled in ``store_many`` batches of 100 up to 10 000
items, measured, then filled on to 100 000 and measured again. Each
operation's figure is the median wall time of several calls with different
queries; the growth exponent ``log(t100k / t10k) / log(10)`` says how the cost
grows with the number of items (0 = flat, 1 = linear). The write throughput of
each filling phase is reported too.

Run: ``python bench/b7_local.py [--small]`` (``--small`` measures 1k and 10k,
for a quick look). Prints a table and writes ``bench/results/b7_local.json``.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import print_table, write_result

from cortex_memory.contract import (
    FetchMode,
    FetchRequest,
    GetRequest,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    RecallRequest,
    StoreItem,
)
from cortex_memory.local import LocalEngine

# A small fixed vocabulary: texts share words the way real notes do, so
# keyword candidates are plentiful (the hard case for ranking).
_VOCAB = (
    "project", "plan", "meeting", "budget", "review", "design", "release", "deploy", "server",
    "client", "memory", "cache", "index", "query", "user", "team", "agent", "report", "note",
    "draft", "customer", "invoice", "payment", "schedule", "deadline", "risk", "issue", "fix",
    "test", "build", "pipeline", "database", "backup", "restore", "security", "audit", "policy",
    "access", "token", "session", "login", "error", "warning", "latency", "timeout", "network",
    "storage", "disk", "upload", "download", "sync", "thread", "process", "queue", "worker",
    "task", "job", "alpha", "beta", "gamma", "delta", "coffee", "tea", "lunch", "travel",
    "hotel", "flight", "garden", "kitchen", "music"
)
_RARE = [f"term{i:05d}" for i in range(20_000)]
_NODES = [Namespace.root(), Namespace.parse("agent:writer"), Namespace.parse("team:acme")]


def _text(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(2, 5)):
        words = rng.choices(_VOCAB, k=rng.randint(6, 14))
        words.append(rng.choice(_RARE))
        rng.shuffle(words)
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


def _item(rng: random.Random, n: int) -> StoreItem:
    meta = MemoryMeta(
        namespace=_NODES[n % len(_NODES)],
        workspace=f"ws{n % 10}",
        tags=(f"tag{n % 7}",),
    )
    return StoreItem.document(f"{_text(rng)} (item {n})", meta)


def _fill(
    engine: LocalEngine, rng: random.Random, start: int, stop: int
) -> Tuple[float, float]:
    """Store items start..stop in batches of 100; items per wall second and per CPU second.

    Only ``store_many`` is timed (building the test items is not).
    """
    wall = cpu = 0.0
    for first in range(start, stop, 100):
        batch = [_item(rng, n) for n in range(first, min(first + 100, stop))]
        began, began_cpu = time.perf_counter(), time.process_time()
        engine.store_many(batch)
        cpu += time.process_time() - began_cpu
        wall += time.perf_counter() - began
    return (stop - start) / wall, (stop - start) / cpu


def _median_ms(calls: Sequence[Callable[[], object]]) -> Tuple[float, float]:
    """Median wall and CPU milliseconds of the calls.

    CPU time (this process, every thread) is what the engine spends, SQLite's
    C code included; on a shared machine it is far steadier than wall time,
    so the growth exponent is computed from it.
    """
    wall, cpu = [], []
    for call in calls:
        began, began_cpu = time.perf_counter(), time.process_time()
        call()
        cpu.append((time.process_time() - began_cpu) * 1000)
        wall.append((time.perf_counter() - began) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def _measure(
    engine: LocalEngine, rng: random.Random, size: int
) -> Dict[str, Tuple[float, float]]:
    queries = [" ".join(rng.sample(_VOCAB, 2)) for _ in range(9)]
    rare = [rng.choice(_RARE) for _ in range(9)]
    ids = [h.id for h in engine.list(ListRequest(MetaFilter(), 200)).items]
    flt = MetaFilter(workspace="ws3")
    figures: Dict[str, Tuple[float, float]] = {}
    figures["store"] = _median_ms(
        [lambda n=n: engine.store(_item(rng, size * 10 + n)) for n in range(9)]
    )
    for mode in FetchMode:
        figures[f"fetch {mode.value}"] = _median_ms(
            [lambda q=q, m=mode: engine.fetch(FetchRequest(q, m, 10)) for q in queries]
        )
    figures["fetch hybrid rare"] = _median_ms(
        [lambda q=q: engine.fetch(FetchRequest(q, FetchMode.HYBRID, 10)) for q in rare]
    )
    figures["fetch keyword +filter"] = _median_ms(
        [lambda q=q: engine.fetch(FetchRequest(q, FetchMode.KEYWORD, 10, flt)) for q in queries]
    )
    figures["recall"] = _median_ms(
        [lambda q=q: engine.recall(RecallRequest(f"what about the {q}?", 5)) for q in queries]
    )
    figures["list 100"] = _median_ms(
        [lambda: engine.list(ListRequest(flt, 100)) for _ in range(9)]
    )
    figures["get 20"] = _median_ms(
        [lambda k=k: engine.get(GetRequest(tuple(ids[k : k + 20]))) for k in range(0, 180, 20)]
    )
    return figures


def main(argv: List[str]) -> int:
    """Fill, measure, fill more, measure again; print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1k and 10k instead of 10k and 100k")
    args = parser.parse_args(argv)
    small, large = (1_000, 10_000) if args.small else (10_000, 100_000)
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "b7.sqlite3")
        with LocalEngine(path) as engine:
            fill_small = _fill(engine, rng, 0, small)
            at_small = _measure(engine, rng, small)
            fill_large = _fill(engine, rng, small, large)
            at_large = _measure(engine, rng, large)
            fts = engine.uses_fts
        size_mb = os.path.getsize(path) / 1e6
    rows = []
    exponents: Dict[str, float] = {}
    for name in at_small:
        (wall_s, cpu_s), (wall_l, cpu_l) = at_small[name], at_large[name]
        ratio = cpu_l / cpu_s if cpu_s > 0 else 0.0
        exponents[name] = math.log(ratio) / math.log(large / small) if ratio > 0 else 0.0
        rows.append((
            name, f"{cpu_s:.2f}", f"{cpu_l:.2f}", f"{exponents[name]:.2f}",
            f"{wall_s:.2f}", f"{wall_l:.2f}",
        ))
    print_table(
        f"B7 local engine (FTS5: {fts}; ms, median of 9 calls; exponent from CPU time)",
        ["operation", f"cpu {small:,}", f"cpu {large:,}", "growth exponent",
         f"wall {small:,}", f"wall {large:,}"],
        rows,
    )
    print(
        f"store_many throughput (wall / CPU): {fill_small[0]:,.0f} / {fill_small[1]:,.0f} "
        f"items/s up to {small:,}, {fill_large[0]:,.0f} / {fill_large[1]:,.0f} items/s up to "
        f"{large:,}; file {size_mb:.0f} MB at {large:,}; load average {os.getloadavg()[0]:.1f}"
    )
    path_out = write_result(
        "b7_local",
        {
            "sizes": [small, large],
            "fts5": fts,
            "cpu_ms": {str(small): {k: v[1] for k, v in at_small.items()},
                       str(large): {k: v[1] for k, v in at_large.items()}},
            "latency_ms": {str(small): {k: v[0] for k, v in at_small.items()},
                           str(large): {k: v[0] for k, v in at_large.items()}},
            "growth_exponent": exponents,
            "store_many_items_per_s": {str(small): fill_small[0], str(large): fill_large[0]},
            "store_many_items_per_cpu_s": {str(small): fill_small[1], str(large): fill_large[1]},
            "load_average": os.getloadavg()[0],
            "file_mb": size_mb,
        },
    )
    print(f"wrote {path_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""B7: the local engine's speed and size at 10k and 100k items, against raw sqlite3 + FTS5.

Two databases are filled side by side with the same texts, in batches of 100:
the local engine (``store_many``) and a raw baseline, a plain ``sqlite3``
FTS5 table of the texts alone (``porter unicode61``, WAL,
``synchronous=NORMAL`` as the engine uses) written with ``executemany`` in
one transaction per batch. At 10k and at 100k items both are measured, each
operation warmed up first, then run over the same queries at both sizes, the
engine's call and the raw one in turn:

- **store**: CPU per item of the filling batches, and of one single store
  (one item, one transaction) at each size, against the raw text-only table:
  the median of the calls, and the mean of 64 more (each side's slowest 5 %
  left out: WAL checkpoints), which counts the keyword index's bulk writes of
  the rows short single stores leave waiting (``local/pending.py``);
- **file**: the database size at 100k (after a WAL checkpoint), against the
  raw text-only table;
- **fetch keyword** (and, for the record, **recall**): against one raw FTS5 query of the same words
  that reads back what the engine has to return and nothing more: the best
  rows' rowid, score, text and metadata (``SELECT rowid, rank, text, meta …
  MATCH 'w1 OR w2' ORDER BY rank LIMIT k``, k = 10 for fetch, 5 for
  recall's citations). That query runs on a second raw table holding the
  same texts with each item's metadata JSON as an ``UNINDEXED`` column,
  filled outside the timings, so the store and size floors stay those of the
  text alone;
- **fetch hybrid**, **vector**, **list**, **get**: for the record, hybrid
  against an absolute aim;
- each on the *common* queries (two words of the texts' small vocabulary,
  which every second item holds: the hard case) and on *rare* ones (a term
  about one item in 5000 holds), whose cost must not grow with the file.

Aims (quality.md, issue 12): batched store ≤ 3× raw, single store ≤ 2× raw (median and mean),
file ≤ 2.5× raw; keyword fetch p50 at 100k ≤ 1.5× the raw query, on the
common and on the rare queries; hybrid fetch and recall p50 at 100k ≤ 20 ms
of CPU, on both; the growth exponent ``log(t100k / t10k) / log(10)`` of the
rare-term fetch and recall ≤ 0.5. Recall is judged as the hybrid operation
it is (a hybrid ranking, then an answer composed from the best items'
sentences), not against one FTS5 query returning five rows: its ratio to
that query is printed for the record only.
Times are CPU time (``process_time``: far steadier than wall time on a shared
machine); medians of the calls.

Run: ``python bench/b7_local.py [--small]`` (``--small``: 1k and 10k, a quick
look; the aims are checked on the sizes measured).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import print_table, summary, write_result

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
    dumps,
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
_CALLS = 9
#: Single stores in the mean (eight times the rows the keyword index lets wait),
#: and the share of each side's slowest calls left out of it.
_MEAN_OF = 64
_TRIM = 0.05

STORE_MANY_AIM = 3.0
SINGLE_STORE_AIM = 2.0
FILE_AIM = 2.5
QUERY_AIM = 1.5
HYBRID_AIM_MS = 20.0
GROWTH_AIM = 0.5


def _text(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(2, 5)):
        words = rng.choices(_VOCAB, k=rng.randint(6, 14))
        words.append(rng.choice(_RARE))
        rng.shuffle(words)
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


def _item(text: str, n: int) -> StoreItem:
    meta = MemoryMeta(
        namespace=_NODES[n % len(_NODES)],
        workspace=f"ws{n % 10}",
        tags=(f"tag{n % 7}",),
    )
    return StoreItem.document(f"{text} (item {n})", meta)


def _raw_connection(path: str, columns: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({columns}, tokenize='porter unicode61')")
    return conn


class Raw:
    """The baseline: plain FTS5 tables of the same texts, as lean as sqlite3 allows.

    ``conn`` holds the texts alone (the store and size floors); ``query_conn``
    (another file) the same texts with their metadata JSON, written by
    :meth:`keep` outside the timings (the query floor).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = _raw_connection(path, "text")
        self.query_conn = _raw_connection(path + ".query", "text, meta UNINDEXED")

    def store_many(self, texts: Sequence[str]) -> None:
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO t (text) VALUES (?)", [(t,) for t in texts])
        self.conn.execute("COMMIT")

    def store(self, text: str) -> None:
        self.conn.execute("BEGIN")
        self.conn.execute("INSERT INTO t (text) VALUES (?)", (text,))
        self.conn.execute("COMMIT")

    def keep(self, items: Sequence[StoreItem]) -> None:
        """Add ``items`` to the query table (not timed)."""
        self.query_conn.execute("BEGIN")
        self.query_conn.executemany(
            "INSERT INTO t (text, meta) VALUES (?, ?)",
            [(item.render_text(), dumps(item.meta.to_json())) for item in items],
        )
        self.query_conn.execute("COMMIT")

    def query(self, words: str, limit: int) -> List[Tuple[int, float, str, str]]:
        expression = " OR ".join(f'"{w}"' for w in words.split())
        return self.query_conn.execute(
            "SELECT rowid, rank, text, meta FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?",
            (expression, limit),
        ).fetchall()

    def close(self) -> None:
        self.conn.close()
        self.query_conn.close()


def _cpu_ms(call: Callable[[], object]) -> float:
    began = time.process_time()
    call()
    return (time.process_time() - began) * 1000


def _paired(ours: Sequence[Callable[[], object]], raw: Sequence[Callable[[], object]]
            ) -> Tuple[float, float]:
    """Median CPU ms of our calls and of the raw ones, run in turn, after a warm-up."""
    for call in [*ours[:2], *raw[:2]]:
        call()
    mine: List[float] = []
    base: List[float] = []
    for a, b in zip(ours, raw):
        mine.append(_cpu_ms(a))
        base.append(_cpu_ms(b))
    return statistics.median(mine), statistics.median(base)


def _trimmed_means(ours: Sequence[Callable[[], object]], raw: Sequence[Callable[[], object]]
                   ) -> Tuple[float, float]:
    """Mean CPU ms of our calls and of the raw ones, run in turn, each side's slowest
    :data:`_TRIM` left out (a WAL checkpoint, which either side pays now and then,
    costs as much as a hundred stores and would decide a mean of a few dozen)."""
    mine: List[float] = []
    base: List[float] = []
    for a, b in zip(ours, raw):
        mine.append(_cpu_ms(a))
        base.append(_cpu_ms(b))
    keep = len(mine) - int(len(mine) * _TRIM)
    return statistics.mean(sorted(mine)[:keep]), statistics.mean(sorted(base)[:keep])


def _median_ms(calls: Sequence[Callable[[], object]]) -> float:
    for call in calls[:2]:
        call()
    return statistics.median(_cpu_ms(call) for call in calls)


def _fill(engine: LocalEngine, raw: Raw, rng: random.Random, start: int, stop: int
          ) -> Tuple[float, float]:
    """Store items start..stop in both; CPU µs per item of ours and of raw."""
    ours = base = 0.0
    for first in range(start, stop, 100):
        texts = [_text(rng) for _ in range(first, min(first + 100, stop))]
        items = [_item(t, first + k) for k, t in enumerate(texts)]
        raw_texts = [item.render_text() for item in items]
        began = time.process_time()
        engine.store_many(items)
        ours += time.process_time() - began
        began = time.process_time()
        raw.store_many(raw_texts)
        base += time.process_time() - began
        raw.keep(items)
    count = stop - start
    return ours / count * 1e6, base / count * 1e6


def _measure(engine: LocalEngine, raw: Raw, rng: random.Random, size: int
             ) -> Dict[str, Tuple[float, float]]:
    """Each operation's (ours, raw) median CPU ms at this size (raw 0.0: none)."""
    common = [" ".join(rng.sample(_VOCAB, 2)) for _ in range(_CALLS)]
    rare = [rng.choice(_RARE) for _ in range(_CALLS)]
    ids = [h.id for h in engine.list(ListRequest(MetaFilter(), 200)).items]
    flt = MetaFilter(workspace="ws3")
    singles = [_item(_text(rng), size * 10 + n) for n in range(_CALLS + 2)]
    single_texts = [item.render_text() for item in singles]
    figures: Dict[str, Tuple[float, float]] = {}
    figures["store one"] = _paired(
        [lambda i=i: engine.store(i) for i in singles],
        [lambda t=t: raw.store(t) for t in single_texts],
    )
    # A short note stored alone waits for the keyword index, which takes the
    # waiting rows in bulk every few stores (local/pending.py): the mean over
    # many stores counts those bulk writes, and is held to the same aim.
    many = [_item(_text(rng), size * 10 + _CALLS + 2 + n) for n in range(_MEAN_OF)]
    figures["store one, mean"] = _trimmed_means(
        [lambda i=i: engine.store(i) for i in many],
        [lambda t=t: raw.store(t) for t in (item.render_text() for item in many)],
    )
    singles += many
    raw.keep(singles)
    for label, queries in (("common", common), ("rare", rare)):
        figures[f"fetch keyword {label}"] = _paired(
            [lambda q=q: engine.fetch(FetchRequest(q, FetchMode.KEYWORD, 10)) for q in queries],
            [lambda q=q: raw.query(q, 10) for q in queries],
        )
        figures[f"recall {label}"] = _paired(
            [lambda q=q: engine.recall(RecallRequest(f"what about the {q}?", 5))
             for q in queries],
            [lambda q=q: raw.query(q, 5) for q in queries],
        )
        figures[f"fetch hybrid {label}"] = (_median_ms(
            [lambda q=q: engine.fetch(FetchRequest(q, FetchMode.HYBRID, 10)) for q in queries]
        ), 0.0)
        figures[f"fetch vector {label}"] = (_median_ms(
            [lambda q=q: engine.fetch(FetchRequest(q, FetchMode.VECTOR, 10)) for q in queries]
        ), 0.0)
    figures["fetch keyword +filter"] = (_median_ms(
        [lambda q=q: engine.fetch(FetchRequest(q, FetchMode.KEYWORD, 10, flt)) for q in common]
    ), 0.0)
    figures["list 100"] = (_median_ms(
        [lambda: engine.list(ListRequest(flt, 100)) for _ in range(_CALLS)]
    ), 0.0)
    figures["get 20"] = (_median_ms(
        [lambda k=k: engine.get(GetRequest(tuple(ids[k : k + 20]))) for k in range(0, 180, 20)]
    ), 0.0)
    return figures


def _size_mb(path: str) -> float:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return os.path.getsize(path) / 1e6


def _exponent(small: float, large: float, factor: float) -> float:
    return math.log(large / small) / math.log(factor) if small > 0 and large > 0 else 0.0


def main(argv: List[str]) -> int:
    """Fill both, measure, fill more, measure again; check the aims; save the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1k and 10k instead of 10k and 100k")
    args = parser.parse_args(argv)
    small, large = (1_000, 10_000) if args.small else (10_000, 100_000)
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        ours_path = os.path.join(folder, "b7.sqlite3")
        raw = Raw(os.path.join(folder, "raw.sqlite3"))
        with LocalEngine(ours_path, vector_backend="python") as engine:
            fill_small = _fill(engine, raw, rng, 0, small)
            at_small = _measure(engine, raw, rng, small)
            fill_large = _fill(engine, raw, rng, small, large)
            at_large = _measure(engine, raw, rng, large)
            backend = engine.embedder.model_id
        raw.close()
        size_ours, size_raw = _size_mb(ours_path), _size_mb(raw.path)

    rows = []
    for name in at_small:
        (o_s, _r_s), (o_l, r_l) = at_small[name], at_large[name]
        ratio = f"{o_l / r_l:.2f}x" if r_l > 0 else "-"
        rows.append((name, f"{o_s:.2f}", f"{o_l:.2f}", f"{r_l:.2f}" if r_l else "-", ratio,
                     f"{_exponent(o_s, o_l, large / small):.2f}"))  # fmt: skip
    print_table(
        f"B7 local engine vs raw sqlite3+FTS5 (CPU ms, median of {_CALLS}; {backend})",
        ["operation", f"ours {small:,}", f"ours {large:,}", f"raw {large:,}",
         f"ours/raw {large:,}", "growth exponent"],
        rows,
    )  # fmt: skip
    batch_ratio = (fill_small[0] + fill_large[0]) / (fill_small[1] + fill_large[1])
    print(f"store_many: ours {fill_small[0]:.1f} / {fill_large[0]:.1f} µs per item, raw "
          f"{fill_small[1]:.1f} / {fill_large[1]:.1f} (to {small:,} / to {large:,}): "
          f"{batch_ratio:.2f}x; file at {large:,}: ours {size_ours:.1f} MB, raw "
          f"{size_raw:.1f} MB ({size_ours / size_raw:.2f}x); load {os.getloadavg()[0]:.1f}")

    checks = {
        "store_many / raw": (batch_ratio, STORE_MANY_AIM),
        "store one / raw": (at_large["store one"][0] / at_large["store one"][1],
                            SINGLE_STORE_AIM),
        "store one, mean / raw": (at_large["store one, mean"][0]
                                  / at_large["store one, mean"][1], SINGLE_STORE_AIM),
        "file / raw": (size_ours / size_raw, FILE_AIM),
        **{f"fetch keyword {kind} / raw": (at_large[f"fetch keyword {kind}"][0]
                                             / at_large[f"fetch keyword {kind}"][1], QUERY_AIM)
           for kind in ("common", "rare")},
        **{f"{name} {kind} ms": (at_large[f"{name} {kind}"][0], HYBRID_AIM_MS)
           for name in ("fetch hybrid", "recall") for kind in ("common", "rare")},
        "fetch hybrid rare exponent": (_exponent(at_small["fetch hybrid rare"][0],
                                                 at_large["fetch hybrid rare"][0],
                                                 large / small), GROWTH_AIM),
        "fetch keyword rare exponent": (_exponent(at_small["fetch keyword rare"][0],
                                                  at_large["fetch keyword rare"][0],
                                                  large / small), GROWTH_AIM),
        "recall rare exponent": (_exponent(at_small["recall rare"][0],
                                           at_large["recall rare"][0], large / small),
                                 GROWTH_AIM),
    }  # fmt: skip
    misses = [f"{k} {v:.2f} > {aim}" for k, (v, aim) in checks.items() if v > aim]
    for name, (value, aim) in checks.items():
        print(f"  {'ok  ' if value <= aim else 'MISS'} {name}: {value:.2f} (aim <= {aim})")
    recall_over_raw = {kind: at_large[f"recall {kind}"][0] / at_large[f"recall {kind}"][1]
                       for kind in ("common", "rare")}  # fmt: skip
    print("  for the record: recall / the raw query "
          + ", ".join(f"{kind} {v:.2f}x" for kind, v in recall_over_raw.items()))
    figure = ", ".join(f"{k} {v:.2f}" for k, (v, _a) in checks.items())
    row = summary(figure, "store <= 3x/2x raw, file <= 2.5x, keyword (common, rare) "
                  "<= 1.5x raw, "
                  "hybrid and recall <= 20 ms, rare growth <= 0.5", "miss" if misses else "pass",
                  detail="; ".join(misses) if misses else None)  # fmt: skip
    path_out = write_result("b7_local", {
        "sizes": [small, large],
        "embedder": backend,
        "cpu_ms": {str(small): {k: v[0] for k, v in at_small.items()},
                   str(large): {k: v[0] for k, v in at_large.items()}},
        "raw_cpu_ms": {str(small): {k: v[1] for k, v in at_small.items() if v[1]},
                       str(large): {k: v[1] for k, v in at_large.items() if v[1]}},
        "store_many_us_per_item": {"ours": [fill_small[0], fill_large[0]],
                                   "raw": [fill_small[1], fill_large[1]]},
        "file_mb": {"ours": size_ours, "raw": size_raw},
        "checks": {k: {"value": v, "aim": a} for k, (v, a) in checks.items()},
        "recall_over_raw": recall_over_raw,
        "load_average": os.getloadavg()[0],
        "summary": row,
    })  # fmt: skip
    print(f"wrote {path_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

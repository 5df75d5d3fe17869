"""Run every benchmark (B1–B10) with one command, print one table, write one JSON file.

    python -m bench [--quick] [--only B1,B4] [--allow-miss]
    python bench/run.py [the same options]

Each benchmark is its own module (``bench/b<N>_<name>.py``) and runs in its own
interpreter, one after another, so one benchmark's memory, threads and imports
never colour another's figures (B4 measures peak RSS, B6 counts threads). The
modules start their servers in separate processes themselves. Each writes its
own ``bench/results/<module>.json``; this runner reads those back, prints one
table (id, what, figure, aim, verdict) and writes ``bench/results/all.json``
(the table plus every benchmark's own JSON) and one line of
``bench/results/history.jsonl`` per run.

Verdicts: ``pass`` (the aim was reached), ``miss`` (it was not: the JSON says by
how much), ``report`` (no aim: the figure is for the record), ``skipped`` (a
prerequisite is missing here, with the reason: never counted as a pass) and
``error`` (the benchmark failed or wrote no result). The exit status is 1 when
any benchmark errored or missed its aim (spec decision 20), else 0;
``--allow-miss`` (for exploratory runs) exits 0 on a miss, still 1 on an error.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import RESULTS, SKIP_EXIT, print_table, python  # noqa: E402

Summary = Dict[str, str]


@dataclass(frozen=True)
class Bench:
    """One benchmark: its id, its module (``bench/<module>.py``) and what it measures."""

    id: str
    module: str
    what: str
    aim: str
    quick_args: Sequence[str] = ("--quick",)

    @property
    def path(self) -> Path:
        return HERE / f"{self.module}.py"

    @property
    def result_path(self) -> Path:
        return RESULTS / f"{self.module}.json"


BENCHMARKS = (
    Bench("B1", "b1_transport", "client CPU per request: transport vs bare urllib3",
          "<= 1.15x bare urllib3"),
    Bench("B2", "b2_sdk", "client CPU per op: CortexEngine vs the cortexdb SDK",
          "write <= 0.5x, page <= 0.6x the SDK, every round"),
    Bench("B3", "b3_requests", "requests per store_many / fetch vs the wire minimum",
          "= the wire minimum"),
    Bench("B4", "b4_memory", "peak RSS while a server streams 1 GiB, no Content-Length",
          "<= 64 MiB cap + baseline, no slack"),
    Bench("B5", "b5_decode", "decode throughput of listing pages, v3 and v2",
          ">= 50,000 events/s"),
    Bench("B6", "b6_threads", "throughput of 1/4/16 threads sharing one engine",
          ">= 0.6x linear at 16"),
    Bench("B7", "b7_local", "local engine at 10k/100k items vs raw sqlite3+FTS5",
          "store <= 3x/2x raw, file <= 2.5x, keyword/recall <= 1.5x, hybrid <= 20 ms",
          quick_args=("--small",)),
    Bench("B8", "b8_retrieval", "local retrieval quality (LoCoMo format) vs raw FTS5",
          "hybrid@10 >= FTS5 (+0.10 semantic), >= its parts; answers >= 0.5"),
    Bench("B9", "b9_store_scale", "one default store() at 100/1000/10000 events in its scope",
          "growth exponent <= 0.05: requests, bytes, CPU"),
    Bench("B10", "b10_store_memory", "peak memory of storing a 15 MiB document, every engine",
          "<= 4x the document's UTF-8 size"),
)  # fmt: skip


# -- summaries for benchmarks whose JSON carries no "summary" row -----------------------


def _b1(doc: Dict[str, Any]) -> Summary:
    ratios = doc["ratio"]
    aim = float(doc.get("aim_ratio", 1.15))
    figure = ", ".join(f"{verb} {ratio:.3f}x" for verb, ratio in ratios.items())
    verdict = "pass" if all(r <= aim for r in ratios.values()) else "miss"
    return {"figure": figure, "aim": f"<= {aim}x bare urllib3", "verdict": verdict}


ADAPTERS: Dict[str, Callable[[Dict[str, Any]], Summary]] = {
    "b1_transport": _b1,
}


# -- running ------------------------------------------------------------------------------


def _read_result(bench: Bench, started: float) -> Optional[Dict[str, Any]]:
    """This run's JSON of ``bench``, or None (missing, stale from an earlier run, unreadable)."""
    try:
        if bench.result_path.stat().st_mtime < started:
            return None
        document = json.loads(bench.result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _summarize(bench: Bench, status: int, doc: Optional[Dict[str, Any]]) -> Summary:
    if status == SKIP_EXIT or (doc is not None and "skipped" in doc):
        reason = str(doc.get("skipped")) if doc is not None else "prerequisite missing"
        return {"figure": reason, "aim": "", "verdict": "skipped"}
    if status != 0:
        return {"figure": f"exit status {status}", "aim": "", "verdict": "error"}
    if doc is None:
        return {"figure": "wrote no result", "aim": "", "verdict": "error"}
    row = doc.get("summary")
    if isinstance(row, dict) and {"figure", "aim", "verdict"} <= row.keys():
        return {key: str(value) for key, value in row.items()}
    adapter = ADAPTERS.get(bench.module)
    if adapter is None:
        return {"figure": "no summary row in its JSON", "aim": "", "verdict": "error"}
    try:
        return adapter(doc)
    except (KeyError, TypeError, ValueError) as exc:
        return {"figure": f"unreadable result ({exc!r})", "aim": "", "verdict": "error"}


def run_one(bench: Bench, *, quick: bool, timeout: float) -> Dict[str, Any]:
    """Run one benchmark in its own interpreter; return its table row and JSON."""
    print(f"\n=== {bench.id} {bench.module} ===", flush=True)
    if not bench.path.exists():
        row = {"figure": f"bench/{bench.module}.py is not written yet", "aim": bench.aim,
               "verdict": "skipped"}  # fmt: skip
        print(f"{bench.id}: skipped: {row['figure']}")
        return {"id": bench.id, "what": bench.what, **row, "seconds": 0.0, "result": None}
    argv = [python(), str(bench.path), *(bench.quick_args if quick else ())]
    started = time.time()
    clock = time.monotonic()
    try:
        status = subprocess.run(argv, cwd=str(HERE.parent), timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        status = -1
        print(f"{bench.id}: stopped after {timeout:.0f} s")
    seconds = time.monotonic() - clock
    doc = _read_result(bench, started)
    row = _summarize(bench, status, doc)
    if status == -1:
        row = {"figure": f"timed out after {timeout:.0f} s", "aim": "", "verdict": "error"}
    row["aim"] = row["aim"] or bench.aim
    return {"id": bench.id, "what": bench.what, **row, "seconds": round(seconds, 1),
            "result": doc}  # fmt: skip


def _selected(only: Optional[str]) -> List[Bench]:
    if not only:
        return list(BENCHMARKS)
    wanted = [part.strip().upper() for part in only.split(",") if part.strip()]
    known = {bench.id: bench for bench in BENCHMARKS}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[name] for name in wanted]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="Run the benchmarks B1-B10 and print one table."
    )
    parser.add_argument("--quick", action="store_true", help="short runs (noisier figures)")
    parser.add_argument("--only", metavar="IDS", help="comma-separated ids, e.g. B1,B4")
    parser.add_argument(
        "--timeout", type=float, default=1800.0, metavar="S", help="per benchmark (default 1800)"
    )
    parser.add_argument(
        "--allow-miss",
        action="store_true",
        help="exit 0 when a figure misses its aim (exploratory runs); errors still exit 1",
    )
    args = parser.parse_args(argv)
    chosen = _selected(args.only)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows = [run_one(bench, quick=args.quick, timeout=args.timeout) for bench in chosen]

    print()
    print_table(
        f"cortex_memory benchmarks ({'quick' if args.quick else 'full'} run, {when})",
        ("id", "what", "figure", "aim", "verdict", "s"),
        [(r["id"], r["what"], r["figure"], r["aim"], r["verdict"], r["seconds"]) for r in rows],
    )
    for row in rows:
        if row.get("detail"):
            print(f"  {row['id']}: {row['detail']}")
    command = "python -m bench" + (" --quick" if args.quick else "")
    command += f" --only {args.only}" if args.only else ""
    command += " --allow-miss" if args.allow_miss else ""
    combined = {
        "when": when,
        "command": command,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "rows": [{k: v for k, v in r.items() if k != "result"} for r in rows],
        "results": {r["id"]: r["result"] for r in rows},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "all.json"
    path.write_text(json.dumps(combined, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    with (RESULTS / "history.jsonl").open("a", encoding="utf-8") as history:
        history.write(json.dumps({k: v for k, v in combined.items() if k != "results"}) + "\n")
    print(f"wrote {path}")
    verdicts = {r["verdict"] for r in rows}
    if "error" in verdicts or ("miss" in verdicts and not args.allow_miss):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

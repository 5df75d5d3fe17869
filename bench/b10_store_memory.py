"""B10: peak memory of storing one long document, as a multiple of the document's size.

A GUI that saves a long note, or a script that imports a book, must not need many
times the document's size in memory. Every engine stores one document just under
the 16 MiB item limit (``MAX_ITEM_BYTES``), with the default wait
(``WaitFor.VISIBLE``), and the figure is

    (peak resident set during ``store`` - resident set just before it) / UTF-8 bytes of the text

Cases: the local engine (a fresh file, FTS5, the default n-gram embedder), CortexDB
Direct and TinyHumans hosted (``cortex_memory.testing`` doubles, each in its own
process, the hosted rate window off), each with three texts of the same UTF-8 size
(and, as ``english:again``, the English document stored a second time: a replay,
as a folder sync re-storing an unchanged file does):
``english`` (ASCII Markdown: headings, paragraphs, quotes), ``european`` (accented
Latin-1 text: a Python ``str`` of one byte per character, two in UTF-8) and
``chinese`` (ideographs drawn with Zipf weights from 3 500 distinct ones, about what
a newspaper uses, in lines ending in ``。``: two bytes per character in memory, three
in UTF-8).

Method. Each case runs in a **fresh process** (with a document of its own each run,
the doubles outliving the runs): it builds the document, opens the
engine, stores a small note first (imports, schema, connections, the actor lookup),
collects garbage, resets the kernel's peak counter (``echo 5 >
/proc/self/clear_refs``), reads ``VmRSS``, stores the document and reads ``VmHWM``.
SQLite's own allocations count (``tracemalloc`` would miss them). The process runs
with glibc's mmap threshold fixed at 64 KiB (``MALLOC_MMAP_THRESHOLD_``): every large
block is then mapped on its own and returned when freed, so the resident set follows
what is alive; with the default (dynamic) threshold, memory freed while the document
was built is reused without showing, and the figure reads low. Linux only (the peak
counter reset needs ``/proc``); elsewhere the benchmark is skipped, with the reason.

Floors, side by side (``report``): what a plain program pays for the same document:
``sqlite3 + FTS5`` (the row and its external-content FTS5 entry inserted with bound
``str`` values in one transaction, the way B7's raw floor writes) and ``json POST``
(the text in a JSON body, encoded, sent once with urllib3 to the Direct double).

Aim: at most 4x on every engine and text (the worst of the runs counts).

Run: ``python bench/b10_store_memory.py`` (three runs of each case; ``--quick``: one;
``--mib N``: another document size).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import double_argv, print_table, python, serve, skip, summary, write_result

NAME = "b10_store_memory"
AIM = 4.0
MIB = 1 << 20
ENGINES = ("local", "direct", "hosted")
TEXTS = ("english", "european", "chinese")
FLOORS = ("sqlite3 + FTS5", "json POST")
TOKEN = "tiny_live_test"  # the doubles' test bearer, not a secret
_CLEAR_REFS = "/proc/self/clear_refs"

def _words(prose: str) -> List[str]:
    return prose.split()


_ENGLISH = _words(
    "the memory engine stores every note and recall finds what matters while the team "
    'agreed "keep it simple" on the budget, the launch timeline, the quarterly review '
    "and the customer follow-up after planning"
)
_EUROPEAN = _words(
    "l'équipe a validé le budget élevé après la réunion où Müller présenta ökonomische "
    "Überlegungen, café crème déjà prêt, señor Núñez añadió más detalles à côté"
)
# Chinese is drawn a character at a time, as the language is written: 3 500 distinct
# ideographs (about what a newspaper uses) with Zipf weights, so the keyword index
# meets a realistic number of distinct terms and gaps between their positions (a few
# repeated words would make its position lists unrealistically small).
_CHINESE_CHARS = 3500


def _chinese_line(rnd: random.Random, pool: List[str], weights: List[float]) -> str:
    return "".join(rnd.choices(pool, weights, k=24))


def document(kind: str, size: int, seed: int = 10) -> str:
    """Markdown of ``size`` UTF-8 bytes (cut at a character): sections of paragraphs."""
    rnd = random.Random(seed)
    words = {"english": _ENGLISH, "european": _EUROPEAN}.get(kind, [])
    pool = [chr(0x4E00 + i) for i in random.Random(0).sample(range(0x5000), _CHINESE_CHARS)]
    weights = [1.0 / (rank + 1) for rank in range(len(pool))]
    parts: List[str] = []
    used = 0
    paragraph = 0
    while used < size:
        if paragraph % 20 == 0:
            part = f"## Section {paragraph // 20}\n\n"
        else:
            if kind == "chinese":
                lines = [_chinese_line(rnd, pool, weights) for _ in range(5)]
            else:
                lines = [" ".join(rnd.choice(words) for _ in range(12)) for _ in range(5)]
            part = ("。\n" if kind == "chinese" else ".\n").join(lines) + "\n\n"
        parts.append(part)
        used += len(part.encode("utf-8"))
        paragraph += 1
    data = "".join(parts).encode("utf-8")[:size]
    return data.decode("utf-8", "ignore")


# -- one case, in its own process ---------------------------------------------------------


def _status(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        found = re.search(rf"^{field}:\s+(\d+) kB", status.read(), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"/proc/self/status has no {field}")
    return int(found.group(1)) * 1024


def _measure(store: Any, size: int) -> Dict[str, Any]:
    gc.collect()
    with open(_CLEAR_REFS, "w", encoding="ascii") as refs:
        refs.write("5")  # VmHWM := VmRSS
    before = _status("VmRSS")
    started = time.perf_counter()
    store()
    seconds = time.perf_counter() - started
    peak = _status("VmHWM")
    return {
        "bytes": size,
        "rss_before": before,
        "peak_extra": peak - before,
        "ratio": (peak - before) / size,
        "seconds": round(seconds, 3),
    }


def _engine(name: str, url: Optional[str], folder: str) -> Any:
    if name == "local":
        from cortex_memory import LocalEngine

        return LocalEngine(os.path.join(folder, "memory.sqlite3"))
    from cortex_memory.cortex import CortexEngine, EngineCredential

    assert url is not None
    if name == "direct":
        return CortexEngine.direct(url, EngineCredential.static(TOKEN))
    return CortexEngine.tinyhumans(url, EngineCredential.static(TOKEN))


def _floor_sqlite(text: str, folder: str) -> Any:
    import sqlite3

    conn = sqlite3.connect(os.path.join(folder, "raw.sqlite3"), isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    conn.execute(
        "CREATE VIRTUAL TABLE f USING fts5(text, content='t', content_rowid='seq', "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )

    def write(seq: int, value: str) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (seq, text) VALUES (?, ?)", (seq, value))
        conn.execute("INSERT INTO f (rowid, text) VALUES (?, ?)", (seq, value))
        conn.execute("COMMIT")

    write(1, "a small note first")
    return lambda: write(2, text)


def _floor_post(text: str, url: Optional[str]) -> Any:
    import urllib3

    assert url is not None
    http = urllib3.PoolManager()
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    def post(value: str) -> None:
        body = json.dumps({"scope": "app:bench", "content": {"text": value}}).encode("utf-8")
        http.request("POST", f"{url}/v1/experience", body=body, headers=headers, retries=False)

    post("a small note first")
    return lambda: post(text)


def run_case(case: str, size: int, url: Optional[str], seed: int = 10) -> Dict[str, Any]:
    """Measure one case in this process: ``engine:text``, ``engine:text:again`` (the
    second store of the same document: a replay) or ``floor:<name>:text``."""
    parts = case.split(":")
    text = document(parts[2] if parts[0] == "floor" else parts[1], size, seed)
    size = len(text.encode("utf-8"))
    with tempfile.TemporaryDirectory() as folder:
        if parts[0] == "floor":
            store = (
                _floor_sqlite(text, folder) if parts[1] == FLOORS[0] else _floor_post(text, url)
            )
            return _measure(store, size)
        from cortex_memory import StoreItem

        engine = _engine(parts[0], url, folder)
        try:
            engine.store(StoreItem.document("A small note first, to open everything."))
            item = StoreItem.document(text)
            if parts[-1] == "again":
                engine.store(item)
                item = StoreItem.document(text)  # a new object: no fingerprint cached
            return _measure(lambda: engine.store(item), size)
        finally:
            engine.close()


# -- the runner ---------------------------------------------------------------------------


def _limit() -> int:
    from cortex_memory.contract import MAX_ITEM_BYTES

    return MAX_ITEM_BYTES


def _child(case: str, size: int, url: Optional[str], seed: int) -> Dict[str, Any]:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(64 * 1024))
    argv = [python(), __file__, "--case", case, "--size", str(size), "--seed", str(seed)]
    if url is not None:
        argv += ["--url", url]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"case {case} failed:\n{done.stderr[-2000:]}")
    result: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run of every case")
    parser.add_argument("--runs", type=int, default=None, help="runs of every case (3)")
    parser.add_argument(
        "--mib", type=float, default=None, help="document size in MiB (default: the limit less 1)"
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(args.case, args.size, args.url, args.seed)))
        return 0
    if not sys.platform.startswith("linux") or not os.access(_CLEAR_REFS, os.W_OK):
        return skip(NAME, "needs Linux /proc/self/clear_refs to reset the peak resident set")

    size = int(args.mib * MIB) if args.mib else _limit() - MIB
    runs = args.runs or (1 if args.quick else 3)
    results: Dict[str, List[Dict[str, Any]]] = {}
    with serve(double_argv("direct")) as direct, serve(
        double_argv("hosted", rate_limit_requests=None)
    ) as hosted:
        urls = {"local": None, "direct": direct, "hosted": hosted}
        cases = [(f"{engine}:{text}", urls[engine]) for engine in ENGINES for text in TEXTS]
        cases += [(f"{engine}:{TEXTS[0]}:again", urls[engine]) for engine in ENGINES]
        cases += [(f"floor:{FLOORS[0]}:{text}", None) for text in TEXTS]
        cases += [(f"floor:{FLOORS[1]}:{text}", direct) for text in TEXTS]
        for run in range(runs):
            for case, url in cases:
                # A new document every run: the doubles outlive the runs, and the
                # same document again would be a replay, not a first store.
                results.setdefault(case, []).append(_child(case, size, url, 10 + run))
                last = results[case][-1]
                print(f"{case:32s} {last['ratio']:.2f}x ({last['seconds']:.1f} s)", flush=True)

    worst = {case: max(run["ratio"] for run in runs_) for case, runs_ in results.items()}
    rows = []
    for case in results:
        runs_ = results[case]
        rows.append([
            case, f"{runs_[0]['bytes'] / MIB:.1f} MiB",
            " / ".join(f"{run['ratio']:.2f}x" for run in runs_),
            f"{worst[case]:.2f}x", f"{max(run['seconds'] for run in runs_):.1f} s",
            "-" if case.startswith("floor") else ("pass" if worst[case] <= AIM else "miss"),
        ])  # fmt: skip
    print()
    print_table(
        "B10: peak memory of one store / the document's UTF-8 size",
        ["case", "document", "runs", "worst", "time", "verdict"],
        rows,
    )
    measured = {case: value for case, value in worst.items() if not case.startswith("floor")}
    by_engine = {
        engine: max(value for case, value in measured.items() if case.startswith(engine + ":"))
        for engine in ENGINES
    }
    verdict = "pass" if all(value <= AIM for value in measured.values()) else "miss"
    figure = ", ".join(f"{engine} {value:.2f}x" for engine, value in by_engine.items())
    floors = ", ".join(
        f"{floor} {max(worst[f'floor:{floor}:{text}'] for text in TEXTS):.2f}x"
        for floor in FLOORS
    )
    write_result(NAME, {
        "size_bytes": size, "runs": runs, "aim": AIM, "results": results, "worst": worst,
        "summary": summary(f"worst of {runs} run(s): {figure} (floors: {floors})",
                           f"<= {AIM:g}x the document on every engine", verdict),
    })  # fmt: skip
    print(f"\nB10 {verdict}: {figure}; floors {floors}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

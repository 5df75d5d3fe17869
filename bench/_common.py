"""A tiny shared harness for the benchmarks in ``bench/``.

Every figure is a ratio measured side by side in one run, so machine speed
cancels out. The helpers:

* :func:`serve` starts a server in **its own process** (so its CPU is not the
  client's) from a command that prints ``READY <url>`` on its first line, or
  the ``<wire> double on <url>`` line of ``python -m cortex_memory.testing
  serve`` (:func:`double_argv` builds that command);
* :func:`cpu_per_op` runs an operation ``n`` times and returns the client's CPU
  seconds per operation (``time.process_time``: every thread of this process,
  helper threads included, so nothing the client spends is hidden);
* :func:`measure` interleaves several cases over a few rounds and keeps each
  case's median, which damps the noise of a shared machine;
* :func:`print_table` prints a plain table; :func:`write_result` writes
  ``bench/results/<name>.json`` with the figures and the environment;
* :func:`summary` is the one-row verdict ``bench/run.py`` prints for a
  benchmark (stored under ``"summary"`` in its JSON), and :func:`skip` records
  a benchmark that cannot run here and returns :data:`SKIP_EXIT`.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

RESULTS = Path(__file__).resolve().parent / "results"

SKIP_EXIT = 77
"""Exit status of a benchmark that cannot run on this machine (it wrote why)."""

_DOUBLE_LINE = " double on "


@contextlib.contextmanager
def serve(
    argv: Sequence[str],
    *,
    ready_timeout: float = 30.0,
    started: Optional[List[subprocess.Popen[str]]] = None,
) -> Iterator[str]:
    """Run ``argv`` as a server process; yield the URL it announces.

    The first line names the URL: ``READY <url>``, or ``<wire> double on <url>``
    as printed by ``python -m cortex_memory.testing serve``. When ``started``
    is given, the process is appended to it (to watch the server's CPU).
    """
    proc = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    if started is not None:
        started.append(proc)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + ready_timeout
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("READY ") or _DOUBLE_LINE in line or not line:
                break
        if line.startswith("READY "):
            yield line.split(" ", 1)[1].strip()
        elif _DOUBLE_LINE in line:
            yield line.split(_DOUBLE_LINE, 1)[1].strip()
        else:
            raise RuntimeError(f"server did not start: {argv!r}")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def double_argv(wire: str = "direct", **knobs: Any) -> List[str]:
    """The command serving one loopback double on a free port with ``knobs`` set."""
    argv = [python(), "-m", "cortex_memory.testing", "serve", "--wire", wire, "--port", "0"]
    for name, value in knobs.items():
        argv += ["--knob", f"{name}={json.dumps(value)}"]
    return argv


def cpu_per_op(operation: Callable[[], object], n: int) -> float:
    """Client CPU seconds per call of ``operation`` over ``n`` calls."""
    start = time.process_time()
    for _ in range(n):
        operation()
    return (time.process_time() - start) / n


def measure(
    cases: Mapping[str, Callable[[], object]],
    *,
    n: int = 1000,
    rounds: int = 7,
    warmup: int = 200,
    block: Optional[int] = None,
) -> Dict[str, Dict[str, Any]]:
    """Median CPU per op of each case, the cases interleaved round by round.

    Each case's ``samples_s`` keeps one figure per round, in round order, so
    two cases can also be compared round by round (see :func:`paired_ratio`).
    With ``block``, the cases also take turns inside a round, ``block``
    operations at a time, until each has run ``n``: cases compared in the
    same round then see the same load over the same fraction of a second,
    not one after the other, which is what keeps a per-round ratio steady on
    a shared machine. Without it each case runs its ``n`` in one go.
    """
    for operation in cases.values():
        for _ in range(warmup):
            operation()
    step = n if block is None else max(1, min(block, n))
    samples: Dict[str, List[float]] = {name: [] for name in cases}
    clock = time.process_time
    for _ in range(rounds):
        spent = dict.fromkeys(cases, 0.0)
        done = 0
        while done < n:
            count = min(step, n - done)
            for name, operation in cases.items():
                start = clock()
                for _ in range(count):
                    operation()
                spent[name] += clock() - start
            done += count
        for name in cases:
            samples[name].append(spent[name] / n)
    return {
        name: {"median_s": statistics.median(values), "samples_s": values}
        for name, values in samples.items()
    }


def round_ratios(results: Mapping[str, Mapping[str, Any]], ours: str, floor: str) -> List[float]:
    """``ours / floor`` in each round (both measured in that round), in round order."""
    pairs = zip(results[ours]["samples_s"], results[floor]["samples_s"])
    return [o / f for o, f in pairs]


def paired_ratio(results: Mapping[str, Mapping[str, Any]], ours: str, floor: str) -> float:
    """Median over rounds of ``ours / floor`` measured in the same round.

    On a shared, noisy machine two figures taken moments apart see the same
    load, so their ratio is steadier than the ratio of two medians.
    """
    return statistics.median(round_ratios(results, ours, floor))


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print a plain, aligned table."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    print(title)
    for index, row in enumerate(cells):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
        if index == 0:
            print("  ".join("-" * width for width in widths))


def write_result(name: str, payload: Mapping[str, Any]) -> Path:
    """Write ``bench/results/<name>.json`` (figures plus the environment) and return its path."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    document = {
        "benchmark": name,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        **payload,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def summary(figure: str, aim: str, verdict: str, *, detail: Optional[str] = None) -> Dict[str, str]:
    """The row ``bench/run.py`` prints: the figure, the aim and the verdict.

    ``verdict`` is ``"pass"``, ``"miss"`` (the aim was not reached) or
    ``"report"`` (the benchmark has no aim). Store it as ``"summary"`` in the
    payload given to :func:`write_result`.
    """
    if verdict not in ("pass", "miss", "report"):
        raise ValueError(f"unknown verdict {verdict!r}")
    row = {"figure": figure, "aim": aim, "verdict": verdict}
    if detail:
        row["detail"] = detail
    return row


def skip(name: str, reason: str) -> int:
    """Record that benchmark ``name`` cannot run here (and why); return :data:`SKIP_EXIT`."""
    write_result(name, {"skipped": reason})
    print(f"{name}: skipped: {reason}")
    return SKIP_EXIT


def python() -> str:
    """The interpreter running the benchmark (servers use the same one)."""
    return sys.executable

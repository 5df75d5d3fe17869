"""Several processes creating one new file at once all succeed (real processes).

Before the set-up ran in the transaction that checked the file, and before the
WAL switch waited for the lock, 5-12 % of first stores in such a race failed
within milliseconds ("stayed locked", or "not a cortex_memory database" about a
file another racer had just made). Each round here starts N processes on a new
file at the same moment (they poll for a go-file) and asks every one to write.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

CHILD = str(Path(__file__).with_name("_race_child.py"))
KINDS = ("engine", "store", "sidecar", "ledger")
# What each kind's file holds after the race: one row per racer.
COUNT = {
    "engine": "SELECT count(*) FROM items",
    "store": "SELECT count(*) FROM memories",
    "sidecar": "SELECT count(*) FROM memory_usage",
    "ledger": "SELECT count(*) FROM sessions",
}


def race(kind: str, folder: Path, processes: int, rounds: int) -> List[str]:
    """Run the rounds; return every failure line (empty when all writes succeeded)."""
    children = [
        subprocess.Popen(
            [sys.executable, CHILD, kind, str(folder), str(rounds), f"p{k}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for k in range(processes)
    ]  # fmt: skip
    failures: List[str] = []
    try:
        for r in range(rounds):
            for child in children:
                assert child.stdout is not None
                line = child.stdout.readline().strip()
                assert line == f"ready {r}", (line, child.stderr.read() if child.stderr else "")
            (folder / f"go-{r}").touch()
            for child in children:
                assert child.stdout is not None
                line = child.stdout.readline().strip()
                if line != f"ok {r}":
                    failures.append(line)
        for child in children:
            _out, err = child.communicate(timeout=120)
            assert child.returncode == 0, err
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()
    if failures:
        return failures
    for r in range(rounds):
        conn = sqlite3.connect(folder / f"{r}.sqlite3")
        try:
            held = conn.execute(COUNT[kind]).fetchone()[0]
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        finally:
            conn.close()
        assert held == processes, (kind, r, held)
        assert mode == "wal"
    return failures


@pytest.mark.parametrize("kind", KINDS)
def test_processes_racing_on_a_new_file_all_succeed(kind: str, tmp_path: Path) -> None:
    assert race(kind, tmp_path, processes=6, rounds=3) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_eight_processes_racing_round_after_round(kind: str, tmp_path: Path) -> None:
    assert race(kind, tmp_path, processes=8, rounds=15) == []


def test_the_race_reports_failures(tmp_path: Path) -> None:
    # The harness itself: a write that fails is reported, not hidden.
    (tmp_path / "0.sqlite3").write_bytes(b"not a database" * 10)
    failures = race("ledger", tmp_path, processes=2, rounds=1)
    assert len(failures) == 2
    assert all(line.startswith("fail 0 ConfigError:") for line in failures)

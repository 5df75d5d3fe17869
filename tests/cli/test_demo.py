"""`cortex-memory demo`, in-process and as real processes (`python -m`, the console script)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from cortex_memory.cli._demo import DEMO_TAG, demo_items

Runner = Callable[..., Any]  # the `cli` fixture of conftest.py

SECTIONS = ["stored (3 items)", f"listed (tag {DEMO_TAG}: 3 items)", "fetched ", "recalled ",
            "forgotten"]
ID = re.compile(r"\b[0-9a-f]{40}\b")


def _sections(out: str) -> List[str]:
    return [line for line in out.splitlines() if line and not line.startswith((" ", "next:"))]


def _check_text(out: str) -> None:
    heads = _sections(out)
    assert heads[0].startswith("cortex-memory demo: Local (SQLite) engine, ")
    for expected, got in zip(SECTIONS, heads[1:]):
        assert got.startswith(expected), (expected, got)
    document, conversation, learning = (item.fingerprint() for item in demo_items())
    # Real ids: the stored section shows each item's fingerprint.
    stored = out.split("stored (3 items)\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[:3] for line in stored] == [
        ["created", "document", document],
        ["created", "conversation", conversation],
        ["created", "learning", learning],
    ]
    # Every cited id is one of the stored ids.
    recalled = out.split("recalled ", 1)[1].split("\n\n", 1)[0]
    assert "answer: " in recalled
    cited = re.findall(r"\[\d+\] ([0-9a-f]{40})", recalled)
    assert cited
    assert set(cited) <= {document, conversation, learning}
    forgotten = out.split("forgotten\n", 1)[1]
    assert f"forgot 1 item: {conversation}" in forgotten
    assert "2 items left: " in forgotten


def test_demo_in_process(cli: Runner, env: Dict[str, str], tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    result = cli("demo")
    assert result.status == 0, result.err
    assert result.err == ""
    _check_text(result.out)
    assert "a temporary database (deleted afterwards)" in result.out
    # The temporary database is gone, and the per-user folder was never touched.
    assert list(scratch.iterdir()) == []
    assert not Path(env["CORTEX_MEMORY_HOME"]).exists()


def test_demo_twice_shows_created_both_times(cli: Runner) -> None:
    for _ in range(2):
        result = cli("demo")
        assert result.status == 0
        assert "replayed" not in result.out


def test_demo_json(cli: Runner) -> None:
    result = cli("demo", "--json")
    assert result.status == 0, result.err
    data = json.loads(result.out)
    assert list(data) == ["engine", "database", "stored", "listed", "fetched", "recalled",
                          "forgotten"]
    assert data["engine"]["id"] == "local"
    assert data["database"] is None
    ids = [item.fingerprint() for item in demo_items()]
    assert [s["id"] for s in data["stored"]] == ids
    assert [s["replayed"] for s in data["stored"]] == [False] * 3
    assert {hit["id"] for hit in data["listed"]["items"]} == set(ids)
    assert data["fetched"]["page"]["hits"]
    citations = data["recalled"]["answer"]["citations"]
    assert citations
    assert {c["id"] for c in citations} <= set(ids)
    assert data["forgotten"]["report"] == {"forgotten": 1}
    assert sorted(data["forgotten"]["remaining"]) == sorted([ids[0], ids[2]])


def test_demo_with_path_keeps_the_database(cli: Runner, tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite3"
    first = cli("demo", "--path", str(db))
    assert first.status == 0
    assert f"database {db} (kept)" in first.out
    assert db.exists()
    second = json.loads(cli("demo", "--path", str(db), "--json").out)
    # Same content, same id: the document and the learning are replays; the
    # conversation was forgotten by the first run, so it is created again.
    assert [s["replayed"] for s in second["stored"]] == [True, False, True]
    assert second["database"] == str(db)


def test_demo_touches_only_its_own_items(cli: Runner, tmp_path: Path) -> None:
    db = str(tmp_path / "mine.sqlite3")
    mine = json.loads(cli("store", "my own note", "--path", db, "--json").out)["id"]
    assert cli("demo", "--path", db).status == 0
    listed = json.loads(cli("list", "--path", db, "--tag", DEMO_TAG, "--json").out)
    assert mine not in {hit["id"] for hit in listed["items"]}
    (hit,) = json.loads(cli("get", mine, "--path", db, "--json").out)
    assert hit["text"] == "my own note"


@pytest.mark.parametrize(
    "argv", [["demo", "--engine", "cortexdb"], ["demo", "--endpoint", "https://x.example"]]
)
def test_demo_runs_on_the_local_engine_only(cli: Runner, argv: List[str]) -> None:
    result = cli(*argv)
    assert result.status == 2
    assert "local engine" in result.err


def test_demo_ignores_a_config_for_another_engine(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('engine = "tinyhumans"\n')
    env["CORTEX_MEMORY_CONFIG"] = str(config)
    assert cli("demo").status == 0


# ------------------------------------------------------------ real processes


def test_python_dash_m_demo(process_env: Dict[str, str]) -> None:
    env = process_env
    done = subprocess.run(
        [sys.executable, "-m", "cortex_memory", "demo"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    _check_text(done.stdout)
    assert not Path(env["CORTEX_MEMORY_HOME"]).exists()


def _console_script() -> str:
    folder = Path(sys.executable).parent
    found = shutil.which("cortex-memory", path=str(folder))
    if found is None:
        pytest.skip("the cortex-memory console script is not installed next to this Python")
    return found


def test_console_script_demo_and_fallback_note(process_env: Dict[str, str]) -> None:
    script = _console_script()
    env = process_env
    demo = subprocess.run([script, "demo"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert demo.returncode == 0, demo.stderr
    _check_text(demo.stdout)

    stored = subprocess.run([script, "store", "from the console script", "--json"],
                            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert stored.returncode == 0, stored.stderr
    database = Path(env["CORTEX_MEMORY_HOME"]) / "memory.sqlite3"
    # The fallback note goes to stderr, the result to stdout.
    assert stored.stderr == (
        "cortex-memory: no config file and no credential in the environment; "
        f"using the local engine at {database}\n"
    )
    receipt = json.loads(stored.stdout)
    assert ID.fullmatch(receipt["id"])
    assert database.exists()


def test_console_script_error_has_no_traceback(process_env: Dict[str, str]) -> None:
    script = _console_script()
    done = subprocess.run([script, "--engine", "nope", "list"], capture_output=True, text=True,
                          env=process_env, timeout=60, check=False)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.startswith("cortex-memory: configuration error: unknown engine `nope`")
    assert "Traceback" not in done.stderr


def test_broken_pipe_is_quiet(cli: Runner, tmp_path: Path, process_env: Dict[str, str]) -> None:
    env = process_env
    db = str(tmp_path / "many.sqlite3")
    for number in range(30):
        assert cli("store", f"note {number}", "--path", db).status == 0
    # The reader closes the pipe at once; the writer must not print a traceback.
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortex_memory", "list", "--limit", "30", "--path", db],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    proc.wait(timeout=60)
    assert "Traceback" not in err

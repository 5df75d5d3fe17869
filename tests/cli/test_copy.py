"""`cortex-memory copy` between real engines (local files, CortexDB doubles), its
resumption, and the progress every long command shows on stderr."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from cortex_memory import ListRequest, LocalEngine, MetaFilter, StoreItem
from cortex_memory.cli import _progress, main
from cortex_memory.testing import DirectDouble

from .conftest import Result, Runner


def _ok(result: Result) -> Any:
    assert result.status == 0, result.err
    return json.loads(result.out)


def _filled(path: Path, count: int) -> Path:
    with LocalEngine(str(path)) as engine:
        engine.store_many(StoreItem.document(f"note number {n}") for n in range(count))
    return path


def _ids(path: Path) -> List[str]:
    with LocalEngine(str(path)) as engine:
        return [e.id for e in engine.export(ListRequest(MetaFilter(), 1000)).items]


class _Stderr(io.StringIO):
    """A stderr that may be a terminal, and may be interrupted (Ctrl-C) at its Nth
    progress line."""

    def __init__(self, *, tty: bool = False, interrupt_at: Optional[int] = None) -> None:
        super().__init__()
        self.tty = tty
        self.interrupt_at = interrupt_at
        self.progress_lines = 0

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        written = super().write(text)
        if "copying: " in text or "exporting: " in text:
            self.progress_lines += 1
            if self.progress_lines == self.interrupt_at:
                raise KeyboardInterrupt
        return written


def _run(env: Dict[str, str], argv: List[str], stderr: _Stderr) -> Result:
    out = io.StringIO()
    status = main(argv, env=env, stdin=io.StringIO(), stdout=out, stderr=stderr)
    return Result(status, out.getvalue(), stderr.getvalue())


@pytest.fixture
def every_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain progress lines at every step (normally at most one per LINE_EVERY seconds)."""
    monkeypatch.setattr(_progress, "LINE_EVERY", 0.0)


def test_copy_local_to_cortexdb_and_back_is_idempotent(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    source = _filled(tmp_path / "a.db", 150)
    env["CORTEX_MEMORY_API_KEY"] = "k"
    with DirectDouble() as double:
        to_remote = ("--path", str(source), "copy", "--to", "cortexdb", "--to-endpoint", double.url)
        first = cli(*to_remote)
        assert first.status == 0, first.err
        assert first.out == "copied 150 items (150 new, 0 unchanged)\n"
        writes = len(double.state.seen.writes)
        again = cli(*to_remote)
        assert again.out == "copied 150 items (0 new, 150 unchanged)\n"
        assert len(double.state.seen.writes) == writes  # a re-run writes nothing

        back = tmp_path / "back.db"
        home = cli("--engine", "cortexdb", "--endpoint", double.url,
                   "copy", "--to", "local", "--to-path", str(back))
    assert home.status == 0, home.err
    assert home.out == "copied 150 items (150 new, 0 unchanged)\n"
    assert "cannot hand items back whole" in home.err
    # Plain documents survive the listing exactly: the same ids on both sides.
    assert sorted(_ids(back)) == sorted(_ids(source))


def test_an_interrupted_copy_is_resumed_by_running_it_again(
    env: Dict[str, str], tmp_path: Path, every_line: None
) -> None:
    source = _filled(tmp_path / "a.db", 250)
    target = tmp_path / "b.db"
    argv = ["--path", str(source), "copy", "--to", "local", "--to-path", str(target)]
    stopped = _run(env, argv, _Stderr(interrupt_at=2))
    assert stopped.status == 130
    assert stopped.out == "copied 200 items (200 new, 0 unchanged) before the interruption\n"
    assert stopped.err.endswith("cortex-memory: interrupted\n")
    assert len(_ids(target)) == 200
    resumed = _run(env, argv, _Stderr())
    assert resumed.status == 0, resumed.err
    assert resumed.out == "copied 250 items (50 new, 200 unchanged)\n"
    assert sorted(_ids(target)) == sorted(_ids(source))


def test_an_engine_error_stops_the_copy_with_its_status(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    source = _filled(tmp_path / "a.db", 30)
    env["CORTEX_MEMORY_API_KEY"] = "k"
    with DirectDouble() as double:
        argv = ("--path", str(source), "copy", "--to", "cortexdb", "--to-endpoint", double.url)
        double.state.fail_all = (503, "UNAVAILABLE")
        down = cli(*argv, "--json")
        assert down.status == 8
        summary = json.loads(down.out)
        assert summary["copied"] == 0
        assert summary["stopped"].startswith("unavailable")
        double.state.fail_all = None
        up = _ok(cli(*argv, "--json"))
    assert (up["copied"], up["new"]) == (30, 30)


def test_a_failed_export_part_way_leaves_no_file(
    env: Dict[str, str], tmp_path: Path, every_line: None
) -> None:
    source = _filled(tmp_path / "a.db", 250)
    out = tmp_path / "backup.jsonl"
    out.write_text("the earlier backup\n", encoding="utf-8")
    stopped = _run(env, ["--path", str(source), "export", str(out)], _Stderr(interrupt_at=120))
    assert stopped.status == 130
    assert out.read_text(encoding="utf-8") == "the earlier backup\n"
    assert stopped.out == ""
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["--path", "{a}", "copy", "--to", "local", "--to-path", "{a}"], 2,
         "the source and the target are the same engine and database"),
        (["copy", "--to", "local"], 2, "the source and the target are the same"),
        (["--path", "{a}", "copy", "--to", "nowhere"], 3, "nowhere"),
        (["--path", "{a}", "copy", "--to", "cortexdb"], 3, "set CORTEX_MEMORY_API_KEY"),
        (["--path", "{a}", "copy", "--to", "local", "--to-path", "{tmp}/no/b.db"], 2,
         "the folder of --to-path does not exist"),
        (["--path", "{a}", "copy", "--to", "cortexdb", "--to-path", "{tmp}/b.db"], 2,
         "--to-path is for --to local, not `cortexdb`"),
        (["--path", "{a}", "copy", "--to", "local", "--to-endpoint", "https://x.test"], 2,
         "--to-endpoint is for the CortexDB engines"),
    ],
)
def test_copy_refuses_a_target_it_cannot_use(
    cli: Runner, tmp_path: Path, argv: List[str], status: int, message: str
) -> None:
    source = _filled(tmp_path / "a.db", 3)
    result = cli(*(a.format(a=source, tmp=tmp_path) for a in argv))
    assert result.status == status, result.err
    assert message in result.err


# ------------------------------------------------------------------ progress


def test_a_terminal_gets_a_bar(env: Dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(120):
        (folder / f"n{n}.md").write_text(f"note {n}\n", encoding="utf-8")
    result = _run(env, ["--path", str(tmp_path / "m.db"), "import", str(folder)],
                  _Stderr(tty=True))
    assert result.status == 0, result.err
    assert result.out == "imported 120 items (120 new, 0 unchanged)\n"
    bar = result.err.split("\r")[-1]
    assert bar.startswith("importing [####################] 120/120 100%")
    assert bar.endswith("\n")
    assert "\n" not in result.err.split("\r")[-2]


def test_a_log_gets_plain_lines(env: Dict[str, str], tmp_path: Path, every_line: None) -> None:
    source = _filled(tmp_path / "a.db", 250)
    result = _run(env, ["--path", str(source), "copy", "--to", "local", "--to-path",
                        str(tmp_path / "b.db")], _Stderr())
    assert result.status == 0, result.err
    assert "\r" not in result.err
    assert result.err.splitlines() == [
        "cortex-memory: copying: 100 items",
        "cortex-memory: copying: 200 items",
        "cortex-memory: copying: 250 items",
    ]


def test_a_short_run_in_a_log_shows_only_its_summary(cli: Runner, tmp_path: Path) -> None:
    source = _filled(tmp_path / "a.db", 5)
    result = cli("--path", str(source), "copy", "--to", "local", "--to-path",
                 str(tmp_path / "b.db"))
    assert (result.status, result.err) == (0, "")
    assert result.out == "copied 5 items (5 new, 0 unchanged)\n"


def test_json_shows_no_progress(env: Dict[str, str], tmp_path: Path, every_line: None) -> None:
    source = _filled(tmp_path / "a.db", 150)
    for tty in (True, False):
        result = _run(env, ["--json", "--path", str(source), "copy", "--to", "local",
                            "--to-path", str(tmp_path / f"b{tty}.db")], _Stderr(tty=tty))
        assert result.status == 0
        assert result.err == ""
        assert json.loads(result.out)["copied"] == 150

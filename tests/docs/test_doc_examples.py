"""Every example in docs/*.md and README.md is executed (issue 9, quality.md "Docs").

Each fenced block must name its language, and the language decides what
happens to it:

* ```` ```python ````: run. The blocks of one document run in order in one
  namespace (a later block may use an earlier block's names), in a scratch
  folder, by a separate interpreter with warnings as errors, with
  ``CORTEX_MEMORY_HOME``, ``HOME`` and the XDG folders pointed into the scratch
  folder and no credential in the environment. A ``# -> text`` comment promises
  that ``text`` is printed (in order). A copy of ``docs/examples`` sits in the
  scratch folder, so an example may import it "from the repository root".
* ```` ```sh ```` and ```` ```console ````: ``cortex-memory ...`` and
  ``python -m cortex_memory...`` command lines (alone, or fed by ``echo`` /
  ``printf``), and setup lines made only of ``echo``, ``printf``, ``mkdir`` and
  ``cat`` (``printf ... > notes.md``), run through ``/bin/sh`` in document
  order, between the python blocks, with the same environment, and must exit
  0; ``.venv/bin/cortex-memory`` resolves to this interpreter's environment.
  In a console block, ``$ `` starts a command and the lines after it are
  output it must show (``<placeholder>`` matches any word); a command
  still running once it has (a server) gets SIGINT and must then exit 0. Any
  other line (``pip install``, ``git clone``...) is only checked to be
  well-formed shell, and its program must be one of ``NOT_RUN_PROGRAMS``.
* ```` ```json ```` and ```` ```toml ````: parsed.
* ```` ```text ````: shown output or prose; nothing to run.

A python or sh block that truly cannot run is preceded by
``<!-- not-run: reason -->`` (``<!-- not run: reason -->`` works too) and is
compiled, or checked to be well-formed shell, instead; the (document,
language, reason) triples are pinned in ``NOT_RUN_BLOCKS`` so nothing is
dropped silently. A python block preceded by ``<!-- needs: module -->`` runs
when that module is importable and is skipped, with the reason, otherwise.
After a page's examples no thread they started may still be running.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
DRIVER = Path(__file__).resolve().parent / "_run_doc.py"

LANGUAGES = {"python", "sh", "console", "json", "toml", "text"}

NOT_RUN_BLOCKS = {
    ("api.md", "sh", "rewrites this page"),
    ("threading.md", "sh", "opens a window"),
    ("threading.md", "python", "needs a display"),
}
"""Blocks checked but not run, with the reason their marker gives."""

NOT_RUN_PROGRAMS = {
    "pip": "installs packages",
    "venv": "creates an environment",
    "git": "needs a repository",
    "scripts/test": "runs the project's whole suite",
}
"""Programs a shell example may show without the test running them, and why."""

_FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")
_MARKER = re.compile(r"^<!--\s*(not[- ]run|needs):\s*(.+?)\s*-->$")
_PROMISE = re.compile(r"#\s*->\s*(.+?)\s*$", re.MULTILINE)
_OPERATORS = {"|", "||", "&&", ";", "&"}
_REDIRECTS = {">", ">>", "<", "2>", "2>&1"}
_FEEDERS = {"echo", "printf", "mkdir", "cat"}


class Block(NamedTuple):
    """One fenced block of a document."""

    doc: str
    line: int
    lang: str
    code: str
    marker: Optional[Tuple[str, str]]  # ("not-run" | "needs", text)

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


class Command(NamedTuple):
    """One shell command line of an example, and the output a console block shows."""

    line: str
    runs: bool
    why_not: str
    expect: Optional[List[str]]


def parse_blocks(path: Path) -> List[Block]:
    """The fenced blocks of ``path``, with the marker comment right before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = path.name
    blocks: List[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        indent, ticks, info = len(match.group(1)), match.group(2), match.group(3).strip()
        start = index
        body: List[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != ticks:
            text = lines[index]
            # Drop the fence's own indentation (a block inside a list item).
            cut = len(text) - len(text.lstrip(" "))
            body.append(text[min(indent, cut) :])
            index += 1
        before = next((ln.strip() for ln in reversed(lines[:start]) if ln.strip()), "")
        found = _MARKER.match(before)
        marker = None
        if found is not None:
            kind = "needs" if found.group(1) == "needs" else "not-run"
            marker = (kind, found.group(2))
        lang = info.split()[0] if info else ""
        blocks.append(Block(name, start + 1, lang, "\n".join(body) + "\n", marker))
        index += 1
    return blocks


def _complete(text: str) -> bool:
    """Whether ``text`` is a whole command: quotes closed, no trailing ``|``, ``&&`` or ``\\``."""
    stripped = text.rstrip()
    if stripped.endswith(("\\", "|", "&&")):
        return False
    try:
        shlex.split(stripped, comments=True)
    except ValueError:  # a quote still open: the command goes on on the next line
        return False
    return True


def _logical_lines(code: str) -> List[str]:
    """The command lines of a shell block, continuation lines joined."""
    out: List[str] = []
    pending = ""
    for raw in code.splitlines():
        if not pending and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if pending.rstrip().endswith("\\"):
            pending = pending.rstrip()[:-1] + " " + raw.strip()
        elif pending:
            pending += "\n" + raw
        else:
            pending = raw.strip()
        if _complete(pending):
            out.append(pending)
            pending = ""
    if pending:
        out.append(pending)  # malformed: classify() will say so
    return out


def _program_runs(words: List[str]) -> Tuple[bool, str]:
    """Whether one simple command (no operators) is a cortex-memory command."""
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return False, "empty command"
    program = words[0]
    if program == "cortex-memory" or program.endswith("/cortex-memory"):
        return True, ""
    base = program.rsplit("/", 1)[-1]
    module = words[2] if len(words) >= 3 and words[1] == "-m" else ""
    if re.fullmatch(r"python(3(\.\d+)?)?", base) and module.split(".")[0] == "cortex_memory":
        return True, ""
    if base in _FEEDERS:
        return True, "feeder"
    if base.startswith("python") and len(words) >= 3 and words[1] == "-m":
        return False, words[2]  # the module: `python -m pip` is pip
    return False, program


def classify(line: str) -> Tuple[bool, str]:
    """``(runs, program not run)`` for one logical shell line; ValueError if malformed."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    commands: List[List[str]] = [[]]
    for token in tokens:
        if token in _OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    for words in commands:
        # Drop redirections and their targets: `> notes.md`.
        plain: List[str] = []
        skip = False
        for word in words:
            if skip:
                skip = False
                continue
            if word in _REDIRECTS:
                skip = True
                continue
            plain.append(word)
        runs, why = _program_runs(plain)
        if not runs:
            return False, why
    return True, ""  # cortex-memory commands, and setup lines such as `printf ... > notes.md`


def shell_commands(block: Block) -> List[Command]:
    """The command lines of a sh or console block."""
    if block.lang == "sh":
        out = []
        for line in _logical_lines(block.code):
            runs, why = classify(line)
            out.append(Command(line.strip(), runs, why, None))
        return out
    commands: List[Command] = []
    for raw in block.code.splitlines():
        if raw.startswith("$ "):
            line = raw[2:].strip()
            runs, why = classify(line)
            commands.append(Command(line, runs, why, []))
        elif commands and raw.strip():
            expect = commands[-1].expect
            assert expect is not None
            expect.append(raw)
    return commands


BLOCKS: List[Block] = [block for path in DOCS for block in parse_blocks(path)]


def _needs_missing(block: Block) -> Optional[str]:
    if block.marker is None or block.marker[0] != "needs":
        return None
    missing = [name for name in block.marker[1].split() if importlib.util.find_spec(name) is None]
    return ", ".join(missing) or None


def _runs(block: Block) -> bool:
    if block.lang == "python":
        return block.marker is None or (block.marker[0] == "needs" and not _needs_missing(block))
    if block.lang in ("sh", "console"):
        return block.marker is None and any(c.runs for c in shell_commands(block))
    return False


# -- running one document -----------------------------------------------------------------


def _environment(folder: Path) -> Dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CORTEX_MEMORY_", "XDG_"))
    }
    home = folder / "home"
    env.update(
        HOME=str(home),
        CORTEX_MEMORY_HOME=str(home / "cortex-memory"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONIOENCODING="utf-8",
    )
    return env


def _plan(doc: str) -> List[Dict[str, Any]]:
    steps: List[Dict[str, Any]] = []
    for block in BLOCKS:
        if block.doc != doc or not _runs(block):
            continue
        if block.lang == "python":
            steps.append({"id": block.id, "kind": "python", "code": block.code})
        else:
            commands = [
                {"line": c.line, "expect": c.expect} for c in shell_commands(block) if c.runs
            ]
            steps.append({"id": block.id, "kind": "shell", "commands": commands})
    return steps


class DocRun(NamedTuple):
    """What running one document's examples gave: per block results, and the driver's end."""

    results: Dict[str, Any]
    status: Optional[int]
    stderr: str


_RUNS: Dict[str, DocRun] = {}
"""Each document runs once, on first use; its blocks' tests read the results here."""


def run_document(doc: str, folder: Path) -> DocRun:
    """Run ``doc``'s examples in ``folder`` with the driver."""
    home = folder / "home"
    (home / "cortex-memory").mkdir(parents=True)
    shutil.copytree(ROOT / "docs" / "examples", folder / "docs" / "examples")
    # `.venv/bin/cortex-memory` in an example means this interpreter's environment.
    os.symlink(sys.prefix, folder / ".venv", target_is_directory=True)
    plan = folder / "_plan.json"
    results = folder / "_results.json"
    plan.write_text(json.dumps(_plan(doc)), encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, "-W", "error", str(DRIVER), str(plan), str(results)],
            cwd=str(folder),
            env=_environment(folder),
            capture_output=True,
            text=True,
            timeout=280,
            check=False,
        )
        status: Optional[int] = done.returncode
        stderr = done.stderr
    except subprocess.TimeoutExpired as err:
        status, stderr = None, f"the examples did not finish: {err}"
    found = json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}
    return DocRun(found, status, stderr)


def _result(block: Block, factory: pytest.TempPathFactory) -> Any:
    if block.doc not in _RUNS:
        _RUNS[block.doc] = run_document(block.doc, factory.mktemp(Path(block.doc).stem))
    run = _RUNS[block.doc]
    assert run.status == 0, f"the example driver failed:\n{run.stderr[-3000:]}"
    assert block.id in run.results, f"{block.id} did not run:\n{run.stderr[-3000:]}"
    left = run.results.get("epilogue", {}).get("threads")
    assert left == [], f"{block.doc}'s examples left threads running: {left}"
    return run.results[block.id]


# -- the tests ------------------------------------------------------------------------------


def test_every_fence_names_a_known_language() -> None:
    unnamed = [f"{b.id} ({b.lang or 'no language'})" for b in BLOCKS if b.lang not in LANGUAGES]
    assert not unnamed, "fences need one of " + ", ".join(sorted(LANGUAGES)) + ": " + str(unnamed)


def test_docs_have_examples_and_most_of_them_run() -> None:
    assert len(DOCS) >= 16
    running = [b for b in BLOCKS if b.lang == "python" and b.marker is None]
    assert len(running) >= 40


def test_blocks_not_run_are_the_pinned_ones() -> None:
    found = {
        (b.doc, b.lang, b.marker[1])
        for b in BLOCKS
        if b.marker is not None and b.marker[0] == "not-run"
    }
    assert found == NOT_RUN_BLOCKS


def test_markers_only_precede_blocks_they_apply_to() -> None:
    wrong = [b.id for b in BLOCKS if b.marker is not None and b.lang not in ("python", "sh")]
    assert not wrong


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.lang == "python" and _runs(b)], ids=lambda b: b.id
)
def test_python_example_runs(block: Block, tmp_path_factory: pytest.TempPathFactory) -> None:
    result = _result(block, tmp_path_factory)
    assert result["ok"], result["error"]
    at = 0
    for promised in _PROMISE.findall(block.code):
        found = result["output"].find(promised, at)
        assert found >= 0, f"{promised!r} not printed (in order):\n{result['output']}"
        at = found + len(promised)


@pytest.mark.parametrize(
    "block",
    [b for b in BLOCKS if b.lang == "python" and b.marker is not None and not _runs(b)],
    ids=lambda b: f"{b.id}-{b.marker[0] if b.marker else ''}",
)
def test_python_example_not_run_compiles(block: Block) -> None:
    missing = _needs_missing(block)
    compile(block.code, block.id, "exec")
    if missing:
        pytest.skip(f"{block.id} needs {missing}, which is not installed")


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.lang in ("sh", "console")], ids=lambda b: b.id
)
def test_shell_example(block: Block, tmp_path_factory: pytest.TempPathFactory) -> None:
    commands = shell_commands(block)
    assert commands, f"{block.id} holds no command"
    if block.marker is not None:
        assert block.marker[0] == "not-run", "a shell block cannot need a module"
        return  # well-formed (shell_commands parsed every line); the marker says why
    for command in commands:
        if not command.runs:
            program = command.why_not
            assert program in NOT_RUN_PROGRAMS or program.rsplit("/", 1)[-1] in NOT_RUN_PROGRAMS, (
                f"{block.id}: {command.line!r} is neither a cortex-memory command nor a "
                f"program listed in NOT_RUN_PROGRAMS"
            )
    if not _runs(block):
        return
    result = _result(block, tmp_path_factory)
    details = "\n".join(
        f"$ {c['line']}\n{c['output'][-1500:]}" for c in result["commands"] if not c["ok"]
    )
    assert result["ok"], f"{result['error']}\n{details}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "json"], ids=lambda b: b.id)
def test_json_example_parses(block: Block) -> None:
    json.loads(block.code)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "toml"], ids=lambda b: b.id)
def test_toml_example_parses(block: Block) -> None:
    tomllib.loads(block.code)


# -- the runner itself: it must be able to fail ---------------------------------------------


def _drive(folder: Path, steps: List[Dict[str, Any]]) -> Dict[str, Any]:
    plan, results = folder / "plan.json", folder / "results.json"
    plan.write_text(json.dumps(steps), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-W", "error", str(DRIVER), str(plan), str(results)],
        cwd=str(folder),
        env=_environment(folder),
        capture_output=True,
        timeout=120,
        check=True,
    )
    found: Dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))
    return found


def test_runner_shares_names_in_order_and_reports_each_failure(tmp_path: Path) -> None:
    found = _drive(
        tmp_path,
        [
            {"id": "a", "kind": "python", "code": "x = 41\nprint('first')\n"},
            {"id": "b", "kind": "python", "code": "print(x + 1)\nraise ValueError('boom')\n"},
            {
                "id": "c",
                "kind": "python",
                "code": "def test_fails(direct_double):\n"
                "    assert direct_double.url.startswith('http://127.0.0.1:')\n"
                "    assert False, 'called'\n",
            },
            {
                "id": "d",
                "kind": "python",
                "code": "import threading, time\n"
                "threading.Thread(target=time.sleep, args=(30,), name='left-over').start()\n",
            },
        ],
    )
    assert found["a"] == {"ok": True, "error": "", "output": "first\n"}
    assert found["b"]["output"] == "42\n"
    assert "ValueError: boom" in found["b"]["error"]
    assert not found["c"]["ok"]
    assert "AssertionError: called" in found["c"]["error"]
    assert found["d"]["ok"]
    assert found["epilogue"] == {"threads": ["left-over"]}


def test_runner_checks_exit_status_and_shown_output(tmp_path: Path) -> None:
    serve = "python -m cortex_memory.testing serve --wire hosted"
    found = _drive(
        tmp_path,
        [
            {
                "id": "ok",
                "kind": "shell",
                "commands": [
                    {"line": "cortex-memory engines", "expect": None},
                    {"line": serve, "expect": ["hosted double on http://127.0.0.1:<port>"]},
                ],
            },
            {
                "id": "bad",
                "kind": "shell",
                "commands": [
                    {"line": "cortex-memory get no-such-id", "expect": None},
                    {"line": "cortex-memory engines", "expect": ["no such line"]},
                ],
            },
        ],
    )
    assert found["ok"]["ok"], found["ok"]["error"]
    assert found["ok"]["commands"][1]["interrupted"] is True
    first, second = found["bad"]["commands"]
    assert first["status"] == 6
    assert not first["ok"]
    assert second["status"] == 0
    assert "does not show 'no such line'" in second["error"]


def test_shell_lines_are_classified() -> None:
    assert classify(".venv/bin/cortex-memory demo") == (True, "")
    assert classify("python -m cortex_memory.tools.mcp --path x") == (True, "")
    assert classify("echo hi | cortex-memory store -") == (True, "")
    assert classify("git log -1 | cortex-memory store") == (False, "git")
    assert classify("python3 -m venv .venv && .venv/bin/python -m pip install .") == (
        False,
        "venv",
    )
    with pytest.raises(ValueError):
        classify("cortex-memory store 'unclosed")


def test_fences_markers_and_indentation_are_parsed(tmp_path: Path) -> None:
    doc = tmp_path / "sample.md"
    doc.write_text(
        "Intro\n\n<!-- not-run: needs a display -->\n```python\nimport tkinter\n```\n\n"
        "- item\n\n  ```sh\n  cortex-memory demo\n  ```\n\n```\nplain\n```\n",
        encoding="utf-8",
    )
    first, second, third = parse_blocks(doc)
    assert (first.line, first.lang, first.marker) == (4, "python", ("not-run", "needs a display"))
    assert (second.lang, second.code, second.marker) == ("sh", "cortex-memory demo\n", None)
    assert (third.lang, third.code) == ("", "plain\n")


def test_quickstart_demo_transcript_is_what_the_demo_prints(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    start = doc.index("```text\ncortex-memory demo:") + len("```text\n")
    shown = doc[start : doc.index("```", start)]
    done = subprocess.run(
        [sys.executable, "-m", "cortex_memory", "demo"],
        cwd=str(tmp_path),
        env=_environment(tmp_path),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=True,
    )

    def shape(text: str) -> List[str]:
        # Scores may differ in the last digits between SQLite builds; the rest may not.
        return [re.sub(r"\d+\.\d+", "#.#", line.rstrip()) for line in text.splitlines()]

    assert shape(done.stdout) == shape(shown)


# -- cross-links ----------------------------------------------------------------------------

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCED = re.compile(r"^(\s*)(`{3,}).*?^\1\2\s*$", re.MULTILINE | re.DOTALL)


def _anchors(path: Path) -> List[str]:
    """GitHub's anchors for the page's headings (a repeated heading gets ``-1``, ...)."""
    seen: Dict[str, int] = {}
    out: List[str] = []
    for line in _FENCED.sub("", path.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if match is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.append(slug if count == 0 else f"{slug}-{count}")
    return out


def test_relative_links_and_anchors_resolve() -> None:
    broken: List[str] = []
    anchors: Dict[Path, List[str]] = {}  # read once a page: api.md links to itself 350 times
    for page in DOCS:
        # Links inside code (fenced or inline) are not links.
        prose = re.sub(r"`[^`\n]*`", "", _FENCED.sub("", page.read_text(encoding="utf-8")))
        for target in _LINK.findall(prose):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md":
                if linked not in anchors:
                    anchors[linked] = _anchors(linked)
                if anchor not in anchors[linked]:
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken

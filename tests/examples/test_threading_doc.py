"""Every Python example in docs/threading.md runs, and prints what its ``# ->`` comments say.

Each ```` ```python ```` block is written to its own file and run by this
interpreter from the repository root (the multi-process example needs a real
``__main__`` file for the ``spawn`` start method). A ``# -> text`` comment
promises that ``text`` appears in the output, in order. A block preceded by
``<!-- not run: reason -->`` (it needs a display or a toolkit that is not a
dependency) is compiled instead, and the test pins how many such blocks exist.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import List, NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "threading.md"
NOT_RUN = re.compile(r"<!-- not run: [^>]+ -->")
EXPECTED_NOT_RUN = 2  # the Tk window outline and the Qt sketch


class Block(NamedTuple):
    line: int
    code: str
    run: bool


def _blocks() -> List[Block]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    blocks: List[Block] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```python":
            start = index
            index += 1
            body: List[str] = []
            while lines[index].strip() != "```":
                body.append(lines[index])
                index += 1
            before = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
            blocks.append(Block(start + 1, "\n".join(body) + "\n", not NOT_RUN.search(before)))
        index += 1
    return blocks


BLOCKS = _blocks()


def test_the_page_has_examples_and_pins_the_ones_not_run() -> None:
    assert sum(block.run for block in BLOCKS) >= 5
    assert sum(not block.run for block in BLOCKS) == EXPECTED_NOT_RUN


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.run], ids=lambda b: f"threading.md:{b.line}"
)
def test_example_runs_and_prints_what_it_promises(block: Block, tmp_path: Path) -> None:
    script = tmp_path / f"example_{block.line}.py"
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout
    promised = re.findall(r"# -> (.+)$", block.code, flags=re.MULTILINE)
    assert promised, "every runnable example promises some output"
    at = 0
    for text in promised:
        found = output.find(text.rstrip(), at)
        assert found >= 0, f"{text!r} not printed (in order) by the example:\n{output}"
        at = found + len(text.rstrip())


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if not b.run], ids=lambda b: f"threading.md:{b.line}"
)
def test_example_not_run_still_compiles(block: Block) -> None:
    compile(block.code, f"threading.md:{block.line}", "exec")

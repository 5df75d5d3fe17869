"""docs/api.md is what scripts/api_reference.py writes now, on every Python and hash seed.

The test command runs this on the default Python and on the oldest one (3.9), so
a rendering that depends on the version (signatures, enum and set reprs,
docstring indentation) fails here before it reaches a reader.
"""

from __future__ import annotations

import difflib
import enum
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "api_reference.py"
PAGE = ROOT / "docs" / "api.md"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("api_reference", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["api_reference"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


api = _load()


def test_the_committed_page_is_what_the_script_writes() -> None:
    written = api.render()
    committed = PAGE.read_text(encoding="utf-8")
    if committed != written:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(True), written.splitlines(True), "committed", "now", n=1
                )
            )[:60]
        )
        pytest.fail(f"docs/api.md is stale; regenerate it with `{api.COMMAND}`:\n{diff}")


@pytest.mark.parametrize("seed", ["0", "4242"])
def test_the_check_command_passes_under_any_hash_seed(seed: str) -> None:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=str(ROOT),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_check_fails_on_a_stale_page_and_writing_mends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "api.md"
    page.write_text(PAGE.read_text(encoding="utf-8").replace("Members:", "Members;", 1))
    monkeypatch.setattr(api, "PAGE", page)
    assert api.main(["--check"]) == 1
    captured = capsys.readouterr()
    assert "-Members;" in captured.out
    assert "+Members:" in captured.out
    assert api.COMMAND in captured.err
    monkeypatch.setattr(api, "ROOT", tmp_path)
    assert api.main([]) == 0
    assert page.read_text(encoding="utf-8") == api.render()
    assert api.main(["--check"]) == 0


@pytest.mark.parametrize("module", ["cortex_memory", "cortex_memory.contract",
                                    "cortex_memory.cortex", "cortex_memory.local",
                                    "cortex_memory.config", "cortex_memory.errors",
                                    "cortex_memory.testing", "cortex_memory.tools"])  # fmt: skip
def test_every_public_name_is_on_the_page(module: str) -> None:
    assert module in api.PUBLIC_MODULES
    page = PAGE.read_text(encoding="utf-8")
    section = page.split(f"\n## `{module}`\n", 1)[1].split("\n## ", 1)[0]
    for name in importlib.import_module(module).__all__:
        assert f"| [`{name}`](#" in section, f"{module}.{name} is not in its table"


def test_every_public_name_and_method_has_a_docstring() -> None:
    assert api.missing_docstrings() == []


def test_every_row_links_to_its_own_entry() -> None:
    rows = [line for line in PAGE.read_text(encoding="utf-8").splitlines()
            if line.startswith("| [`")]  # fmt: skip
    assert len(rows) == sum(len(importlib.import_module(m).__all__) for m in api.PUBLIC_MODULES)
    for row in rows:
        name, target = row[4:].split("`](#", 1)
        assert target.split(")", 1)[0] == api._slug(f"`{name}`"), row


def test_headings_give_every_entry_its_own_anchor() -> None:
    page = PAGE.read_text(encoding="utf-8")
    targets = {line.split("](#", 1)[1].split(")", 1)[0] for line in page.splitlines()
               if line.startswith("| [`")}  # fmt: skip
    anchors = {api._slug(line.lstrip("#").strip()) for line in page.splitlines()
               if line.startswith("#### ")}  # fmt: skip
    assert targets <= anchors
    assert len(anchors) == page.count("\n#### ")


# -- the pieces that keep the page the same on every Python ----------------------------------


class _Colour(enum.Enum):
    RED = "red"


class _Opaque:
    pass


def _sample(
    a: int,
    /,
    b: Optional[str] = None,
    *args: Any,
    c: _Colour = _Colour.RED,
    d: frozenset = frozenset({"z", "a", "m"}),
    e: Any = _Opaque(),  # noqa: B008 - an object whose repr holds an address
    **rest: Any,
) -> Dict[str, int]:
    """Sample."""
    return {}


def test_signatures_are_rendered_from_their_parts() -> None:
    shown = api._signature(_sample, "sample", drop_first=False, wrap=False)
    assert shown == (
        "sample(a: int, /, b: Optional[str] = None, *args: Any, c: _Colour = _Colour.RED, "
        "d: frozenset = frozenset({'a', 'm', 'z'}), e: Any = <_Opaque>, **rest: Any) "
        "-> Dict[str, int]"
    )
    wrapped = api._signature(_sample, "sample", drop_first=False).splitlines()
    assert wrapped[0] == "sample("
    assert wrapped[1:3] == ["    a: int,", "    /,"]
    assert "    d: frozenset = frozenset({'a', 'm', 'z'})," in wrapped
    assert wrapped[-1] == ") -> Dict[str, int]"


def test_sets_print_sorted_whatever_their_order() -> None:
    one = api._value(frozenset(["b", "a", "c"]))
    two = api._value(frozenset(["c", "b", "a"]))
    assert one == two == "frozenset({'a', 'b', 'c'})"
    assert api._value({"x": (1,), "y": [True, None]}) == "{'x': (1,), 'y': [True, None]}"


def test_docstrings_become_markdown_that_the_docs_runner_never_executes() -> None:
    doc = (
        "Use :class:`~cortex_memory.StoreItem` or :meth:`Other.thing`; ``x < y``.\n"
        "\n"
        "A literal block::\n"
        "\n"
        "    engine.store(item)\n"
        "    # not a heading\n"
        "\n"
        "A `<tag>` stays; a bare <tag> is escaped."
    )
    text = api._markdown(doc, {"StoreItem": "storeitem"})
    assert text.splitlines() == [
        "Use [`StoreItem`](#storeitem) or `Other.thing`; `x < y`.",
        "",
        "A literal block:",
        "",
        "```text",
        "engine.store(item)",
        "# not a heading",
        "```",
        "",
        "A `<tag>` stays; a bare &lt;tag> is escaped.",
    ]

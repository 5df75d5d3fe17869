"""`cortex-memory export` and the JSONL round trip through `import`, on real local
databases and the CortexDB doubles."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cortex_memory import (
    ListRequest,
    LocalEngine,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Source,
    SourceKind,
    StoreItem,
)
from cortex_memory.cli._jsonl import EXPORT_VERSION
from cortex_memory.cli._source import PAGE_BYTES, read_items
from cortex_memory.contract import ExportPage, LearningKind, Role, Turn
from cortex_memory.testing import DirectDouble, HostedDouble

from .conftest import Result, Runner


def _ok(result: Result) -> Any:
    assert result.status == 0, result.err
    return json.loads(result.out)


def _every_kind() -> List[StoreItem]:
    meta = MemoryMeta(
        namespace=Namespace.parse("team:acme"), file_path="docs/plan.md",
        source=Source(SourceKind.FILE), tags=("plan", "v1"),
    )
    return [
        StoreItem.document("We ship on Tuesdays.", meta),
        StoreItem.learning("Prefers short answers", LearningKind.PREFERENCE, 0.9),
        StoreItem.conversation(
            [Turn(Role.USER, "Which port?\nThe API one."), Turn(Role.ASSISTANT, "8080")]
        ),
        StoreItem.document("tagged ops note", MemoryMeta(tags=("ops",))),
    ]


def _filled(path: Path, items: List[StoreItem]) -> Path:
    with LocalEngine(str(path)) as engine:
        engine.store_many(items)
    return path


def _held(path: Path) -> Dict[str, Dict[str, Any]]:
    with LocalEngine(str(path)) as engine:
        page = engine.export(ListRequest(MetaFilter(), 1000))
    return {e.id: e.item.to_json() for e in page.items}


def test_export_then_import_gives_back_every_item_under_its_id(
    cli: Runner, tmp_path: Path
) -> None:
    source = _filled(tmp_path / "a.db", _every_kind())
    out = tmp_path / "backup.jsonl"
    result = cli("--path", str(source), "export", str(out))
    assert result.status == 0, result.err
    assert result.out == f"exported 4 items to {out}\n"
    if os.name == "posix":
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [set(line) for line in lines] == [{"version", "id", "item"}] * 4
    assert all(line["version"] == EXPORT_VERSION for line in lines)
    assert {line["id"] for line in lines} == set(_held(source))

    target = tmp_path / "b.db"
    imported = cli("--path", str(target), "import", str(out))
    assert imported.status == 0, imported.err
    assert imported.out == "imported 4 items (4 new, 0 unchanged)\n"
    assert _held(target) == _held(source)
    again = cli("--path", str(target), "import", str(out))
    assert again.out == "imported 4 items (0 new, 4 unchanged)\n"


def test_export_takes_the_filters_of_list(cli: Runner, tmp_path: Path) -> None:
    source = _filled(tmp_path / "a.db", _every_kind())
    out = tmp_path / "ops.jsonl"
    assert cli("--path", str(source), "export", str(out), "--tag", "ops").status == 0
    assert [json.loads(x)["item"]["body"]["text"] for x in out.read_text().splitlines()] == [
        "tagged ops note"
    ]
    assert cli("--path", str(source), "export", str(out), "--type", "learning").status == 0
    assert len(out.read_text().splitlines()) == 1


def test_export_to_stdout_pipes_into_import(cli: Runner, tmp_path: Path) -> None:
    source = _filled(tmp_path / "a.db", _every_kind())
    exported = cli("--path", str(source), "export", "-")
    assert exported.status == 0
    assert len(exported.out.splitlines()) == 4  # stdout holds the lines only
    assert "exported 4 items to stdout" in exported.err
    target = tmp_path / "b.db"
    piped = cli("--path", str(target), "import", "-", stdin=exported.out)
    assert piped.status == 0, piped.err
    assert _held(target) == _held(source)


def test_a_failed_export_leaves_the_earlier_file_whole(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "backup.jsonl"
    out.write_text("the earlier backup\n", encoding="utf-8")
    env["CORTEX_MEMORY_API_KEY"] = "k"
    with DirectDouble() as double:
        double.state.fail_all = (503, "UNAVAILABLE")
        failed = cli("--engine", "cortexdb", "--endpoint", double.url, "export", str(out))
    assert failed.status == 8
    assert out.read_text(encoding="utf-8") == "the earlier backup\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.jsonl"]  # no temporary left


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["export", "-", "--json"], "--json has no room there"),
        (["export", "{tmp}/missing/x.jsonl"], "the folder of {tmp}/missing/x.jsonl does not exist"),
        (["export", "{tmp}"], "{tmp} is a folder"),
    ],
)
def test_export_refuses_a_target_it_cannot_write(
    cli: Runner, tmp_path: Path, argv: List[str], message: str
) -> None:
    db = _filled(tmp_path / "a.db", _every_kind())
    result = cli("--path", str(db), *(a.format(tmp=tmp_path) for a in argv))
    assert result.status == 2
    assert message.format(tmp=tmp_path) in result.err


@pytest.mark.parametrize("double_type", [DirectDouble, HostedDouble])
def test_an_engine_that_cannot_export_is_read_from_its_listing(
    cli: Runner, env: Dict[str, str], tmp_path: Path, double_type: Any
) -> None:
    source = _filled(tmp_path / "a.db", _every_kind())
    engine_id = "cortexdb" if double_type is DirectDouble else "tinyhumans"
    env["CORTEX_MEMORY_API_KEY"] = env["CORTEX_MEMORY_TINYHUMANS_TOKEN"] = "k"
    out = tmp_path / "remote.jsonl"
    with double_type(rate_limit_requests=None) as double:
        where = ("--engine", engine_id, "--endpoint", double.url)
        assert cli("--path", str(source), "copy", "--to", engine_id, "--to-endpoint",
                   double.url).status == 0
        exported = cli(*where, "export", str(out))
    assert exported.status == 0, exported.err
    assert "(4 rebuilt from the listing: approximate)" in exported.out
    assert f"engine `{engine_id}` cannot hand items back whole" in exported.err
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert all(line["approximate"] is True for line in lines)
    by_type = {
        line["item"]["type"]: line["item"] for line in lines
        if "tagged ops note" not in json.dumps(line)
    }
    # What a listing carries comes back; what it does not is documented.
    assert "title" not in by_type["document"]
    assert "mime" not in by_type["document"]
    assert by_type["document"]["body"]["text"] == "We ship on Tuesdays."
    assert by_type["document"]["meta"]["tags"] == ["plan", "v1"]
    assert by_type["document"]["meta"]["namespace"] == "team:acme"
    assert by_type["learning"]["kind"] == "other"  # a listing does not carry the kind
    assert by_type["learning"]["confidence"] == 0.9
    assert by_type["conversation"]["turns"] == [
        {"role": "user", "text": "Which port?\nThe API one."},
        {"role": "assistant", "text": "8080"},
    ]
    # An approximate export still imports.
    imported = cli("--path", str(tmp_path / "b.db"), "import", str(out))
    assert imported.out == "imported 4 items (4 new, 0 unchanged)\n"


# ------------------------------------------------------------------ reading lines


def test_a_malformed_line_is_named_by_its_number_and_the_rest_imported(
    cli: Runner, tmp_path: Path
) -> None:
    source = _filled(tmp_path / "a.db", _every_kind())
    out = tmp_path / "backup.jsonl"
    assert cli("--path", str(source), "export", str(out)).status == 0
    good = out.read_text(encoding="utf-8").splitlines()
    lines = [
        good[0],
        "{not json",
        "",
        json.dumps({"version": 2, "id": "x", "item": {}}),
        json.dumps({"version": 1, "id": "x", "item": {"type": "document", "body": {"text": " "}}}),
        json.dumps([1, 2]),
        json.dumps({"id": "x"}),
        *good[1:],
    ]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("--path", str(tmp_path / "b.db"), "import", str(out))
    assert result.status == 4
    assert result.out == "imported 4 items (4 new, 0 unchanged), failed 5\n"
    for number, message in [
        (2, "not valid JSON: "),
        (4, "export version 2 is not one this cortex-memory reads (it reads version 1)"),
        (5, "document body must not be empty"),
        (6, "not an export line: a JSON object was expected"),
        (7, "not an export line: it has no `version`"),
    ]:
        assert f"cortex-memory: failed: {out}:{number}: {message}" in result.err
    assert ":3:" not in result.err  # a blank line is no input


def test_an_item_the_engine_refuses_fails_alone(cli: Runner, tmp_path: Path) -> None:
    lines = [
        json.dumps({"version": 1, "id": "a", "item": StoreItem.document(f"note {n}").to_json()})
        for n in range(4)
    ]
    # Valid JSON, a valid item, but text no engine can store: a lone surrogate.
    surrogate = '{"type":"document","body":{"text":"tea \\ud800"}}'
    lines.insert(2, f'{{"version":1,"id":"b","item":{surrogate}}}')
    export = tmp_path / "x.jsonl"
    export.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "b.db"
    result = cli("--path", str(db), "import", str(export), "--json")
    assert result.status == 4
    summary = json.loads(result.out)
    assert (summary["imported"], summary["failed"]) == (4, 1)
    assert [f["input"] for f in summary["failed_inputs"]] == [f"{export}:3"]
    assert len(_held(db)) == 4


def test_meta_options_need_files(cli: Runner, tmp_path: Path) -> None:
    export = tmp_path / "x.jsonl"
    export.write_text("", encoding="utf-8")
    result = cli("--path", str(tmp_path / "b.db"), "import", str(export), "--tag", "t")
    assert result.status == 2
    assert "--tag apply to files and folders" in result.err


def test_replace_on_export_lines_is_asked_for(cli: Runner, tmp_path: Path) -> None:
    meta = MemoryMeta(file_path="plan.md")
    old, new = StoreItem.document("May", meta), StoreItem.document("June", meta)
    db = _filled(tmp_path / "b.db", [old])
    export = tmp_path / "x.jsonl"
    export.write_text(json.dumps({"version": 1, "id": "n", "item": new.to_json()}) + "\n")
    kept = _ok(cli("--path", str(db), "import", str(export), "--json"))
    assert kept["replaced"] == 0
    assert len(_held(db)) == 2
    replaced = _ok(cli("--path", str(db), "import", str(export), "--replace", "--json"))
    assert replaced["replaced"] == 1
    assert list(_held(db)) == [new.fingerprint()]


# ------------------------------------------------------------------ bounded pages


class _Recording(LocalEngine):
    """A real local engine that remembers the page sizes asked for."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.limits: List[int] = []

    def export(self, request: ListRequest, **kw: Any) -> ExportPage:
        self.limits.append(request.limit)
        return super().export(request, **kw)


def test_pages_shrink_when_items_are_large_and_grow_back(tmp_path: Path) -> None:
    big = "x" * (PAGE_BYTES // 3)
    items = [StoreItem.document(f"{n} {big}") for n in range(8)]
    items += [StoreItem.document(f"small {n}") for n in range(300)]
    engine = _Recording(str(_filled(tmp_path / "a.db", items)))
    with engine:
        read = [r.id for r in read_items(engine, MetaFilter())]
    assert len(read) == len(set(read)) == 308
    # 100 items first (8 large: ~21 MiB), then halved while pages stay large, then
    # doubled back to 100 once they are small.
    assert engine.limits[0] == 100
    assert engine.limits[1] == 50
    assert engine.limits[-1] == 100
    assert max(engine.limits) <= 100


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_export_replaces_an_earlier_file_private_to_the_user(
    cli: Runner, tmp_path: Path
) -> None:
    out = tmp_path / "backup.jsonl"
    out.write_text("old\n")
    out.chmod(0o644)
    source = _filled(tmp_path / "a.db", _every_kind())
    assert cli("--path", str(source), "export", str(out)).status == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert len(out.read_text().splitlines()) == 4


def test_an_overlong_or_undecodable_line_fails_alone(
    cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cortex_memory.cli import _jsonl

    monkeypatch.setattr(_jsonl, "MAX_LINE", 200)
    good = [
        json.dumps({"version": 1, "id": "a", "item": StoreItem.document(f"note {n}").to_json()})
        for n in range(3)
    ]
    long_line = json.dumps(
        {"version": 1, "id": "b", "item": StoreItem.document("x" * 500).to_json()}
    )
    export = tmp_path / "x.jsonl"
    export.write_bytes(
        "\n".join([good[0], long_line, good[1]]).encode() + b"\n\xff\xfe broken\n"
        + good[2].encode() + b"\n"
    )
    result = cli("--path", str(tmp_path / "b.db"), "import", str(export))
    assert result.status == 4
    assert result.out == "imported 3 items (3 new, 0 unchanged), failed 2\n"
    assert f"failed: {export}:2: longer than 200 characters" in result.err
    assert f"failed: {export}:4: not UTF-8 text" in result.err


def test_a_terminal_shows_the_lines_of_an_export_as_a_total(
    env: Dict[str, str], tmp_path: Path
) -> None:
    import io

    from cortex_memory.cli import main

    class _Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    source = _filled(tmp_path / "a.db", _every_kind())
    export = tmp_path / "x.jsonl"
    assert main(["--path", str(source), "export", str(export)], env=env,
                stdout=io.StringIO(), stderr=io.StringIO()) == 0
    lines = export.read_text(encoding="utf-8").splitlines()
    lines.append('{"version":1,"id":"x","item":{"type":"document","body":{"text":" "}}}')
    export.write_text("\n\n" + "\n\n".join(lines) + "\n\n\n", encoding="utf-8")  # blank lines
    err = _Tty()
    status = main(["--path", str(tmp_path / "b.db"), "import", str(export)], env=env,
                  stdout=io.StringIO(), stderr=err)
    assert status == 4  # the blank document is refused
    assert err.getvalue().split("\r")[-1].startswith("importing [####################] 5/5 100%")

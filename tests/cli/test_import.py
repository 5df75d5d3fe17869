"""`cortex-memory import`: folders and files as documents, exports read back, what is
skipped or fails, on real local databases and a CortexDB double."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cortex_memory import ListRequest, LocalEngine, MetaFilter
from cortex_memory.contract.limits import MAX_ITEM_BYTES
from cortex_memory.testing import DirectDouble

from .conftest import Result, Runner


def _ok(result: Result) -> Any:
    assert result.status == 0, result.err
    return json.loads(result.out)


def _items(db: Path) -> List[Dict[str, Any]]:
    with LocalEngine(str(db)) as engine:
        page = engine.export(ListRequest(MetaFilter(), 1000))
    return [{**e.item.to_json(), "id": e.id} for e in page.items]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A folder such as a person keeps: Markdown, text, and things to leave out."""
    root = tmp_path / "notes"
    _write(root / "plan.md", "# Release plan\n\nWe ship on Tuesdays.\n")
    _write(root / "sub" / "ops.txt", "Staging resets every Monday.\n")
    _write(root / ".env", "TOKEN=hidden\n")
    _write(root / ".git" / "HEAD", "ref: refs/heads/main\n")
    _write(root / "empty.md", "  \n")
    (root / "img").mkdir()
    (root / "img" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + os.urandom(500))
    (root / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    if hasattr(os, "symlink"):
        os.symlink(root / "plan.md", root / "link.md")
    return root


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


def test_a_folder_becomes_one_document_per_text_file(cli: Runner, notes: Path, db: Path) -> None:
    result = cli("--path", str(db), "import", str(notes))
    assert result.status == 0, result.err
    assert result.out == "imported 2 items (2 new, 0 unchanged), skipped 6\n"
    for skipped in (
        f"skipped {notes / '.env'}: hidden",
        f"skipped {notes / '.git'}{os.sep}: hidden",
        f"skipped {notes / 'empty.md'}: empty",
        f"skipped {notes / 'img' / 'logo.png'}: binary (not text)",
        f"skipped {notes / 'latin1.txt'}: not UTF-8 text",
        f"skipped {notes / 'link.md'}: a symbolic link (not followed)",
    ):
        assert f"cortex-memory: {skipped}\n" in result.err
    items = {item["meta"]["file_path"]: item for item in _items(db)}
    assert set(items) == {"plan.md", "sub/ops.txt"}
    plan = items["plan.md"]
    # The heading is the title, the rest the body: the item renders as the file does.
    assert (plan["title"], plan["body"], plan["mime"]) == (
        "Release plan", {"text": "We ship on Tuesdays.\n"}, "text/markdown"
    )
    assert plan["meta"]["source"] == {"kind": "file"}
    assert "observed_at" in plan["meta"]
    ops = items["sub/ops.txt"]
    assert (ops["title"], ops["body"]["text"], ops["mime"]) == (
        "ops", "Staging resets every Monday.\n", "text/plain"
    )
    assert "hidden" not in json.dumps(list(items.values()))  # no hidden file's text


def test_reimporting_an_edited_file_replaces_its_old_version(
    cli: Runner, notes: Path, db: Path
) -> None:
    assert cli("--path", str(db), "import", str(notes)).status == 0
    again = cli("--path", str(db), "import", str(notes))
    assert again.out.startswith("imported 2 items (0 new, 2 unchanged)")
    _write(notes / "plan.md", "# Release plan\n\nWe ship on Wednesdays now.\n")
    edited = cli("--path", str(db), "import", str(notes), "--json")
    summary = _ok(edited)
    assert (summary["imported"], summary["new"], summary["updated"], summary["unchanged"],
            summary["replaced"]) == (2, 0, 1, 1, 1)
    texts = sorted(item["body"]["text"] for item in _items(db))
    assert texts == ["Staging resets every Monday.\n", "We ship on Wednesdays now.\n"]
    found = _ok(cli("--path", str(db), "fetch", "ship", "--mode", "keyword", "--json"))
    assert [hit["text"] for hit in found["hits"]] == [
        "# Release plan\n\nWe ship on Wednesdays now.\n"
    ]


def test_no_replace_keeps_the_old_version(cli: Runner, notes: Path, db: Path) -> None:
    assert cli("--path", str(db), "import", str(notes)).status == 0
    _write(notes / "plan.md", "# Release plan\n\nWe ship on Wednesdays now.\n")
    kept = cli("--path", str(db), "import", str(notes), "--no-replace")
    assert kept.out.startswith("imported 2 items (1 new, 1 unchanged)")
    plans = [i for i in _items(db) if i["meta"]["file_path"] == "plan.md"]
    assert len(plans) == 2


def test_a_file_given_directly_is_named_by_its_name(cli: Runner, notes: Path, db: Path) -> None:
    first = cli("--path", str(db), "import", str(notes / "sub" / "ops.txt"))
    assert first.status == 0, first.err
    assert [i["meta"]["file_path"] for i in _items(db)] == ["ops.txt"]
    # Hidden files are taken when named: the user asked for that one.
    hidden = cli("--path", str(db), "import", str(notes / ".env"))
    assert hidden.status == 0
    assert ".env" in {i["meta"]["file_path"] for i in _items(db)}


def test_file_paths_never_hold_a_local_folder_on_the_wire(
    cli: Runner, env: Dict[str, str], notes: Path, tmp_path: Path
) -> None:
    env["CORTEX_MEMORY_API_KEY"] = "k"
    with DirectDouble() as double:
        where = ("--engine", "cortexdb", "--endpoint", double.url)
        done = cli(*where, "import", str(notes), "--prefix", "handbook")
        assert done.status == 0, done.err
        _write(notes / "sub" / "ops.txt", "Staging resets every Friday.\n")
        edited = cli(*where, "import", str(notes), "--prefix", "handbook", "--json")
        assert _ok(edited)["replaced"] == 1
        listed = _ok(cli(*where, "list", "--json"))
        sent = b"".join(double.state.seen.bodies) + "".join(double.state.requests()).encode()
    assert sorted(hit["text"].split("\n\n")[-1] for hit in listed["items"]) == [
        "Staging resets every Friday.\n", "We ship on Tuesdays.\n"
    ]
    assert str(tmp_path).encode() not in sent
    assert b"handbook/sub" not in sent  # only the file's name travels (engine.md 7.3)


def test_a_missing_path_is_a_usage_error_and_nothing_is_imported(
    cli: Runner, notes: Path, db: Path, tmp_path: Path
) -> None:
    result = cli("--path", str(db), "import", str(notes), str(tmp_path / "nope"))
    assert result.status == 2
    assert f"no such file or folder: {tmp_path / 'nope'}; nothing was imported" in result.err
    assert result.out == ""
    assert not db.exists() or _items(db) == []


def test_two_folders_with_one_file_path_do_not_replace_each_other(
    cli: Runner, db: Path, tmp_path: Path
) -> None:
    _write(tmp_path / "a" / "README.md", "Folder a explains itself.\n")
    _write(tmp_path / "b" / "README.md", "Folder b explains itself.\n")
    result = cli("--path", str(db), "import", str(tmp_path / "a"), str(tmp_path / "b"))
    assert result.status == 1
    assert (
        f"failed: {tmp_path / 'b' / 'README.md'}: has the file path `README.md` of "
        f"{tmp_path / 'a' / 'README.md'}" in result.err
    )
    assert result.out == "imported 1 item (1 new, 0 unchanged), failed 1\n"
    assert [i["body"]["text"] for i in _items(db)] == ["Folder a explains itself.\n"]
    # With a prefix each is its own source.
    fixed = cli("--path", str(db), "import", str(tmp_path / "b"), "--prefix", "b/")
    assert fixed.status == 0, fixed.err
    assert sorted(i["meta"]["file_path"] for i in _items(db)) == ["README.md", "b/README.md"]


@pytest.mark.parametrize("prefix", ["/home/ada", "~/notes", "C:\\notes", "a/../b", " / "])
def test_a_prefix_must_be_a_relative_path(cli: Runner, notes: Path, db: Path, prefix: str) -> None:
    result = cli("--path", str(db), "import", str(notes), "--prefix", prefix)
    assert result.status == 2
    assert "--prefix must" in result.err


def test_include_takes_only_matching_names(cli: Runner, notes: Path, db: Path) -> None:
    result = cli("--path", str(db), "import", str(notes), "--include", "*.txt", "--json")
    summary = _ok(result)
    assert [i["meta"]["file_path"] for i in _items(db)] == ["sub/ops.txt"]
    # Files left out by --include are not reported; hidden folders still are.
    assert {s["input"] for s in summary["skipped_inputs"]} == {
        f"{notes / '.git'}{os.sep}", str(notes / "latin1.txt"),
    }


def test_namespace_and_tags_reach_every_document(cli: Runner, notes: Path, db: Path) -> None:
    result = cli("--path", str(db), "import", str(notes), "--namespace", "team:acme",
                 "--tag", "handbook", "--tag", "v1")
    assert result.status == 0, result.err
    metas = [i["meta"] for i in _items(db)]
    assert all(m["namespace"] == "team:acme" and m["tags"] == ["handbook", "v1"] for m in metas)


def test_a_file_over_the_item_limit_fails_visibly(cli: Runner, db: Path, tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    (big / "huge.txt").write_bytes(b"a" * (MAX_ITEM_BYTES + 1))
    _write(big / "small.txt", "small and fine\n")
    result = cli("--path", str(db), "import", str(big))
    assert result.status == 4
    assert f"failed: {big / 'huge.txt'}: larger than {MAX_ITEM_BYTES} bytes" in result.err
    assert result.out == "imported 1 item (1 new, 0 unchanged), failed 1\n"
    # At the limit it is one item (the title, `huge`, counts too).
    (big / "huge.txt").write_bytes(b"a" * (MAX_ITEM_BYTES - len("huge")))
    assert cli("--path", str(db), "import", str(big)).status == 0


def test_json_mode_prints_only_the_summary(cli: Runner, notes: Path, db: Path) -> None:
    result = cli("--path", str(db), "import", str(notes), "--json")
    summary = _ok(result)
    assert summary["imported"] == 2
    assert summary["skipped"] == 6
    assert summary["failed"] == 0
    assert {"input": str(notes / "empty.md"), "reason": "empty"} in summary["skipped_inputs"]
    assert "importing" not in result.err
    assert "skipped" not in result.err


# ------------------------------------------------------------------ engine failures


def test_an_engine_that_stops_answering_stops_the_import_and_a_rerun_resumes(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    env["CORTEX_MEMORY_API_KEY"] = "k"
    folder = tmp_path / "many"
    for n in range(5):
        _write(folder / f"n{n}.md", f"note {n}\n")
    with DirectDouble() as double:
        where = ("--engine", "cortexdb", "--endpoint", double.url)
        double.state.fail_all = (401, "UNAUTHORIZED")
        refused = cli(*where, "import", str(folder))
        assert refused.status == 5
        assert "cortex-memory: stopped: unauthorized" in refused.err
        assert "run the same command again to go on" in refused.err
        assert refused.out == "imported 0 items (0 new, 0 unchanged)\n"
        double.state.fail_all = None
        resumed = cli(*where, "import", str(folder))
        assert resumed.status == 0, resumed.err
        assert resumed.out.startswith("imported 5 items (5 new, 0 unchanged)")


def test_a_refused_bulk_write_is_retried_item_by_item_and_nothing_is_lost(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    env["CORTEX_MEMORY_API_KEY"] = "k"
    folder = tmp_path / "many"
    for n in range(5):
        _write(folder / f"n{n}.md", f"note {n}\n")
    with DirectDouble() as double:
        where = ("--engine", "cortexdb", "--endpoint", double.url)
        # The third write of the bulk is refused (400 VALIDATION_ERROR), after the
        # double applied the first two; the error reports none of them stored.
        double.state.fail_nth_experience = 3
        done = cli(*where, "import", str(folder), "--json")
        summary = _ok(done)
        assert (summary["imported"], summary["new"], summary["unchanged"]) == (5, 3, 2)
        listed = _ok(cli(*where, "list", "--json"))
    assert sorted(hit["text"].split("\n\n")[-1] for hit in listed["items"]) == [
        f"note {n}\n" for n in range(5)
    ]


def test_a_database_in_a_missing_folder_imports_nothing(
    cli: Runner, notes: Path, tmp_path: Path
) -> None:
    result = cli("--path", str(tmp_path / "no" / "m.db"), "import", str(notes))
    assert result.status == 2
    assert "the folder of --path does not exist" in result.err


@pytest.mark.parametrize(
    ("name", "text", "title", "body"),
    [
        ("a.md", "\n\n# Title here #\n\n\nBody.\n", "Title here", "Body.\n"),
        ("b.md", "## A subheading\n\nBody.\n", "b", "## A subheading\n\nBody.\n"),
        ("c.md", "#NoSpace\n\nBody.\n", "c", "#NoSpace\n\nBody.\n"),
        ("d.md", "# Only a heading\n", "d", "# Only a heading\n"),
        ("e.txt", "# Not Markdown\n\nBody.\n", "e", "# Not Markdown\n\nBody.\n"),
        ("README", "plain text\r\nwith CRLF\r\n", "README", "plain text\r\nwith CRLF\r\n"),
        ("f.markdown", "\ufeff# With a BOM\n\nBody.\n", "With a BOM", "Body.\n"),
    ],
)
def test_titles_and_bodies(
    cli: Runner, tmp_path: Path, name: str, text: str, title: str, body: str
) -> None:
    path = tmp_path / "in" / name
    path.parent.mkdir()
    path.write_bytes(text.encode("utf-8"))
    db = tmp_path / "m.db"
    assert cli("--path", str(db), "import", str(path)).status == 0
    (item,) = _items(db)
    assert (item["title"], item["body"]["text"]) == (title, body)

"""The CLI's traps, closed: piped newlines, short ids, forgetting nothing, typo'd paths,
misspelt config tables. Run in-process on real local databases (and a CortexDB double)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from cortex_memory import (
    CortexEngine,
    EngineCredential,
    ListRequest,
    LocalEngine,
    MemoryEngine,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    StoreItem,
)
from cortex_memory.cli._ids import SCAN_LIMIT, resolve_ids
from cortex_memory.cli._select import UsageError
from cortex_memory.errors import NotFoundError
from cortex_memory.testing import DirectDouble

from .conftest import Result, Runner

# Two documents whose ids share their first eight hex digits (found by a
# birthday search over "collision probe <n>"): `2f1cf6a1` names both.
TWIN_A = "collision probe 4402"
TWIN_B = "collision probe 75353"
TWIN_PREFIX = "2f1cf6a1"


def _ok(result: Result) -> Any:
    assert result.status == 0, result.err
    return json.loads(result.out)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "memory.sqlite3")


@pytest.fixture
def run(cli: Runner, db: str) -> Runner:
    def go(*argv: str, **kw: Any) -> Result:
        return cli(*argv, "--path", db, **kw)

    return go


def _count(run: Runner) -> int:
    return len(_ok(run("list", "--json", "--limit", "1000"))["items"])


def test_the_twins_really_share_their_prefix() -> None:
    a, b = (StoreItem.document(t).fingerprint() for t in (TWIN_A, TWIN_B))
    assert a[:8] == b[:8] == TWIN_PREFIX
    assert a[8] != b[8]


# ----------------------------------------------------------------- stdin


@pytest.mark.parametrize(
    ("piped", "stored"),
    [
        ("a note\n", "a note"),
        ("a note\r\n", "a note"),
        ("a note", "a note"),
        ("a note\n\n", "a note\n"),  # one newline only: a blank last line is content
        ("line one\nline two\n", "line one\nline two"),
    ],
)
def test_piped_text_loses_one_trailing_newline(run: Runner, piped: str, stored: str) -> None:
    receipt = _ok(run("store", "--json", stdin=piped))
    assert receipt["id"] == StoreItem.document(stored).fingerprint()
    got = _ok(run("get", receipt["id"], "--json"))
    assert got[0]["text"] == stored


def test_echo_and_argument_give_the_same_item(run: Runner) -> None:
    first = _ok(run("store", "--json", "--tag", "t", stdin="Deploys need two approvals\n"))
    second = _ok(run("store", "Deploys need two approvals", "--tag", "t", "--json"))
    assert second == {"id": first["id"], "replayed": True}


def test_a_file_keeps_its_newline(run: Runner, tmp_path: Path) -> None:
    file = tmp_path / "note.txt"
    file.write_text("a note\n", encoding="utf-8")
    receipt = _ok(run("store", "--file", str(file), "--json"))
    assert receipt["id"] == StoreItem.document("a note\n").fingerprint()


# ---------------------------------------------------------- id prefixes


def _store(run: Runner, text: str) -> str:
    return str(_ok(run("store", text, "--json"))["id"])


def test_get_and_forget_take_an_eight_digit_prefix(run: Runner) -> None:
    item_id = _store(run, "Releases ship on Tuesday mornings")
    other = _store(run, "The user prefers short answers")
    got = _ok(run("get", item_id[:8], "--json"))
    assert [hit["id"] for hit in got] == [item_id]
    text = run("get", item_id[:12].upper())  # capitals name the same id
    assert text.status == 0
    assert item_id in text.out
    # Several, mixed with a whole id, in the order given.
    got = _ok(run("get", f"{other[:10]},{item_id}", "--json"))
    assert [hit["id"] for hit in got] == [other, item_id]
    assert run("forget", item_id[:8]).out == "forgot 1 item\n"
    assert [h["id"] for h in _ok(run("list", "--json"))["items"]] == [other]


def test_an_ambiguous_prefix_is_a_usage_error_and_nothing_is_forgotten(run: Runner) -> None:
    a, b = _store(run, TWIN_A), _store(run, TWIN_B)
    for command in ("get", "forget"):
        result = run(command, TWIN_PREFIX)
        assert result.status == 2
        assert result.out == ""
        assert result.err.startswith(
            f"cortex-memory: id prefix `{TWIN_PREFIX}` matches 2 items ("
        )
        assert a[:16] in result.err
        assert b[:16] in result.err
        assert "give more characters" in result.err
    assert _count(run) == 2
    # One more digit tells them apart.
    assert _ok(run("get", a[:9], "--json"))[0]["id"] == a
    assert run("forget", b[:9]).out == "forgot 1 item\n"
    assert [h["id"] for h in _ok(run("list", "--json"))["items"]] == [a]


def test_an_unknown_prefix_is_not_found_and_stops_the_whole_command(run: Runner) -> None:
    item_id = _store(run, "kept")
    unknown = "0123abcd" if not item_id.startswith("0123abcd") else "fedc9876"
    for command in ("get", "forget"):
        result = run(command, item_id, unknown)
        assert result.status == 6
        assert result.out == ""
        assert result.err == f"cortex-memory: not found: no item id starts with `{unknown}`\n"
    assert _count(run) == 1


@pytest.mark.parametrize("token", ["3f2a9c1", "abc", "0"])
def test_a_prefix_shorter_than_eight_digits_is_refused(run: Runner, token: str) -> None:
    _store(run, "kept")
    for command in ("get", "forget"):
        result = run(command, token)
        assert result.status == 2
        assert f"id `{token}` is too short: give at least 8 hex characters" in result.err
    assert _count(run) == 1


def test_every_problem_is_named_in_one_message(run: Runner) -> None:
    _store(run, TWIN_A), _store(run, TWIN_B)
    result = run("forget", TWIN_PREFIX, "00000000")
    assert result.status == 2  # a usage problem outranks a missing id
    assert f"id prefix `{TWIN_PREFIX}` matches 2 items" in result.err
    assert "no item id starts with `00000000`" in result.err
    assert _count(run) == 2


def test_non_hex_ids_and_whole_ids_pass_unchanged(run: Runner) -> None:
    result = run("get", "not-an-id", "z" * 40)
    assert result.status == 6
    assert "not found: not-an-id" in result.err


def test_get_resolves_prefixes_inside_its_reach(run: Runner) -> None:
    inside = _ok(run("store", "in acme", "--namespace", "team:acme", "--json"))["id"]
    assert _ok(run("get", inside[:8], "--namespace", "team:acme", "--reach", "exact",
                   "--json"))[0]["id"] == inside
    result = run("get", inside[:8], "--namespace", "team:other", "--reach", "exact")
    assert result.status == 6
    assert f"no item id starts with `{inside[:8]}`" in result.err


# ------------------------------------------------------ forget exit status


def test_forget_of_ids_that_match_nothing_exits_6(run: Runner) -> None:
    kept = _store(run, "kept")
    gone = _store(run, "gone")
    missing = "f" * 40
    result = run("forget", gone, missing)
    assert result.status == 6
    assert result.out == "forgot 1 item\n"
    assert result.err == "cortex-memory: 1 of the 2 ids given matched no item\n"
    # The same id twice counts once.
    result = run("forget", kept, kept, "--json")
    assert (result.status, json.loads(result.out)) == (0, {"forgotten": 1})
    result = run("forget", missing)
    assert (result.status, result.out) == (6, "forgot 0 items\n")


# ------------------------------------------------------------- --path


def test_a_path_in_a_missing_folder_is_refused_and_creates_nothing(
    cli: Runner, tmp_path: Path
) -> None:
    typo = tmp_path / "notse" / "deep" / "memory.sqlite3"
    for argv in (["store", "x"], ["list"], ["demo"], ["mcp"]):
        result = cli(*argv, "--path", str(typo))
        assert result.status == 2, argv
        assert result.err == (
            f"cortex-memory: the folder of --path does not exist: {typo.parent}; "
            "check the path, or add --create to create it\n"
        )
    assert not (tmp_path / "notse").exists()


def test_create_makes_the_folder_private(cli: Runner, tmp_path: Path) -> None:
    database = tmp_path / "new" / "deep" / "memory.sqlite3"
    result = cli("store", "x", "--path", str(database), "--create", "--json")
    assert result.status == 0, result.err
    assert database.is_file()
    if sys.platform != "win32":
        for folder in (tmp_path / "new", tmp_path / "new" / "deep"):
            assert folder.stat().st_mode & 0o777 == 0o700
    # --create before the command works too, and a second run needs no flag.
    assert cli("--create", "list", "--path", str(database)).status == 0
    assert cli("list", "--path", str(database)).status == 0


def test_a_bare_file_name_and_memory_need_no_folder(
    cli: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli("store", "x", "--path", "here.sqlite3").status == 0
    assert (tmp_path / "here.sqlite3").is_file()
    assert cli("list", "--path", ":memory:").status == 0


def test_the_default_per_user_database_is_still_created(
    cli: Runner, env: Dict[str, str]
) -> None:
    result = cli("store", "x")
    assert result.status == 0
    assert "using the local engine at" in result.err
    assert (Path(env["CORTEX_MEMORY_HOME"]) / "memory.sqlite3").is_file()


def test_a_path_through_a_file_is_refused(cli: Runner, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("")
    result = cli("list", "--path", str(plain / "memory.sqlite3"))
    assert result.status == 2
    assert "the folder of --path does not exist" in result.err
    result = cli("list", "--path", str(plain / "memory.sqlite3"), "--create")
    assert result.status == 3
    assert "cannot create the folder" in result.err


# ---------------------------------------------------------- config file


def test_a_misspelt_table_is_a_warning_on_stderr(cli: Runner, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[engnes.local]\npath = "elsewhere.sqlite3"\n[engines.local]\npaht = "x"\n',
        encoding="utf-8",
    )
    result = cli("--config", str(config), "--engine", "local", "list")
    assert result.status == 0
    assert result.err.splitlines()[:2] == [
        f"cortex-memory: warning: config file {config}: field `engnes` is unknown and "
        "ignored; did you mean `engines`?",
        f"cortex-memory: warning: config file {config}: field `engines.local.paht` is "
        "unknown and ignored; did you mean `path`?",
    ]


def test_a_config_with_a_huge_number_exits_3_naming_the_file(
    cli: Runner, tmp_path: Path
) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"engine": ' + "1" * 100_000 + "}", encoding="utf-8")
    result = cli("--config", str(config), "list")
    assert result.status == 3
    assert result.err == (
        f"cortex-memory: configuration error: config file {config}: not valid JSON: "
        "a number longer than 100 digits\n"
    )


# -------------------------------------------- resolution on every engine


@pytest.fixture(params=["local", "direct"])
def engine(request: pytest.FixtureRequest) -> Any:
    if request.param == "local":
        with LocalEngine(":memory:") as local:
            yield local, None
        return
    with DirectDouble() as double:
        with CortexEngine.direct(double.url, EngineCredential.static("ctx_test")) as cortex:
            yield cortex, double


def test_resolution_works_through_the_contract_on_every_engine(engine: Any) -> None:
    eng, double = engine
    a = eng.store(StoreItem.document(TWIN_A)).id
    b = eng.store(StoreItem.document(TWIN_B)).id
    c = eng.store(StoreItem.document("solo", MemoryMeta(namespace=Namespace.parse("user:ann")))).id
    assert resolve_ids(eng, [c[:8], a[:9], b]) == [c, a, b]
    with pytest.raises(UsageError, match=f"`{TWIN_PREFIX}` matches 2 items"):
        resolve_ids(eng, [TWIN_PREFIX])
    with pytest.raises(NotFoundError, match=f"no item id starts with `{c[:8]}`"):
        resolve_ids(eng, [c[:8]], Reach.exact(Namespace.root()))
    if double is not None:
        # A whole id costs nothing: no listing is read at all.
        before = double.state.count("GET /v1/events")
        assert resolve_ids(eng, [a, b]) == [a, b]
        assert double.state.count("GET /v1/events") == before


class _Endless(MemoryEngine):
    """An engine listing the same page for ever, with a fresh cursor each time."""

    def __init__(self) -> None:
        self.pages = 0
        self._inner = LocalEngine(":memory:")
        for n in range(200):
            self._inner.store(StoreItem.document(f"endless {n}"))

    def descriptor(self) -> Any:
        return self._inner.descriptor()

    def health(self) -> Any:
        return self._inner.health()

    def recall(self, request: Any) -> Any:
        raise AssertionError

    def fetch(self, request: Any) -> Any:
        raise AssertionError

    def store(self, item: Any, **kw: Any) -> Any:
        raise AssertionError

    def forget(self, target: Any) -> Any:
        raise AssertionError

    def list(self, request: Any) -> Any:
        from dataclasses import replace

        self.pages += 1
        page = self._inner.list(replace(request, cursor=None))
        return replace(page, next_cursor=f"page-{self.pages}")


def test_the_walk_stops_at_the_scan_limit_and_asks_for_the_whole_id() -> None:
    endless = _Endless()
    first = endless._inner.list(ListRequest.new(MetaFilter(), 1)).items[0].id
    with pytest.raises(UsageError, match=f"cannot be resolved within the first {SCAN_LIMIT}"):
        resolve_ids(endless, [first[:8]])
    assert endless.pages == SCAN_LIMIT // 200
    with pytest.raises(UsageError, match="cannot be resolved"):
        resolve_ids(endless, ["00000000"])

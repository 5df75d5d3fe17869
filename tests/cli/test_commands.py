"""The everyday commands, run in-process on a real local database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from cortex_memory.cli import EXIT_CODES, exit_code
from cortex_memory.cli._commands import health_status
from cortex_memory.contract import (
    Conversation,
    Document,
    EngineHealth,
    Learning,
    LearningKind,
    MemoryMeta,
    Namespace,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.errors import (
    ConfigError,
    ConflictError,
    EngineError,
    Error,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
)
from cortex_memory.testing import DirectDouble, unused_url

Runner = Callable[..., Any]  # the `cli` fixture of conftest.py


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "memory.sqlite3")


@pytest.fixture
def run(cli: Runner, db: str) -> Runner:
    """Like ``cli`` but always on the test's database (so no fallback note)."""

    def go(*argv: str, **kw: Any) -> Any:
        return cli(*argv, "--path", db, **kw)

    return go


def _json(result: Any) -> Any:
    assert result.status == 0, result.err
    assert result.err == ""
    return json.loads(result.out)


# -------------------------------------------------------------------- store


def test_store_a_document_prints_created_then_replayed(run: Runner) -> None:
    first = run("store", "The", "team", "ships", "on", "Tuesdays", "--tag", "release")
    expected = Document(TextBody("The team ships on Tuesdays"),
                        meta=MemoryMeta(tags=("release",))).fingerprint()
    assert first.status == 0
    assert first.out.split() == ["created", "document", expected, "The", "team", "ships", "on",
                                 "Tuesdays"]
    again = run("store", "The team ships on Tuesdays", "--tag", "release")
    assert again.out.split()[:3] == ["replayed", "document", expected]


def test_store_json_receipt_is_the_contract_shape(run: Runner) -> None:
    receipt = _json(run("store", "--json", "hello"))
    assert receipt == {"id": StoreItem.document("hello").fingerprint(), "replayed": False}


def test_store_a_learning(run: Runner) -> None:
    receipt = _json(run(
        "store", "Prefers short answers", "--kind", "preference", "--confidence", "0.9",
        "--evidence", "said so", "--namespace", "user:alice", "--json",
    ))
    item = Learning("Prefers short answers", LearningKind.PREFERENCE, 0.9, "said so",
                    MemoryMeta(namespace=Namespace.parse("user:alice")))
    assert receipt["id"] == item.fingerprint()
    (hit,) = _json(run("get", receipt["id"], "--json"))
    assert hit["kind"] == "learning"
    assert hit["confidence"] == 0.9
    assert hit["meta"]["namespace"] == "user:alice"


def test_store_learning_defaults(run: Runner) -> None:
    receipt = _json(run("store", "--type", "learning", "a fact", "--json"))
    assert receipt["id"] == StoreItem.learning("a fact", LearningKind.FACT, 0.8).fingerprint()


def test_store_a_conversation(run: Runner) -> None:
    receipt = _json(run(
        "store", "--turn", "user: which port?", "--turn", "assistant:8080",
        "--thread-id", "t-1", "--json",
    ))
    item = Conversation(
        (Turn(Role.USER, "which port?"), Turn(Role.ASSISTANT, "8080")),
        MemoryMeta(thread_id="t-1"),
    )
    assert receipt["id"] == item.fingerprint()


def test_store_from_a_file_and_from_stdin(run: Runner, tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nline one\n", encoding="utf-8")
    from_file = _json(run("store", "--file", str(notes), "--title", "Notes",
                          "--mime", "text/markdown", "--json"))
    expected = Document(TextBody("# Notes\n\nline one\n"), "Notes", "text/markdown")
    assert from_file["id"] == expected.fingerprint()
    # stdin loses the one trailing newline `echo` adds: the same id as the argument.
    piped = _json(run("store", "--json", stdin="piped text\n"))
    assert piped["id"] == StoreItem.document("piped text").fingerprint()
    dash = _json(run("store", "--file", "-", "--json", stdin="piped text\n"))
    assert dash == {"id": piped["id"], "replayed": True}
    argument = _json(run("store", "piped text", "--json"))
    assert argument == {"id": piped["id"], "replayed": True}


def test_store_a_whole_item_as_json(run: Runner, tmp_path: Path) -> None:
    item = StoreItem.learning("from json", LearningKind.CORRECTION, 0.5)
    path = tmp_path / "item.json"
    path.write_text(json.dumps(item.to_json()), encoding="utf-8")
    assert _json(run("store", "--item", str(path), "--json"))["id"] == item.fingerprint()
    assert _json(run("store", "--item", "-", "--json",
                     stdin=json.dumps(item.to_json())))["replayed"] is True


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (["store"], 2, "nothing to store"),
        (["store", "x", "--file", "y"], 2, "not both"),
        (["store", "--turn", "nocolon"], 2, "ROLE:TEXT"),
        (["store", "--turn", "robot:hi"], 2, "unknown role `robot`"),
        (["store", "x", "--turn", "user:hi"], 2, "not TEXT"),
        (["store", "--type", "conversation"], 2, "at least one --turn"),
        (["store", "x", "--kind", "fact", "--title", "t"], 2, "for documents"),
        (["store", "x", "--type", "document", "--confidence", "0.5"], 2, "for learnings"),
        (["store", "--item", "-", "x"], 2, "drop TEXT"),
        (["store", "--file", "/no/such/file"], 2, "cannot read /no/such/file"),
        (["store", "   "], 4, "invalid request: document body must not be empty"),
        (["store", "x", "--confidence", "1.5"], 4, "confidence must be between 0 and 1"),
        (["store", "--namespace", "robot:x", "y"], 2, "namespace"),
        (["store", "--observed-at", "yesterday", "y"], 2, "invalid timestamp"),
    ],
)
def test_store_refusals(run: Runner, argv: List[str], status: int, message: str) -> None:
    result = run(*argv, tty=True)
    assert result.status == status, result.err
    assert message in result.err
    assert result.out == ""
    assert "Traceback" not in result.err


def test_store_item_json_errors_are_invalid_requests(run: Runner) -> None:
    bad = run("store", "--item", "-", stdin="{not json")
    assert bad.status == 4
    assert "not valid JSON" in bad.err
    shape = run("store", "--item", "-", stdin='{"type": "poem"}')
    assert shape.status == 4
    assert "unknown item type `poem`" in shape.err


def test_store_metadata_flags(run: Runner) -> None:
    receipt = _json(run(
        "store", "meta", "--workspace", "ws", "--folder", "/a", "--file-path", "/a/b.py",
        "--language", "python", "--repo", "o/r", "--commit", "abc", "--url", "https://x.test",
        "--agent-id", "bot", "--tool-call", "grep", "--source", "file", "--source-id", "s1",
        "--observed-at", "2025-01-02", "--no-derive", "--tag", "a", "--tag", "b", "--tag", "a",
        "--json",
    ))
    (hit,) = _json(run("get", receipt["id"], "--json"))
    assert hit["meta"] == {
        "workspace": "ws", "folder": "/a", "file_path": "/a/b.py", "language": "python",
        "repo": "o/r", "commit": "abc", "url": "https://x.test", "agent_id": "bot",
        "tool_call": {"name": "grep"}, "source": {"kind": "file", "id": "s1"},
        "tags": ["a", "b"], "observed_at": "2025-01-02T00:00:00Z", "derive": False,
    }


# ------------------------------------------------------------- list / get


def _seed(run: Runner) -> Dict[str, str]:
    ids = {}
    ids["doc"] = _json(run("store", "release checklist and changelog", "--tag", "rel",
                           "--json"))["id"]
    ids["fact"] = _json(run("store", "--kind", "fact", "ships on tuesday", "--tag", "rel",
                            "--namespace", "team:acme", "--json"))["id"]
    ids["chat"] = _json(run("store", "--turn", "user:hello", "--turn", "assistant:hi",
                            "--json"))["id"]
    return ids


def test_list_text_and_json(run: Runner) -> None:
    ids = _seed(run)
    text = run("list")
    assert text.status == 0
    lines = text.out.splitlines()
    assert len(lines) == 3
    assert {line.split()[0] for line in lines} == set(ids.values())
    assert any("[team:acme] ships on tuesday" in line for line in lines)
    page = _json(run("list", "--json"))
    assert {hit["id"] for hit in page["items"]} == set(ids.values())
    assert all(hit["score"] == 0.0 for hit in page["items"])


def test_list_pages_with_a_cursor(run: Runner) -> None:
    ids = _seed(run)
    seen: List[str] = []
    cursor = None
    for _ in range(5):
        argv = ["list", "--limit", "1", "--json"] + (["--cursor", cursor] if cursor else [])
        page = _json(run(*argv))
        seen += [hit["id"] for hit in page["items"]]
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids.values())
    text = run("list", "--limit", "1")
    assert "more: cortex-memory list --cursor " in text.out


def test_list_filters(run: Runner) -> None:
    ids = _seed(run)
    def listed(*flags: str) -> List[str]:
        return sorted(hit["id"] for hit in _json(run("list", "--json", *flags))["items"])

    assert listed("--tag", "rel") == sorted([ids["doc"], ids["fact"]])
    assert listed("--type", "conversation") == [ids["chat"]]
    assert listed("--type", "conversation", "--type", "learning") == sorted(
        [ids["chat"], ids["fact"]])
    assert listed("--namespace", "team:acme", "--reach", "exact") == [ids["fact"]]
    # `of` (default) also sees the root, where the other two live.
    assert listed("--namespace", "team:acme") == sorted(ids.values())
    assert listed("--tag", "none") == []
    assert run("list", "--tag", "none").out == "no items\n"


def test_get_shows_items_in_full_and_in_order(run: Runner) -> None:
    ids = _seed(run)
    text = run("get", ids["fact"], ids["doc"])
    assert text.status == 0
    blocks = text.out.split("\n\n")
    assert blocks[0].startswith(f"id:          {ids['fact']}\ntype:        learning\n")
    assert "confidence:  0.8" in blocks[0]
    assert "namespace:   team:acme" in blocks[0]
    assert "tags:        rel" in blocks[0]
    assert blocks[1].startswith(f"id:          {ids['doc']}")
    assert "  release checklist and changelog" in blocks[1]
    hits = _json(run("get", ids["chat"], ids["doc"], "--json"))
    assert [h["id"] for h in hits] == [ids["chat"], ids["doc"]]


def test_get_reports_missing_ids_with_status_6(run: Runner) -> None:
    ids = _seed(run)
    missing = "0" * 40
    result = run("get", ids["doc"], missing, "--json")
    assert result.status == 6
    assert [h["id"] for h in json.loads(result.out)] == [ids["doc"]]
    assert result.err == f"cortex-memory: not found: {missing}\n"


def test_get_with_reach(run: Runner) -> None:
    ids = _seed(run)
    result = run("get", ids["fact"], "--namespace", "user:bob", "--reach", "exact", "--json")
    assert result.status == 6
    assert json.loads(result.out) == []


# ---------------------------------------------------------- fetch / recall


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_fetch_every_mode(run: Runner, mode: str) -> None:
    ids = _seed(run)
    page = _json(run("fetch", "release", "checklist", "--mode", mode, "--json"))
    assert page["hits"][0]["id"] == ids["doc"]
    scores = [hit["score"] for hit in page["hits"]]
    assert scores == sorted(scores, reverse=True)
    text = run("fetch", "release checklist", "--mode", mode)
    first = text.out.splitlines()[0].split()
    assert first[1] == ids["doc"]
    assert float(first[0]) > 0


def test_fetch_with_filter_and_no_hits(run: Runner) -> None:
    _seed(run)
    assert _json(run("fetch", "release", "--tag", "none", "--json")) == {"hits": []}
    assert run("fetch", "release", "--tag", "none").out == "no hits\n"


def test_recall_cites_stored_items(run: Runner) -> None:
    ids = _seed(run)
    answer = _json(run("recall", "when", "do", "we", "ship?", "--json"))
    assert answer["answer"].strip()
    cited = [c["id"] for c in answer["citations"]]
    assert cited
    assert set(cited) <= set(ids.values())
    text = run("recall", "when do we ship?")
    assert f"citations ({len(cited)}):" in text.out
    assert f"[1] {cited[0]}" in text.out


def test_recall_limit_and_blank_question(run: Runner) -> None:
    _seed(run)
    answer = _json(run("recall", "release", "--limit", "1", "--json"))
    assert len(answer["citations"]) <= 1
    blank = run("recall", "  ")
    assert blank.status == 4
    assert "recall question must not be empty" in blank.err
    zero = run("recall", "x", "--limit", "0")
    assert zero.status == 2


# ------------------------------------------------------------------ forget


def test_forget_by_id_and_by_filter(run: Runner) -> None:
    ids = _seed(run)
    assert run("forget", ids["chat"]).out == "forgot 1 item\n"
    again = run("forget", ids["chat"], "--json")
    assert (again.status, json.loads(again.out)) == (6, {"forgotten": 0})
    assert again.err == "cortex-memory: the id given matched no item\n"
    assert run("forget", "--tag", "rel").out == "forgot 2 items\n"
    assert _json(run("list", "--json")) == {"items": []}
    # A filter that selects nothing is not a mistake.
    assert run("forget", "--tag", "rel").status == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["forget"], "never forgets everything"),
     (["forget", "abc", "--tag", "x"], "not both")],
)
def test_forget_refuses_ambiguity(run: Runner, argv: List[str], message: str) -> None:
    _seed(run)
    result = run(*argv)
    assert result.status == 2
    assert message in result.err
    assert len(_json(run("list", "--json"))["items"]) == 3


# --------------------------------------------------------- health / engines


def test_health(run: Runner) -> None:
    assert run("health").out == "local: ok\n"
    assert _json(run("health", "--json")) == {"state": "ok"}


def test_health_down_exits_1(cli: Runner, tmp_path: Path) -> None:
    # A folder where the database file should be: the engine cannot open it.
    folder = tmp_path / "a-folder.sqlite3"
    folder.mkdir()
    result = cli("health", "--path", str(folder))
    assert result.status == 1
    assert result.out.startswith("local: down: ")


def test_health_exit_status_tells_a_rejected_key_and_an_unreachable_engine_apart(
    cli: Runner, env: Dict[str, str]
) -> None:
    wrong = "ctx_cli_wrong_key_canary"
    env["CORTEX_MEMORY_API_KEY"] = wrong
    with DirectDouble(whoami_caller="user:local", accept_token="the-right-key") as double:
        refused = cli("--engine", "cortexdb", "health", "--endpoint", double.url)
        refused_json = cli("--engine", "cortexdb", "health", "--json", "--endpoint", double.url)
        env["CORTEX_MEMORY_API_KEY"] = "the-right-key"
        accepted = cli("--engine", "cortexdb", "health", "--endpoint", double.url)
    assert (refused.status, refused_json.status, accepted.status) == (5, 5, 0)
    assert refused.out.startswith("cortexdb: down: unauthorized: ")
    assert json.loads(refused_json.out)["state"] == "down"
    assert accepted.out == "cortexdb: ok\n"
    unreachable = cli("--engine", "cortexdb", "health", "--endpoint", unused_url())
    assert unreachable.status == 8
    assert unreachable.out.startswith("cortexdb: degraded: unavailable: ")
    for result in (refused, refused_json, unreachable):
        assert wrong not in result.out + result.err


def test_health_status_of_each_state() -> None:
    assert health_status(EngineHealth.ok()) == 0
    assert health_status(EngineHealth.degraded("unavailable: timed out")) == 8
    assert health_status(EngineHealth.down("unauthorized: the key was rejected")) == 5
    assert health_status(EngineHealth.down("engine error: HTTP 418")) == 1


def test_engines_lists_without_building(cli: Runner, env: Dict[str, str]) -> None:
    text = cli("engines")
    assert text.status == 0
    assert text.err == ""
    assert "local  Local (SQLite)" in text.out
    assert "needs: nothing (no account)" in text.out
    listed = json.loads(cli("engines", "--json").out)
    assert listed[-1]["id"] == "local"
    assert not Path(env["CORTEX_MEMORY_HOME"]).exists()


# ---------------------------------------------------------- global behaviour


def test_json_flag_before_or_after_the_command(cli: Runner, db: str) -> None:
    before = cli("--json", "--path", db, "store", "x")
    after = cli("store", "x", "--json", "--path", db)
    assert json.loads(before.out)["replayed"] is False
    assert json.loads(after.out)["replayed"] is True


def test_control_characters_in_stored_text_are_not_sent_to_the_terminal(run: Runner) -> None:
    receipt = _json(run("store", "evil \x1b[31mred\x1b[0m \x07bell \u009b", "--json"))
    for argv in (["list"], ["get", receipt["id"]], ["fetch", "evil"], ["recall", "evil"]):
        out = run(*argv).out
        assert "\x1b" not in out
        assert "\x07" not in out
        assert "\u009b" not in out
        assert "\\x1b[31mred" in out
    # JSON keeps the exact text, escaped by the JSON writer.
    (hit,) = _json(run("get", receipt["id"], "--json"))
    assert hit["text"] == "evil \x1b[31mred\x1b[0m \x07bell \u009b"


def test_no_command_prints_help_and_exits_2(cli: Runner) -> None:
    result = cli()
    assert result.status == 2
    assert "demo" in result.err
    assert result.out == ""


def test_help_and_version_exit_0_on_stdout(cli: Runner) -> None:
    helped = cli("--help")
    assert helped.status == 0
    assert "CORTEX_MEMORY_API_KEY" in helped.out
    assert cli("store", "--help").out.startswith("usage: cortex-memory store")
    version = cli("--version")
    assert (version.status, version.out) == (0, "cortex-memory 0.1.0\n")


def test_unknown_command_and_option_are_usage_errors(cli: Runner) -> None:
    for argv in (["bogus"], ["list", "--bogus"], ["list", "--limit", "zero"]):
        result = cli(*argv)
        assert result.status == 2
        assert "cortex-memory: error:" in result.err


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError("x"), 3), (InvalidRequestError("x"), 4), (UnauthorizedError("x"), 5),
        (NotFoundError("x"), 6), (ConflictError("x"), 7), (UnavailableError("x"), 8),
        (UnsupportedError("x"), 9), (EngineError("x"), 10), (Error("x"), 1),
    ],
)
def test_exit_code_per_error_class(error: Error, code: int) -> None:
    assert exit_code(error) == code
    codes = [c for _, c in EXIT_CODES]
    assert len(codes) == len(set(codes))


# ------------------------------------------------------ edges of the runner


def test_recall_on_an_empty_database_says_so(run: Runner) -> None:
    result = run("recall", "anything stored?")
    assert result.status == 0
    assert result.out.rstrip().endswith("no citations")


def test_a_new_command_is_one_table_entry(cli: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    import cortex_memory.cli as cli_module
    from cortex_memory.cli import Command, Context

    seen: List[str] = []

    def configure(parser: Any) -> None:
        parser.add_argument("--session")

    def run_it(ctx: Context) -> int:
        seen.append(ctx.args.session)
        ctx.console.out("served")
        return 0

    extra = Command("extra", "an extra command for this test", configure, run_it)
    monkeypatch.setattr(cli_module, "COMMANDS", (*cli_module.COMMANDS, extra))
    result = cli("extra", "--session", "s-1")
    assert (result.status, result.out, seen) == (0, "served\n", ["s-1"])
    assert "an extra command for this test" in cli("--help").out


def test_interrupt_exits_130_without_a_traceback(cli: Runner,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import cortex_memory.cli as cli_module
    from cortex_memory.cli import Command

    def interrupted(ctx: Any) -> int:
        raise KeyboardInterrupt

    extra = Command("wait", "waits", lambda parser: None, interrupted)
    monkeypatch.setattr(cli_module, "COMMANDS", (*cli_module.COMMANDS, extra))
    result = cli("wait")
    assert result.status == 130
    assert result.err == "cortex-memory: interrupted\n"


def test_output_a_console_cannot_encode_is_escaped(db: str, env: Dict[str, str]) -> None:
    import io

    from cortex_memory.cli import main

    assert main(["store", "café ☕", "--path", db], env=env, stdout=io.StringIO(),
                stderr=io.StringIO()) == 0
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    assert main(["list", "--path", db], env=env, stdout=out, stderr=io.StringIO()) == 0
    out.flush()
    assert "caf\\xe9 \\u2615" in raw.getvalue().decode("ascii")


def test_stdin_that_is_not_text_is_a_usage_error(db: str, env: Dict[str, str]) -> None:
    import io

    from cortex_memory.cli import main

    stdin = io.TextIOWrapper(io.BytesIO(b"\xff\xfe\xfa"), encoding="utf-8")
    err = io.StringIO()
    status = main(["store", "--path", db], env=env, stdin=stdin, stdout=io.StringIO(), stderr=err)
    assert status == 2
    assert "stdin could not be decoded" in err.getvalue()


def test_input_files_must_be_utf8(run: Runner, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9".encode("latin-1"))
    result = run("store", "--file", str(bad))
    assert result.status == 2
    assert "is not UTF-8 text" in result.err


def test_mcp_subcommand_serves_the_protocol_on_stdout(tmp_path: Path) -> None:
    import subprocess
    import sys

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "cortex_memory", "mcp"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True, text=True, timeout=60, check=False,
        env={"CORTEX_MEMORY_HOME": str(home), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2]
    assert {t["name"] for t in answers[1]["result"]["tools"]} == {"cortex_save", "cortex_handoff"}
    # Falling back to the per-user local engine is said on stderr, never on stdout.
    assert "local" in done.stderr
    assert (home / "memory.sqlite3.mcp-ledger.sqlite3").exists()

"""The stdio MCP server: JSON-RPC 2.0 framing, the MCP methods, and a clean stdout."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

from cortex_memory.contract import ListRequest, MetaFilter
from cortex_memory.contract.conformance import ReferenceEngine
from cortex_memory.local import LocalEngine
from cortex_memory.tools.mcp import (
    Ledger,
    McpServer,
    MemoryWriter,
    handoff_input_schema,
    save_input_schema,
    write_output_schema,
)
from cortex_memory.tools.mcp.cli import (
    add_server_arguments,
    build_parser,
    default_ledger_path,
    ledger_path_for,
    serve_stdio,
)
from cortex_memory.tools.mcp.server import MAX_LINE_BYTES


@pytest.fixture
def server() -> McpServer:
    ledger = Ledger()
    ledger.start_session("s1")
    made = McpServer(MemoryWriter(ReferenceEngine(), ledger, references="local"))
    yield made
    ledger.close()


def _ask(server: McpServer, message: Any) -> Any:
    out = server.handle_line(json.dumps(message).encode())
    return None if out is None else json.loads(out)


def _request(method: str, params: Optional[Dict[str, Any]] = None, id: Any = 1) -> Dict[str, Any]:
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2025-11-25", "2025-06-18"),
        ("1999-01-01", "2025-06-18"),
        (None, "2025-06-18"),
    ],
)
def test_initialize_negotiates_the_protocol_version(server: McpServer, asked: Any,
                                                    answered: str) -> None:
    params = {"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    if asked is not None:
        params["protocolVersion"] = asked
    reply = _ask(server, _request("initialize", params, id="init"))
    assert reply["id"] == "init"
    assert reply["jsonrpc"] == "2.0"
    result = reply["result"]
    assert result["protocolVersion"] == answered
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "cortex-memory"


def test_notifications_get_no_answer(server: McpServer) -> None:
    assert not server.initialized
    assert _ask(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert server.initialized
    assert _ask(server, {"jsonrpc": "2.0", "method": "notifications/unknown"}) is None
    assert _ask(server, {"jsonrpc": "2.0", "id": 9, "result": {}}) is None  # a stray response


def test_ping(server: McpServer) -> None:
    assert _ask(server, _request("ping", id=3)) == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_tools_list_publishes_both_tools(server: McpServer) -> None:
    tools = _ask(server, _request("tools/list"))["result"]["tools"]
    assert [t["name"] for t in tools] == ["cortex_save", "cortex_handoff"]
    save, handoff = tools
    assert save["inputSchema"] == save_input_schema()
    assert handoff["inputSchema"] == handoff_input_schema()
    assert save["outputSchema"] == handoff["outputSchema"] == write_output_schema()
    assert save["annotations"] == {"title": "Save Memory", "readOnlyHint": False,
                                   "destructiveHint": False, "idempotentHint": False,
                                   "openWorldHint": False}
    assert handoff["annotations"]["title"] == "Record Handoff"
    assert handoff["annotations"]["idempotentHint"] is True
    assert all(t["description"] for t in tools)


def test_tools_call_answers_structured_and_text_content(
    server: McpServer, write_output: Callable[[Any], None]
) -> None:
    args = {"title": "Style", "content": "Prefers short commit messages.", "session_id": "s1"}
    result = _ask(server, _request("tools/call", {"name": "cortex_save", "arguments": args}))[
        "result"]
    assert result["isError"] is False
    assert result["structuredContent"] == {"observation_ref": {"local_id": 1},
                                           "status": "created"}
    assert result["content"] == [{"type": "text",
                                  "text": json.dumps(result["structuredContent"],
                                                     separators=(",", ":"))}]
    failed = _ask(server, _request("tools/call", {"name": "cortex_save",
                                                  "arguments": {"title": "x"}}))["result"]
    assert failed["isError"] is True
    assert failed["structuredContent"]["error"]["code"] == "validation"
    assert json.loads(failed["content"][0]["text"]) == failed["structuredContent"]
    for payload in (result["structuredContent"], failed["structuredContent"]):
        write_output(payload)


def test_tools_call_handoff_and_missing_arguments(server: McpServer) -> None:
    call = {"name": "cortex_handoff",
            "arguments": {"idempotency_key": "k", "observation": {"title": "a", "content": "b"}}}
    first = _ask(server, _request("tools/call", call))["result"]["structuredContent"]
    again = _ask(server, _request("tools/call", call))["result"]["structuredContent"]
    assert first["status"] == "created"
    assert again["status"] == "replayed"
    bare = _ask(server, _request("tools/call", {"name": "cortex_save"}))["result"]
    assert bare["isError"] is True


def test_jsonrpc_errors(server: McpServer) -> None:
    assert _ask(server, _request("resources/list", id=5)) == {
        "jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "Method not found"}}
    unknown_tool = _ask(server, _request("tools/call", {"name": "rm_rf", "arguments": {}}))
    assert unknown_tool["error"]["code"] == -32602
    assert _ask(server, {"jsonrpc": "2.0", "id": 6, "method": "ping", "params": [1]})[
        "error"]["code"] == -32602
    for bad in ({"jsonrpc": "1.0", "id": 7, "method": "ping"}, {"id": 7, "method": 3},
                {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}, 42, []):
        reply = _ask(server, bad)
        assert reply["error"]["code"] == -32600, bad
    assert server.handle_line(b"{not json\n") == (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n')
    assert json.loads(server.handle_line(b"\xff\xfe\n"))["error"]["code"] == -32700
    assert json.loads(server.handle_line(b'{"a": NaN}\n'))["error"]["code"] == -32700
    assert server.handle_line(b"   \n") is None


def test_batches(server: McpServer) -> None:
    replies = _ask(server, [_request("ping", id=1),
                            {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            _request("nope", id=2)])
    assert [r["id"] for r in replies] == [1, 2]
    assert "result" in replies[0]
    assert replies[1]["error"]["code"] == -32601
    assert _ask(server, [{"jsonrpc": "2.0", "method": "notifications/initialized"}]) is None


def test_serve_keeps_going_after_bad_lines(server: McpServer) -> None:
    lines = [
        b"garbage\n",
        json.dumps(_request("ping", id=1)).encode() + b"\n",
        b"\n",
        b"x" * (MAX_LINE_BYTES + 10) + b"\n",
        json.dumps(_request("ping", id=2)).encode(),  # no final newline
    ]
    out = io.BytesIO()
    server.serve(io.BytesIO(b"".join(lines)), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r.get("id") for r in replies] == [None, 1, None, 2]
    assert replies[0]["error"]["code"] == -32700
    assert replies[2]["error"] == {"code": -32600, "message": "Request too large"}


def test_internal_errors_do_not_stop_the_server(server: McpServer) -> None:
    def boom(params: Dict[str, Any]) -> Dict[str, Any]:
        raise RuntimeError("secret detail")

    server._methods["ping"] = boom
    reply = _ask(server, _request("ping"))
    assert reply["error"] == {"code": -32603, "message": "Internal error"}


def test_cli_defaults() -> None:
    args = build_parser().parse_args(["--path", "x.sqlite3", "--session", "a", "--session", "b"])
    assert (args.engine, args.path, args.session) == ("local", "x.sqlite3", ["a", "b"])
    assert ledger_path_for(":memory:") == ":memory:"
    assert ledger_path_for(str(Path("/d/memory.sqlite3"))) == str(
        Path("/d/memory.sqlite3.mcp-ledger.sqlite3"))


def _spawn(tmp_path: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, CORTEX_MEMORY_HOME=str(tmp_path / "home"))
    return subprocess.Popen(
        [sys.executable, "-m", "cortex_memory.tools.mcp", "--engine", "local",
         "--path", str(tmp_path / "memory.sqlite3"), *extra],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )


def test_the_program_writes_only_protocol_to_stdout(tmp_path: Path) -> None:
    canary = "Canary observation content 2468"
    messages: List[Dict[str, Any]] = [
        _request("initialize", {"protocolVersion": "2025-03-26"}, id=1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request("tools/list", id=2),
        _request("tools/call", {"name": "cortex_save", "arguments": {
            "title": "t", "content": canary, "session_id": "s1"}}, id=3),
        _request("tools/call", {"name": "cortex_save", "arguments": {
            "title": "t", "content": "c", "session_id": "nobody"}}, id=4),
    ]
    stdin = b"".join(json.dumps(m).encode() + b"\n" for m in messages) + b"oops\n"
    proc = _spawn(tmp_path, "--session", "s1", "--log-level", "DEBUG")
    out, err = proc.communicate(stdin, timeout=60)
    assert proc.returncode == 0, err.decode()
    replies = [json.loads(line) for line in out.decode().splitlines()]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert [r["id"] for r in replies] == [1, 2, 3, 4, None]
    assert replies[2]["result"]["structuredContent"]["status"] == "created"
    assert replies[3]["result"]["isError"] is True
    assert canary.encode() not in err  # logs never carry payloads
    assert (tmp_path / "memory.sqlite3.mcp-ledger.sqlite3").is_file()


def test_the_program_reports_setup_errors_on_stderr(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CORTEX_MEMORY_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "cortex_memory.tools.mcp", "--engine", "cortexdb"],
        input=b"", capture_output=True, env=env, timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert b"CORTEX_MEMORY_API_KEY" in proc.stderr


def test_the_program_defaults_to_the_per_user_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = dict(os.environ, CORTEX_MEMORY_HOME=str(home))
    ping = json.dumps(_request("ping", id=1)).encode() + b"\n"
    proc = subprocess.run([sys.executable, "-m", "cortex_memory.tools.mcp"], input=ping,
                          capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    database = home / "memory.sqlite3"
    assert f"using the local engine at {database}".encode() in proc.stderr
    assert (home / "memory.sqlite3.mcp-ledger.sqlite3").is_file()


def test_serve_stdio_for_a_host_command_line(tmp_path: Path) -> None:
    # A host CLI with its own engine options adds only the server's, without clashes.
    host = argparse.ArgumentParser()
    host.add_argument("--engine")
    host.add_argument("--path")
    host.add_argument("--namespace")
    add_server_arguments(host)
    args = host.parse_args(["--path", "x", "--session", "s1", "--ledger", "l.sqlite3"])
    assert (args.session, args.ledger, args.log_level) == (["s1"], "l.sqlite3", "WARNING")
    database = str(tmp_path / "memory.sqlite3")
    assert default_ledger_path(database) == database + ".mcp-ledger.sqlite3"

    call = _request("tools/call", {"name": "cortex_save", "arguments": {
        "title": "t", "content": "Served in process.", "session_id": "s1"}})
    out = io.BytesIO()
    with LocalEngine(database) as engine:
        status = serve_stdio(engine, ledger_path=default_ledger_path(database), sessions=["s1"],
                             namespace="project:demo",
                             stdin=io.BytesIO(json.dumps(call).encode() + b"\n"), stdout=out)
        assert status == 0
        # The engine stays open for its owner, and holds the observation.
        page = engine.list(ListRequest(MetaFilter(), 10))
        assert [hit.text for hit in page.items] == ["Served in process."]
    reply = json.loads(out.getvalue())
    assert reply["result"]["structuredContent"] == {"observation_ref": {"local_id": 1},
                                                    "status": "created"}


# -- JSON-RPC 2.0: every malformed message gets the error the spec calls for --------------

_INVALID = {"code": -32600, "message": "Invalid Request"}


def _line(server: McpServer, raw: str) -> Any:
    out = server.handle_line(raw.encode())
    return None if out is None else json.loads(out)


@pytest.mark.parametrize(
    ("raw", "answer"),
    [
        # The examples of the JSON-RPC 2.0 specification, §7, with this server's methods.
        ('{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]',
         {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}),
        ('{"jsonrpc": "2.0", "method": 1, "params": "bar"}',
         {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ('[{"jsonrpc": "2.0", "method": "ping", "id": "1"}, {"jsonrpc": "2.0", "method"]',
         {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}),
        ("[]", {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ("[1]", [{"jsonrpc": "2.0", "id": None, "error": _INVALID}]),
        ("[1,2,3]", [{"jsonrpc": "2.0", "id": None, "error": _INVALID}] * 3),
        ('{"jsonrpc": "2.0", "method": "foobar", "id": "1"}',
         {"jsonrpc": "2.0", "id": "1", "error": {"code": -32601, "message": "Method not found"}}),
        # And the rest of what a Request object must be.
        ("{}", {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ('{"id": 4}', {"jsonrpc": "2.0", "id": 4, "error": _INVALID}),
        ('{"jsonrpc": "2.0", "id": 4}', {"jsonrpc": "2.0", "id": 4, "error": _INVALID}),
        ('{"jsonrpc": "1.0", "method": "ping"}', {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ('{"method": "ping", "id": 5}', {"jsonrpc": "2.0", "id": 5, "error": _INVALID}),
        ('{"jsonrpc": 2.0, "method": "ping", "id": 5}',
         {"jsonrpc": "2.0", "id": 5, "error": _INVALID}),
        ('{"jsonrpc": "2.0", "method": "ping", "id": true}',
         {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ('{"jsonrpc": "2.0", "method": "ping", "id": [1]}',
         {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ('{"jsonrpc": "2.0", "method": "ping", "id": 6, "params": "bar"}',
         {"jsonrpc": "2.0", "id": 6, "error": _INVALID}),
        ('{"jsonrpc": "2.0", "method": "ping", "id": 6, "params": null}',
         {"jsonrpc": "2.0", "id": 6, "error": _INVALID}),
        ('"ping"', {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ("null", {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ("true", {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ("3.5", {"jsonrpc": "2.0", "id": None, "error": _INVALID}),
        ("[[]]", [{"jsonrpc": "2.0", "id": None, "error": _INVALID}]),
        ('[{}, {"jsonrpc": "2.0", "method": "ping"}]',
         [{"jsonrpc": "2.0", "id": None, "error": _INVALID}]),
        # Params a method cannot take.
        ('{"jsonrpc": "2.0", "method": "ping", "id": 7, "params": [1]}',
         {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "Invalid params"}}),
        ('{"jsonrpc": "2.0", "method": "tools/call", "id": 8, "params": {}}',
         {"jsonrpc": "2.0", "id": 8, "error": {
             "code": -32602, "message": "Invalid params: `name` must be a string"}}),
        ('{"jsonrpc": "2.0", "method": "tools/call", "id": 9, '
         '"params": {"name": "cortex_save", "arguments": [1]}}',
         {"jsonrpc": "2.0", "id": 9, "error": {
             "code": -32602, "message": "Invalid params: `arguments` must be an object"}}),
        # Ids JSON-RPC allows are echoed: strings, numbers, null.
        ('{"jsonrpc": "2.0", "method": "ping", "id": 1.5}',
         {"jsonrpc": "2.0", "id": 1.5, "result": {}}),
        ('{"jsonrpc": "2.0", "method": "ping", "id": null}',
         {"jsonrpc": "2.0", "id": None, "result": {}}),
    ],
)
def test_every_malformed_message_gets_the_jsonrpc_error(
    server: McpServer, raw: str, answer: Any
) -> None:
    assert _line(server, raw) == answer


@pytest.mark.parametrize(
    "raw",
    [
        # Notifications are never answered, whatever they name or carry.
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        '{"jsonrpc": "2.0", "method": "no/such/method", "params": {"x": 1}}',
        '{"jsonrpc": "2.0", "method": "ping", "params": [1, 2]}',
        '[{"jsonrpc": "2.0", "method": "a"}, {"jsonrpc": "2.0", "method": "b"}]',
        # Responses to requests this server never sends.
        '{"jsonrpc": "2.0", "id": 3, "result": {}}',
        '{"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "m"}}',
    ],
)
def test_notifications_and_responses_get_no_answer(server: McpServer, raw: str) -> None:
    assert server.handle_line(raw.encode()) is None


def test_a_mixed_batch_answers_in_order(server: McpServer) -> None:
    raw = json.dumps([
        _request("ping", id="1"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"foo": "boo"},
        _request("foo.get", {"name": "myself"}, id="5"),
        _request("ping", id="9"),
    ])  # fmt: skip
    assert _line(server, raw) == [
        {"jsonrpc": "2.0", "id": "1", "result": {}},
        {"jsonrpc": "2.0", "id": None, "error": _INVALID},
        {"jsonrpc": "2.0", "id": "5", "error": {"code": -32601, "message": "Method not found"}},
        {"jsonrpc": "2.0", "id": "9", "result": {}},
    ]
    assert server.initialized


# -- the program's own files ----------------------------------------------------------------


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, CORTEX_MEMORY_HOME=str(tmp_path / "home"))
    ping = json.dumps(_request("ping", id=1)).encode() + b"\n"
    return subprocess.run(
        [sys.executable, "-m", "cortex_memory.tools.mcp", "--path",
         str(tmp_path / "memory.sqlite3"), *args],
        input=ping, capture_output=True, env=env, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.write_bytes(b"plain text, not a database"), "is not a SQLite database"),
        (lambda p: p.mkdir(), "is a folder"),
    ],
)
def test_an_unusable_ledger_exits_with_a_message_not_a_traceback(
    tmp_path: Path, make: Callable[[Path], None], said: str
) -> None:
    ledger = tmp_path / "ledger.sqlite3"
    make(ledger)
    proc = _run(tmp_path, "--ledger", str(ledger))
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.startswith("cortex-memory mcp: configuration error:"), err
    assert said in err
    assert str(ledger) in err
    assert "Traceback" not in err


@pytest.mark.parametrize("bad", ["led\0ger.sqlite3", "tea \ud800.sqlite3"])
@pytest.mark.parametrize("flag", ["--ledger", "--path"])
def test_a_path_that_cannot_be_encoded_exits_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, bad: str
) -> None:
    # A real command line cannot carry these (the OS refuses NUL; argv decodes with
    # surrogateescape), but a host calling main() can.
    from cortex_memory.tools.mcp.cli import main

    args = ["--path", str(tmp_path / "memory.sqlite3"), "--ledger", str(tmp_path / "l.sqlite3")]
    args[args.index(flag) + 1] = str(tmp_path / bad)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "configuration error" in err
    assert "holds a NUL character" in err or "cannot be encoded" in err
    assert os.listdir(tmp_path) == []  # nothing was created

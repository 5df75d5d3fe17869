"""Interoperability: the official ``mcp`` Python client drives our stdio server.

The client spawns the server on a temporary local database, both as
``python -m cortex_memory.tools.mcp`` and as the ``cortex-memory mcp``
subcommand, lists both tools, saves, hands off twice (the second is replayed),
provokes a conflict, and every result validates against the published output
schema (the client also validates structured content itself).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from cortex_memory.tools.mcp import handoff_input_schema, save_input_schema, write_output_schema

_WHY = "the official mcp client is installed on Python >= 3.10 only"
mcp = pytest.importorskip("mcp", reason=_WHY)
stdio = pytest.importorskip("mcp.client.stdio", reason=_WHY)
anyio = pytest.importorskip("anyio", reason="the mcp client runs on anyio")


def _dump(model: Any) -> Dict[str, Any]:
    # mcp 1.x and 2.x both dump to the wire's camelCase with by_alias.
    dumped: Dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


_PROGRAMS = {
    "tools-module": ["-m", "cortex_memory.tools.mcp", "--engine", "local"],
    "cli-subcommand": ["-m", "cortex_memory", "--engine", "local", "mcp"],
}


@pytest.mark.parametrize("program", sorted(_PROGRAMS))
def test_official_client_lists_saves_hands_off_and_conflicts(
    tmp_path: Path, write_output: Callable[[Any], None], program: str
) -> None:
    params = stdio.StdioServerParameters(
        command=sys.executable,
        args=[*_PROGRAMS[program],
              "--path", str(tmp_path / "memory.sqlite3"), "--session", "agent-1"],
        env={"CORTEX_MEMORY_HOME": str(tmp_path / "home")},
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    results: List[Dict[str, Any]] = []
    listed: Dict[str, Dict[str, Any]] = {}

    async def session_run() -> None:
        async with stdio.stdio_client(params) as (read, write):
            async with mcp.ClientSession(read, write) as session:
                init = _dump(await session.initialize())
                assert init["protocolVersion"] in ("2025-06-18", "2025-03-26", "2024-11-05")
                assert init["serverInfo"]["name"] == "cortex-memory"
                for tool in _dump(await session.list_tools())["tools"]:
                    listed[tool["name"]] = tool

                async def call(name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
                    result = _dump(await session.call_tool(name, arguments))
                    results.append(result)
                    return result

                save = await call("cortex_save", {
                    "title": "Build", "content": "The build uses make.",
                    "project": "cortex", "topic_key": "build", "session_id": "agent-1"})
                handoff = {
                    "idempotency_key": "handoff-7",
                    "observation": {"title": "Next step", "content": "Publish the docs.",
                                    "session_id": "agent-1"},
                    "relation": {"target": save["structuredContent"]["observation_ref"],
                                 "type": "follows"},
                    "capability_tuple": ["save", {"by": "planner"}],
                }
                await call("cortex_handoff", handoff)
                await call("cortex_handoff", handoff)
                await call("cortex_handoff", dict(handoff, capability_tuple=["other"]))
                await call("cortex_save", {"title": "t", "content": "c",
                                           "session_id": "nobody"})

    anyio.run(session_run)

    assert set(listed) == {"cortex_save", "cortex_handoff"}
    assert listed["cortex_save"]["inputSchema"] == save_input_schema()
    assert listed["cortex_handoff"]["inputSchema"] == handoff_input_schema()
    for tool in listed.values():
        assert tool["outputSchema"] == write_output_schema()
    assert listed["cortex_handoff"]["annotations"]["idempotentHint"] is True
    assert listed["cortex_save"]["annotations"]["title"] == "Save Memory"

    payloads = [r["structuredContent"] for r in results]
    for result, payload in zip(results, payloads):
        write_output(payload)
        assert json.loads(result["content"][0]["text"]) == payload
        assert bool(result.get("isError", False)) == ("error" in payload)
    save, first, second, conflict, unknown_session = payloads
    assert save == {"observation_ref": {"local_id": 1}, "status": "created"}
    assert first["status"] == "created"
    assert second == {"observation_ref": first["observation_ref"], "status": "replayed"}
    assert conflict == {"error": {
        "code": "conflict",
        "message": "the idempotency key was already used with a different payload",
        "retryable": False}}
    assert unknown_session["error"]["code"] == "validation"

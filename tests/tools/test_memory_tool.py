"""MemoryTool's policy: scan arms one put, the authorizer comes first, secrets never land."""

from __future__ import annotations

import json
import logging
import threading
from datetime import timedelta
from typing import Any, Callable, Dict, Iterator, List

import pytest

from cortex_memory.errors import Error, InvalidRequestError, UnauthorizedError
from cortex_memory.tools.memory import (
    AllowAllMutations,
    LocalMemoryStore,
    MemoryRequestError,
    MemoryTool,
    MemoryToolError,
    MemoryUnauthorizedError,
    RootSessions,
)

from .conftest import MsClock

ROOT = "root"
CHILD = "child"


def _scan(query: str = "durable preference", **extra: Any) -> str:
    return json.dumps({"operation": "scan", "query": query, **extra})


def _put(content: str = "The durable test preference is concise output.", **extra: Any) -> str:
    return json.dumps({"operation": "put", "content": content, **extra})


@pytest.fixture
def store(clock: MsClock) -> Iterator[LocalMemoryStore]:
    made = LocalMemoryStore(clock=clock)
    yield made
    made.close()


@pytest.fixture
def tool(store: LocalMemoryStore, memory_output: Callable[[Any], None]) -> MemoryTool:
    made = MemoryTool(store, RootSessions(ROOT))
    real = made.execute

    def checked(input_json: Any, session_id: str) -> Dict[str, Any]:
        out = real(input_json, session_id)
        memory_output(out)  # every output validates against the published schema
        return out

    made.execute = checked  # type: ignore[method-assign]
    return made


def _refusal(tool: MemoryTool, call: str, session: str = ROOT) -> MemoryToolError:
    with pytest.raises(MemoryToolError) as info:
        tool.execute(call, session)
    return info.value


def test_put_requires_a_fresh_scan(tool: MemoryTool, store: LocalMemoryStore) -> None:
    assert _refusal(tool, _put()).message == "scan memory before storing a conclusion"
    bad = _refusal(tool, _scan(limit=0))
    assert bad.message == "memory scan limit must be between 1 and 5"
    assert _refusal(tool, _put()).message == "scan memory before storing a conclusion"
    assert tool.execute(_scan(), ROOT)["abstained"] is True
    out = tool.execute(_put(), ROOT)
    assert out["operation"] == "put"
    assert out["replaced"] is False
    assert len(store.list()) == 1
    assert _refusal(tool, _put("another")).message == "scan memory before storing a conclusion"


def test_two_scans_still_arm_only_one_put(tool: MemoryTool) -> None:
    tool.execute(_scan(), ROOT)
    tool.execute(_scan("other"), ROOT)
    tool.execute(_put(), ROOT)
    assert _refusal(tool, _put("second")).message == "scan memory before storing a conclusion"


def test_the_armed_scan_belongs_to_the_tool_instance(store: LocalMemoryStore) -> None:
    first = MemoryTool(store, AllowAllMutations())
    second = MemoryTool(store, AllowAllMutations())
    first.execute(_scan(), "a")
    with pytest.raises(MemoryRequestError):
        second.execute(_put(), "a")
    # ...and not to a session: another session of the same tool uses the scan.
    first.execute(_put(), "b")


def test_a_failed_put_has_still_used_the_scan(tool: MemoryTool, store: LocalMemoryStore) -> None:
    tool.execute(_scan(), ROOT)
    missing = json.dumps({"operation": "put", "content": "x y z",
                          "replace": {"id": 99, "version": 1}})
    assert _refusal(tool, missing).message == "memory key was not found"
    assert _refusal(tool, _put()).message == "scan memory before storing a conclusion"
    assert store.list() == []


def test_secret_content_is_refused_before_storage(tool: MemoryTool, store: LocalMemoryStore,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    tool.execute(_scan("credentials"), ROOT)
    err = _refusal(tool, _put("password=hunter2"))
    assert err.message == "memory content was rejected as a likely secret"
    assert isinstance(err, InvalidRequestError)
    assert "hunter2" not in str(err)
    assert "hunter2" not in repr(err)
    assert store.list() == []
    # The refused put used the scan.
    assert _refusal(tool, _put()).message == "scan memory before storing a conclusion"
    assert "hunter2" not in caplog.text


def test_ordinary_content_is_stored(tool: MemoryTool, store: LocalMemoryStore) -> None:
    for text in [
        "Alice prefers answers under five sentences.",
        "The deploy script lives in scripts/deploy.sh and needs Python 3.11.",
        "Commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f fixed the flaky test.",
    ]:
        tool.execute(_scan(text), ROOT)
        tool.execute(_put(text), ROOT)
    assert len(store.list()) == 3


def test_authorizer_runs_before_any_mutation(tool: MemoryTool, store: LocalMemoryStore) -> None:
    tool.execute(_scan(), ROOT)
    denied = _refusal(tool, _put(), CHILD)
    assert isinstance(denied, MemoryUnauthorizedError)
    assert isinstance(denied, UnauthorizedError)
    assert denied.message == "memory mutation is only available to root agents"
    assert store.list() == []
    # A denied put did not consume the scan: the root agent can still store.
    key = tool.execute(_put(), ROOT)["memory"]["key"]
    delete = json.dumps({"operation": "delete", "key": key})
    assert _refusal(tool, delete, CHILD).message == (
        "memory mutation is only available to root agents"
    )
    assert len(store.list()) == 1
    assert tool.execute(delete, ROOT) == {
        "operation": "delete",
        "backend": {"source": "local", "namespace": None, "role": None},
        "key": key,
    }
    assert store.list() == []


def test_denial_comes_before_the_scan_check(tool: MemoryTool) -> None:
    # Without a scan, a child still hears "not allowed" first: the authorizer runs first.
    assert isinstance(_refusal(tool, _put(), CHILD), MemoryUnauthorizedError)


def test_authorizer_refusals_of_any_kind_fail_closed(store: LocalMemoryStore) -> None:
    def broken(session_id: str) -> None:
        raise RuntimeError("policy service is down")

    def plain(session_id: str) -> None:
        raise PermissionError()

    def engine_said_no(session_id: str) -> None:
        raise UnauthorizedError("token expired")

    for authorizer, message in [
        (broken, "policy service is down"),
        (plain, "memory mutation is not authorized"),
        (engine_said_no, "token expired"),
    ]:
        tool = MemoryTool(store, authorizer)
        tool.execute(_scan(), "s")
        with pytest.raises(MemoryUnauthorizedError) as info:
            tool.execute(_put(), "s")
        assert info.value.message == message
    assert store.list() == []


def test_replace_gives_a_new_version_and_hides_the_old(tool: MemoryTool) -> None:
    tool.execute(_scan(), ROOT)
    first = tool.execute(_put("The editor theme is dark."), ROOT)["memory"]
    assert first["key"] == {"id": first["key"]["id"], "version": 1}
    tool.execute(_scan("editor theme"), ROOT)
    second = tool.execute(
        json.dumps({"operation": "put", "content": "The editor theme is light.",
                    "replace": first["key"]}), ROOT)
    assert second["replaced"] is True
    assert second["memory"]["key"] == {"id": first["key"]["id"], "version": 2}
    assert second["memory"]["created_at_ms"] == first["created_at_ms"]
    read = tool.execute(json.dumps({"operation": "read",
                                    "keys": [first["key"], second["memory"]["key"]]}), ROOT)
    assert [m["content"] for m in read["memories"]] == ["The editor theme is light."]
    # A stale key cannot replace or delete either.
    tool.execute(_scan("editor"), ROOT)
    stale = json.dumps({"operation": "put", "content": "x y", "replace": first["key"]})
    assert _refusal(tool, stale).message == "memory key was not found"
    stale_delete = json.dumps({"operation": "delete", "key": first["key"]})
    assert _refusal(tool, stale_delete).message == "memory key was not found"


def test_probation_and_counters(store: LocalMemoryStore, clock: MsClock,
                                memory_output: Callable[[Any], None]) -> None:
    tool = MemoryTool(store, AllowAllMutations())
    tool.execute(_scan(), "s")
    created = clock()
    record = tool.execute(_put("Bob reviews every pull request on Mondays."), "s")["memory"]
    week = 7 * 24 * 3600 * 1000
    assert record["probation_until_ms"] == created + week
    assert (record["scan_count"], record["use_count"]) == (0, 0)
    assert record["last_scanned_at_ms"] is None
    assert record["last_used_at_ms"] is None

    clock.advance(1000)
    scan = tool.execute(_scan("Bob pull request reviews"), "s")
    memory_output(scan)
    assert scan["abstained"] is False
    assert [c["key"] for c in scan["candidates"]] == [record["key"]]
    clock.advance(1000)
    read = tool.execute(json.dumps({"operation": "read", "keys": [record["key"]]}), "s")
    got = read["memories"][0]
    assert got["scan_count"] == 1
    assert got["last_scanned_at_ms"] == created + 1000
    assert got["use_count"] == 1
    assert got["last_used_at_ms"] == created + 2000
    assert got["probation_until_ms"] == created + week


def test_probation_period_is_configurable(clock: MsClock) -> None:
    store = LocalMemoryStore(probation=timedelta(hours=1), clock=clock)
    tool = MemoryTool(store, AllowAllMutations())
    tool.execute(_scan(), "s")
    record = tool.execute(_put("Carol owns the billing service."), "s")["memory"]
    assert record["probation_until_ms"] == record["created_at_ms"] + 3_600_000
    with pytest.raises(ValueError, match="negative"):
        LocalMemoryStore(probation=timedelta(seconds=-1))
    store.close()


def test_scan_answers_at_most_limit_candidates(tool: MemoryTool) -> None:
    for n in range(7):
        tool.execute(_scan(), ROOT)
        tool.execute(_put(f"Release train {n} leaves on schedule every week."), ROOT)
    out = tool.execute(_scan("release train schedule", limit=3), ROOT)
    assert len(out["candidates"]) == 3
    scores = [c["score"] for c in out["candidates"]]
    assert scores == sorted(scores, reverse=True)
    assert len(tool.execute(_scan("release train schedule"), ROOT)["candidates"]) == 5


def test_preview_is_cut_to_64_characters(tool: MemoryTool) -> None:
    content = "Deployment " + "notes " * 100
    tool.execute(_scan(), ROOT)
    tool.execute(_put(content[:1024]), ROOT)
    out = tool.execute(_scan("deployment notes"), ROOT)
    preview = out["candidates"][0]["preview"]
    assert len(preview) == 64
    assert content.startswith(preview)


def test_every_refusal_is_a_library_error(tool: MemoryTool) -> None:
    for call in ['{"operation":"read","ids":[1]}', _scan(" "), _put()]:
        err = _refusal(tool, call)
        assert isinstance(err, Error)
        assert str(err).startswith("invalid request: ")


def test_session_id_must_be_a_string(tool: MemoryTool) -> None:
    with pytest.raises(TypeError):
        tool.execute(_scan(), 7)  # type: ignore[arg-type]


def test_store_and_authorizer_are_type_checked(store: LocalMemoryStore) -> None:
    with pytest.raises(TypeError):
        MemoryTool(object(), AllowAllMutations())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        MemoryTool(store, object())  # type: ignore[arg-type]


def test_one_scan_arms_exactly_one_put_across_threads(store: LocalMemoryStore) -> None:
    tool = MemoryTool(store, AllowAllMutations())
    tool.execute(_scan(), "s")
    barrier = threading.Barrier(8)
    outcomes: List[str] = []
    lock = threading.Lock()

    def racer(n: int) -> None:
        barrier.wait()
        try:
            tool.execute(_put(f"Racer {n} finished the course."), "s")
            result = "stored"
        except MemoryRequestError as exc:
            result = exc.message
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("stored") == 1
    assert outcomes.count("scan memory before storing a conclusion") == 7
    assert len(store.list()) == 1


def test_content_never_reaches_the_logs(tool: MemoryTool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    canary = "Zanzibar-canary-content"
    tool.execute(_scan(canary), ROOT)
    out = tool.execute(_put(f"The {canary} lives here."), ROOT)
    tool.execute(json.dumps({"operation": "read", "keys": [out["memory"]["key"]]}), ROOT)
    assert canary not in caplog.text
    assert canary not in repr(tool.store.list()[0])


@pytest.mark.parametrize("text", ["tea \ud800", "\udfff", "a \udc80 b"])
def test_text_with_a_lone_surrogate_is_refused_as_a_typed_error(
    tool: MemoryTool, store: LocalMemoryStore, text: str
) -> None:
    # JSON's "\ud800" escape decodes to a lone surrogate, which UTF-8 cannot carry.
    tool.execute(_scan(), ROOT)
    for call in (_put(text), {"operation": "put", "content": text}):
        err = _refusal(tool, call)  # type: ignore[arg-type]
        assert isinstance(err, InvalidRequestError)
        assert err.message == "memory content must be valid Unicode (it holds a lone surrogate)"
    err = _refusal(tool, _scan(text))
    assert err.message == "memory scan query must be valid Unicode (it holds a lone surrogate)"
    with pytest.raises(MemoryRequestError, match="valid Unicode"):
        store.put(text)  # the store refuses it too, called without the tool
    assert store.list() == []

"""The agent tools over ``CortexEngine`` on both loopback doubles: what reaches the wire.

The shared suites (``test_memory_remote.py``, ``test_mcp_writes.py``) already run
over both doubles through the ``engine`` fixture; the tests here check what only
a remote engine shows: the requests sent, the scope each write lands in, the
public references of remote engines, and how a failing service is reported.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

from cortex_memory.contract import GetRequest, ItemKind, ListRequest, MetaFilter
from cortex_memory.cortex import CortexEngine
from cortex_memory.errors import UnavailableError
from cortex_memory.testing import both_doubles
from cortex_memory.testing._server import BaseDouble
from cortex_memory.tools.mcp import Ledger, MemoryWriter
from cortex_memory.tools.memory import (
    AllowAllMutations,
    MemoryKey,
    MemoryRequestError,
    MemoryTool,
    RemoteMemoryStore,
)

from .conftest import MsClock

ALICE = "team:acme/agent:alice"
ALICE_LEARNINGS = "app:tinymemory/team:acme/agent:alice/app:learnings"
OBS: Dict[str, Any] = {
    "title": "Deploys",
    "content": "Deploys go out from the release branch every Tuesday.",
    "project": "cortex",
    "topic_key": "deploys",
}

Pair = Tuple[CortexEngine, BaseDouble]


@pytest.fixture(params=["direct", "hosted"])
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """``(engine, double)`` of one wire, from ``both_doubles()``."""
    with both_doubles() as pairs:
        yield pairs[0] if request.param == "direct" else pairs[1]


def _route(double: BaseDouble, name: str) -> str:
    return f"/memory/{name}" if double.hosted else f"/v1/{name}"


def _writes(double: BaseDouble) -> int:
    return double.state.count("POST " + _route(double, "experience"))


def _forgets(double: BaseDouble) -> List[Dict[str, Any]]:
    with double.state.lock:
        return list(double.state.seen.forgets)


def _items(engine: CortexEngine) -> List[Any]:
    return list(engine.list(ListRequest(MetaFilter(), 200)).items)


# -- the memory tool's remote backend --------------------------------------------------------


def test_memory_lifecycle_on_the_wire(pair: Pair, clock: MsClock) -> None:
    engine, double = pair
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    assert store.scan("deploy branch", 5).abstained is True

    record = store.put("Deploys go out from the release branch.")
    assert record.key == MemoryKey(record.key.id, 1, ALICE)
    assert _writes(double) == 1
    with double.state.lock:
        written = [
            item for body in double.state.seen.writes for item in (body.get("items") or [body])
        ]
    assert [item["scope"] for item in written] == [ALICE_LEARNINGS]
    assert written[0]["content"]["text"] == "Deploys go out from the release branch."
    [v1] = _items(engine)
    assert v1.kind is ItemKind.LEARNING
    assert str(v1.meta.namespace) == ALICE

    found = store.scan("release branch deploys", 5)
    assert [c.key for c in found.candidates] == [record.key]
    [read] = store.read([record.key])
    assert read.content == "Deploys go out from the release branch."
    assert (read.scan_count, read.use_count) == (1, 1)

    clock.advance(10)
    newer = store.put("Deploys go out from main.", record.key)
    assert newer.key == MemoryKey(record.key.id, 2, ALICE)
    assert newer.updated_at_ms == record.created_at_ms + 10
    # The old version is forgotten by its event ids, in its own scope.
    [forget] = _forgets(double)
    assert forget["scope"] == ALICE_LEARNINGS
    assert forget["layers"] == ["events"]
    assert len(forget["selector"]["memory_ids"]) == 1
    assert engine.get(GetRequest((v1.id,))) == []
    assert [hit.text for hit in _items(engine)] == ["Deploys go out from main."]
    assert store.read([record.key]) == []
    [current] = store.read([newer.key])
    assert current.content == "Deploys go out from main."
    assert [c.key for c in store.scan("deploys main", 5).candidates] == [newer.key]

    store.delete(newer.key)
    assert _items(engine) == []
    assert store.list() == []
    assert store.read([newer.key]) == []
    assert store.scan("deploys main", 5).abstained is True
    with pytest.raises(MemoryRequestError, match="memory key was not found"):
        store.delete(newer.key)
    store.close()


def test_a_key_read_through_another_engine_on_the_same_service(pair: Pair, clock: MsClock) -> None:
    engine, double = pair
    here = RemoteMemoryStore(engine, ALICE, clock=clock)
    record = here.put("The on-call rota is in the ops wiki.")
    newer = here.put("The on-call rota moved to the handbook.", record.key)
    # Another machine: its own engine and sidecar, the same service.
    there = RemoteMemoryStore(double.engine(), ALICE, clock=clock)
    assert there.read([record.key]) == []
    [again] = there.read([newer.key])
    assert again.content == "The on-call rota moved to the handbook."
    assert again.created_at_ms == record.created_at_ms
    assert [r.key for r in there.list()] == [newer.key]
    here.close()
    there.close()


def test_the_tool_end_to_end_over_cortex(
    pair: Pair, clock: MsClock, memory_output: Callable[[Any], None]
) -> None:
    engine, double = pair
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    tool = MemoryTool(store, AllowAllMutations())

    def run(call: Dict[str, Any]) -> Dict[str, Any]:
        out = tool.execute(json.dumps(call), "root")
        memory_output(out)
        return out

    assert run({"operation": "scan", "query": "coffee machine"})["abstained"] is True
    key = run({"operation": "put", "content": "The coffee machine is on floor 3."})["memory"]["key"]
    assert key["namespace"] == ALICE
    scan = run({"operation": "scan", "query": "coffee machine floor"})
    assert scan["candidates"][0]["key"] == key
    replaced = run(
        {"operation": "put", "content": "The coffee machine moved to floor 4.", "replace": key}
    )
    assert replaced["memory"]["key"] == dict(key, version=2)
    read = run({"operation": "read", "keys": [dict(key, version=2)]})
    assert read["memories"][0]["content"] == "The coffee machine moved to floor 4."
    run({"operation": "delete", "key": dict(key, version=2)})
    assert store.list() == []
    assert double.state.event_count() == 0
    store.close()


def test_an_unavailable_service_fails_the_put_and_a_retry_completes_it(
    pair: Pair, clock: MsClock
) -> None:
    engine, double = pair
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    double.state.fail_all = (503, "UNAVAILABLE")
    with pytest.raises(UnavailableError):
        store.put("Standups moved to 9:30.")
    double.state.fail_all = None
    record = store.put("Standups moved to 9:30.")
    assert [r.key for r in store.list()] == [record.key]
    store.close()


# -- cortex_save / cortex_handoff ------------------------------------------------------------


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    made = Ledger()
    made.start_session("s1")
    yield made
    made.close()


def _public_id(item_id: str) -> str:
    # Written out here rather than imported: remote engines answer this exact UUID.
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "cortex-memory:item:" + item_id))


def test_save_replay_update_on_the_wire(
    pair: Pair, ledger: Ledger, write_output: Callable[[Any], None]
) -> None:
    engine, double = pair
    writer = MemoryWriter(engine, ledger, namespace="project:cortex")
    first = writer.save(OBS)
    write_output(first)
    assert first["status"] == "created"
    [item] = _items(engine)
    assert str(item.meta.namespace) == "project:cortex"
    assert first["observation_ref"] == {"public_id": _public_id(item.id)}
    sent = _writes(double)
    assert sent == 1

    again = writer.save(dict(OBS))
    assert again == {"observation_ref": first["observation_ref"], "status": "replayed"}
    assert _writes(double) == sent  # the replay is found by the lookup: no write

    changed = writer.save(dict(OBS, content="Deploys go out from main every Tuesday."))
    write_output(changed)
    assert changed["status"] == "updated"
    [newer] = _items(engine)
    assert changed["observation_ref"] == {"public_id": _public_id(newer.id)}
    assert engine.get(GetRequest((item.id,))) == []
    [forget] = _forgets(double)
    assert forget["scope"] == "app:tinymemory/project:cortex/app:learnings"

    # A second writer over the same ledger answers the same reference.
    other = MemoryWriter(engine, ledger, namespace="project:cortex")
    replay = other.save(dict(OBS, content="Deploys go out from main every Tuesday."))
    assert replay == {"observation_ref": changed["observation_ref"], "status": "replayed"}


def test_handoff_replay_and_conflict_send_nothing(
    pair: Pair, ledger: Ledger, write_output: Callable[[Any], None]
) -> None:
    engine, double = pair
    writer = MemoryWriter(engine, ledger)
    target = writer.save(OBS)["observation_ref"]
    args = {
        "idempotency_key": "handoff-1",
        "observation": {"title": "Next", "content": "Write the deploy runbook."},
        "relation": {"target": target, "type": "follows", "weight": 0.5},
    }
    first = writer.handoff(args)
    write_output(first)
    assert first["status"] == "created"
    held = {hit.id for hit in _items(engine)}
    assert {first["observation_ref"]["public_id"], target["public_id"]} == {
        _public_id(i) for i in held
    }

    double.state.clear_seen()
    replayed = writer.handoff(dict(args))
    assert replayed == {"observation_ref": first["observation_ref"], "status": "replayed"}
    conflict = writer.handoff(dict(args, observation={"title": "Next", "content": "Other."}))
    write_output(conflict)
    assert conflict["error"]["code"] == "conflict"
    assert conflict["error"]["retryable"] is False
    assert double.state.requests() == []  # the ledger answered both

    # A missing public target is refused after one existence check and no write.
    missing = writer.handoff(
        dict(
            args,
            idempotency_key="handoff-2",
            relation=dict(args["relation"], target={"public_id": str(uuid.UUID(int=7))}),
        )
    )
    assert missing["error"]["message"] == "relation.target names no existing observation"
    assert _writes(double) == 0
    assert {hit.id for hit in _items(engine)} == held


def test_a_failing_service_is_a_retryable_error_and_records_nothing(
    pair: Pair, ledger: Ledger, write_output: Callable[[Any], None]
) -> None:
    engine, double = pair
    writer = MemoryWriter(engine, ledger)
    double.state.fail_all = (503, "UNAVAILABLE")
    failed = writer.save(OBS)
    write_output(failed)
    assert failed["error"]["code"] == "transport"
    assert failed["error"]["retryable"] is True
    handoff = writer.handoff({"idempotency_key": "k", "observation": OBS})
    assert handoff["error"]["retryable"] is True
    double.state.fail_all = None
    assert writer.save(OBS)["status"] == "created"
    # The key was not spent by the failed handoff.
    assert writer.handoff({"idempotency_key": "k", "observation": OBS})["status"] == "replayed"

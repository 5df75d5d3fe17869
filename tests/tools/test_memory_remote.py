"""The remote memory backend over real engines (the local engine and the reference engine)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from cortex_memory.contract import (
    ForgetTarget,
    GetRequest,
    ItemKind,
    ListRequest,
    MemoryEngine,
    MetaFilter,
    Namespace,
    Reach,
)
from cortex_memory.tools.memory import (
    AllowAllMutations,
    MemoryKey,
    MemoryRequestError,
    MemoryTool,
    MemoryUnauthorizedError,
    RemoteMemoryStore,
    Sidecar,
)
from cortex_memory.tools.memory.errors import CONTENT_NOT_UNICODE
from cortex_memory.tools.memory.keys import derive_key_id, memory_tags, read_tags

from .conftest import MsClock

ALICE = "team:acme/agent:alice"


def _items(engine: MemoryEngine) -> list:
    return list(engine.list(ListRequest(MetaFilter(), 500)).items)


def test_key_id_is_derived_from_the_first_version(engine: MemoryEngine, clock: MsClock) -> None:
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    record = store.put("Kim prefers metric units in reports.")
    assert record.key.namespace == ALICE
    assert record.key.version == 1
    [hit] = _items(engine)
    assert hit.kind is ItemKind.LEARNING
    assert hit.text == "Kim prefers metric units in reports."
    tags = read_tags(hit.meta.tags)
    assert tags is not None
    assert tags.key_id == record.key.id
    assert tags.version == 1
    assert f"memory-key:{record.key.id}" in hit.meta.tags
    assert "memory-version:1" in hit.meta.tags
    # id = first 13 hex digits of SHA-256(first version's item id) + 1, where the first
    # version's item id is the learning before its memory-key tag is added.
    first = store._learning(  # the exact first version, rebuilt from what was stored
        record.content, memory_tags(1, record.created_at_ms, record.created_at_ms),
        record.created_at_ms,
    )
    digest = hashlib.sha256(first.fingerprint().encode()).hexdigest()
    assert record.key.id == int(digest[:13], 16) + 1 == derive_key_id(first.fingerprint())
    assert 1 <= record.key.id <= 2**52
    store.close()


def test_a_key_names_the_same_memory_on_another_machine(engine: MemoryEngine,
                                                       clock: MsClock) -> None:
    here = RemoteMemoryStore(engine, ALICE, clock=clock)
    record = here.put("Liam owns the payments runbook.")
    there = RemoteMemoryStore(engine, ALICE, clock=clock)  # a fresh sidecar: another machine
    [again] = there.read([record.key])
    assert again.key == record.key
    assert again.content == record.content
    assert again.created_at_ms == record.created_at_ms
    # Counters are per machine; probation is computed the same everywhere.
    assert again.use_count == 1
    assert again.scan_count == 0
    assert again.probation_until_ms == record.probation_until_ms
    here.close()
    there.close()


def test_replace_bumps_the_version_and_forgets_the_old_item(engine: MemoryEngine,
                                                            clock: MsClock) -> None:
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    record = store.put("The office closes at 6 pm.")
    old_ids = [hit.id for hit in _items(engine)]
    clock.advance(5)
    newer = store.put("The office closes at 7 pm.", record.key)
    assert newer.key == MemoryKey(record.key.id, 2, ALICE)
    assert newer.created_at_ms == record.created_at_ms
    assert newer.updated_at_ms == record.created_at_ms + 5
    items = _items(engine)
    assert [h.text for h in items] == ["The office closes at 7 pm."]
    assert engine.get(GetRequest(tuple(old_ids))) == []
    assert store.read([record.key]) == []
    with pytest.raises(MemoryRequestError, match="memory key was not found"):
        store.put("stale", record.key)
    with pytest.raises(MemoryRequestError, match="memory key was not found"):
        store.delete(record.key)
    store.delete(newer.key)
    assert _items(engine) == []
    store.close()


def test_reads_skip_a_leftover_older_version(engine: MemoryEngine, clock: MsClock) -> None:
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    record = store.put("Mia runs the Thursday demo.")
    [v1] = _items(engine)
    newer = store.put("Mia and Noah run the Thursday demo.", record.key)
    engine.store(v1_item := store._learning(
        v1.text, tuple(v1.meta.tags), record.created_at_ms))  # a crash left v1 behind
    assert v1_item.fingerprint() == v1.id
    [got] = store.read([newer.key])
    assert got.content == "Mia and Noah run the Thursday demo."
    assert [r.key for r in store.list()] == [newer.key]
    store.delete(newer.key)  # every version goes
    assert _items(engine) == []
    store.close()


def test_scan_ranks_dedupes_and_counts(engine: MemoryEngine, clock: MsClock) -> None:
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    keep = store.put("The staging cluster is rebuilt every Sunday night.")
    store.put("Olivia's favourite fruit is mango.")
    result = store.scan("staging cluster rebuilt Sunday", 5)
    assert result.abstained is False
    assert result.candidates[0].key == keep.key
    assert len({c.key for c in result.candidates}) == len(result.candidates)
    assert store.scan("zzyzx qwv", 5).abstained is True
    [read] = store.read([keep.key])
    assert read.scan_count == 1
    assert read.last_scanned_at_ms == clock()
    store.close()


def test_reads_include_team_namespaces_but_writes_stay_home(engine: MemoryEngine,
                                                          clock: MsClock) -> None:
    team = RemoteMemoryStore(engine, "team:acme", clock=clock)
    shared = team.put("The acme team ships on Tuesdays.")
    bob = RemoteMemoryStore(engine, "team:acme/agent:bob", clock=clock)
    private = bob.put("Bob's private note about Tuesdays.")
    alice = RemoteMemoryStore(engine, ALICE, clock=clock)
    assert alice.access().to_json() == {"source": "remote", "namespace": ALICE,
                                        "role": "writer"}
    found = alice.scan("ships on Tuesdays", 5)
    namespaces = {c.key.namespace for c in found.candidates}
    assert namespaces == {"team:acme"}  # the team's memory, never a sibling agent's
    assert [r.content for r in alice.read([shared.key])] == ["The acme team ships on Tuesdays."]
    # Alice may not change the team's memory through her store.
    with pytest.raises(MemoryRequestError, match="memory key was not found"):
        alice.delete(shared.key)
    with pytest.raises(MemoryRequestError, match="memory key was not found"):
        alice.put("Rewritten", shared.key)
    # A key outside her reach, or with a malformed namespace, names nothing.
    assert alice.read([private.key, MemoryKey(1, 1, "not a namespace")]) == []
    # Bob sees his own memory and the team's.
    assert {r.key.namespace for r in bob.list()} == {"team:acme", "team:acme/agent:bob"}
    for store in (team, bob, alice):
        store.close()


def test_a_reader_cannot_mutate(engine: MemoryEngine, clock: MsClock,
                                memory_output: Callable[[Any], None]) -> None:
    writer = RemoteMemoryStore(engine, ALICE, clock=clock)
    record = writer.put("Pat approves expense reports.")
    reader = RemoteMemoryStore(engine, ALICE, role="reader", clock=clock)
    tool = MemoryTool(reader, AllowAllMutations())
    out = tool.execute(json.dumps({"operation": "scan", "query": "expense reports"}), "s")
    memory_output(out)
    assert out["backend"]["role"] == "reader"
    message = "remote memory mutation requires a writer credential"
    with pytest.raises(MemoryUnauthorizedError) as info:
        tool.execute(json.dumps({"operation": "put", "content": "Pat also approves travel."}),
                     "s")
    assert info.value.message == message
    with pytest.raises(MemoryUnauthorizedError) as info:
        tool.execute(json.dumps({"operation": "delete", "key": record.key.to_json()}), "s")
    assert info.value.message == message
    assert [r.content for r in writer.list()] == ["Pat approves expense reports."]
    with pytest.raises(ValueError, match="role"):
        RemoteMemoryStore(engine, ALICE, role="admin")
    writer.close()
    reader.close()


def test_tool_over_remote_store_end_to_end(engine: MemoryEngine, clock: MsClock,
                                           tmp_path: Path,
                                           memory_output: Callable[[Any], None]) -> None:
    sidecar = Sidecar(tmp_path / "sidecar.sqlite3")
    store = RemoteMemoryStore(engine, Namespace.parse(ALICE), sidecar=sidecar, clock=clock)
    tool = MemoryTool(store, AllowAllMutations())

    def run(call: dict) -> dict:
        out = tool.execute(json.dumps(call), "root")
        memory_output(out)
        return out

    run({"operation": "scan", "query": "release checklist"})
    put = run({"operation": "put", "content": "The release checklist lives in docs/release.md."})
    key = put["memory"]["key"]
    assert key["namespace"] == ALICE
    assert put["memory"]["probation_until_ms"] == put["memory"]["created_at_ms"] + 7 * 86_400_000
    scan = run({"operation": "scan", "query": "release checklist"})
    assert scan["candidates"][0]["key"] == key
    run({"operation": "put", "content": "The checklist moved to docs/ship.md.", "replace": key})
    read = run({"operation": "read", "keys": [dict(key, version=2)]})
    assert read["memories"][0]["scan_count"] == 1
    assert read["memories"][0]["use_count"] == 1
    run({"operation": "delete", "key": dict(key, version=2)})
    assert store.list() == []
    store.close()
    # The sidecar was the caller's: the store leaves it open (and drops deleted rows).
    assert sidecar.usage([(ALICE, key["id"])]) == {}
    sidecar.close()


def test_secret_content_never_reaches_the_engine(engine: MemoryEngine, clock: MsClock) -> None:
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    with pytest.raises(MemoryRequestError, match="likely secret"):
        store.put("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA")
    assert _items(engine) == []
    store.close()


def test_foreign_learnings_are_ignored(engine: MemoryEngine, clock: MsClock) -> None:
    from cortex_memory.contract import Learning, LearningKind, MemoryMeta

    ns = Namespace.parse(ALICE)
    engine.store(Learning("Quinn tagged this memory by hand.", LearningKind.FACT, 0.9,
                          meta=MemoryMeta(namespace=ns, tags=("memory", "memory-key:x"))))
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    assert store.list() == []
    assert store.scan("Quinn tagged memory", 5).abstained is True
    engine.forget(ForgetTarget.filter(MetaFilter(reach=Reach.exact(ns))))
    store.close()


def test_content_with_a_lone_surrogate_is_refused_before_the_engine(
    engine: MemoryEngine, clock: MsClock
) -> None:
    store = RemoteMemoryStore(engine, ALICE, clock=clock)
    with pytest.raises(MemoryRequestError) as caught:
        store.put("tea \ud800")
    assert caught.value.message == CONTENT_NOT_UNICODE
    assert _items(engine) == []

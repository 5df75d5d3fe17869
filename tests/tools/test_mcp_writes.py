"""cortex_save and cortex_handoff over real engines: statuses, references, ledger, refusals."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

from cortex_memory.contract import (
    Document,
    GetRequest,
    Learning,
    LearningKind,
    ListRequest,
    MemoryEngine,
    MetaFilter,
    Namespace,
    SourceKind,
    StoreItem,
)
from cortex_memory.errors import UnavailableError
from cortex_memory.local import LocalEngine
from cortex_memory.tools.mcp import Ledger, MemoryWriter, public_id_of
from cortex_memory.tools.mcp.observation import decode_observation, to_item

OBS: Dict[str, Any] = {
    "title": "Build system",
    "content": "The build uses make and runs the tests on every push.",
    "project": "cortex",
    "scope": "project",
    "topic_key": "build",
}


@pytest.fixture
def ledger() -> Ledger:
    made = Ledger()
    made.start_session("s1")
    yield made
    made.close()


@pytest.fixture
def writer(engine: MemoryEngine, ledger: Ledger,
           write_output: Callable[[Any], None]) -> MemoryWriter:
    made = MemoryWriter(engine, ledger)
    save, handoff = made.save, made.handoff

    def checked_save(arguments: object) -> Dict[str, Any]:
        out = save(arguments)
        write_output(out)  # every payload validates against the published schema
        return out

    def checked_handoff(arguments: object) -> Dict[str, Any]:
        out = handoff(arguments)
        write_output(out)
        return out

    made.save = checked_save  # type: ignore[method-assign]
    made.handoff = checked_handoff  # type: ignore[method-assign]
    return made


def _items(engine: MemoryEngine) -> List[Any]:
    return list(engine.list(ListRequest(MetaFilter(), 500)).items)


def _ref_key(engine: MemoryEngine) -> str:
    return "local_id" if engine.descriptor().id == "local" else "public_id"


def test_save_created_replayed_updated(writer: MemoryWriter, engine: MemoryEngine) -> None:
    first = writer.save(OBS)
    assert first["status"] == "created"
    assert list(first["observation_ref"]) == [_ref_key(engine)]
    again = writer.save(dict(OBS))
    assert again == {"observation_ref": first["observation_ref"], "status": "replayed"}
    changed = writer.save(dict(OBS, content="The build uses ninja now."))
    assert changed["status"] == "updated"
    assert changed["observation_ref"] != first["observation_ref"]
    assert [hit.text for hit in _items(engine)] == ["The build uses ninja now."]


def test_topics_are_scoped_by_project_and_scope(writer: MemoryWriter,
                                                engine: MemoryEngine) -> None:
    writer.save(OBS)
    other_project = writer.save(dict(OBS, project="other", content="Other project builds."))
    personal = writer.save(dict(OBS, scope="personal", content="My own build notes."))
    null_topic = writer.save(dict(OBS, content="Unrelated note.", topic_key=None))
    assert null_topic["error"]["message"] == "observation.topic_key must be a string"
    untopical = {k: v for k, v in OBS.items() if k != "topic_key"}
    no_topic = writer.save(dict(untopical, content="Unrelated note."))
    assert other_project["status"] == personal["status"] == no_topic["status"] == "created"
    assert len(_items(engine)) == 4


def test_references(engine: MemoryEngine, writer: MemoryWriter) -> None:
    ref = writer.save(OBS)["observation_ref"]
    item_id = _items(engine)[0].id
    if "public_id" in ref:
        assert ref["public_id"] == str(uuid.uuid5(uuid.NAMESPACE_URL,
                                                  "cortex-memory:item:" + item_id))
        assert ref["public_id"] == public_id_of(item_id)
    else:
        assert isinstance(ref["local_id"], int)
        assert ref["local_id"] >= 1
    # Stable: replays answer the same reference, and so does a second writer on the ledger.
    other = MemoryWriter(engine, writer.ledger)
    assert other.save(OBS)["observation_ref"] == ref


def test_local_ids_do_not_skip_on_replays(tmp_path: Path) -> None:
    with LocalEngine(str(tmp_path / "e.sqlite3")) as engine:
        ledger = Ledger()
        writer = MemoryWriter(engine, ledger)
        ids = []
        for n in range(3):
            obs = {k: v for k, v in OBS.items() if k != "topic_key"}
            obs["content"] = f"Note {n}."
            ids.append(writer.save(obs)["observation_ref"]["local_id"])
            writer.save(obs)
        assert ids == [1, 2, 3]
        ledger.close()


def test_observation_to_item_mapping() -> None:
    ns = Namespace.parse("project:cortex")
    short = to_item(decode_observation({
        "title": "Pref", "content": "Prefers tabs.", "type": "preference", "confidence": 0.5,
        "session_id": "s1", "source": "chat-42", "tags": ["style"], "project": "p",
        "scope": "personal", "topic_key": "indent",
    }), ns)
    assert isinstance(short, Learning)
    assert (short.text, short.kind, short.confidence, short.evidence) == (
        "Prefers tabs.", LearningKind.PREFERENCE, 0.5, "Pref")
    assert short.meta.namespace == ns
    assert short.meta.thread_id == "s1"
    assert short.meta.tags == ("style", "project:p", "scope:personal", "topic:indent")
    assert (short.meta.source.kind, short.meta.source.id) == (SourceKind.IMPORT, "chat-42")
    plain = to_item(decode_observation({"title": "T", "content": "x", "type": "musing"}), ns)
    assert isinstance(plain, Learning)
    assert (plain.kind, plain.confidence) == (LearningKind.OTHER, pytest.approx(0.8))
    assert plain.meta.source.kind is SourceKind.AGENT
    long = to_item(decode_observation({"title": "Essay", "content": "y" * 1025}), ns)
    assert isinstance(long, Document)
    assert long.title == "Essay"
    assert isinstance(to_item(decode_observation({"title": "E", "content": "y" * 1024}), ns),
                      Learning)


def test_handoff_replays_and_conflicts(writer: MemoryWriter, engine: MemoryEngine) -> None:
    args = {"idempotency_key": "handoff-1",
            "observation": {"title": "Next", "content": "Ship the release notes."},
            "capability_tuple": {"granted": ["save"], "by": "planner"}}
    first = writer.handoff(args)
    assert first["status"] == "created"
    second = writer.handoff(dict(args))
    assert second == {"observation_ref": first["observation_ref"], "status": "replayed"}
    conflict = writer.handoff(dict(args, capability_tuple={"granted": []}))
    assert conflict == {"error": {
        "code": "conflict",
        "message": "the idempotency key was already used with a different payload",
        "retryable": False}}
    other_scope = writer.handoff(dict(args, observation=dict(args["observation"],
                                                             scope="personal")))
    assert "error" not in other_scope  # the idempotency key is per scope
    assert len(_items(engine)) == 2


def test_relation_targets_must_exist(writer: MemoryWriter, engine: MemoryEngine,
                                     ledger: Ledger) -> None:
    target = writer.save(OBS)["observation_ref"]
    args = {"idempotency_key": "k",
            "observation": {"title": "Follow-up", "content": "Build docs too."},
            "relation": {"target": target, "type": "follows", "weight": 0.5,
                         "reasoning": "same area"}}
    ok = writer.handoff(args)
    assert ok["status"] == "created"
    source_row = (ledger.by_local_id(ok["observation_ref"]["local_id"])
                  if "local_id" in ok["observation_ref"]
                  else ledger.by_public_id(ok["observation_ref"]["public_id"]))
    assert source_row is not None
    assert ledger.relations_of(source_row.local_id) == 1
    before = len(_items(engine))
    # A missing target is refused before anything is stored.
    missing = ({"local_id": 999} if "local_id" in target
               else {"public_id": str(uuid.UUID(int=5))})
    refused = writer.handoff(dict(args, idempotency_key="k2",
                                  observation={"title": "x", "content": "Brand new words."},
                                  relation=dict(args["relation"], target=missing)))
    assert refused["error"] == {"code": "validation",
                                "message": "relation.target names no existing observation",
                                "retryable": False}
    # A target replaced through its topic no longer exists either.
    writer.save(dict(OBS, content="The build uses bazel."))
    retired = writer.handoff(dict(args, idempotency_key="k3",
                                  observation={"title": "y", "content": "Other new words."}))
    assert retired["error"]["code"] == "validation"
    assert len(_items(engine)) == before  # the replacement swapped one item for another


def test_local_runtime_accepts_only_local_id_targets(tmp_path: Path, ledger: Ledger) -> None:
    with LocalEngine(str(tmp_path / "e.sqlite3")) as engine:
        writer = MemoryWriter(engine, ledger)
        writer.save(OBS)
        out = writer.handoff({
            "idempotency_key": "k",
            "observation": {"title": "t", "content": "c"},
            "relation": {"target": {"public_id": public_id_of(_items(engine)[0].id)},
                         "type": "follows"},
        })
        assert out["error"]["message"] == (
            "the local runtime accepts only local_id relation targets")
        assert len(_items(engine)) == 1


def test_sessions_are_checked_before_any_mutation(writer: MemoryWriter,
                                                  engine: MemoryEngine) -> None:
    refused = writer.save(dict(OBS, session_id="ghost"))
    assert refused["error"] == {"code": "validation",
                                "message": "observation.session_id names no started session",
                                "retryable": False}
    handoff = writer.handoff({"idempotency_key": "k",
                              "observation": dict(OBS, session_id="ghost")})
    assert handoff["error"]["code"] == "validation"
    assert _items(engine) == []
    ok = writer.save(dict(OBS, session_id="s1"))
    assert ok["status"] == "created"
    assert _items(engine)[0].meta.thread_id == "s1"


def test_shape_refusals(writer: MemoryWriter, engine: MemoryEngine) -> None:
    cases = [
        ({"title": "t"}, "observation needs `content`"),
        ({"title": "t", "content": "  "}, "observation.content must not be blank"),
        ({"title": "t", "content": "c", "scope": "team"},
         "observation.scope must be project or personal"),
        ({"title": "t", "content": "c", "confidence": 1.5},
         "observation.confidence must be between 0 and 1"),
        ({"title": "t", "content": "c", "confidence": True},
         "observation.confidence must be a number"),
        ({"title": "t", "content": "c", "tags": ["a", 1]},
         "observation.tags must be an array of strings"),
        ({"title": "t", "content": "c", "is_admin": True}, "observation does not take `is_admin`"),
        (["not", "an", "object"], "the arguments must be an object"),
    ]
    for arguments, message in cases:
        assert writer.save(arguments)["error"] == {"code": "validation", "message": message,
                                                   "retryable": False}
    handoffs = [
        ({"observation": OBS}, "cortex_handoff needs a non-empty `idempotency_key`"),
        ({"idempotency_key": "k"}, "cortex_handoff needs `observation`"),
        ({"idempotency_key": "k", "observation": OBS, "extra": 1},
         "cortex_handoff does not take `extra`"),
        ({"idempotency_key": "k", "observation": OBS,
          "relation": {"target": {"local_id": 1, "public_id": str(uuid.UUID(int=1))},
                       "type": "t"}},
         "relation.target must hold exactly one of local_id, public_id"),
        ({"idempotency_key": "k", "observation": OBS,
          "relation": {"target": {"local_id": 0}, "type": "t"}},
         "relation.target.local_id must be an integer of at least 1"),
        ({"idempotency_key": "k", "observation": OBS,
          "relation": {"target": {"public_id": "nope"}, "type": "t"}},
         "relation.target.public_id must be a UUID string"),
        ({"idempotency_key": "k", "observation": OBS, "relation": {"target": {"local_id": 1}}},
         "relation needs a non-empty `type`"),
    ]
    for arguments, message in handoffs:
        assert writer.handoff(arguments)["error"]["message"] == message
    assert _items(engine) == []


def test_payload_too_large(writer: MemoryWriter, engine: MemoryEngine) -> None:
    big = dict(OBS, content="z" * (256 * 1024))
    assert writer.save(big)["error"] == {"code": "payload_too_large",
                                         "message": "the observation is too large",
                                         "retryable": False}
    assert writer.handoff({"idempotency_key": "k", "observation": big})["error"]["code"] == (
        "payload_too_large")
    assert _items(engine) == []


def test_ledger_never_stores_payloads_or_keys(tmp_path: Path, engine: MemoryEngine) -> None:
    path = tmp_path / "ledger.sqlite3"
    ledger = Ledger(path)
    writer = MemoryWriter(engine, ledger)
    key = "idem-key-canary-4711"
    writer.handoff({"idempotency_key": key,
                    "observation": dict(OBS, content="Canary content 0815 lives here.",
                                        topic_key="canary-topic")})
    ledger.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("ledger.sqlite3*"))
    for canary in (key, "Canary content 0815", "canary-topic", "Build system"):
        assert canary.encode() not in raw


def test_local_engine_failures_are_persistence_not_transport(tmp_path: Path) -> None:
    class Flaky(LocalEngine):
        def store(self, item: StoreItem, **kwargs: Any) -> Any:
            raise UnavailableError("database is locked")

    with Flaky(str(tmp_path / "e.sqlite3")) as engine:
        ledger = Ledger()
        out = MemoryWriter(engine, ledger).save(OBS)
        assert out["error"] == {"code": "persistence",
                                "message": "the memory store could not save the observation",
                                "retryable": False}
        ledger.close()


def test_remote_transport_failures_are_retryable(ledger: Ledger) -> None:
    from cortex_memory.contract.conformance import ReferenceEngine

    class Down(ReferenceEngine):
        def store(self, item: StoreItem, **kwargs: Any) -> Any:
            raise UnavailableError("memory API request to h: connection refused")

    out = MemoryWriter(Down(), ledger).save(OBS)
    assert out["error"] == {"code": "transport",
                            "message": "the memory service could not be reached",
                            "retryable": True}


def test_a_topic_replacement_forgets_the_old_item(writer: MemoryWriter,
                                                  engine: MemoryEngine) -> None:
    writer.save(OBS)
    old_id = _items(engine)[0].id
    writer.save(dict(OBS, content="Replaced build notes."))
    assert engine.get(GetRequest((old_id,))) == []
    # Saving the old observation again brings it back as the topic's holder.
    back = writer.save(OBS)
    assert back["status"] == "updated"
    assert [hit.id for hit in _items(engine)] == [old_id]

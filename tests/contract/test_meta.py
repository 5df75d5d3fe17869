"""MemoryMeta and its parts: JSON shape, omission, types, and the redaction helpers."""

from __future__ import annotations

import copy
import pickle
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cortex_memory.contract import (
    REDACTED_PREFIX,
    MemoryMeta,
    Namespace,
    ObservedActor,
    Source,
    SourceKind,
    ToolCallRef,
    TurnRange,
    holds_phone_number,
    redacted_id,
    same_id,
)
from cortex_memory.contract.jsonfmt import dumps
from cortex_memory.errors import InvalidRequestError

FULL = MemoryMeta(
    namespace=Namespace.parse("team:acme/agent:writer"),
    workspace="w",
    folder="/a/b",
    file_path="/a/b/c.rs",
    language="rust",
    repo="o/r",
    commit="abc",
    url="https://x.test/a?b=1&c=2",
    thread_id="t1",
    turns=TurnRange(4, 5),
    agent_id="a1",
    tool_call=ToolCallRef("grep", "call-9"),
    source=Source(SourceKind.FOLDER, "src_1"),
    tags=["x", "y"],  # type: ignore[arg-type]
    observed_at=datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=timezone.utc),
    derive=False,
    observed_actor=ObservedActor("user:priya@acme.com", "Priya"),
)

WIRE_ORDER = [
    "namespace", "workspace", "folder", "file_path", "language", "repo", "commit", "url",
    "thread_id", "turns", "agent_id", "tool_call", "source", "tags", "observed_at", "derive",
    "observed_actor",
]


def test_default_meta_is_only_the_source() -> None:
    assert MemoryMeta().to_json() == {"source": {"kind": "agent"}}
    assert MemoryMeta.from_json({}) == MemoryMeta()
    assert MemoryMeta().source == Source(SourceKind.AGENT, None)


def test_full_meta_json_is_in_wire_order_and_round_trips() -> None:
    wire = FULL.to_json()
    assert list(wire) == WIRE_ORDER
    assert wire["observed_at"] == "2026-01-02T03:04:05.120Z"
    assert wire["tool_call"] == {"name": "grep", "id": "call-9"}
    assert wire["observed_actor"] == {"id": "user:priya@acme.com", "name": "Priya"}
    assert MemoryMeta.from_json(wire) == FULL
    assert MemoryMeta.from_json(wire).to_json() == wire


def test_identity_json_leaves_out_observation_and_call_id() -> None:
    identity = FULL.identity_json()
    assert "observed_at" not in identity
    assert "observed_actor" not in identity
    assert identity["tool_call"] == {"name": "grep"}
    assert list(identity) == [k for k in WIRE_ORDER if k not in ("observed_at", "observed_actor")]


def test_omission_rules() -> None:
    meta = MemoryMeta(tags=(), derive=None, namespace=Namespace.root())
    assert meta.to_json() == {"source": {"kind": "agent"}}
    assert MemoryMeta(derive=True).to_json() == {"source": {"kind": "agent"}, "derive": True}
    assert MemoryMeta(workspace="").to_json() == {"workspace": "", "source": {"kind": "agent"}}


def test_constructor_normalises() -> None:
    meta = MemoryMeta(tags=iter(["a", "b"]))  # type: ignore[arg-type]
    assert meta.tags == ("a", "b")
    plus_five = timezone(timedelta(hours=5, minutes=30))
    local = MemoryMeta(observed_at=datetime(2026, 1, 2, 8, 34, 5, tzinfo=plus_five))
    assert local.observed_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert local.observed_at is not None
    assert local.observed_at.tzinfo is timezone.utc
    assert Source("file").kind is SourceKind.FILE  # type: ignore[arg-type]
    assert MemoryMeta.from_source(SourceKind.FILE, "f1").to_json() == {
        "source": {"kind": "file", "id": "f1"}
    }
    assert FULL.with_tags(["z"]).tags == ("z",)
    assert FULL.with_namespace(Namespace.root()).namespace.is_root()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tags": "abc"},
        {"tags": [1]},
        {"workspace": 3},
        {"namespace": "team:acme"},
        {"observed_at": datetime(2026, 1, 1)},
        {"observed_at": "2026-01-01T00:00:00Z"},
        {"derive": "no"},
        {"turns": (1, 2)},
        {"tool_call": "grep"},
        {"source": "agent"},
        {"observed_actor": "user:x"},
    ],
)
def test_wrong_types_are_type_errors(kwargs: Any) -> None:
    with pytest.raises(TypeError):
        MemoryMeta(**kwargs)


def test_turn_range_is_u32() -> None:
    with pytest.raises(InvalidRequestError):
        TurnRange(-1, 2)
    with pytest.raises(InvalidRequestError):
        TurnRange(0, 2**32)
    with pytest.raises(TypeError):
        TurnRange(True, 2)
    assert TurnRange(0, 2**32 - 1).to_json() == {"first": 0, "last": 4294967295}


@pytest.mark.parametrize("retired", ["link", "github", "rss", "composio"])
def test_retired_source_kinds_read_as_import(retired: str) -> None:
    assert SourceKind(retired) is SourceKind.IMPORT
    meta = MemoryMeta.from_json({"source": {"kind": retired, "id": "x"}})
    assert meta.source.kind is SourceKind.IMPORT
    assert dumps(meta.to_json()) == '{"source":{"kind":"import","id":"x"}}'


def test_source_kinds_all_order() -> None:
    assert [k.value for k in SourceKind] == ["folder", "file", "conversation", "agent", "import"]


@pytest.mark.parametrize(
    "bad",
    [
        [],
        "meta",
        {"tags": "x"},
        {"tags": [1]},
        {"namespace": "robot:x"},
        {"namespace": 5},
        {"source": {"kind": "web"}},
        {"source": "agent"},
        {"turns": {"first": 1}},
        {"turns": {"first": -1, "last": 2}},
        {"turns": {"first": 1.0, "last": 2}},
        {"turns": {"first": True, "last": 2}},
        {"tool_call": {"id": "x"}},
        {"observed_at": "yesterday"},
        {"observed_at": "2026-01-01T00:00:00.123456789Z"},
        {"derive": "false"},
        {"observed_actor": {"name": "x"}},
        {"workspace": 1},
    ],
)
def test_from_json_refusals(bad: Any) -> None:
    with pytest.raises(InvalidRequestError):
        MemoryMeta.from_json(bad)


def test_null_reads_as_missing() -> None:
    assert MemoryMeta.from_json({"workspace": None, "tags": None, "source": None}) == MemoryMeta()


def test_meta_copies_and_hash() -> None:
    for clone in (copy.copy(FULL), copy.deepcopy(FULL), pickle.loads(pickle.dumps(FULL))):
        assert clone == FULL
        assert hash(clone) == hash(FULL)


# -------------------------------------------------------------- redaction


def test_redacted_id_example() -> None:
    assert redacted_id("+15551234567") == "tm-redacted:8a59780bb8cd2ba022bfa5ba2ea3b6e0"
    assert REDACTED_PREFIX == "tm-redacted:"


def test_same_id() -> None:
    assert not same_id(None, "x")
    assert same_id("x", "x")
    assert same_id(redacted_id("+15551234567"), "+15551234567")
    assert not same_id(redacted_id("+15551234567"), "+15551234568")
    assert not same_id("x", "y")
    # Only the held side may be redacted.
    assert not same_id("+15551234567", redacted_id("+15551234567"))


@pytest.mark.parametrize(
    "value",
    [
        "channel:sms_15551234567",
        "+1 (555) 123-4567",
        "555.123.4567",
        "call 555-1234 later",
        "channel:whatsapp_15551234567@s.whatsapp.net_reply",
        "5551234",
        "x_5551234",
        "tel 555 123 4567",
        "1234567é",
    ],
)
def test_holds_phone_number(value: str) -> None:
    assert holds_phone_number(value)


@pytest.mark.parametrize(
    "value",
    [
        "123e4567-e89b-12d3-a456-426614174000",
        "thread-123E4567-E89B-12D3-A456-426614174000-x",
        "jane1234567@example.com",
        "commit 9f31234567ab",
        "t-1",
        "a1b2c3d4e5",
        "",
        "tm-redacted:8a59780bb8cd2ba022bfa5ba2ea3b6e0",
        "tm-redacted:5551234567",
        "555123",
        "abc5551234567",
        "5551234567x",
    ],
)
def test_does_not_hold_phone_number(value: str) -> None:
    assert not holds_phone_number(value)


def test_a_letter_after_a_separator_does_not_touch() -> None:
    assert holds_phone_number("555-1234-x")
    assert not holds_phone_number("555-1234x")

"""MetaFilter: the matching rules of contract.md §7, emptiness and JSON."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cortex_memory.contract import (
    ItemKind,
    MemoryMeta,
    Namespace,
    Reach,
    Source,
    SourceKind,
    ToolCallRef,
    TurnRange,
    redacted_id,
)
from cortex_memory.contract.filter import MetaFilter, path_matches
from cortex_memory.errors import InvalidRequestError

DOC = ItemKind.DOCUMENT
T0 = datetime(2001, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("held", "wanted", "expected"),
    [
        ("/a/b", "/a/b", True),
        ("/a/b/c.rs", "/a/b", True),
        ("/a/b/c.rs", "/a/b/", True),
        ("/a/b", "/a/b/", True),
        ("/a/b", "/a/b//", True),
        ("/a/bc", "/a/b", False),
        ("/a/bc", "/a/b/", False),
        ("/a", "/a/b", False),
        ("C:\\a\\b\\c", "C:\\a\\b", False),
        ("/a/b/c", "/", True),
        (None, "/a", False),
        ("rel/x", "rel", True),
    ],
)
def test_path_prefix_rule(held: Any, wanted: str, expected: bool) -> None:
    assert path_matches(held, wanted) is expected
    meta = MemoryMeta(folder=held, file_path=held)
    assert MetaFilter(folder=wanted).matches(DOC, meta) is expected
    assert MetaFilter(file_path=wanted).matches(DOC, meta) is expected


def test_empty_filter_matches_everything_outside_sandboxes() -> None:
    empty = MetaFilter()
    assert empty.is_empty()
    assert MetaFilter(kinds=(), sources=[], tags_any=iter([])).is_empty()  # type: ignore[arg-type]
    assert empty.matches(DOC, MemoryMeta())
    nested = MemoryMeta(namespace=Namespace.parse("agent:a/agent:b"))
    assert empty.matches(ItemKind.LEARNING, nested)
    assert not empty.matches(DOC, MemoryMeta(namespace=Namespace.parse("agent:a/service:job")))


def test_a_reach_alone_is_not_empty() -> None:
    assert not MetaFilter(reach=Reach.default()).is_empty()
    only_root = MetaFilter(reach=Reach.default())
    assert only_root.matches(DOC, MemoryMeta())
    assert not only_root.matches(DOC, MemoryMeta(namespace=Namespace.parse("agent:a")))
    job = Namespace.parse("agent:a/service:job")
    assert MetaFilter(reach=Reach.exact(job)).matches(DOC, MemoryMeta(namespace=job))


def test_exact_string_fields() -> None:
    meta = MemoryMeta(workspace="w", language="en", repo="o/r", commit="c", url="u")
    for name in ("workspace", "language", "repo", "commit", "url"):
        assert MetaFilter(**{name: getattr(meta, name)}).matches(DOC, meta)
        assert not MetaFilter(**{name: "other"}).matches(DOC, meta)
        assert not MetaFilter(**{name: getattr(meta, name)}).matches(DOC, MemoryMeta())
    # Exact means exact: no prefix rule outside folder and file_path.
    assert not MetaFilter(workspace="w/").matches(DOC, meta)


def test_ids_compare_through_same_id() -> None:
    phone = "+15551234567"
    hidden = redacted_id(phone)
    redacted = MemoryMeta(
        thread_id=hidden, agent_id=hidden, source=Source(SourceKind.FILE, hidden)
    )
    plain = MemoryMeta(thread_id="t", agent_id="a", source=Source(SourceKind.FILE, "s"))
    assert MetaFilter(thread_id=phone).matches(DOC, redacted)
    assert MetaFilter(agent_id=phone).matches(DOC, redacted)
    assert MetaFilter(source_id=phone).matches(DOC, redacted)
    assert MetaFilter(thread_id="t", agent_id="a", source_id="s").matches(DOC, plain)
    assert not MetaFilter(thread_id="x").matches(DOC, plain)
    assert not MetaFilter(source_id="s").matches(DOC, MemoryMeta())


def test_turns_tool_call_sources_tags_and_kinds() -> None:
    meta = MemoryMeta(
        turns=TurnRange(4, 5),
        tool_call=ToolCallRef("grep", "id-1"),
        source=Source(SourceKind.FOLDER),
        tags=("a", "b"),
    )
    assert MetaFilter(turns=TurnRange(4, 5)).matches(DOC, meta)
    assert not MetaFilter(turns=TurnRange(4, 6)).matches(DOC, meta)
    assert MetaFilter(tool_call="grep").matches(DOC, meta)
    assert not MetaFilter(tool_call="id-1").matches(DOC, meta)
    assert not MetaFilter(tool_call="grep").matches(DOC, MemoryMeta())
    assert MetaFilter(sources=(SourceKind.FILE, SourceKind.FOLDER)).matches(DOC, meta)
    assert not MetaFilter(sources=(SourceKind.FILE,)).matches(DOC, meta)
    assert MetaFilter(tags_any=("z", "b")).matches(DOC, meta)
    assert not MetaFilter(tags_any=("z",)).matches(DOC, meta)
    learnings = MetaFilter.for_kinds([ItemKind.LEARNING])
    assert learnings.matches(ItemKind.LEARNING, meta)
    assert not learnings.matches(DOC, meta)
    assert learnings.admits_kind(ItemKind.LEARNING)
    assert not learnings.admits_kind(DOC)
    assert MetaFilter().admits_kind(DOC)


def test_time_window_is_inclusive_then_exclusive() -> None:
    window = MetaFilter(observed_after=T0, observed_before=T0 + timedelta(days=1))
    assert window.matches(DOC, MemoryMeta(observed_at=T0))
    assert window.matches(DOC, MemoryMeta(observed_at=T0 + timedelta(hours=23)))
    assert not window.matches(DOC, MemoryMeta(observed_at=T0 + timedelta(days=1)))
    assert not window.matches(DOC, MemoryMeta(observed_at=T0 - timedelta(microseconds=1)))
    assert not window.matches(DOC, MemoryMeta())  # an undated item never matches
    assert not MetaFilter(observed_before=T0).matches(DOC, MemoryMeta())
    later = MemoryMeta(observed_at=T0 + timedelta(days=900))
    assert MetaFilter(observed_after=T0).matches(DOC, later)
    plus_two = timezone(timedelta(hours=2))
    local = MetaFilter(observed_after=datetime(2001, 1, 1, 2, tzinfo=plus_two))
    assert local.observed_after == T0
    assert local.matches(DOC, MemoryMeta(observed_at=T0))


def test_json_round_trip_and_order() -> None:
    full = MetaFilter(
        reach=Reach.subtree(Namespace.parse("team:acme")),
        workspace="w",
        folder="/a",
        file_path="/a/b",
        language="en",
        repo="o/r",
        commit="c",
        url="u",
        thread_id="t",
        turns=TurnRange(1, 2),
        agent_id="a",
        tool_call="grep",
        source_id="s",
        kinds=(ItemKind.LEARNING,),
        sources=(SourceKind.FILE,),
        tags_any=("x",),
        observed_after=T0,
        observed_before=T0 + timedelta(milliseconds=5),
    )
    wire = full.to_json()
    assert list(wire) == [
        "reach", "workspace", "folder", "file_path", "language", "repo", "commit", "url",
        "thread_id", "turns", "agent_id", "tool_call", "source_id", "kinds", "sources",
        "tags_any", "observed_after", "observed_before",
    ]
    assert wire["observed_before"] == "2001-01-01T00:00:00.005Z"
    assert wire["kinds"] == ["learning"]
    assert MetaFilter.from_json(wire) == full
    assert MetaFilter().to_json() == {}
    assert MetaFilter.from_json({}) == MetaFilter()
    assert MetaFilter.from_json({"sources": ["github"]}).sources == (SourceKind.IMPORT,)


@pytest.mark.parametrize(
    "bad",
    [
        "x",
        {"kinds": ["memo"]},
        {"kinds": "document"},
        {"sources": ["web"]},
        {"tags_any": [1]},
        {"reach": {"at": "robot:x"}},
        {"turns": {"first": 1}},
        {"observed_after": "2001"},
        {"tool_call": {"name": "grep"}},
    ],
)
def test_from_json_refusals(bad: Any) -> None:
    with pytest.raises(InvalidRequestError):
        MetaFilter.from_json(bad)


def test_constructor_types() -> None:
    assert MetaFilter(kinds=["document"]).kinds == (ItemKind.DOCUMENT,)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        MetaFilter(tags_any="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        MetaFilter(reach=Namespace.root())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        MetaFilter(observed_after=datetime(2001, 1, 1))
    with pytest.raises(InvalidRequestError):
        MetaFilter(kinds=["memo"])  # type: ignore[list-item]
    assert MetaFilter().with_reach(Reach.default()).reach == Reach.default()

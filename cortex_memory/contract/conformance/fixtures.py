"""The suite's fixtures: the round-trip items and the metadata probes (contract.md §9.2).

Every text carries the run's marker, and every item lives in the run's
workspace (the probes in its ``probes`` sub-workspace), so the suite reads
back only what it wrote and cleanup finds all of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Dict, Tuple

from cortex_memory.contract.conformance.harness import Run
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import (
    Conversation,
    Document,
    ItemKind,
    Learning,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind, ToolCallRef, TurnRange

__all__ = ["ROUND_TRIP_AT", "Probe", "probes", "round_trip_items"]

#: The instant both round-trip conversation turns carry.
ROUND_TRIP_AT = datetime(2025, 5, 6, 7, 8, 9, tzinfo=timezone.utc)


def round_trip_items(run: Run) -> Tuple[StoreItem, ...]:
    """One item of each kind, in kind order: a document, a conversation, a learning."""
    m = run.marker
    meta = run.meta()
    document = Document(
        TextBody(f"{m} document body"),
        title="Round trip",
        mime="text/markdown",
        meta=meta.with_tags(["roundtrip"]),
    )
    conversation = Conversation(
        (
            Turn(Role.USER, f"{m} what is in the plan", ROUND_TRIP_AT),
            Turn(
                Role.ASSISTANT,
                "the plan has three steps",
                ROUND_TRIP_AT,
                (ToolCallRef("read_plan", "call-1"),),
            ),
        ),
        replace(meta, source=Source(SourceKind.CONVERSATION, f"{m}-thread")),
    )
    learning = Learning(
        f"{m} the user prefers short answers",
        LearningKind.PREFERENCE,
        0.75,
        evidence="said so twice",
        meta=meta,
    )
    return (document, conversation, learning)


@dataclass(frozen=True)
class Probe:
    """One metadata field under test: an item and a filter that must select only it."""

    field: str
    item: StoreItem
    filter: MetaFilter


def probes(run: Run) -> Tuple[Probe, ...]:
    """One probe per metadata field, all in the probe workspace (contract.md §9.2 table).

    The ``source_id`` and ``sources`` probes use different source kinds
    (``file`` and ``folder``), so ``sources=[folder]`` selects only its own probe.
    """
    m = run.marker
    workspace = run.probe_workspace
    base = MemoryMeta(workspace=workspace)
    where = run.probe_filter()

    def doc(label: str, meta: MemoryMeta) -> Document:
        return StoreItem.document(f"{m} {label} probe", meta)

    def chat(question: str, answer: str, meta: MemoryMeta) -> Conversation:
        return Conversation((Turn.new(Role.USER, question), Turn.new(Role.ASSISTANT, answer)), meta)

    def same(field: str, label: str, value: Any) -> Probe:
        # A document holding ``value`` in ``field``, selected by that same value.
        held: Dict[str, Any] = {field: value}
        return Probe(field, doc(label, replace(base, **held)), replace(where, **held))

    def chat_probe(field: str, label: str, value: Any) -> Probe:
        # A two-turn conversation holding ``value`` in ``field``, selected by it.
        held: Dict[str, Any] = {field: value}
        item = chat(f"{m} {label} question", f"{label} answer", replace(base, **held))
        return Probe(field, item, replace(where, **held))

    return (
        Probe(
            "folder",
            doc("folder", replace(base, folder=f"/{m}/src/app")),
            replace(where, folder=f"/{m}/src"),
        ),
        Probe(
            "file_path",
            doc("file path", replace(base, file_path=f"/{m}/docs/guide.md")),
            replace(where, file_path=f"/{m}/docs"),
        ),
        same("language", "language", f"{m}-lang"),
        same("repo", "repo", f"owner/{m}"),
        same("commit", "commit", f"{m}c0ffee"),
        same("url", "url", f"https://{m}.test/a"),
        chat_probe("thread_id", "thread", f"{m}-t1"),
        chat_probe("turns", "turns", TurnRange(4, 5)),
        same("agent_id", "agent", f"{m}-agent"),
        Probe(
            "tool_call",
            doc("tool call", replace(base, tool_call=ToolCallRef(f"{m}_tool"))),
            replace(where, tool_call=f"{m}_tool"),
        ),
        Probe(
            "source_id",
            doc("source id", replace(base, source=Source(SourceKind.FILE, f"{m}-src"))),
            replace(where, source_id=f"{m}-src"),
        ),
        Probe(
            "sources",
            doc("sources", replace(base, source=Source(SourceKind.FOLDER))),
            replace(where, sources=(SourceKind.FOLDER,)),
        ),
        Probe(
            "tags_any",
            doc("tags", base.with_tags([f"{m}-tag"])),
            replace(where, tags_any=(f"{m}-none", f"{m}-tag")),
        ),
        Probe(
            "kinds",
            Learning(f"{m} kinds learning", LearningKind.FACT, 0.5, meta=base),
            replace(where, kinds=(ItemKind.LEARNING,)),
        ),
        Probe(
            "observed_at",
            doc("observed", replace(base, observed_at=_day(2001, 1, 1))),
            replace(where, observed_after=_day(2000, 1, 1), observed_before=_day(2002, 1, 1)),
        ),
    )


def _day(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=timezone.utc)

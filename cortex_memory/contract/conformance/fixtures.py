"""The suite's fixtures: the round-trip items and the metadata probes (contract.md §9.2).

Every text carries the run's marker, and every item lives in the run's
workspace (the probes in its ``probes`` sub-workspace), so the suite reads
back only what it wrote and cleanup finds all of it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Tuple

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

    def probe(field: str, item: StoreItem, flt: MetaFilter) -> Probe:
        return Probe(field, item, flt)

    return (
        probe(
            "folder",
            doc("folder", replace(base, folder=f"/{m}/src/app")),
            replace(where, folder=f"/{m}/src"),
        ),
        probe(
            "file_path",
            doc("file path", replace(base, file_path=f"/{m}/docs/guide.md")),
            replace(where, file_path=f"/{m}/docs"),
        ),
        probe(
            "language",
            doc("language", replace(base, language=f"{m}-lang")),
            replace(where, language=f"{m}-lang"),
        ),
        probe(
            "repo",
            doc("repo", replace(base, repo=f"owner/{m}")),
            replace(where, repo=f"owner/{m}"),
        ),
        probe(
            "commit",
            doc("commit", replace(base, commit=f"{m}c0ffee")),
            replace(where, commit=f"{m}c0ffee"),
        ),
        probe(
            "url",
            doc("url", replace(base, url=f"https://{m}.test/a")),
            replace(where, url=f"https://{m}.test/a"),
        ),
        probe(
            "thread_id",
            chat(f"{m} thread question", "thread answer", replace(base, thread_id=f"{m}-t1")),
            replace(where, thread_id=f"{m}-t1"),
        ),
        probe(
            "turns",
            chat(f"{m} turns question", "turns answer", replace(base, turns=TurnRange(4, 5))),
            replace(where, turns=TurnRange(4, 5)),
        ),
        probe(
            "agent_id",
            doc("agent", replace(base, agent_id=f"{m}-agent")),
            replace(where, agent_id=f"{m}-agent"),
        ),
        probe(
            "tool_call",
            doc("tool call", replace(base, tool_call=ToolCallRef(f"{m}_tool"))),
            replace(where, tool_call=f"{m}_tool"),
        ),
        probe(
            "source_id",
            doc("source id", replace(base, source=Source(SourceKind.FILE, f"{m}-src"))),
            replace(where, source_id=f"{m}-src"),
        ),
        probe(
            "sources",
            doc("sources", replace(base, source=Source(SourceKind.FOLDER))),
            replace(where, sources=(SourceKind.FOLDER,)),
        ),
        probe(
            "tags_any",
            doc("tags", base.with_tags([f"{m}-tag"])),
            replace(where, tags_any=(f"{m}-none", f"{m}-tag")),
        ),
        probe(
            "kinds",
            Learning(f"{m} kinds learning", LearningKind.FACT, 0.5, meta=base),
            replace(where, kinds=(ItemKind.LEARNING,)),
        ),
        probe(
            "observed_at",
            doc("observed", replace(base, observed_at=_day(2001, 1, 1))),
            replace(where, observed_after=_day(2000, 1, 1), observed_before=_day(2002, 1, 1)),
        ),
    )


def _day(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=timezone.utc)

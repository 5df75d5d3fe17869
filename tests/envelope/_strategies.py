"""Hypothesis strategies for items and metas, shared by the write path's tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import strategies as st

from cortex_memory.contract.meta import MemoryMeta, ObservedActor, Source, SourceKind, ToolCallRef
from cortex_memory.contract.namespace import Namespace

TEXT = st.text(min_size=0, max_size=40)
SOME_TEXT = st.text(min_size=1, max_size=300)
OPT = st.none() | TEXT
WHEN = st.none() | st.builds(
    lambda micros, hours: datetime(2025, 3, 4, 5, 6, 7, micros, timezone(timedelta(hours=hours))),
    st.sampled_from([0, 1000, 123456]),
    st.integers(-12, 12),
)


@st.composite
def metas(draw: st.DrawFn) -> MemoryMeta:
    return MemoryMeta(
        namespace=draw(st.sampled_from([Namespace.root(), Namespace.parse("team:alpha/user:x")])),
        workspace=draw(st.none() | st.sampled_from(["/srv/ws", "~/ws", "C:ws", "logical"])),
        folder=draw(st.none() | st.sampled_from(["/home/u/docs/", "a/b", "C:\\x"])),
        file_path=draw(st.none() | st.sampled_from(["/home/u/n.md", "n.txt", "C:\\x\\y.pdf"])),
        language=draw(OPT),
        repo=draw(OPT),
        thread_id=draw(
            st.none()
            | st.sampled_from(["+1 (555) 123-4567", "thread-12345678-1234-1234-1234-123456789abc"])
            | TEXT
        ),
        agent_id=draw(st.none() | st.sampled_from(["whatsapp 15551234567"]) | TEXT),
        tool_call=draw(st.none() | st.builds(ToolCallRef, SOME_TEXT, OPT)),
        source=draw(st.builds(Source, st.sampled_from(list(SourceKind)), OPT)),
        tags=tuple(draw(st.lists(TEXT, max_size=3))),
        observed_at=draw(WHEN),
        derive=draw(st.sampled_from([None, True, False])),
        observed_actor=draw(st.none() | st.builds(ObservedActor, SOME_TEXT, OPT)),
    )

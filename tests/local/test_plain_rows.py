"""The one-pass rows of plain items (``plainrows``) are exactly what ``prepare`` gives.

``plain_row`` writes an item's id, stored JSON and columns around its values
for the exact contract types; it must give the same :class:`Prepared` as the
general ``prepare`` (byte for byte), or None so that the general way runs.
Checked on generated items, odd ones included (subclasses, odd metas, long
texts, lone surrogates, tool calls, observed actors).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    Conversation,
    Document,
    Learning,
    LearningKind,
    MemoryMeta,
    Namespace,
    Role,
    StoreItem,
    TextBody,
    Turn,
    UriBody,
)
from cortex_memory.contract.jsonfmt import LONG_STR, dumps
from cortex_memory.contract.meta import ObservedActor, Source, SourceKind, ToolCallRef, TurnRange
from cortex_memory.local.plainrows import plain_row, prepare_all
from cortex_memory.local.store import Prepared, prepare


class OddStr(str):
    """A ``str`` subclass: the general path writes it as its text."""


@dataclass(frozen=True)
class OddMeta(MemoryMeta):
    """A meta subclass: never taken by the fast path."""


@dataclass(frozen=True)
class OddDocument(Document):
    """A document subclass: never taken by the fast path."""


TEXT = st.text(max_size=30) | st.sampled_from(['"q"\\', "\x00\x1f\x7f", "é😀", "\ud800", "\u2028"])
SOME = TEXT.filter(lambda t: t.strip() != "") | st.just("x")
OPT = st.none() | TEXT
WHEN = st.none() | st.builds(
    lambda micros, hours: datetime(2025, 3, 4, 5, 6, 7, micros, timezone(timedelta(hours=hours))),
    st.sampled_from([0, 1000, 123456]),
    st.integers(-12, 12),
)
NAMESPACES = st.sampled_from(
    ["", "team:acme", "agent:writer", "team:a/service:mail/agent:b", "service:x/service:y"]
).map(Namespace.parse)


@st.composite
def metas(draw: st.DrawFn) -> MemoryMeta:
    cls = draw(st.sampled_from([MemoryMeta, MemoryMeta, MemoryMeta, OddMeta]))
    first = draw(st.integers(0, 2**32 - 1))
    return cls(  # type: ignore[no-any-return]
        namespace=draw(NAMESPACES),
        workspace=draw(OPT | st.builds(OddStr, TEXT)),
        folder=draw(OPT),
        file_path=draw(OPT),
        language=draw(OPT),
        repo=draw(OPT),
        commit=draw(OPT),
        url=draw(OPT),
        thread_id=draw(OPT),
        turns=draw(st.none() | st.just(TurnRange(first, draw(st.integers(first, 2**32 - 1))))),
        agent_id=draw(OPT),
        tool_call=draw(st.none() | st.builds(ToolCallRef, SOME, OPT)),
        source=draw(st.builds(Source, st.sampled_from(list(SourceKind)), OPT)),
        tags=tuple(draw(st.lists(TEXT | st.sampled_from(["\x1e", "a\x1db"]), max_size=3))),
        observed_at=draw(WHEN),
        derive=draw(st.sampled_from([None, True, False])),
        observed_actor=draw(
            st.sampled_from([None, None, None, ObservedActor("user:someone", "Someone")])
        ),
    )


LONG = "a" * (LONG_STR + 1)


@st.composite
def items(draw: st.DrawFn) -> StoreItem:
    meta = draw(metas())
    if type(meta) is MemoryMeta and draw(st.booleans()):
        # As reads build it: only the members present set on the instance.
        meta = MemoryMeta.from_json(json.loads(dumps(meta.to_json())))
    which = draw(st.sampled_from(["document", "odd document", "conversation", "learning"]))
    if which.endswith("document"):
        body = draw(
            st.builds(TextBody, SOME | st.just(LONG)) | st.builds(UriBody, st.just("file:///x"))
        )
        cls = OddDocument if which == "odd document" else Document
        title = draw(OPT | st.sampled_from([" ", LONG]))
        return cls(body, title, draw(OPT), meta)
    if which == "learning":
        confidence = draw(st.floats(0, 1) | st.sampled_from([0.8, 0.9, 1e-7, 0.0, 1.0]))
        evidence = draw(OPT | st.just(LONG))
        kind = draw(st.sampled_from(list(LearningKind)))
        return Learning(draw(SOME), kind, confidence, evidence, meta)
    turn = st.builds(
        Turn,
        st.sampled_from(list(Role)),
        SOME,
        WHEN,
        st.sampled_from([(), (), (ToolCallRef("search", "c1"),)]),
    )
    return Conversation(tuple(draw(st.lists(turn, min_size=1, max_size=3))), meta)


def general(item: StoreItem) -> Prepared:
    """``prepare`` of a copy of ``item`` that has no id kept yet."""
    fresh = copy.copy(item)
    fresh.__dict__.pop("_fingerprint", None)
    return prepare(fresh)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items())
def test_a_plain_row_is_the_general_one_byte_for_byte(item: StoreItem) -> None:
    expected = general(item)
    got: Optional[Prepared] = plain_row(item)
    if got is not None:
        assert got == expected
        # Every value of the same type too (a str subclass stays itself, ints stay ints).
        assert [type(v) for v in got.values] == [type(v) for v in expected.values]
        assert item.fingerprint() == expected.id
    assert prepare_all([item], None) == [expected]


def bench_like(n: int) -> Document:
    meta = MemoryMeta(
        namespace=Namespace.parse("team:acme"), workspace=f"ws{n % 10}", tags=(f"tag{n % 7}",)
    )
    return StoreItem.document(f"Plan the release review {n}.", meta)


WHEN_UTC = datetime(2025, 1, 2, 3, 4, 5, 6000, timezone.utc)
FULL_META = MemoryMeta(
    namespace=Namespace.parse("team:a/service:mail"),
    workspace="w", folder="f", file_path="p", language="en", repo="r", commit="c",
    url="u", thread_id="t", turns=TurnRange(1, 3), agent_id="a",
    tool_call=ToolCallRef("search", "call-1"),
    source=Source(SourceKind.CONVERSATION, "+1 555 123 4567"),
    tags=("x", "y"), observed_at=WHEN_UTC, derive=False,
)  # fmt: skip


@pytest.mark.parametrize(
    "item",
    [
        bench_like(3),
        Document(TextBody("body"), "Title", "text/plain", FULL_META),
        Conversation((Turn(Role.USER, "hi", WHEN_UTC), Turn(Role.ASSISTANT, "yo")), FULL_META),
        Learning("Tea at four", LearningKind.PREFERENCE, 0.9, "said so", FULL_META),
        StoreItem.document("plain"),
    ],
    ids=["bench", "document", "conversation", "learning", "default meta"],
)
def test_the_common_items_take_the_fast_path(item: StoreItem) -> None:
    got = plain_row(item)
    assert got is not None  # else the shortcut never runs
    assert got == general(item)


@pytest.mark.parametrize(
    "item",
    [
        OddDocument(TextBody("x")),
        Document(TextBody("x"), meta=OddMeta()),
        Document(UriBody("file:///x")),
        Document(TextBody(LONG)),
        StoreItem.document("x", MemoryMeta(observed_actor=ObservedActor("user:someone"))),
        Conversation((Turn(Role.USER, "x", None, (ToolCallRef("t"),)),)),
    ],
    ids=["item subclass", "meta subclass", "uri body", "long text", "actor", "turn tool call"],
)
def test_anything_else_goes_the_general_way(item: StoreItem) -> None:
    assert plain_row(item) is None
    assert prepare_all([item], None) == [general(item)]


def test_an_id_kept_on_the_item_is_the_one_used() -> None:
    item = bench_like(1)
    kept = item.fingerprint()
    got = plain_row(item)
    assert got is not None
    assert got.id == kept
    assert got == general(item)

"""The one-pass plan of a one-turn conversation is byte for byte the general plan.

``plan_turn`` (the turn-logging hot path) writes the fingerprint JSON, the v3
envelope JSON, the labels, the body key and the request body itself; the general
path builds and serializes the envelope, the turn and the request. On generated
items (every meta field, every role, times, tool calls, any text) both give the
same id, scope and request bytes, and ``plan_turn`` gives way (``None``) exactly
where the general path does something else: v2, an unsendable text, an event too
large, a long text, a subclass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from typing import Any, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory.contract.items import Conversation, LearningKind, Role, StoreItem, Turn
from cortex_memory.contract.jsonfmt import LONG_STR
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind, ToolCallRef
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.engine.store import plan_item
from cortex_memory.cortex.envelope.codec import PART_TAG
from cortex_memory.cortex.envelope.turn import TurnWrite, plan_turn
from cortex_memory.errors import InvalidRequestError

from ._strategies import OPT, SOME_TEXT, WHEN, metas


def general(item: StoreItem) -> Tuple[str, Any]:
    """What the general path gives for ``item``: its write, or why it writes otherwise."""
    try:
        plan = plan_item(item)
    except InvalidRequestError as err:
        return ("refused", err.message)
    [(part, request)] = plan.events
    assert part == 0
    if not request.sendable:
        return ("unsendable", None)
    if not any(label.startswith(PART_TAG) for label in request.labels):
        return ("v2", None)
    return ("v3", TurnWrite(plan.id, plan.scope.path, request.body()))


TURN_TEXT = st.text(min_size=1, max_size=60) | st.sampled_from(
    ['"text":""', ',"modality":', "\ud800 lone", "é😀\n\t\\", "x" * 600]
)


@st.composite
def sparse_metas(draw: st.DrawFn) -> MemoryMeta:
    """A meta that sets its namespace and source kind, and at most one field more
    (plan_turn writes the JSON of a meta setting only the first two itself)."""
    full = draw(metas())
    meta = MemoryMeta(
        namespace=draw(st.sampled_from([Namespace.root(), Namespace.parse("team:alpha/user:x")])),
        source=Source(draw(st.sampled_from(list(SourceKind)))),
    )
    name = draw(st.none() | st.sampled_from([f.name for f in fields(MemoryMeta)]))
    if name is None or name == "namespace":
        return meta
    return replace(meta, **{name: getattr(full, name)})


@st.composite
def one_turn(draw: st.DrawFn) -> Conversation:
    turn = Turn(
        draw(st.sampled_from(list(Role))),
        draw(TURN_TEXT),
        draw(WHEN),
        tuple(draw(st.lists(st.builds(ToolCallRef, SOME_TEXT, OPT), max_size=2))),
    )
    return Conversation((turn,), draw(metas() | sparse_metas()))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_turn())
def test_the_one_pass_plan_is_the_general_plan(item: Conversation) -> None:
    expected = general(item)
    found = plan_turn(item)
    if expected[0] == "v3":
        # Every common case goes the fast way, and gives the same id, scope and bytes.
        assert found == expected[1]
        assert found is not None
        assert found.id == item.fingerprint()
        json.loads(found.body)  # (and it is JSON)
    else:
        assert found is None  # the general path decides (and raises where it must)


def test_the_benchmarks_item_takes_the_one_pass_plan() -> None:
    item = StoreItem.conversation([Turn(Role.USER, "we agreed to ship on day 7")])
    assert plan_turn(item) == general(item)[1]


@dataclass(frozen=True)
class LoudTurn(Turn):
    """A subclass may write other JSON: never the fast way."""


@dataclass(frozen=True)
class LoudMeta(MemoryMeta):
    pass


@dataclass(frozen=True)
class LoudConversation(Conversation):
    pass


@pytest.mark.parametrize(
    "item",
    [
        Conversation((LoudTurn(Role.USER, "hi"),)),
        Conversation((Turn(Role.USER, "hi"),), LoudMeta()),
        LoudConversation((Turn(Role.USER, "hi"),)),
        StoreItem.conversation([Turn(Role.USER, "one"), Turn(Role.USER, "two")]),
        StoreItem.conversation([]),
        StoreItem.conversation([Turn(Role.USER, "")]),
        StoreItem.learning("a learning", LearningKind.PREFERENCE, 0.5),
        StoreItem.document("a document"),
    ],
)
def test_anything_but_one_plain_turn_goes_the_general_way(item: StoreItem) -> None:
    assert plan_turn(item) is None


@pytest.mark.parametrize(
    ("text", "meta", "why"),
    [
        ("x" * (LONG_STR + 1), MemoryMeta(), "v3"),  # hashed in pieces: the general path
        ("lone \udfff", MemoryMeta(), "unsendable"),
        ("fits", MemoryMeta(tags=tuple(f"tag number {i:04d}" for i in range(900))), "v2"),
        ("fits", MemoryMeta(tags=("t" * 800_000,)), "refused"),
    ],
)
def test_the_general_path_keeps_its_own_cases(text: str, meta: MemoryMeta, why: str) -> None:
    item = StoreItem.conversation([Turn(Role.USER, text)], meta)
    assert general(item)[0] == why
    assert plan_turn(item) is None

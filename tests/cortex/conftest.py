"""Fixtures of the engine tests: the doubles on both wires and small helpers."""

from __future__ import annotations

from typing import Any, Callable, Iterator, List

import pytest

from cortex_memory.contract import (
    Conversation,
    Document,
    Learning,
    LearningKind,
    MemoryMeta,
    Role,
    TextBody,
    Turn,
)
from cortex_memory.testing import DirectDouble, HostedDouble
from cortex_memory.testing._server import BaseDouble

MakeDouble = Callable[..., BaseDouble]


def build_double(wire: str, **knobs: Any) -> BaseDouble:
    """A started double of ``wire``; hosted ones without the rate window unless asked."""
    if wire == "direct":
        return DirectDouble(**knobs).start()
    knobs.setdefault("rate_limit_requests", None)
    return HostedDouble(**knobs).start()


@pytest.fixture
def make_double() -> Iterator[Callable[..., BaseDouble]]:
    """``make_double(wire, **knobs)``: started doubles, closed after the test."""
    made: List[BaseDouble] = []

    def make(wire: str, **knobs: Any) -> BaseDouble:
        double = build_double(wire, **knobs)
        made.append(double)
        return double

    yield make
    for double in made:
        double.close()


@pytest.fixture(params=["direct", "hosted"])
def wire(request: pytest.FixtureRequest) -> str:
    """Each wire in turn."""
    return str(request.param)


@pytest.fixture
def direct(make_double: MakeDouble) -> BaseDouble:
    return make_double("direct")


@pytest.fixture
def hosted(make_double: MakeDouble) -> BaseDouble:
    return make_double("hosted")


def gets(double: BaseDouble) -> int:
    """How many event listings the double has answered."""
    route = "GET /memory/events" if double.hosted else "GET /v1/events"
    return double.state.count(route)


def writes(double: BaseDouble) -> int:
    """How many experience POSTs (single or bulk) the double has received."""
    route = "POST /memory/experience" if double.hosted else "POST /v1/experience"
    return double.state.count(route)


def conversation(turns: int, text: str = "turn", **meta: Any) -> Conversation:
    """A conversation of ``turns`` alternating user/assistant turns."""
    roles = (Role.USER, Role.ASSISTANT)
    return Conversation(
        tuple(Turn(roles[i % 2], f"{text} {i}") for i in range(turns)), MemoryMeta(**meta)
    )


def document(text: str, title: str = "", **meta: Any) -> Document:
    return Document(TextBody(text), title or None, None, MemoryMeta(**meta))


def learning(text: str, **meta: Any) -> Learning:
    return Learning(text, LearningKind.FACT, 0.5, None, MemoryMeta(**meta))


class Kit:
    """The helpers above, as a fixture (test modules cannot import conftest)."""

    gets = staticmethod(gets)
    writes = staticmethod(writes)
    conversation = staticmethod(conversation)
    document = staticmethod(document)
    learning = staticmethod(learning)


@pytest.fixture
def kit() -> Kit:
    return Kit()

"""Direct writes send each request's prebuilt bytes; what the double receives is unchanged."""

from __future__ import annotations

import pytest

from cortex_memory.contract import Document, Role, StoreItem, TextBody, Turn, WaitFor
from cortex_memory.cortex.engine.store import plan_item
from cortex_memory.errors import EngineError


@pytest.mark.parametrize("wait", [WaitFor.ACCEPTED, WaitFor.VISIBLE])
@pytest.mark.parametrize("alone", [True, False])
def test_a_text_utf8_cannot_carry_is_a_build_failure_and_sends_nothing(
    direct, wait: WaitFor, alone: bool
) -> None:
    # A lone surrogate passes validation and hashes, but cannot travel as UTF-8.
    broken = StoreItem.document("broken \ud800 text")
    items = [broken] if alone else [StoreItem.document("fine"), broken]
    engine = direct.engine()
    with pytest.raises(EngineError) as caught:
        engine.store_many(items, wait=wait)
    assert caught.value.message == "request to 127.0.0.1 could not be built"
    assert isinstance(caught.value.__cause__, UnicodeEncodeError)
    assert not [line for line in direct.state.requests() if line.startswith("POST")]
    assert direct.state.event_count() == 0


def test_the_double_receives_the_requests_the_plan_built(direct) -> None:
    items = [
        StoreItem.conversation([Turn(Role.USER, 'ünïcode "quoted" 😀')]),
        StoreItem.conversation([Turn(Role.USER, "one"), Turn(Role.ASSISTANT, "two")]),
        Document(TextBody("a document"), "Title"),
    ]
    engine = direct.engine()
    for item in items:
        engine.store(item, wait=WaitFor.ACCEPTED)
    engine.store_many([StoreItem.document(f"bulk {i}") for i in range(3)], wait=WaitFor.ACCEPTED)
    sent = [event for body in direct.state.seen.writes for event in (body.get("items") or [body])]
    planned = [
        request.to_json()
        for item in [*items, *(StoreItem.document(f"bulk {i}") for i in range(3))]
        for _, request in plan_item(item).events
    ]
    assert sent == planned

"""Direct writes send each request's prebuilt bytes; what the double receives is unchanged."""

from __future__ import annotations

import json

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


def test_a_long_document_goes_in_bulks_of_at_most_8_mib(direct) -> None:
    from cortex_memory.contract import GetRequest
    from cortex_memory.cortex.log.sizes import MAX_BULK_BYTES

    line = "A paragraph of the long report, with \"quotes\" and accents: café.\n"
    text = line * (10 * 1024 * 1024 // len(line))
    document = StoreItem.document(text)
    engine = direct.engine()
    engine.store(document, wait=WaitFor.ACCEPTED)
    bulks = [body for body in direct.state.seen.writes if "items" in body]
    assert len(bulks) == 2
    sizes = [len(json.dumps(body, ensure_ascii=False).encode()) for body in bulks]
    assert all(size <= MAX_BULK_BYTES for size in sizes), sizes
    [hit] = engine.get(GetRequest((document.fingerprint(),)))
    assert hit.text == text


def test_a_long_document_that_utf8_cannot_carry_sends_nothing(direct) -> None:
    text = "A long paragraph that fills several bulks.\n" * 250_000 + "broken \ud800"
    engine = direct.engine()
    with pytest.raises(EngineError) as caught:
        engine.store(StoreItem.document(text), wait=WaitFor.ACCEPTED)
    assert caught.value.message == "request to 127.0.0.1 could not be built"
    assert isinstance(caught.value.__cause__, UnicodeEncodeError)
    assert not [line for line in direct.state.requests() if line.startswith("POST")]


def test_storing_a_long_document_again_reads_it_back_a_few_pieces_a_page(direct) -> None:
    from cortex_memory.cortex.engine.store import LOOKUP_PAGE_BYTES

    line = "Another paragraph of the long report, stored twice.\n"
    document = StoreItem.document(line * (5 * 1024 * 1024 // len(line)))
    engine = direct.engine()
    first = engine.store(document, wait=WaitFor.ACCEPTED)
    writes = len(direct.state.seen.writes)
    before = len(direct.state.requests())
    again = engine.store(document, wait=WaitFor.ACCEPTED)
    assert not first.replayed
    assert again.replayed
    assert len(direct.state.seen.writes) == writes  # nothing written again
    lookups = [line for line in direct.state.requests()[before:] if "v1/events?" in line]
    plan = plan_item(document)
    per_page = LOOKUP_PAGE_BYTES // max(len(request.text) for _, request in plan.events)
    assert per_page < 200
    # The double lists every event twice (readers must dedupe), hence 2 x the pieces.
    assert len(lookups) == -(-2 * len(plan.events) // per_page) > 1, lookups
    assert all(f"limit={per_page}&" in line for line in lookups), lookups

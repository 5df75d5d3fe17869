"""Fidelity: the official `cortexdbai` SDK's synchronous V1Client against the Direct double.

A client nobody here wrote drives every route the engine relies on; each call must
succeed and return the shapes that SDK expects (it reads `error_code`, `request_id`
and `retriable` from failures too).
"""

from __future__ import annotations

import re
from typing import Any, Iterator, List

import pytest

from cortex_memory.testing import TEST_TOKEN, DirectDouble

cortexdb = pytest.importorskip(
    "cortexdb", reason="the official cortexdbai SDK is installed on Python >= 3.10 only"
)

ACTOR = "user:sdk"
SCOPE = "app:tinymemory/user:sdk/app:documents"


@pytest.fixture
def double() -> Iterator[DirectDouble]:
    with DirectDouble(whoami_caller=ACTOR, accept_token=TEST_TOKEN) as made:
        yield made


@pytest.fixture
def client(double: DirectDouble) -> Iterator[Any]:
    with cortexdb.V1Client(double.url, actor=ACTOR, bearer=TEST_TOKEN, timeout=10) as made:
        yield made


def test_whoami_health_and_version(client: Any, double: DirectDouble) -> None:
    assert client.whoami() == {"caller": ACTOR, "tenant_id": "tenant_test"}
    # The SDK has no health method; its own session sends the request.
    assert client._get("/v1/admin/health") == {"status": "healthy", "version": "v0.10.5"}
    assert client.version()["version"] == "v0.10.5"
    assert "refers_to_v1" in client.capabilities()
    assert double.state.counters["whoami_calls"] == 1
    assert double.state.seen.actors == [ACTOR, ACTOR, ACTOR]
    assert double.state.seen.auth[0] == f"Bearer {TEST_TOKEN}"


def test_experience_single_and_bulk(client: Any, double: DirectDouble) -> None:
    plain = client.experience(SCOPE, text="Priya signed for 200 seats.", labels=["deal"])
    assert plain == {"event_id": "evt_1", "status": "captured", "replayed_from_idempotency": False}
    held = client.experience(SCOPE, text="Acme renewed.", role="assistant", wait="indexed")
    assert held["status"] == "indexed"
    replay = client.experience(SCOPE, text="Acme renewed.", idempotency_key="fixed", wait="indexed")
    again = client.experience(SCOPE, text="Acme renewed.", idempotency_key="fixed")
    assert again == {"event_id": replay["event_id"], "replayed_from_idempotency": True}
    turns = [{"text": f"turn {i}", "role": "user", "labels": ["chat"]} for i in range(3)]
    bulk = client.experience_bulk(SCOPE, turns, wait="indexed")
    assert bulk["accepted"] == 3
    assert [r["index"] for r in bulk["results"]] == [0, 1, 2]
    assert all(r["event_id"].startswith("evt_") for r in bulk["results"])
    assert double.state.event_count() == 6
    # The SDK's envelope carries context.observed_at; the double adds recorded_at.
    stored = double.state.log.events[0]
    assert stored["modality"] == "conversation"
    assert set(stored["context"]) == {"observed_at", "labels", "recorded_at"}


def test_events_paging(client: Any) -> None:
    for i in range(5):
        client.experience(SCOPE, text=f"note {i}")
    seen: List[str] = []
    cursor = None
    pages = 0
    while True:
        page = client.events(SCOPE, limit=4, cursor=cursor)
        pages += 1
        assert set(page) == {"items", "has_more", "next_cursor"}
        seen.extend(item["content"]["text"] for item in page["items"])
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert pages == 3
    # Every event arrives twice, newest first.
    assert seen == [f"note {i}" for i in (4, 4, 3, 3, 2, 2, 1, 1, 0, 0)]
    labelled = client.events(SCOPE, labels=["nothing", "also-nothing"])
    assert labelled["items"] == []


def test_recall_and_answer(client: Any) -> None:
    client.experience(SCOPE, text="you use helix", role="assistant")
    client.experience(SCOPE, text="Rust ownership moves values.")
    pack = client.recall(SCOPE, query="which editor, helix?", budgets={"max_tokens": 500})
    assert pack["pack_id"] == "pack_1"
    assert [e["content"]["text"] for e in pack["layers"]["events"]] == ["you use helix"]
    assert pack["layers"]["beliefs"] == []
    # The SDK stamps observed_at with the current time; the block shows it in UTC.
    head, text = pack["context_block"].split("\n", 1)
    assert re.fullmatch(r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\] \[assistant\]", head)
    assert text == "you use helix"
    answered = client.answer(SCOPE, "Which editor?", use_pack_id=pack["pack_id"], cite_sources=True)
    assert answered["answer"] == "grounded answer for Which editor?"
    assert answered["diagnostics"]["answer_model"] == "reasoning"
    inline = client.answer(SCOPE, "Which editor?", answer_instructions="be terse")
    assert inline["citations"] == []


def test_forget(client: Any, double: DirectDouble) -> None:
    first = client.experience(SCOPE, text="forget me", idempotency_key="k1")["event_id"]
    client.experience(SCOPE, text="keep me")
    kept = client.forget(SCOPE, memory_ids=[first])  # the default cascade keeps events
    assert kept == {"deleted": {"events": 0}, "requested": 1}
    gone = client.forget(SCOPE, memory_ids=[first], cascade="redact_events", reason="test")
    assert gone == {"deleted": {"events": 1}, "requested": 1}
    again = client.experience(SCOPE, text="forget me", idempotency_key="k1")
    assert again["replayed_from_idempotency"] is False
    whole = client.forget(SCOPE, confirm_all=True, cascade="redact_events")
    assert whole == {"deleted": {"events": 2}, "requested": 0}
    assert double.state.event_count() == 0


def test_the_sdk_reads_the_double_failures(client: Any, double: DirectDouble) -> None:
    with pytest.raises(cortexdb.V1APIError) as info:
        client.forget(SCOPE)
    error = info.value
    assert (error.status, error.error_code) == (422, "EMPTY_SELECTOR_WITHOUT_CONFIRMATION")
    assert error.request_id.startswith("req_")
    assert error.retriable is False
    double.state.rate_limit_events = 1
    with pytest.raises(cortexdb.V1RateLimitError) as limited:
        client.events(SCOPE)
    assert limited.value.retriable is True
    with cortexdb.V1Client(double.url, actor="user:else", bearer=TEST_TOKEN) as stranger:
        with pytest.raises(cortexdb.V1AuthError) as denied:
            stranger.events(SCOPE)
    assert denied.value.error_code == "ACTOR_MISMATCH"

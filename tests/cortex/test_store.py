"""store / store_many on both wires: planning, lookup, writes, visibility waits (engine.md §9.4)."""

from __future__ import annotations

import json

import pytest

from cortex_memory.contract import (
    GetRequest,
    ListRequest,
    MetaFilter,
    StoreReceipt,
    WaitFor,
)
from cortex_memory.contract.namespace import Namespace
from cortex_memory.errors import InvalidRequestError, UnavailableError
from cortex_memory.testing import FOREVER, fault, sample_items


def test_direct_store_many_sends_every_item_in_one_bulk(direct) -> None:
    engine = direct.engine()
    receipts = engine.store_many(sample_items())
    assert [r.replayed for r in receipts] == [False, False, False]
    posts = [line for line in direct.state.requests() if line.startswith("POST")]
    assert posts == ["POST /v1/experience/bulk?wait=indexed", "POST /v1/recall"]
    [bulk] = direct.state.seen.writes
    assert bulk["ordering"] == "strict_temporal"
    # Item order, each item's events in order, across three scopes.
    assert [item["content"]["text"] for item in bulk["items"]][1:] == [
        "which editor do I use",
        "you use helix",
        "right, helix",
        "prefers helix",
    ]
    assert [item["scope"] for item in bulk["items"]] == [
        "app:tinymemory/app:documents",
        "app:tinymemory/app:conversations",
        "app:tinymemory/app:conversations",
        "app:tinymemory/app:conversations",
        "app:tinymemory/app:learnings",
    ]
    assert direct.state.event_count() == 5


@pytest.mark.parametrize("index", [0, 1, 2])
def test_direct_single_items_keep_their_own_routes(direct, index: int) -> None:
    # doubles.md §12.2: a document or a learning alone is one plain write; a
    # conversation alone is one bulk.
    engine = direct.engine()
    engine.store(sample_items()[index])
    posts = [line for line in direct.state.requests() if line.startswith("POST /v1/experience")]
    expected = {
        0: "POST /v1/experience?wait=indexed",
        1: "POST /v1/experience/bulk?wait=indexed",
        2: "POST /v1/experience?wait=indexed",
    }[index]
    assert posts == [expected]


def test_direct_store_many_of_100_items_in_3_scopes_sends_8_requests(kit, direct) -> None:
    items = [
        kit.document(f"root document {i}")
        if i % 3 == 0
        else kit.learning(f"root fact {i}")
        if i % 3 == 1
        else kit.document(f"agent document {i}", namespace=Namespace.parse("agent:x"))
        for i in range(100)
    ]
    engine = direct.engine()
    receipts = engine.store_many(items)
    assert [r.id for r in receipts] == [item.fingerprint() for item in items]
    assert not any(r.replayed for r in receipts)
    lines = [line.split("?", 1)[0] for line in direct.state.requests()]
    assert lines == ["GET /v1/events"] * 3 + [
        "POST /v1/experience/bulk",
        "GET /v1/events",
        "GET /v1/events",
        "GET /v1/events",
        "POST /v1/recall",
    ]
    [bulk] = direct.state.seen.writes
    assert len(bulk["items"]) == 100
    # The last item (i = 99, a root document) is the last write: its scope settles.
    assert direct.state.seen.recalls[0]["scope"] == "app:tinymemory/app:documents"
    assert direct.state.seen.recalls[0]["query"] == "root document 99"
    again = engine.store_many(items)
    assert all(r.replayed for r in again)
    assert kit.writes(direct) == 1


def test_listed_waits_follow_the_write_order_of_scopes(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    engine.store_many([kit.document("first doc"), kit.learning("a fact"), kit.document("last doc")])
    listings = [line for line in double.state.requests() if "/events?" in line]
    polled = listings[2:]  # after one lookup per scope
    assert len(polled) == 2
    assert "app%3Alearnings" in polled[0]
    assert "app%3Adocuments" in polled[1]
    assert double.state.seen.recalls[0]["query"] == "last doc"


def test_direct_one_event_overall_is_a_plain_write(kit, direct) -> None:
    engine = direct.engine()
    held = kit.learning("already held")
    engine.store(held)
    direct.state.clear_seen()
    fresh = kit.learning("fresh")
    receipts = engine.store_many([fresh, held, fresh])
    assert receipts == [
        StoreReceipt(fresh.fingerprint(), False),
        StoreReceipt(held.fingerprint(), True),
        StoreReceipt(fresh.fingerprint(), True),
    ]
    posts = [line for line in direct.state.requests() if line.startswith("POST /v1/experience")]
    assert posts == ["POST /v1/experience?wait=indexed"]


def test_direct_replayed_is_per_item_inside_one_bulk(kit, direct) -> None:
    engine = direct.engine()
    first = kit.learning("written before")
    engine.store(first)
    # The lookup misses it (the listing lags), so it is sent again inside the bulk and
    # the server answers that event as a replay of its body key.
    direct.state.hide_listing_for = 1
    second = kit.learning("written now")
    receipts = engine.store_many([first, second, kit.conversation(2, "chat")])
    assert [r.replayed for r in receipts] == [True, False, False]
    assert direct.state.count("POST /v1/experience/bulk") == 1
    assert direct.state.event_count() == 4


def test_nothing_to_write_sends_no_write_and_no_wait(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    items = [kit.learning("one"), kit.document("two")]
    engine.store_many(items)
    double.state.clear_seen()
    assert all(r.replayed for r in engine.store_many(items))
    assert kit.writes(double) == 0
    assert kit.gets(double) == 2  # the lookups only
    assert double.state.seen.recalls == []


def test_accepted_sends_no_wait_and_polls_nothing(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    receipts = engine.store_many(sample_items(), wait=WaitFor.ACCEPTED)
    assert [r.replayed for r in receipts] == [False, False, False]
    lines = double.state.requests()
    assert not any("wait=" in line for line in lines)
    assert kit.gets(double) == 3  # one replay lookup per scope, no visibility poll
    assert double.state.count("POST /v1/recall") + double.state.count("POST /memory/recall") == 0


def test_turn_logging_hot_path_skips_the_lookup_on_direct(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    turn = kit.conversation(1, "hello there")
    first = engine.store(turn, wait=WaitFor.ACCEPTED)
    again = engine.store(turn, wait=WaitFor.ACCEPTED)
    assert first == StoreReceipt(turn.fingerprint(), False)
    assert again == StoreReceipt(turn.fingerprint(), True)
    if double.hosted:
        assert kit.gets(double) == 2
        assert kit.writes(double) == 1
    else:
        # Direct: no lookup; the body key makes the server answer the replay itself.
        assert kit.gets(double) == 0
        assert kit.writes(double) == 2
    assert double.state.event_count() == 1


def test_the_hot_path_touches_its_scope_and_checks_sizes_before_sending(kit, direct) -> None:
    # The one-turn shortcut of store_many does what the batch path does for that batch.
    from cortex_memory.cortex.engine.scopes import kind_scope

    engine = direct.engine()
    turn = kit.conversation(1, "noted for recency", namespace=Namespace.parse("agent:notes"))
    path = kind_scope(turn.meta.namespace, turn.item_kind).path
    assert engine.context.recency.fresh(path) is None
    assert engine.store(turn, wait=WaitFor.ACCEPTED) == StoreReceipt(turn.fingerprint(), False)
    assert engine.context.recency.fresh(path) is not None
    huge = kit.conversation(1, "x" * (2 * 1024 * 1024))
    before = len(direct.state.requests())
    with pytest.raises(InvalidRequestError):
        engine.store(huge, wait=WaitFor.ACCEPTED)
    assert len(direct.state.requests()) == before  # refused before any request


def test_the_hot_path_sends_the_general_body_and_falls_back_on_the_wire(direct) -> None:
    # plan_turn writes the body in one pass; the double sees what the general plan builds.
    from cortex_memory.contract.items import Role, StoreItem, Turn
    from cortex_memory.contract.meta import MemoryMeta
    from cortex_memory.cortex.engine.store import plan_item
    from cortex_memory.cortex.envelope.turn import plan_turn

    engine = direct.engine()
    plain = StoreItem.conversation([Turn(Role.USER, "we ship on friday")])
    receipt = engine.store(plain, wait=WaitFor.ACCEPTED)
    assert (receipt.id, receipt.replayed) == (plain.fingerprint(), False)
    [sent] = direct.state.seen.writes
    expected = plan_turn(plain)
    assert expected is not None
    assert sent == json.loads(expected.body)
    assert engine.store(plain, wait=WaitFor.ACCEPTED).replayed  # the body key: a replay
    # A v2 turn (too many labels) still goes through the general plan, as one write.
    many = MemoryMeta(tags=tuple(f"tag number {i:04d}" for i in range(900)))
    v2 = StoreItem.conversation([Turn(Role.USER, "a turn with a large meta")], many)
    assert engine.store(v2, wait=WaitFor.ACCEPTED).id == v2.fingerprint()
    request = plan_item(v2).events[0][1]
    assert direct.state.seen.writes[-1] == json.loads(request.body())


def test_receipts_in_item_order_and_ids_are_fingerprints(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    items = [kit.learning("one"), kit.document("two"), kit.learning("three"), kit.conversation(2)]
    receipts = engine.store_many(items)
    assert [r.id for r in receipts] == [item.fingerprint() for item in items]


def test_duplicate_item_in_a_batch_is_written_once(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    item = kit.learning("twice in one batch")
    receipts = engine.store_many([item, item])
    assert receipts == [
        StoreReceipt(item.fingerprint(), False),
        StoreReceipt(item.fingerprint(), True),
    ]
    assert kit.writes(double) == 1


# 101 items is no longer refused: store_many batches them (issue 14; see test_bulk.py).
@pytest.mark.parametrize("count", [0])
def test_batch_size_is_checked_before_any_request(kit, direct, count: int) -> None:
    engine = direct.engine()
    with pytest.raises(InvalidRequestError):
        engine.store_many([kit.learning(f"n{i}") for i in range(count)])
    assert direct.state.requests() == []


def test_invalid_items_send_nothing(kit, direct) -> None:
    engine = direct.engine()
    with pytest.raises(InvalidRequestError):
        engine.store_many([kit.learning("fine"), kit.document("   ")])
    assert direct.state.requests() == []


def test_an_oversized_event_aborts_before_any_write(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    with pytest.raises(InvalidRequestError, match="786432"):
        engine.store_many([kit.learning("fine"), kit.learning("x" * 900_000)])
    assert double.state.requests() == []


def test_direct_bulk_batches_hold_at_most_1000_events(kit, direct) -> None:
    engine = direct.engine()
    long = kit.conversation(1001, "line")
    engine.store(long, wait=WaitFor.ACCEPTED)
    assert direct.state.count("POST /v1/experience/bulk") == 2
    sizes = [len(body["items"]) for body in direct.state.seen.writes]
    assert sizes == [1000, 1]
    assert direct.state.event_count() == 1001


def test_partial_conversation_is_completed_on_retry(wire, make_double) -> None:
    double = make_double(wire, fail_nth_experience=3)
    engine = double.engine()
    chat = sample_items()[1]
    with pytest.raises(InvalidRequestError):
        engine.store(chat)
    assert double.state.event_count() == 2
    double.state.clear_seen()
    receipt = engine.store(chat)
    assert receipt == StoreReceipt(chat.fingerprint(), False)
    assert double.state.event_count() == 3
    texts = [
        item["content"]["text"]
        for body in double.state.seen.writes
        for item in (body.get("items") or [body])
    ]
    assert texts == ["right, helix"]
    [hit] = engine.get(GetRequest((chat.fingerprint(),)))
    assert hit.text == "user: which editor do I use\nassistant: you use helix\nuser: right, helix"


def test_direct_bulk_batches_span_items(kit, direct) -> None:
    engine = direct.engine()
    items = [kit.conversation(600, "left"), kit.conversation(600, "right")]
    receipts = engine.store_many(items, wait=WaitFor.ACCEPTED)
    assert [r.replayed for r in receipts] == [False, False]
    assert [len(body["items"]) for body in direct.state.seen.writes] == [1000, 200]
    assert direct.state.event_count() == 1200
    assert [r.replayed for r in engine.store_many(items)] == [True, True]


def test_a_batch_refused_part_way_is_completed_on_retry(kit, wire, make_double) -> None:
    # Events in write order: fact, chat 0, chat 1, chat 2, doc. The fourth write
    # (chat 2) is refused: the fact and two turns stay applied.
    double = make_double(wire, fail_nth_experience=4)
    engine = double.engine()
    fact, chat, doc = kit.learning("a fact"), kit.conversation(3, "chat"), kit.document("a doc")
    with pytest.raises(InvalidRequestError):
        engine.store_many([fact, chat, doc])
    assert double.state.event_count() == 3
    if not double.hosted:
        assert double.state.count("POST /v1/experience/bulk") == 1
    double.state.clear_seen()
    receipts = engine.store_many([fact, chat, doc])
    assert receipts == [
        StoreReceipt(fact.fingerprint(), True),
        StoreReceipt(chat.fingerprint(), False),
        StoreReceipt(doc.fingerprint(), False),
    ]
    assert double.state.event_count() == 5
    texts = [
        item["content"]["text"]
        for body in double.state.seen.writes
        for item in (body.get("items") or [body])
    ]
    assert texts == ["chat 2", "a doc"]
    hits = engine.get(GetRequest((chat.fingerprint(), doc.fingerprint())))
    assert [hit.text for hit in hits] == [
        "user: chat 0\nassistant: chat 1\nuser: chat 2",
        "a doc",
    ]
    assert engine.store_many([fact, chat, doc]) == [
        StoreReceipt(item.fingerprint(), True) for item in (fact, chat, doc)
    ]


def test_lost_listing_is_polled_until_visible(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    double.state.arm_after_write = (0, 4)
    engine.store(kit.learning("eventually listed"))
    assert kit.gets(double) >= 6  # the lookup, 4 hidden polls, the hit


def test_arm_after_write_hidden_three_times_is_exactly_five_listings(
    kit, wire, make_double
) -> None:
    double = make_double(wire, arm_after_write=(0, 3))
    engine = double.engine()
    engine.store(kit.learning("five listings"))
    assert kit.gets(double) == 5


def test_never_listed_is_fatal_with_the_poll_counts(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine(visibility=0.1)
    double.state.arm_after_write = (0, FOREVER)
    with pytest.raises(UnavailableError, match="readable") as info:
        engine.store(kit.learning("never listed"))
    message = str(info.value)
    assert "polls answered without it, 0 failed transiently)" in message
    assert double.state.event_count() == 1


def test_hidden_forever_with_accepted_store_lists_once_per_item(kit, wire, make_double) -> None:
    double = make_double(wire, hide_listing_for=FOREVER)
    engine = double.engine()
    engine.store_many(
        [kit.learning("a"), kit.learning("b"), kit.document("c")], wait=WaitFor.ACCEPTED
    )
    # One lookup per scope (learnings, documents); the two learnings share one listing.
    assert kit.gets(double) == 2


def test_visibility_polls_on_hosted_wait_out_rate_limits(kit, hosted) -> None:
    engine = hosted.engine()
    hosted.state.arm_after_write = (4, 0)
    engine.store(kit.learning("rate limited polls"))
    assert kit.writes(hosted) == 1
    assert hosted.state.counters["rate_limited"] == 4


def test_direct_visibility_poll_reports_its_transient_error(kit, direct) -> None:
    engine = direct.engine()
    direct.state.arm_after_write = (4, 0)
    with pytest.raises(UnavailableError, match="429"):
        engine.store(kit.learning("direct polls"))
    assert kit.writes(direct) == 1


def test_hosted_poll_faults_are_counted_in_the_message(kit, hosted) -> None:
    engine = hosted.engine(visibility=0.1)
    hosted.state.arm_after_write = (FOREVER, 0)
    with pytest.raises(UnavailableError) as info:
        engine.store(kit.learning("polls fail"))
    message = str(info.value)
    assert "(0 polls answered without it" in message
    assert "failed transiently, the last: " in message
    assert "RATE_LIMITED" in message


def test_settle_is_best_effort_when_recall_is_down(wire, make_double) -> None:
    double = make_double(wire, recall_down=True)
    engine = double.engine()
    receipts = engine.store_many(sample_items())
    assert [r.replayed for r in receipts] == [False, False, False]


def test_only_the_last_written_scope_settles(kit, wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    engine.store_many(sample_items())
    recalls = double.state.seen.recalls
    assert len(recalls) == 1
    assert recalls[0]["scope"] == "app:tinymemory/app:learnings"
    assert recalls[0]["query"] == "prefers helix"
    assert recalls[0]["view"] == "granular"
    # One lookup per scope, then one visibility poll per scope.
    assert kit.gets(double) == 6


def test_settle_query_is_cut_to_256_characters(kit, direct) -> None:
    engine = direct.engine()
    text = "é" * 300
    engine.store(kit.learning(text))
    assert direct.state.seen.recalls[-1]["query"] == text[:256]


def test_index_delay_is_covered_by_the_engine_waits(wire, make_double) -> None:
    double = make_double(wire, index_delay_seconds=0.05)
    engine = double.engine()
    receipts = engine.store_many(sample_items())
    page = engine.list(ListRequest(MetaFilter(), 10))
    assert {hit.id for hit in page.items} == {r.id for r in receipts}


def test_failed_direct_write_is_sent_once(kit, make_double) -> None:
    for knob in ("claim_then_fail", "apply_then_fail"):
        double = make_double("direct", **{knob: 1})
        engine = double.engine()
        with pytest.raises(UnavailableError):
            engine.store(kit.learning(f"sent once {knob}"))
        assert kit.writes(double) == 1


def test_direct_reset_after_the_write_applied_is_not_retried(kit, direct) -> None:
    engine = direct.engine()
    item = kit.learning("reset after response")
    direct.state.reset_after = fault("response", route="POST /v1/experience")
    with pytest.raises(UnavailableError):
        engine.store(item)
    assert kit.writes(direct) == 1
    assert direct.state.event_count() == 1
    # The host's retry is a replay: the lookup finds the event, nothing is sent.
    assert engine.store(item) == StoreReceipt(item.fingerprint(), True)
    assert kit.writes(direct) == 1


def test_written_bodies_are_sorted_compact_json(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    engine.store(sample_items()[2])
    raw = next(
        body
        for line, body in zip(double.state.seen.requests, double.state.seen.bodies)
        if line.startswith("POST") and "experience" in line
    )
    parsed = json.loads(raw)
    assert (
        raw
        == json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    )
    assert parsed["idempotency_key"].startswith("tm3:")
    assert len(parsed["idempotency_key"]) == 60
    assert parsed["scope"] == "app:tinymemory/app:learnings"
    assert parsed["modality"] == "observation"

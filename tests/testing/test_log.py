"""The event log's rules: erasure reach, key release, beliefs, helpers (mostly no sockets)."""

from __future__ import annotations

import threading

import pytest

from cortex_memory.testing._log import EventLog, flattened_text, query_words, scope_matches
from cortex_memory.testing._reply import Refusal


def make_log() -> EventLog:
    return EventLog(threading.RLock())


def append(log: EventLog, scope: str, text: str, key: str, *, at: float = 0.0) -> str:
    event_id, replayed = log.append(
        {"scope": scope, "idempotency_key": key, "content": {"role": "user", "text": text}},
        indexed_at=at,
        allowed_scope_types=None,
        size_counts_role_prefix=True,
    )
    assert replayed is False
    return event_id


def test_flattened_text() -> None:
    assert flattened_text({"role": "user", "text": "hi"}) == "[user] hi"
    assert flattened_text({"role": "assistant", "text": "hi"}) == "[assistant] hi"
    assert flattened_text({"role": "", "text": "hi"}) == "hi"
    assert flattened_text({"role": 5, "text": "hi"}) == "hi"
    assert flattened_text({"text": "hi"}) == "hi"
    assert flattened_text(None) == ""


def test_query_words() -> None:
    assert query_words("Which EDITOR, do I use?!") == ["which", "editor", "use"]
    assert query_words("  (helix)  a an of ") == ["helix"]
    assert query_words("€éé€") == ["éé"]  # the euro signs are trimmed; 4 bytes remain
    assert query_words("é€") == []  # "é" alone is 2 bytes
    assert query_words(None) == []


def test_query_words_counts_bytes_not_characters() -> None:
    assert query_words("éa!") == ["éa"]
    assert query_words("ab") == []


def test_scope_matches() -> None:
    assert scope_matches("user:ann", "", False)
    assert scope_matches("user:ann", "user:ann", False)
    assert scope_matches("user:ann/app:x", "user:ann", False)
    assert not scope_matches("user:anna", "user:ann", False)
    assert scope_matches("user:anna", "user:ann", True)
    assert not scope_matches("user:ann", "user:ann/", True)
    assert scope_matches("user:ann/x", "user:ann/", False)


def test_belief_of_an_erased_event_is_dropped() -> None:
    log = make_log()
    kept = append(log, "app:keep", "stay", "k1")
    gone = append(log, "app:gone/app:deep", "leave", "k2")
    log.build_beliefs("app:keep", 0.0)
    log.build_beliefs("app:gone/app:deep", 0.0)
    assert {b["source"] for b in log.beliefs} == {kept, gone}
    log.erase("app:gone")
    assert [b["source"] for b in log.beliefs] == [kept]


def test_erase_everything_is_deepest_first() -> None:
    log = make_log()
    for scope, key in [("a", "ka"), ("a/b", "kab"), ("c", "kc")]:
        append(log, scope, f"text {scope}", key)
    assert log.erase_everything() == 3
    assert log.erasures == 3
    assert log.events == []
    # Every key released: had "a" gone first, "a/b" would only have been redacted.
    assert log.keys == {}
    assert sorted(log.forgotten) == ["evt_1", "evt_2", "evt_3"]


def test_erase_releases_own_keys_and_holds_descendants() -> None:
    log = make_log()
    append(log, "a", "own", "k-own")
    append(log, "a/b", "below", "k-below")
    append(log, "ab", "sibling", "k-sibling")
    assert log.erase("a") == "erasure_1"
    assert [e["scope"] for e in log.events] == ["ab"]
    assert set(log.keys) == {"k-below", "k-sibling"}
    assert log.forgotten == ["evt_1"]
    _, replayed = log.append(
        {
            "scope": "a/b",
            "idempotency_key": "k-below",
            "content": {"role": "user", "text": "below"},
        },
        indexed_at=0.0,
        allowed_scope_types=None,
        size_counts_role_prefix=True,
    )
    assert replayed is True
    assert len(log.events) == 1


def test_erase_of_the_empty_scope_reaches_everything() -> None:
    log = make_log()
    append(log, "a", "x", "k1")
    append(log, "b/c", "y", "k2")
    log.erase("")
    assert log.events == []


def test_erase_checks() -> None:
    log = make_log()
    with pytest.raises(Refusal) as info:
        log.erase(None)
    assert (info.value.status, info.value.code) == (422, "INVALID_BODY")
    with pytest.raises(Refusal) as info:
        log.erase("a", False)
    assert info.value.code == "EMPTY_SELECTOR_WITHOUT_CONFIRMATION"
    with pytest.raises(Refusal):
        log.erase("a", True, selector=True)
    assert log.erasures == 0


def test_erasure_without_a_scope_is_422_over_http(direct) -> None:
    answer = direct.post("/v1/erasures", {"confirm_all": True})
    assert (answer.status, answer.json["error_code"]) == (422, "INVALID_BODY")


def test_lose_last_removes_the_newest_event_and_its_key() -> None:
    log = make_log()
    append(log, "a", "first", "k1")
    append(log, "a", "second", "k2")
    append(log, "b", "other", "k3")
    lost = log.lose_last("a")
    assert lost is not None
    assert lost["content"]["text"] == "second"
    assert [e["id"] for e in log.events] == ["evt_1", "evt_3"]
    assert "k2" not in log.keys
    assert log.lose_last("nowhere") is None
    # Written again, it is a new event (never reused ids).
    assert append(log, "a", "second", "k2") == "evt_4"


def test_scopes_matching_sees_unindexed_events() -> None:
    log = make_log()
    append(log, "user:ann", "x", "k1", at=1e9)
    append(log, "user:anna", "y", "k2")
    assert log.scopes_matching("user:ann") == ["user:ann"]
    assert log.scopes_matching("user:ann", string_prefix=True) == ["user:ann", "user:anna"]
    assert log.listing("user:ann", [], 0.0) == []


def test_tests_may_push_events_directly(direct) -> None:
    state = direct.state
    with state.lock:
        state.log.events.append(
            {
                "id": "evt_pushed",
                "scope": "app:a",
                "modality": "observation",
                "content": {"text": "pushed"},
                "context": {},
            }
        )
        state.log.beliefs.append({"id": "b1", "scope": "app:a", "source": "evt_pushed"})
    page = direct.events("scope=app:a").json
    assert [item["id"] for item in page["items"]] == ["evt_pushed", "evt_pushed"]
    assert direct.get("/v1/beliefs?scope=app:a").json["items"][0]["id"] == "b1"


def test_replay_of_a_confirm_all_forgotten_event_returns_its_old_id() -> None:
    log = make_log()
    append(log, "a", "x", "k1")
    log.forget({"scope": "a", "confirm_all": True, "cascade": "redact_events"})
    assert log.events == []
    assert log.forgotten == []
    assert log.keys["k1"] == ("x", "evt_1")

"""The Direct double's routes: success shapes and check orders, default and legacy profile."""

from __future__ import annotations

import json

from cortex_memory.testing import TEST_TOKEN
from cortex_memory.testing._reads import context_block

EXPERIENCE = "/v1/experience"


# -- the gate and failure bodies -----------------------------------------------------------


def test_missing_or_malformed_bearer_is_missing_token(direct) -> None:
    for headers, token in [({}, None), ({"Authorization": "Basic abc"}, None), ({}, "")]:
        answer = direct.get("/v1/events?scope=a", token=token, headers=headers)
        assert answer.status == 401
        assert answer.json["error_code"] == "MISSING_TOKEN"
    # "bearer " in the wrong case is another scheme.
    answer = direct.get("/v1/events?scope=a", token=None, headers={"Authorization": "bearer x"})
    assert answer.json["error_code"] == "MISSING_TOKEN"


def test_rejected_bearer_uses_the_rejection_code(make_wire) -> None:
    direct = make_wire(accept_token="right")
    assert direct.get("/v1/events?scope=a", token="right").status == 200
    answer = direct.get("/v1/events?scope=a", token="wrong")
    assert (answer.status, answer.json["error_code"]) == (401, "INVALID_TOKEN_SIGNATURE")
    direct.state.token_rejection_code = "EXPIRED_TOKEN"
    assert direct.get("/v1/events?scope=a", token="wrong").json["error_code"] == "EXPIRED_TOKEN"


def test_legacy_401s_are_unauthorized(make_wire) -> None:
    direct = make_wire(legacy=True, accept_token="right")
    assert direct.get("/v1/events?scope=a", token=None).json == {"error_code": "UNAUTHORIZED"}
    assert direct.get("/v1/events?scope=a", token="wrong").json == {"error_code": "UNAUTHORIZED"}


def test_actor_must_match_the_whoami_caller(make_wire) -> None:
    direct = make_wire(whoami_caller="user:local")
    answer = direct.get("/v1/events?scope=a")
    assert (answer.status, answer.json["error_code"]) == (401, "ACTOR_MISMATCH")
    assert direct.get("/v1/events?scope=a", headers={"X-Cortex-Actor": "user:other"}).status == 401
    direct.actor = "user:local"
    assert direct.get("/v1/events?scope=a").status == 200
    direct.actor = None
    direct.state.check_actor = False
    assert direct.get("/v1/events?scope=a").status == 200
    # The legacy profile ignores the header.
    legacy = make_wire(legacy=True, whoami_caller="user:local")
    assert legacy.get("/v1/events?scope=a").status == 200


def test_gate_order_auth_before_rate_window_before_fail_all(make_wire) -> None:
    direct = make_wire(rate_limit_requests=1, fail_all=(503, "UNAVAILABLE"))
    assert direct.get("/v1/events?scope=a", token=None).status == 401
    assert direct.get("/v1/events?scope=a").status == 503  # admitted, then fail_all
    answer = direct.get("/v1/events?scope=a")
    assert (answer.status, answer.json["error_code"]) == (429, "RATE_LIMITED")
    assert answer.json["retriable"] is True
    assert direct.state.counters["rate_limited"] == 1
    # Every gated request was recorded, refused or not.
    assert direct.state.count("GET /v1/events") == 3


def test_full_failure_body_shape_and_retriable_rules(direct) -> None:
    direct.state.fail_all = (503, "UNAVAILABLE", "down for maintenance")
    body = direct.get("/v1/events?scope=a").json
    assert list(body) == ["error_code", "message", "request_id", "retriable"]
    assert body["error_code"] == "UNAVAILABLE"
    assert body["message"] == "down for maintenance"
    assert body["request_id"].startswith("req_")
    assert body["retriable"] is True
    for status, code, retriable in [
        (503, "ANSWER_UNAVAILABLE", False),
        (503, "STORAGE_UNWIRED", False),
        (503, "SYNTHESIZER_UNCONFIGURED", False),
        (500, "INTERNAL", True),
        (429, "RATE_LIMITED", True),
        (400, "VALIDATION_ERROR", False),
        (402, "X", False),
    ]:
        direct.state.fail_all = (status, code)
        answer = direct.get("/v1/events?scope=a")
        assert answer.status == status
        assert answer.json["retriable"] is retriable, code
        assert code in answer.json["message"]
        assert TEST_TOKEN not in answer.json["message"]


def test_request_ids_number_the_requests(direct) -> None:
    direct.state.fail_all = (500, "INTERNAL")
    first = direct.get("/v1/events?scope=a").json["request_id"]
    second = direct.get("/v1/events?scope=a").json["request_id"]
    assert int(second.split("_")[1]) == int(first.split("_")[1]) + 1


def test_legacy_failure_body_is_the_code_alone(make_wire) -> None:
    direct = make_wire(legacy=True, fail_all=(500, "INTERNAL"))
    assert direct.get("/v1/events?scope=a").json == {"error_code": "INTERNAL"}


def test_fail_all_persists_until_none(direct) -> None:
    direct.state.fail_all = (402, "USER_INSUFFICIENT_CREDITS")
    assert [direct.get("/v1/events?scope=a").status for _ in range(3)] == [402] * 3
    direct.state.fail_all = None
    assert direct.get("/v1/events?scope=a").status == 200


# -- whoami, health, version ---------------------------------------------------------------


def test_whoami_is_outside_the_gate_but_checks_the_bearer(direct) -> None:
    direct.state.fail_all = (503, "UNAVAILABLE")
    answer = direct.get("/v1/auth/whoami")
    assert (answer.status, answer.json["error_code"]) == (404, "NOT_FOUND")
    direct.state.whoami_caller = "user:local"
    answer = direct.get("/v1/auth/whoami")
    assert answer.status == 200
    assert answer.json == {"caller": "user:local", "tenant_id": "tenant_test"}
    # Like every route of the real service, whoami refuses a missing or wrong bearer.
    missing = direct.get("/v1/auth/whoami", token=None)
    assert (missing.status, missing.json["error_code"]) == (401, "MISSING_TOKEN")
    direct.state.accept_token = "the-key"
    wrong = direct.get("/v1/auth/whoami", token="another-key")
    assert (wrong.status, wrong.json["error_code"]) == (401, "INVALID_TOKEN_SIGNATURE")
    assert "another-key" not in json.dumps(wrong.json)
    right = direct.get("/v1/auth/whoami", token="the-key")
    assert right.json["caller"] == "user:local"
    direct.state.whoami_caller = None  # a pre-actor server: 404 only past the bearer check
    assert direct.get("/v1/auth/whoami", token="another-key").status == 401
    assert direct.get("/v1/auth/whoami", token="the-key").status == 404
    legacy = direct.state
    legacy.real_auth_codes = False
    assert direct.get("/v1/auth/whoami", token=None).json["error_code"] == "UNAUTHORIZED"
    assert direct.state.requests() == []  # never recorded, never gated by fail_all
    assert direct.state.counters["whoami_calls"] == 8


def test_whoami_knobs(make_wire) -> None:
    direct = make_wire(whoami_caller="user:local")
    direct.state.whoami_tenant_id = None
    assert direct.get("/v1/auth/whoami").json == {"caller": "user:local"}
    direct.state.whoami_answer = {"caller": 5}
    assert direct.get("/v1/auth/whoami").json == {"caller": 5}
    direct.state.whoami_fails = (401, "INVALID_TOKEN_SIGNATURE")
    answer = direct.get("/v1/auth/whoami")
    assert (answer.status, answer.json["error_code"]) == (401, "INVALID_TOKEN_SIGNATURE")
    # The replacement body answers even without a caller (a pre-actor server otherwise).
    bare = make_wire(whoami_answer={})
    assert (bare.get("/v1/auth/whoami").status, bare.get("/v1/auth/whoami").json) == (200, {})
    assert make_wire(legacy=True, whoami_caller="u:x").get("/v1/auth/whoami").json == {
        "caller": "u:x"
    }


def test_admin_routes_are_public_with_detail(direct) -> None:
    direct.state.accept_token = "only-this"
    health = direct.get("/v1/admin/health", token=None)
    assert (health.status, health.json) == (200, {"status": "healthy", "version": "v0.10.5"})
    version = direct.get("/v1/admin/version", token=None).json
    assert version == {
        "version": "v0.10.5",
        "crate_version": "0.10.5",
        "git_sha": "0000000",
        "built_at": "2026-09-01T00:00:00Z",
        "capabilities": ["refers_to_v1", "temporal_lenient_v1"],
    }
    direct.state.refers_unlisted = True
    assert direct.get("/v1/admin/version").json["capabilities"] == ["temporal_lenient_v1"]
    direct.state.version_down = True
    assert direct.get("/v1/admin/version").json["error_code"] == "INTERNAL"
    assert direct.get("/v1/admin/health").status == 200
    # Public routes skip auth but not fail_all (gate steps 1, 2, 7).
    direct.state.fail_all = (503, "UNAVAILABLE")
    assert direct.get("/v1/admin/health", token=None).status == 503
    assert direct.state.count("GET /v1/admin/") == 6


def test_legacy_admin_routes_need_a_bearer_and_say_less(make_wire) -> None:
    direct = make_wire(legacy=True)
    assert direct.get("/v1/admin/health", token=None).status == 401
    assert direct.get("/v1/admin/health").json == {"status": "healthy"}
    assert direct.get("/v1/admin/version").json == {
        "version": "v0.10.5",
        "capabilities": ["refers_to_v1", "temporal_lenient_v1"],
    }


# -- experience and the append rules -------------------------------------------------------


def test_experience_shapes_new_and_replayed(direct) -> None:
    first = direct.write("app:a", "hello", key="k1")
    assert first.status == 202
    assert first.json == {
        "event_id": "evt_1",
        "status": "captured",
        "replayed_from_idempotency": False,
    }
    replay = direct.write("app:b", "hello", key="k1", labels=["other"])
    assert replay.status == 202
    assert replay.json == {"event_id": "evt_1", "replayed_from_idempotency": True}
    conflict = direct.write("app:a", "changed", key="k1")
    assert (conflict.status, conflict.json["error_code"]) == (409, "IDEMPOTENCY_CONFLICT")
    assert direct.state.event_count() == 1
    assert len(direct.state.seen.writes) == 3


def test_keyless_writes_share_one_key(direct) -> None:
    body = direct.body("app:a", "one")
    del body["idempotency_key"]
    assert direct.post(EXPERIENCE, body).status == 202
    body["content"]["text"] = "two"
    assert direct.post(EXPERIENCE, body).json["error_code"] == "IDEMPOTENCY_CONFLICT"
    body["idempotency_key"] = ""
    body["content"]["text"] = "one"
    assert direct.post(EXPERIENCE, body).json["replayed_from_idempotency"] is True


def test_stored_event_shape(direct) -> None:
    body = direct.body("app:a", "hi", observed_actor={"id": "user:x"}, subject="user:y")
    body["context"] = {"labels": ["l1"], "observed_at": "2026-01-01T00:00:00Z"}
    direct.post(EXPERIENCE, body)
    bare = direct.body("app:a", "plain", key="k-bare")
    del bare["context"]
    direct.post(EXPERIENCE, bare)
    stored = direct.state.log.events
    assert stored[0] == {
        "id": "evt_1",
        "scope": "app:a",
        "modality": "observation",
        "content": {"kind": "message", "text": "hi", "role": "user"},
        "context": {
            "labels": ["l1"],
            "observed_at": "2026-01-01T00:00:00Z",
            "recorded_at": "2026-09-02T00:00:00Z",
        },
    }
    assert stored[1]["context"] == {"recorded_at": "2026-09-02T00:00:00Z"}


def test_size_limit_counts_the_role_prefix(make_wire) -> None:
    direct = make_wire()
    limit = 1_048_576
    exact = direct.write("app:a", "x" * (limit - len("[user] ")))
    assert exact.status == 202
    over = direct.write("app:a", "x" * (limit - len("[user] ") + 1))
    assert (over.status, over.json["error_code"]) == (422, "INVALID_ENVELOPE")
    assert direct.write("app:a", "y" * (limit - 6), role=None).status == 202
    legacy = make_wire(size_counts_role_prefix=False)
    assert legacy.write("app:a", "x" * limit).status == 202
    assert legacy.write("app:a", "z" * (limit + 1)).json["error_code"] == "INVALID_ENVELOPE"


def test_unregistered_scope_types_are_refused(make_wire) -> None:
    direct = make_wire()
    answer = direct.write("app:tinymemory/bogus:x", "hi")
    assert (answer.status, answer.json["error_code"]) == (422, "UNREGISTERED_SCOPE_TYPE")
    assert direct.write("app:tinymemory/service:x/plainword", "hi").status == 202
    assert make_wire(legacy=True).write("bogus:x", "hi").status == 202


def test_wait_is_validated_after_recording(direct) -> None:
    for value in ["bogus", ""]:
        answer = direct.write("app:a", "hi", query=f"?wait={value}")
        assert (answer.status, answer.json["error_code"]) == (422, "INVALID_BODY")
    assert len(direct.state.seen.writes) == 2
    assert direct.state.event_count() == 0
    for stage in ["accepted", "captured"]:
        assert direct.write("app:a", f"at {stage}", query=f"?wait={stage}").status == 202
    for stage in ["indexed", "consolidated", "settled"]:
        held = direct.write("app:a", f"at {stage}", query=f"?wait={stage}")
        assert held.status == 200
        assert held.json["status"] == "indexed"
    replay = direct.write("app:a", "at indexed", key="k-9", query="?wait=indexed")
    again = direct.write("app:a", "at indexed", key="k-9", query="?wait=indexed")
    assert replay.status == again.status == 200
    assert again.json == {"event_id": replay.json["event_id"], "replayed_from_idempotency": True}


def test_legacy_ignores_wait(make_wire) -> None:
    direct = make_wire(legacy=True)
    assert direct.write("app:a", "hi", query="?wait=bogus").status == 202
    assert direct.write("app:a", "ho", query="?wait=indexed").status == 202


def test_refuse_attribution_before_the_pipeline(direct) -> None:
    direct.state.refuse_attribution = (403, "POLICY_DENIED")
    answer = direct.post(EXPERIENCE, direct.body("app:a", "hi", observed_actor={"id": "u"}))
    assert (answer.status, answer.json["error_code"]) == (403, "POLICY_DENIED")
    assert direct.post(EXPERIENCE, direct.body("app:a", "hi", subject="user:x")).status == 403
    assert direct.state.counters["experience_calls"] == 0
    assert direct.write("app:a", "plain").status == 202


# -- bulk ---------------------------------------------------------------------------------


def test_bulk_shape_and_replays(direct) -> None:
    items = [direct.body("app:c", f"turn {i}", key=f"b{i}") for i in range(3)]
    answer = direct.post("/v1/experience/bulk", {"items": items, "ordering": "strict_temporal"})
    assert answer.status == 200
    assert answer.json == {
        "accepted": 3,
        "results": [
            {"index": i, "event_id": f"evt_{i + 1}", "replayed_from_idempotency": False}
            for i in range(3)
        ],
    }
    again = direct.post("/v1/experience/bulk?wait=indexed", {"items": items[:1]})
    assert again.status == 200
    assert again.json["results"][0]["replayed_from_idempotency"] is True
    assert direct.state.counters["experience_calls"] == 4
    assert len(direct.state.seen.writes) == 2


def test_bulk_cap_and_legacy(make_wire) -> None:
    direct = make_wire()
    items = [direct.body("app:c", f"t{i}") for i in range(1001)]
    answer = direct.post("/v1/experience/bulk", {"items": items})
    assert (answer.status, answer.json["error_code"]) == (422, "INVALID_BODY")
    assert direct.state.event_count() == 0
    assert direct.post("/v1/experience/bulk", {"items": items[:1000]}).status == 200
    legacy = make_wire(legacy=True)
    assert legacy.post("/v1/experience/bulk", {"items": items}).json["accepted"] == 1001


def test_bulk_first_failure_answers_and_earlier_items_stay(direct) -> None:
    direct.write("app:c", "original", key="taken")
    items = [
        direct.body("app:c", "first", key="x1"),
        direct.body("app:c", "different", key="taken"),
        direct.body("app:c", "third", key="x3"),
    ]
    answer = direct.post("/v1/experience/bulk", {"items": items})
    assert (answer.status, answer.json["error_code"]) == (409, "IDEMPOTENCY_CONFLICT")
    assert [e["content"]["text"] for e in direct.state.log.events] == ["original", "first"]


def test_bulk_attribution_refuses_the_whole_batch(direct) -> None:
    direct.state.refuse_attribution = (422, "VALIDATION_ERROR")
    items = [direct.body("app:c", "a"), direct.body("app:c", "b", subject="user:x")]
    assert direct.post("/v1/experience/bulk", {"items": items}).status == 422
    assert direct.state.event_count() == 0
    assert direct.post("/v1/experience/bulk?wait=nope", {"items": items}).status == 422
    bad = direct.post("/v1/experience/bulk", {"items": "nope"})
    assert bad.json["error_code"] == "INVALID_BODY"


# -- listing ------------------------------------------------------------------------------


def _texts(answer) -> list:
    return [item["content"]["text"] for item in answer.json["items"]]


def test_listing_doubles_every_event_newest_first(direct) -> None:
    for text in ["e1", "e2", "e3"]:
        direct.write("app:a", text)
    direct.write("app:a/app:b", "child")
    page = direct.events("scope=app:a&limit=4")
    assert page.json["has_more"] is True
    assert page.json["next_cursor"] == "4"
    assert _texts(page) == ["e3", "e3", "e2", "e2"]
    rest = direct.events("scope=app:a&limit=4&cursor=4")
    assert _texts(rest) == ["e1", "e1"]
    assert rest.json == {"items": rest.json["items"], "has_more": False, "next_cursor": "6"}
    past = direct.events("scope=app:a&cursor=10")
    assert past.json == {"items": [], "has_more": False, "next_cursor": "10"}
    item = page.json["items"][0]
    assert set(item) == {"id", "scope", "modality", "content", "context"}
    assert item["context"]["recorded_at"] == "2026-09-02T00:00:00Z"


def test_listing_defaults_and_ignored_parameters(direct) -> None:
    for i in range(30):
        direct.write("app:a", f"e{i}")
    assert len(direct.events("scope=app:a").json["items"]) == 50
    assert len(direct.events("scope=app:a&limit=abc&cursor=xyz").json["items"]) == 50
    misspelt = direct.events("scope=app:a&limit=2&curser=2")
    assert _texts(misspelt) == ["e29", "e29"]
    assert direct.events("scope=app:a&limit=0").json["next_cursor"] == "0"
    assert direct.events("scope=app:zzz&scope=app:a&limit=2").json["items"] != []
    assert direct.events("limit=2").json["items"] == []
    assert direct.events("scope=app:a&limit=2&view=descend&since=x&modality=m").status == 200


def test_listing_labels_any_of(direct) -> None:
    direct.write("app:a", "red", labels=["red", "warm"])
    direct.write("app:a", "blue", labels=["blue"])
    direct.write("app:a", "none")
    assert _texts(direct.events("scope=app:a&labels=red")) == ["red", "red"]
    assert _texts(direct.events("scope=app:a&labels=%20blue%20,,red")) == [
        "blue",
        "blue",
        "red",
        "red",
    ]
    assert len(direct.events("scope=app:a&labels=,,").json["items"]) == 6


def test_listing_label_cap(make_wire) -> None:
    direct = make_wire()
    fifty = ",".join(f"l{i}" for i in range(50))
    assert direct.events(f"scope=app:a&labels={fifty}").status == 200
    answer = direct.events(f"scope=app:a&labels={fifty},l50")
    assert (answer.status, answer.json["error_code"]) == (422, "VALIDATION_ERROR")
    assert make_wire(legacy=True).events(f"scope=app:a&labels={fifty},l50").status == 200


def test_listing_check_order(direct) -> None:
    many = ",".join(f"l{i}" for i in range(51))
    direct.state.rate_limit_events = 1
    direct.state.state_change_events = 1
    assert direct.events(f"scope=a&labels={many}").status == 422
    assert direct.state.rate_limit_events == 1
    assert direct.events("scope=a").status == 429
    answer = direct.events("scope=a")
    assert (answer.status, answer.json["error_code"]) == (503, "AUTHORIZATION_STATE_CHANGED")
    assert answer.json["retriable"] is True
    assert direct.events("scope=a").status == 200


# -- recall and answer ---------------------------------------------------------------------


def test_recall_shape_scoring_and_context_block(direct) -> None:
    direct.write("app:a", "Rust ownership moves values.", role=None)
    direct.write("app:a", "which editor do I use", role="user")
    direct.write("app:a", "you use helix", role="assistant")
    direct.write("app:a/app:deep", "helix editor deep down")
    answer = direct.recall({"scope": "app:a", "query": "Helix editor?"})
    assert answer.status == 200
    body = answer.json
    assert list(body) == ["pack_id", "layers", "context_block"]
    assert body["pack_id"] == "pack_1"
    texts = [e["content"]["text"] for e in body["layers"]["events"]]
    # Both words score 1 each here; ties stay newest first; "Rust" scores 0 and is dropped.
    assert texts == ["you use helix", "which editor do I use"]
    # The format the official clients parse: entries separated by a line "---", each
    # headed "[<timestamp> UTC] [<role>]" (here recorded_at: no observed_at was sent).
    assert body["context_block"] == (
        "[2026-09-02 00:00:00 UTC] [assistant]\nyou use helix\n---\n"
        "[2026-09-02 00:00:00 UTC] [user]\nwhich editor do I use"
    )
    assert body["layers"]["beliefs"] == []
    descend = direct.recall({"scope": "app:a", "query": "helix editor", "view": "descend"})
    top = descend.json["layers"]["events"][0]
    assert top["content"]["text"] == "helix editor deep down"
    assert descend.json["pack_id"] == "pack_2"
    assert direct.state.counters["packs_issued"] == 2
    assert len(direct.state.seen.recalls) == 2


def test_context_block_stamps_observed_at_in_utc_and_names_each_role(direct) -> None:
    direct.write("app:a", "noted at noon", context={"observed_at": "2026-03-01T12:00:00+02:00"})
    direct.write("app:a", "precise", context={"observed_at": "2026-03-01T23:59:59.123456789Z"})
    direct.write("app:a", "no role, odd time", role=None, context={"observed_at": "soon"})
    block = direct.recall({"scope": "app:a"}).json["context_block"]
    assert block.split("\n---\n") == [
        "[2026-09-02 00:00:00 UTC] [event]\nno role, odd time",
        "[2026-03-01 23:59:59 UTC] [user]\nprecise",
        "[2026-03-01 10:00:00 UTC] [user]\nnoted at noon",
    ]
    assert context_block([]) == ""


def test_recall_words_labels_and_limits(direct) -> None:
    direct.write("app:a", "alpha one", labels=["x"])
    direct.write("app:a", "beta two", labels=["y"])
    direct.write("app:a", "gamma three", labels=["x"])
    everything = direct.recall({"scope": "app:a", "query": "a an of"})
    assert len(everything.json["layers"]["events"]) == 3  # no word of 3+ bytes: no filter
    labelled = direct.recall({"scope": "app:a", "filters": {"metadata": {"labels": ["x"]}}})
    assert [e["content"]["text"] for e in labelled.json["layers"]["events"]] == [
        "gamma three",
        "alpha one",
    ]
    limited = direct.recall({"scope": "app:a", "budgets": {"per_layer_limits": {"events": 1}}})
    assert len(limited.json["layers"]["events"]) == 1
    none = direct.recall({"scope": "app:a", "budgets": {"per_layer_limits": {"events": 0}}})
    assert none.json["layers"]["events"] == []
    assert none.json["context_block"] == ""


def test_recall_beliefs_layer(direct) -> None:
    direct.write("app:a", "likes tea")
    direct.write("app:a", "likes coffee")
    direct.post("/v1/beliefs/build", {"scope": "app:a"})
    plain = direct.recall({"scope": "app:a", "query": "coffee"})
    assert plain.json["layers"]["beliefs"] == []  # the beliefs limit is 0 when absent
    body = {"scope": "app:a", "query": "coffee", "budgets": {"per_layer_limits": {"beliefs": 5}}}
    beliefs = direct.recall(body).json["layers"]["beliefs"]
    assert [b["source"] for b in beliefs] == ["evt_2"]
    body["query"] = ""
    assert [b["source"] for b in direct.recall(body).json["layers"]["beliefs"]] == [
        "evt_2",
        "evt_1",
    ]


def test_legacy_recall_and_answer(make_wire) -> None:
    direct = make_wire(legacy=True)
    direct.write("app:a", "hello there")
    body = direct.recall({"scope": "app:a", "query": "hello"}).json
    assert body["pack_id"] == "pack_test"
    assert "context_block" not in body
    assert direct.state.log.packs == {}
    ok = direct.answer({"scope": "app:a", "question": "hi?", "use_pack_id": "pack_test"})
    assert ok.status == 200
    for pack in ["pack_1", None]:
        answer = direct.answer({"scope": "app:a", "question": "hi?", "use_pack_id": pack})
        assert (answer.status, answer.json["error_code"]) == (400, "MISSING_PACK")


def test_answer_from_a_pack_and_inline(direct) -> None:
    direct.write("app:a", "hello there")
    pack = direct.recall({"scope": "app:a", "query": "hello"}).json["pack_id"]
    body = {
        "scope": "app:a",
        "question": "what?",
        "use_pack_id": pack,
        "answer_instructions": None,
        "anything": 1,
    }
    answer = direct.answer(body)
    assert answer.status == 200
    assert answer.json == {
        "answer": "grounded answer for what?",
        "citations": [],
        "diagnostics": {"answer_model": "reasoning"},
    }
    unknown = direct.answer(dict(body, use_pack_id="pack_99"))
    assert (unknown.status, unknown.json["error_code"]) == (404, "NOT_FOUND")
    inline = direct.answer({"scope": "app:a", "question": "again?", "use_pack_id": None})
    assert inline.status == 200
    assert direct.state.counters["packs_issued"] == 1
    assert len(direct.state.seen.recalls) == 1
    assert len(direct.state.seen.answers) == 3
    direct.state.answer_without_pack = False
    assert direct.answer({"scope": "app:a", "question": "x"}).json["error_code"] == "MISSING_PACK"


def test_inline_answer_honours_recall_knobs(direct) -> None:
    direct.state.refers_refused = True
    refused = direct.answer({"scope": "app:a", "question": "q", "temporal": {}})
    assert (refused.status, refused.json["error_code"]) == (422, "INVALID_BODY")
    direct.state.refers_refused = False
    direct.state.recall_down = True
    assert direct.answer({"scope": "app:a", "question": "q"}).json["error_code"] == "INTERNAL"
    pack_answer = direct.answer({"scope": "a", "question": "q", "use_pack_id": "pack_1"})
    assert pack_answer.status == 404


# -- forget -------------------------------------------------------------------------------


def test_forget_check_order(direct) -> None:
    cases = [
        (
            {"cascade": "everything", "selector": {"memory_ids": ["e"]}, "confirm_all": True},
            400,
            "INVALID_CASCADE",
        ),
        ({"cascade": None, "confirm_all": True}, 400, "INVALID_CASCADE"),
        (
            {"selector": {"memory_ids": ["e"]}, "confirm_all": True},
            400,
            "AMBIGUOUS_SELECTOR_CONFIRM_ALL",
        ),
        ({"selector": {"about_subject": "x"}}, 422, "EMPTY_SELECTOR_WITHOUT_CONFIRMATION"),
        (
            {"selector": {"memory_ids": []}, "confirm_all": "yes"},
            422,
            "EMPTY_SELECTOR_WITHOUT_CONFIRMATION",
        ),
    ]
    for extra, status, code in cases:
        answer = direct.forget(dict({"scope": "app:a"}, **extra))
        assert (answer.status, answer.json["error_code"]) == (status, code), extra
    assert len(direct.state.seen.forgets) == len(cases)


def test_forget_derived_only_keeps_events(direct) -> None:
    direct.write("app:a", "one")
    direct.write("app:a", "two")
    direct.post("/v1/beliefs/build", {"scope": "app:a"})
    answer = direct.forget({"scope": "app:a", "selector": {"memory_ids": ["evt_1", "nope"]}})
    assert answer.json == {"deleted": {"events": 0}, "requested": 2}
    assert direct.state.event_count() == 2
    assert [b["source"] for b in direct.state.log.beliefs] == ["evt_2"]
    everything = direct.forget({"scope": "app:a", "confirm_all": True})
    assert everything.json == {"deleted": {"events": 0}, "requested": 0}
    assert direct.state.log.beliefs == []


def test_forget_by_ids_releases_keys(direct) -> None:
    direct.write("app:a", "one", key="k1")
    direct.write("app:a", "two", key="k2")
    direct.write("app:b", "three", key="k3")
    body = {
        "scope": "app:a",
        "layers": ["events"],
        "selector": {"memory_ids": ["evt_1", "evt_3", "evt_404"]},
        "cascade": "redact_events",
        "audit_note": "test",
    }
    assert direct.forget(body).json == {"deleted": {"events": 1}, "requested": 3}
    assert direct.state.log.forgotten == ["evt_1"]
    again = direct.write("app:a", "one", key="k1")
    assert again.json["replayed_from_idempotency"] is False
    assert again.json["event_id"] == "evt_4"


def test_forget_confirm_all_keeps_keys(direct) -> None:
    direct.write("app:a", "one", key="k1")
    direct.write("app:a/app:b", "below", key="k2")
    answer = direct.forget({"scope": "app:a", "confirm_all": True, "cascade": "redact_events"})
    assert answer.json == {"deleted": {"events": 1}, "requested": 0}
    assert [e["scope"] for e in direct.state.log.events] == ["app:a/app:b"]
    replay = direct.write("app:a", "one", key="k1")
    assert replay.json == {"event_id": "evt_1", "replayed_from_idempotency": True}
    assert direct.state.event_count() == 1


# -- erasures -----------------------------------------------------------------------------


def test_erasure_checks_and_shape(direct) -> None:
    direct.write("app:a", "one")
    for body, code in [
        ({"confirm_all": True}, "INVALID_BODY"),
        ({"scope": 5, "confirm_all": True}, "INVALID_BODY"),
        ({"scope": "app:a"}, "EMPTY_SELECTOR_WITHOUT_CONFIRMATION"),
        (
            {"scope": "app:a", "confirm_all": True, "selector": {"memory_ids": ["evt_1"]}},
            "EMPTY_SELECTOR_WITHOUT_CONFIRMATION",
        ),
    ]:
        answer = direct.post("/v1/erasures", body)
        assert (answer.status, answer.json["error_code"]) == (422, code)
    assert direct.state.event_count() == 1
    done = direct.post("/v1/erasures", {"scope": "app:a", "confirm_all": True, "audit_note": "x"})
    assert (done.status, done.json) == (202, {"erasure_id": "erasure_1", "status": "completed"})
    assert direct.state.event_count() == 0
    assert len(direct.state.seen.erasures) == 5


def test_erasure_status_knobs(direct) -> None:
    direct.state.erasure_running_for = 2
    post = direct.post("/v1/erasures", {"scope": "app:a", "confirm_all": True}).json
    assert post["status"] == "running"
    assert direct.get("/v1/erasures/erasure_1").json == {
        "erasure_id": "erasure_1",
        "status": "running",
    }
    assert direct.get("/v1/erasures/erasure_1").json["status"] == "completed"
    direct.state.erasure_ends = "failed"
    assert direct.get("/v1/erasures/anything-at-all").json == {
        "erasure_id": "anything-at-all",
        "status": "failed",
    }
    direct.state.erasure_poll_status = "cancelled"
    direct.state.erasure_running_for = 1
    assert direct.get("/v1/erasures/e").json["status"] == "cancelled"
    assert direct.state.erasure_running_for == 1  # a forced status consumes nothing
    direct.state.erasure_poll_status = None
    direct.state.erasure_poll_omits_status = True
    assert direct.get("/v1/erasures/e").json == {"erasure_id": "e"}
    assert direct.state.erasure_running_for == 0
    direct.state.erasure_running_for = 1
    direct.state.erasure_post_omits_status = True
    post = direct.post("/v1/erasures", {"scope": "app:a", "confirm_all": True}).json
    assert post == {"erasure_id": "erasure_2"}
    assert direct.state.erasure_running_for == 1


# -- scope listing, registration, beliefs --------------------------------------------------


def _paths(answer) -> list:
    return [item["path"] for item in answer.json["items"]]


def test_scope_listing_rules(direct) -> None:
    for scope in ["user:ann", "user:ann/app:x", "user:anna", "team:t"]:
        direct.write(scope, "hi")
    assert _paths(direct.scopes()) == ["team:t", "user:ann", "user:ann/app:x", "user:anna"]
    assert _paths(direct.scopes("prefix=user:ann")) == ["user:ann", "user:ann/app:x"]
    assert _paths(direct.scopes("prefix=user:ann/")) == ["user:ann/app:x"]
    assert _paths(direct.scopes("prefix=")) == _paths(direct.scopes())
    assert _paths(direct.scopes("prefix=user:ann&limit=1")) == ["user:ann"]
    direct.state.string_prefix_scopes = True
    assert _paths(direct.scopes("prefix=user:ann")) == [
        "user:ann",
        "user:ann/app:x",
        "user:anna",
    ]
    assert list(direct.scopes().json) == ["items"]


def test_scope_listing_padding_and_limits(direct) -> None:
    direct.state.padding_scopes = 1200
    assert len(_paths(direct.scopes())) == 50
    assert len(_paths(direct.scopes("limit=nope"))) == 50
    paths = _paths(direct.scopes("limit=5000"))
    assert len(paths) == 1000
    assert paths[0] == "app:tinymemory/agent:pad-0000/app:learnings"
    assert _paths(direct.scopes("prefix=app:tinymemory/agent:pad-0007")) == [
        "app:tinymemory/agent:pad-0007/app:learnings"
    ]


def test_scope_vanishes_once_its_events_go(direct) -> None:
    direct.write("app:gone", "x")
    direct.forget({"scope": "app:gone", "confirm_all": True, "cascade": "redact_events"})
    assert _paths(direct.scopes()) == []


def test_scope_registration(direct) -> None:
    body = {"path": "user:ann", "members": [{"actor": "user:ann", "role": "owner"}], "x": 1}
    created = direct.post("/v1/scopes", body)
    assert (created.status, created.json) == (201, body)
    twice = direct.post("/v1/scopes", body)
    assert (twice.status, twice.json["error_code"]) == (409, "SCOPE_REGISTRATION_EXISTS")
    assert direct.post("/v1/scopes", {"path": ""}).json["error_code"] == "INVALID_BODY"
    assert direct.post("/v1/scopes", {"members": []}).json["error_code"] == "INVALID_BODY"
    typed = direct.post("/v1/scopes", {"path": "bogus:x"})
    assert typed.json["error_code"] == "UNREGISTERED_SCOPE_TYPE"
    direct.state.fail_registration = (403, "POLICY_DENIED")
    denied = direct.post("/v1/scopes", {"path": "user:bob"})
    assert (denied.status, denied.json["error_code"]) == (403, "POLICY_DENIED")
    assert direct.post("/v1/scopes", {"path": "bogus:y"}).status == 422  # type check first
    direct.state.fail_registration = None
    assert direct.post("/v1/scopes", {"path": "user:bob"}).status == 201
    assert direct.state.seen.registrations == [body, {"path": "user:bob"}]
    record = direct.get("/v1/scopes?path=user%3Aann")
    assert (record.status, record.json) == (200, body)
    assert direct.get("/v1/scopes?path=user:zed").json["error_code"] == "NOT_FOUND"
    members = [{"actor": "user:cy", "role": "reader"}]
    put = direct.call("PUT", "/v1/scopes/members?path=user:ann", {"members": members})
    assert put.json == dict(body, members=members)
    assert direct.get("/v1/scopes?path=user:ann").json["members"] == members
    missing = direct.call("PUT", "/v1/scopes/members?path=user:zed", {"members": []})
    assert missing.status == 404


def test_beliefs_build_and_listing(direct) -> None:
    direct.write("app:a", "prefers helix")
    v2 = json.dumps({"v": 2, "id": "f" * 40, "kind": "learning", "text": "likes tea", "meta": {}})
    direct.write("app:a", v2)
    direct.write("app:a", "{not json")
    direct.write("app:a/app:b", "below")
    assert direct.post("/v1/beliefs/build", {}).json["error_code"] == "VALIDATION_ERROR"
    assert direct.post("/v1/beliefs/build", {"scope": ""}).status == 422
    built = direct.post("/v1/beliefs/build", {"scope": "app:a"})
    assert built.json == {"built": 3, "items": [], "facts_scanned": 3, "events_scanned": 3}
    assert direct.post("/v1/beliefs/build", {"scope": "app:a"}).json["built"] == 0
    assert len(direct.state.seen.builds) == 2
    listing = direct.get("/v1/beliefs?scope=app:a&limit=1&view=x").json
    assert listing["has_more"] is False
    values = [b["claim"]["object"]["value"] for b in listing["items"]]
    assert values == ["{not json", "likes tea", "prefers helix"]
    assert listing["items"][2] == {
        "id": "belief_evt_1",
        "scope": "app:a",
        "source": "evt_1",
        "claim": {
            "subject": {"id": "ent_user", "name": "user"},
            "predicate": "said",
            "object": {"datatype": "string", "value": "prefers helix"},
        },
        "stance": "supported",
        "confidence": 0.9,
        "valid_from": "2026-09-01T09:00:00Z",
    }
    assert direct.get("/v1/beliefs?scope=app:a/app:b").json["items"] == []


# -- HTTP-level behaviour ------------------------------------------------------------------


def test_unknown_path_and_wrong_method_have_empty_bodies(direct) -> None:
    missing = direct.get("/v1/nothing")
    assert (missing.status, missing.raw) == (404, b"")
    assert direct.get("/memory/events?scope=a").status == 404
    wrong = direct.get(EXPERIENCE)
    assert (wrong.status, wrong.raw) == (405, b"")
    assert direct.call("DELETE", "/v1/erasures/e").status == 405
    assert direct.state.requests() == []


def test_body_refusals_are_plain_text_and_record_nothing(direct) -> None:
    cases = [
        (b'{"scope":"a"}', "text/plain", 415),
        (b"{nope", "application/json", 400),
        (b"", "application/json", 400),
        (b"[1, 2]", "application/json", 422),
        (b'"text"', "application/json; charset=utf-8", 422),
    ]
    for raw, content_type, status in cases:
        answer = direct.call("POST", EXPERIENCE, raw=raw, content_type=content_type)
        assert answer.status == status
        assert answer.headers["Content-Type"].startswith("text/plain")
        assert answer.raw
    assert direct.state.requests() == []
    assert direct.state.seen.writes == []
    ok = direct.call(
        "POST",
        EXPERIENCE,
        raw=b'{"scope":"app:a","content":{"text":"x"}}',
        content_type="Application/JSON; charset=utf-8",
    )
    assert ok.status == 202


def test_json_responses_are_compact(direct) -> None:
    answer = direct.write("app:a", "hi")
    assert answer.headers["Content-Type"] == "application/json"
    assert b": " not in answer.raw
    assert b", " not in answer.raw
    assert int(answer.headers["Content-Length"]) == len(answer.raw)

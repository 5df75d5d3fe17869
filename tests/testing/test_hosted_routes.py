"""The hosted double's routes: envelope, grammar, claims, upstream mapping, hosted-only erase."""

from __future__ import annotations

import pytest

from cortex_memory.testing._gate import grammar_ok, upstream

EXPERIENCE = "/memory/experience"
RATE_LIMIT_BODY = {
    "error": {
        "message": "Rate limit exceeded. Please retry after a brief wait.",
        "type": "rate_limit_error",
    }
}


def claim(key: str) -> dict:
    return {"Idempotency-Key": key}


def test_success_is_enveloped(hosted) -> None:
    answer = hosted.write("app:a", "hello")
    assert answer.status == 202
    assert answer.json == {
        "success": True,
        "data": {"event_id": "evt_1", "status": "captured", "replayed_from_idempotency": False},
    }
    replay = hosted.write("app:a", "hello", key="k-1")
    assert replay.status == 202
    assert replay.data == {"event_id": "evt_1", "replayed_from_idempotency": True}
    page = hosted.events("scope=app:a&limit=10")
    assert page.status == 200
    assert set(page.json) == {"success", "data"}
    assert page.data["next_cursor"] == "2"


def test_gate_failures_are_enveloped(make_wire) -> None:
    hosted = make_wire("hosted", accept_token="right", whoami_caller="user:x")
    for token in [None, "wrong"]:
        answer = hosted.events("scope=app:a", token=token)
        assert answer.status == 401
        assert answer.json == {
            "success": False,
            "error": "failed: UNAUTHORIZED",
            "errorCode": "UNAUTHORIZED",
        }
    # No actor check on the hosted wire, even with a caller configured.
    assert hosted.events("scope=app:a", token="right").status == 200
    hosted.state.fail_all = (402, "USER_INSUFFICIENT_CREDITS", "top up your credits")
    answer = hosted.events("scope=app:a", token="right")
    assert answer.status == 402
    assert answer.json == {
        "success": False,
        "error": "top up your credits",
        "errorCode": "USER_INSUFFICIENT_CREDITS",
    }


@pytest.mark.parametrize(
    "scope",
    [
        "",
        "app:a/",
        "zz_health",
        "app:a:b",
        "app:",
        ":x",
        "app:a b",
        "app:é",
        "/".join(["app:x"] * 32),
    ],
)
def test_grammar_refusals(hosted, scope) -> None:
    assert not grammar_ok(scope)
    answer = hosted.write(scope, "hi")
    assert answer.status == 400
    assert answer.json == {
        "success": False,
        "error": "failed: BAD_REQUEST",
        "errorCode": "BAD_REQUEST",
    }
    assert hosted.state.counters["experience_calls"] == 0
    assert hosted.state.seen.idempotency == []


def test_grammar_accepts_31_segments_and_the_charset(hosted) -> None:
    scope = "/".join(["app:x"] * 30 + ["user:A-z_09"])
    assert grammar_ok(scope)
    assert hosted.write(scope, "hi").status == 202
    assert not grammar_ok(None)


def test_claims_are_taken_once(hosted) -> None:
    first = hosted.write("app:a", "hi", key="body-key", headers=claim("tm-1"))
    assert first.status == 202
    again = hosted.write("app:a", "hi", key="body-key", headers=claim("tm-1"))
    assert again.status == 409
    assert again.json == {"success": False, "error": "failed: CONFLICT", "errorCode": "CONFLICT"}
    assert hosted.state.seen.idempotency == [("body-key", "tm-1"), ("body-key", "tm-1")]
    assert hosted.state.log.claims == {"tm-1"}
    assert hosted.state.event_count() == 1
    hosted.state.legacy_conflict_400 = True
    legacy = hosted.write("app:a", "hi", key="body-key", headers=claim("tm-1"))
    assert (legacy.status, legacy.code) == (400, "CONFLICT")
    # Without a header, nothing is claimed: a body-key replay answers 202.
    assert hosted.write("app:a", "hi", key="body-key").status == 202


def test_rate_limit_comes_before_the_claim(hosted) -> None:
    hosted.state.rate_limit_experience = 2
    for _ in range(2):
        refused = hosted.write("app:a", "hi", key="k", headers=claim("tm-7"))
        assert (refused.status, refused.json) == (429, RATE_LIMIT_BODY)
        assert "Retry-After" not in refused.headers
    assert hosted.state.seen.idempotency == []
    assert hosted.write("app:a", "hi", key="k", headers=claim("tm-7")).status == 202
    assert hosted.state.count("POST /memory/experience") == 3
    assert hosted.state.event_count() == 1
    assert hosted.state.counters["rate_limited"] == 2


def test_claim_then_fail_keeps_the_claim(hosted) -> None:
    hosted.state.claim_then_fail = 1
    failed = hosted.write("app:a", "hi", key="k", headers=claim("tm-2"))
    assert (failed.status, failed.code) == (502, "BAD_GATEWAY")
    assert hosted.state.event_count() == 0
    retry = hosted.write("app:a", "hi", key="k", headers=claim("tm-2"))
    assert (retry.status, retry.code) == (409, "CONFLICT")
    assert hosted.state.event_count() == 0


def test_apply_then_fail_applies(hosted) -> None:
    hosted.state.apply_then_fail = 1
    lost = hosted.write("app:a", "hi", key="k", headers=claim("tm-3"))
    assert (lost.status, lost.code) == (503, "UNAVAILABLE")
    assert hosted.state.event_count() == 1
    retry = hosted.write("app:a", "hi", key="k", headers=claim("tm-3"))
    assert (retry.status, retry.code) == (409, "CONFLICT")
    first, second = hosted.state.seen.idempotency
    assert first == second == ("k", "tm-3")
    assert hosted.state.event_count() == 1


def test_upstream_mapping_of_log_failures(hosted) -> None:
    hosted.write("app:a", "one", key="k")
    conflict = hosted.write("app:a", "two", key="k")
    assert (conflict.status, conflict.code) == (409, "CONFLICT")
    too_big = hosted.write("app:a", "x" * 1_048_576)
    assert (too_big.status, too_big.code) == (400, "BAD_REQUEST")
    typed = hosted.write("bogus:a", "x")
    assert (typed.status, typed.code) == (400, "BAD_REQUEST")
    for body in [
        {"scope": "app:a"},
        {"scope": "app:a", "cascade": "nope", "confirm_all": True},
        {"scope": "app:a", "confirm_all": True, "selector": {"memory_ids": ["evt_1"]}},
    ]:
        answer = hosted.forget(body)
        assert (answer.status, answer.code) == (400, "BAD_REQUEST"), body


@pytest.mark.parametrize(
    ("status", "mapped"),
    [
        (402, (402, "USER_INSUFFICIENT_CREDITS")),
        (503, (503, "UPSTREAM_UNAVAILABLE")),
        (401, (502, "UPSTREAM_UNAVAILABLE")),
        (403, (502, "UPSTREAM_UNAVAILABLE")),
        (404, (404, "NOT_FOUND")),
        (409, (409, "CONFLICT")),
        (413, (413, "PAYLOAD_TOO_LARGE")),
        (422, (400, "BAD_REQUEST")),
        (418, (400, "BAD_REQUEST")),
        (500, (502, "UPSTREAM_UNAVAILABLE")),
        (502, (502, "UPSTREAM_UNAVAILABLE")),
    ],
)
def test_upstream_table(status, mapped) -> None:
    assert upstream(status, False) == mapped


def test_upstream_legacy_conflict() -> None:
    assert upstream(409, True) == (400, "CONFLICT")


def test_knob_failures_keep_their_code(hosted) -> None:
    hosted.state.fail_nth_experience = 1
    answer = hosted.write("app:a", "x")
    assert (answer.status, answer.code) == (400, "VALIDATION_ERROR")
    hosted.state.state_change_events = 1
    answer = hosted.events("scope=app:a")
    assert (answer.status, answer.code) == (503, "AUTHORIZATION_STATE_CHANGED")


def test_listing_order_of_checks(hosted) -> None:
    hosted.state.rate_limit_events = 1
    bad_scope = hosted.events("scope=zz_health&labels=a&labels=b")
    assert (bad_scope.status, bad_scope.code) == (400, "BAD_REQUEST")
    repeated = hosted.events("scope=app:a&labels=a&labels=b")
    assert (repeated.status, repeated.code) == (400, "VALIDATION_ERROR")
    capped = hosted.events("scope=app:a&labels=" + ",".join(f"l{i}" for i in range(51)))
    assert (capped.status, capped.code) == (400, "BAD_REQUEST")
    assert hosted.state.rate_limit_events == 1
    limited = hosted.events("scope=app:a")
    assert (limited.status, limited.json) == (429, RATE_LIMIT_BODY)
    assert hosted.events("scope=app:a&labels=a,b").status == 200
    missing = hosted.events("limit=5")
    assert (missing.status, missing.code) == (400, "BAD_REQUEST")


def test_recall_records_before_the_grammar(hosted) -> None:
    hosted.write("app:a", "hello world")
    bad = hosted.recall({"scope": "app:a/", "query": "hello"})
    assert (bad.status, bad.code) == (400, "BAD_REQUEST")
    assert len(hosted.state.seen.recalls) == 1
    good = hosted.recall({"scope": "app:a", "query": "hello", "view": "granular"})
    assert good.data["pack_id"] == "pack_1"
    assert good.data["context_block"] == "[2026-09-02 00:00:00 UTC] [user]\nhello world"


def test_strict_answer_schema(hosted) -> None:
    hosted.write("app:a", "hello world")
    pack = hosted.recall({"scope": "app:a", "query": "hello"}).data["pack_id"]
    full = {
        "scope": "app:a",
        "question": "q",
        "question_type": "x",
        "question_date": "2026-01-01",
        "temporal": {},
        "filters": {},
        "answer_max_tokens": 10,
        "answer_instructions": "be terse",
        "cite_sources": True,
        "include_context": False,
        "use_pack_id": pack,
    }
    assert hosted.answer(full).data["answer"] == "grounded answer for q"
    without = {k: v for k, v in full.items() if k != "answer_instructions"}
    assert hosted.answer(without).status == 200
    for bad in [dict(full, view="holistic"), dict(full, answer_instructions=None)]:
        answer = hosted.answer(dict(bad, use_pack_id="pack_404"))
        assert (answer.status, answer.code) == (400, "VALIDATION_ERROR")
    grammar_first = hosted.answer({"scope": "nope", "question": "q", "view": "x"})
    assert grammar_first.code == "BAD_REQUEST"
    gone = hosted.answer(dict(full, use_pack_id="pack_404"))
    assert (gone.status, gone.code) == (404, "NOT_FOUND")
    assert len(hosted.state.seen.answers) == 6


def test_forget_grammar_before_the_rate_limiter(hosted) -> None:
    hosted.state.rate_limit_forget = 1
    bad = hosted.forget({"scope": "", "confirm_all": True})
    assert bad.code == "BAD_REQUEST"
    assert hosted.state.rate_limit_forget == 1
    limited = hosted.forget({"scope": "app:a", "confirm_all": True})
    assert (limited.status, limited.json) == (429, RATE_LIMIT_BODY)
    assert hosted.state.seen.forgets == []
    done = hosted.forget({"scope": "app:a", "confirm_all": True})
    assert done.data == {"deleted": {"events": 0}, "requested": 0}


def test_scope_listing_shape_and_prefix_grammar(hosted) -> None:
    hosted.write("user:ann", "x")
    hosted.write("user:anna", "y")
    assert hosted.scopes().data == {"scopes": ["user:ann", "user:anna"]}
    probe = hosted.scopes("prefix=tmh%3Aprobe&limit=1")
    assert probe.data == {"scopes": []}
    assert hosted.state.requests()[-1] == "GET /memory/scopes?prefix=tmh%3Aprobe&limit=1"
    assert hosted.scopes("prefix=user:ann").data == {"scopes": ["user:ann"]}
    for prefix in ["", "user:ann/", "zz_health"]:
        answer = hosted.scopes(f"prefix={prefix}")
        assert (answer.status, answer.code) == (400, "BAD_REQUEST"), prefix


def test_hosted_has_no_direct_only_routes(hosted) -> None:
    for path in [
        "/memory/experience/bulk",
        "/v1/auth/whoami",
        "/v1/admin/health",
        "/memory/beliefs",
        "/memory/beliefs/build",
        "/v1/experience",
        "/memory/scopes/list",
    ]:
        answer = hosted.post(path, {}) if "bulk" in path or "build" in path else hosted.get(path)
        assert (answer.status, answer.raw) == (404, b""), path
    assert hosted.state.requests() == []


def test_wait_is_ignored(hosted) -> None:
    assert hosted.write("app:a", "hi", query="?wait=bogus").status == 202
    assert hosted.write("app:a", "ho", query="?wait=indexed").status == 202


# -- DELETE /memory ------------------------------------------------------------------------


def test_erase_all(hosted) -> None:
    hosted.write("app:a", "one", key="k1")
    hosted.write("app:a/app:b", "two", key="k2")
    hosted.write("app:c", "three", key="k3")
    hosted.recall({"scope": "app:a", "query": ""})
    answer = hosted.call("DELETE", "/memory")
    assert answer.status == 200
    assert answer.json == {"success": True, "data": {"erased": True, "scopes": 3}}
    assert hosted.state.seen.erasures == [{"all": True}]
    assert hosted.state.event_count() == 0
    assert hosted.state.log.packs == {}
    assert hosted.state.log.erasures == 3
    # Deepest first: every key was released, so every write stores anew.
    assert hosted.write("app:a/app:b", "two", key="k2").data["replayed_from_idempotency"] is False
    assert hosted.call("DELETE", "/memory").data == {"erased": True, "scopes": 1}


def test_erase_all_knobs_and_gate_first(make_wire) -> None:
    hosted = make_wire("hosted", accept_token="right", erase_all_missing=True)
    assert hosted.call("DELETE", "/memory", token="wrong").code == "UNAUTHORIZED"
    missing = hosted.call("DELETE", "/memory", token="right")
    assert (missing.status, missing.json) == (404, {"message": "Not Found"})
    assert hosted.state.seen.erasures == []
    hosted.state.erase_all_missing = False
    hosted.state.erase_all_answer = {"scopes": "2"}
    assert hosted.call("DELETE", "/memory", token="right").json == {
        "success": True,
        "data": {"scopes": "2"},
    }
    hosted.state.fail_all = (503, "UPSTREAM_UNAVAILABLE")
    assert hosted.call("DELETE", "/memory", token="right").status == 503


# -- POST /memory/v1/erasures --------------------------------------------------------------


def test_scoped_erasure_order_of_checks(make_wire) -> None:
    hosted = make_wire("hosted", accept_token="right")
    assert hosted.post("/memory/v1/erasures", {"scope": "app:a"}, token="x").code == "UNAUTHORIZED"
    hosted.state.scoped_erase_missing = True
    missing = hosted.post("/memory/v1/erasures", {"confirm_all": True}, token="right")
    assert (missing.status, missing.json) == (404, {"message": "Not Found"})
    hosted.state.scoped_erase_missing = False
    cases = [
        (
            {"scope": "app:a", "confirm_all": True},
            400,
            {"error_code": "UNKNOWN_FIELD", "message": "confirm_all"},
        ),
        ({"audit_note": "x"}, 400, {"error_code": "INVALID_SCOPE"}),
        ({"scope": 7}, 400, {"error_code": "INVALID_SCOPE"}),
        ({"scope": ""}, 422, {"error_code": "ROOT_ERASURE_REFUSED"}),
        ({"scope": "/"}, 422, {"error_code": "ROOT_ERASURE_REFUSED"}),
        (
            {"scope": "zz_health"},
            400,
            {"success": False, "error": "failed: BAD_REQUEST", "errorCode": "BAD_REQUEST"},
        ),
    ]
    for body, status, expected in cases:
        answer = hosted.post("/memory/v1/erasures", body, token="right")
        assert (answer.status, answer.json) == (status, expected), body
    assert hosted.state.seen.erasures == []


def test_scoped_erasure_applies_and_unwraps(hosted) -> None:
    hosted.write("app:a", "own", key="k1")
    hosted.write("app:a/app:b", "below", key="k2")
    hosted.write("app:z", "other", key="k3")
    hosted.recall({"scope": "app:z", "query": ""})
    answer = hosted.post("/memory/v1/erasures", {"scope": "app:a", "audit_note": "bye"})
    assert answer.status == 200
    assert answer.json == {
        "erased": True,
        "scope": "app:a",
        "scopes": 1,
        "erasure_ids": ["erasure_1"],
    }
    assert [e["scope"] for e in hosted.state.log.events] == ["app:z"]
    assert hosted.state.log.packs == {}
    # The scope's own key is released; the descendant's stays held (a replay, nothing stored).
    assert hosted.write("app:a", "own", key="k1").data["replayed_from_idempotency"] is False
    below = hosted.write("app:a/app:b", "below", key="k2").data
    assert below["replayed_from_idempotency"] is True
    assert hosted.state.event_count() == 2
    nothing = hosted.post("/memory/v1/erasures", {"scope": "app:nothing"})
    assert nothing.json == {"erased": True, "scope": "app:nothing", "scopes": 0, "erasure_ids": []}


def test_scoped_erasure_knobs(hosted) -> None:
    hosted.write("app:a", "own")
    hosted.state.erasure_incomplete_for = 1
    failed = hosted.post("/memory/v1/erasures", {"scope": "app:a"})
    assert (failed.status, failed.json) == (
        502,
        {"erased": False, "error_code": "ERASURE_INCOMPLETE", "retriable": True},
    )
    assert hosted.state.event_count() == 1
    assert len(hosted.state.seen.erasures) == 1
    hosted.state.scoped_erase_answer = {"erased": True, "scopes": 0, "erasure_ids": [123]}
    replaced = hosted.post("/memory/v1/erasures", {"scope": "app:a"})
    assert (replaced.status, replaced.json) == (
        200,
        {"erased": True, "scopes": 0, "erasure_ids": [123]},
    )
    assert hosted.state.event_count() == 0


def test_erasure_poll_is_unwrapped(hosted) -> None:
    hosted.state.erasure_running_for = 1
    assert hosted.get("/memory/v1/erasures/erasure_9").json == {
        "erasure_id": "erasure_9",
        "status": "running",
    }
    assert hosted.get("/memory/v1/erasures/erasure_9").json["status"] == "completed"

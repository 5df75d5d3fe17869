"""DoubleState: knobs, the legacy profile, counters, fault() and FOREVER (no sockets)."""

from __future__ import annotations

import pickle

import pytest

from cortex_memory.testing import (
    ALLOWED_SCOPE_TYPES,
    FOREVER,
    DirectDouble,
    DoubleState,
    HostedDouble,
    fault,
)
from cortex_memory.testing._knobs import KNOB_NAMES, LEGACY_PROFILE

LEGACY_VALUES = {
    "full_error_body": False,
    "real_auth_codes": False,
    "check_actor": False,
    "whoami_tenant_id": None,
    "public_admin": False,
    "admin_detail": False,
    "honour_wait": False,
    "index_delay_seconds": 0.0,
    "real_packs": False,
    "answer_without_pack": False,
    "context_block": False,
    "bulk_max_items": None,
    "max_labels": None,
    "allowed_scope_types": None,
    "size_counts_role_prefix": False,
    "rate_limit_requests": None,
}

DEFAULT_VALUES = {
    "full_error_body": True,
    "real_auth_codes": True,
    "check_actor": True,
    "whoami_tenant_id": "tenant_test",
    "public_admin": True,
    "admin_detail": True,
    "honour_wait": True,
    "wait_timeout_seconds": 30.0,
    "index_delay_seconds": 0.0,
    "real_packs": True,
    "pack_ttl_seconds": 60.0,
    "answer_without_pack": True,
    "context_block": True,
    "bulk_max_items": 1000,
    "max_labels": 50,
    "allowed_scope_types": ALLOWED_SCOPE_TYPES,
    "size_counts_role_prefix": True,
    "rate_limit_window_seconds": 60.0,
    "token_rejection_code": "INVALID_TOKEN_SIGNATURE",
    "whoami_caller": None,
    "accept_token": None,
    "fail_all": None,
}


def test_allowed_scope_types_are_the_twelve() -> None:
    names = "org dept team app user agent service ws project global system source"
    assert frozenset(names.split()) == ALLOWED_SCOPE_TYPES


@pytest.mark.parametrize(("name", "value"), sorted(DEFAULT_VALUES.items()))
def test_defaults_follow_the_real_server(name: str, value: object) -> None:
    assert getattr(DoubleState("direct"), name) == value
    assert getattr(DoubleState("hosted"), name) == value


def test_rate_window_is_hosted_only_by_default() -> None:
    assert DoubleState("hosted").rate_limit_requests == 300
    assert DoubleState("direct").rate_limit_requests is None


@pytest.mark.parametrize("cls", [DirectDouble, HostedDouble])
def test_legacy_profile_sets_every_legacy_value(cls: type) -> None:
    state = cls(legacy=True).state
    for name, value in LEGACY_VALUES.items():
        assert getattr(state, name) == value, name
    assert set(LEGACY_PROFILE) == set(LEGACY_VALUES)


def test_knobs_after_legacy_override_it() -> None:
    state = DirectDouble(legacy=True, max_labels=7, real_packs=True).state
    assert state.max_labels == 7
    assert state.real_packs is True
    assert state.context_block is False


def test_unknown_constructor_keyword_is_type_error() -> None:
    with pytest.raises(TypeError, match="hide_listing"):
        DirectDouble(hide_listing=3)
    with pytest.raises(TypeError):
        HostedDouble(legacy=False, fail_everything=True)


def test_misspelt_knob_assignment_is_attribute_error() -> None:
    state = DoubleState()
    with pytest.raises(AttributeError):
        state.hide_listings_for = 3
    with pytest.raises(AttributeError):
        state.log = None
    with pytest.raises(AttributeError):
        del state.fail_all


def test_every_knob_is_declared_and_assignable() -> None:
    state = DoubleState()
    declared = set(DoubleState.__annotations__)
    assert declared >= KNOB_NAMES
    for name in KNOB_NAMES:
        setattr(state, name, getattr(state, name))


def test_bad_values_are_refused_at_assignment() -> None:
    state = DoubleState()
    with pytest.raises(ValueError, match="fail_all"):
        state.fail_all = 503
    with pytest.raises(ValueError):
        state.fail_all = ("503", "UNAVAILABLE")
    with pytest.raises(ValueError):
        state.hide_listing_for = -1
    with pytest.raises(ValueError):
        state.arm_after_write = (1, 2, 3)
    with pytest.raises(TypeError):
        state.clock = 5.0
    state.fail_all = [503, "UNAVAILABLE", "down for maintenance"]
    state.allowed_scope_types = ["app", "user"]
    assert state.allowed_scope_types == frozenset({"app", "user"})
    with pytest.raises(ValueError):
        DoubleState("grpc")


def test_take_one_fires_n_times_then_stops() -> None:
    state = DoubleState()
    state.hide_listing_for = 2
    assert [state.take_one("hide_listing_for") for _ in range(4)] == [True, True, False, False]
    assert state.hide_listing_for == 0


def test_forever_never_runs_out() -> None:
    state = DoubleState()
    state.rate_limit_events = FOREVER
    assert all(state.take_one("rate_limit_events") for _ in range(1000))
    assert state.rate_limit_events is FOREVER
    assert repr(FOREVER) == "FOREVER"
    assert pickle.loads(pickle.dumps(FOREVER)) is FOREVER
    assert type(FOREVER)() is FOREVER


def test_zero_is_off() -> None:
    assert DoubleState().take_one("expire_packs") is False


def test_bare_transport_value_fires_until_none() -> None:
    state = DoubleState()
    state.truncate_body = 5
    assert [state.transport("truncate_body", "GET /v1/events") for _ in range(3)] == [5, 5, 5]
    state.truncate_body = None
    assert state.transport("truncate_body", "GET /v1/events") is None


def test_fault_consumes_only_matching_routes() -> None:
    state = DoubleState()
    state.truncate_body = fault(10, times=2, route="GET /v1/events")
    assert state.transport("truncate_body", "POST /v1/experience") is None
    assert state.transport("truncate_body", "GET /v1/events?scope=a") == 10
    assert state.transport("truncate_body", "GET /v1/admin/health") is None
    assert state.transport("truncate_body", "GET /v1/events") == 10
    assert state.transport("truncate_body", "GET /v1/events") is None
    assert "times=0" in repr(state.truncate_body)


def test_fault_any_route_and_forever() -> None:
    state = DoubleState()
    state.gzip_body = fault(True, times=FOREVER)
    assert all(state.transport("gzip_body", f"GET /x{i}") for i in range(50))
    state.malformed_json = fault(True)
    assert state.transport("malformed_json", "GET /a") is True
    assert state.transport("malformed_json", "GET /a") is None


def test_fault_validates_its_arguments() -> None:
    with pytest.raises(ValueError):
        fault(None)
    with pytest.raises(ValueError):
        fault(3, times=-1)
    with pytest.raises(TypeError):
        fault(3, route=5)


def test_counters_start_at_zero() -> None:
    assert DoubleState().counters == {
        "experience_calls": 0,
        "whoami_calls": 0,
        "listings_in_flight": 0,
        "listings_peak": 0,
        "packs_issued": 0,
        "rate_limited": 0,
        "connections": 0,
        "resets": 0,
    }


def test_repr_shows_counts_never_secrets() -> None:
    state = DoubleState()
    state.accept_token = "canary-token-0451"
    state.whoami_caller = "user:canary"
    with state.lock:
        state.seen.bodies.append(b'{"text":"canary content"}')
        state.seen.requests.append("POST /v1/experience")
    text = repr(state)
    assert "canary" not in text
    assert "requests=1" in text
    assert "events=0" in text


def test_helpers_count_requests_and_clear_seen() -> None:
    state = DoubleState()
    with state.lock:
        state.seen.requests.extend(["POST /memory/experience", "GET /memory/events?scope=a"])
        state.seen.writes.append({})
        state.seen.registrations.append({"path": "app:x"})
    assert state.count("POST /memory/experience") == 1
    assert state.count("GET /memory") == 1
    assert state.requests() == ["POST /memory/experience", "GET /memory/events?scope=a"]
    state.clear_seen()
    assert state.requests() == []
    assert state.seen.writes == []
    assert state.seen.registrations == []


def test_set_knobs_rejects_unknown_names() -> None:
    state = DoubleState()
    with pytest.raises(TypeError, match="nope"):
        state.set_knobs(nope=1)
    state.set_knobs(hide_listing_for=3, clock=lambda: 5.0)
    assert state.hide_listing_for == 3
    assert state.clock() == 5.0

"""The knob vocabulary of the doubles: defaults, the legacy profile, `FOREVER`, `fault()`.

doubles.md §3 (fidelity knobs and their legacy values) and §8 (fault knobs).
`DoubleState` (in `_state`) holds the values; this module says which names
exist, what they start as and which values each kind accepts.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple, Union

__all__ = [
    "ALLOWED_SCOPE_TYPES",
    "COUNT_KNOBS",
    "DEFAULTS",
    "FAILURE_KNOBS",
    "FOREVER",
    "KNOB_DEFAULTS",
    "KNOB_NAMES",
    "LEGACY_KNOBS",
    "LEGACY_PROFILE",
    "TRANSPORT_KNOBS",
    "Count",
    "Fault",
    "check_count",
    "check_failure",
    "fault",
]

#: The scope types the doubles accept by default (the ``allowed_scope_types`` knob).
ALLOWED_SCOPE_TYPES: FrozenSet[str] = frozenset(
    {
        "org",
        "dept",
        "team",
        "app",
        "user",
        "agent",
        "service",
        "ws",
        "project",
        "global",
        "system",
        "source",
    }
)


class _Forever:
    """The count that never runs out (a singleton; compare with `is`)."""

    _instance: Optional[_Forever] = None

    def __new__(cls) -> _Forever:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "FOREVER"

    def __reduce__(self) -> str:
        return "FOREVER"


FOREVER = _Forever()
"""A fault count that never runs out: `state.hide_listing_for = FOREVER`."""

Count = Union[int, _Forever]


class Fault:
    """A transport fault that fires on the next `times` matching responses.

    Build one with :func:`fault`. `remaining` counts down as matching responses
    consume it; a response matches when its request line starts with `route`
    (any response when `route` is None).
    """

    __slots__ = ("remaining", "route", "value")

    def __init__(self, value: Any, times: Count = 1, route: Optional[str] = None) -> None:
        if value is None:
            raise ValueError("a fault needs a value; assign None to the knob to turn it off")
        check_count("times", times)
        if route is not None and not isinstance(route, str):
            raise TypeError("route must be a request-line prefix such as 'GET /v1/events'")
        self.value = value
        self.remaining: Count = times
        self.route = route

    def __repr__(self) -> str:
        return f"fault({self.value!r}, times={self.remaining!r}, route={self.route!r})"


def fault(value: Any, *, times: Count = 1, route: Optional[str] = None) -> Fault:
    """Fire a transport knob on the next `times` responses to `route` (None: any)."""
    return Fault(value, times, route)


def check_count(name: str, value: Any) -> None:
    if value is FOREVER:
        return
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a count (an int >= 0) or FOREVER, got {value!r}")


def check_failure(name: str, value: Any) -> None:
    if value is None:
        return
    ok = (
        isinstance(value, (tuple, list))
        and len(value) in (2, 3)
        and isinstance(value[0], int)
        and not isinstance(value[0], bool)
        and isinstance(value[1], str)
        and (len(value) == 2 or isinstance(value[2], str))
    )
    if not ok:
        raise ValueError(f"{name} must be (status, code) or (status, code, message), got {value!r}")


# Knob name -> default. Wire-specific defaults are patched in DoubleState.__init__.
DEFAULTS: Dict[str, Any] = {
    # Fidelity knobs (doubles.md §3): on by default, legacy values in LEGACY_PROFILE.
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
    "rate_limit_requests": None,
    "rate_limit_window_seconds": 60.0,
    # Behaviour knobs (§8.2).
    "fail_all": None,
    "accept_token": None,
    "token_rejection_code": "INVALID_TOKEN_SIGNATURE",
    "whoami_caller": None,
    "whoami_fails": None,
    "whoami_answer": None,
    "refuse_attribution": None,
    "fail_registration": None,
    "hide_listing_for": 0,
    "rate_limit_events": 0,
    "state_change_events": 0,
    "rate_limit_experience": 0,
    "rate_limit_forget": 0,
    "apply_then_fail": 0,
    "claim_then_fail": 0,
    "fail_nth_experience": 0,
    "arm_after_write": None,
    "legacy_conflict_400": False,
    "recall_down": False,
    "expire_packs": 0,
    "refers_unlisted": False,
    "version_down": False,
    "refers_refused": False,
    "listing_delay_ms": 0,
    "request_delay_ms": 0,
    "padding_scopes": 0,
    "string_prefix_scopes": False,
    "erase_all_missing": False,
    "erase_all_answer": None,
    "scoped_erase_missing": False,
    "erasure_incomplete_for": 0,
    "scoped_erase_answer": None,
    "erasure_running_for": 0,
    "erasure_ends": None,
    "erasure_poll_omits_status": False,
    "erasure_poll_status": None,
    "erasure_post_omits_status": False,
    # Transport knobs (§8.3): a bare value (every response) or a fault(...).
    "drop_connection_after_bytes": None,
    "truncate_body": None,
    "slow_body_bytes_per_second": None,
    "oversize_body_bytes": None,
    "malformed_json": False,
    "gzip_body": False,
    "retry_after_seconds": None,
    "ratelimit_reset_seconds": None,
    "reset_after": None,
}

KNOB_NAMES: FrozenSet[str] = frozenset(DEFAULTS)

#: The public, read-only view of every knob and its default value.
KNOB_DEFAULTS: Mapping[str, Any] = MappingProxyType(DEFAULTS)
"""Every knob a `DoubleState` accepts."""

TRANSPORT_KNOBS: Tuple[str, ...] = (
    "drop_connection_after_bytes",
    "truncate_body",
    "slow_body_bytes_per_second",
    "oversize_body_bytes",
    "malformed_json",
    "gzip_body",
    "retry_after_seconds",
    "ratelimit_reset_seconds",
    "reset_after",
)

COUNT_KNOBS = frozenset(
    {
        "hide_listing_for",
        "rate_limit_events",
        "state_change_events",
        "rate_limit_experience",
        "rate_limit_forget",
        "apply_then_fail",
        "claim_then_fail",
        "expire_packs",
        "erasure_incomplete_for",
        "erasure_running_for",
    }
)
FAILURE_KNOBS = frozenset({"fail_all", "whoami_fails", "refuse_attribution", "fail_registration"})

LEGACY_PROFILE: Dict[str, Any] = {
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

#: The public, read-only view of the legacy profile (``legacy=True``).
LEGACY_KNOBS: Mapping[str, Any] = MappingProxyType(LEGACY_PROFILE)
"""The simpler behaviour of earlier doubles (doubles.md §3), set at once by `legacy=True`."""

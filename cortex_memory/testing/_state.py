"""`DoubleState`: the knobs, recordings, counters, lock and clock of one double.

A test changes knobs while the server runs, so every knob lives on one object
guarded by one re-entrant lock. Handlers hold the lock while they read or change
state and never while they sleep. Assigning a name that is not a knob raises
`AttributeError`: a misspelt knob must never silently do nothing.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Union

from cortex_memory.testing._log import EventLog

__all__ = [
    "ALLOWED_SCOPE_TYPES",
    "FOREVER",
    "KNOB_NAMES",
    "LEGACY_PROFILE",
    "TRANSPORT_KNOBS",
    "DoubleState",
    "Fault",
    "Seen",
    "fault",
]

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
        _check_count("times", times)
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


def _check_count(name: str, value: Any) -> None:
    if value is FOREVER:
        return
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a count (an int >= 0) or FOREVER, got {value!r}")


def _check_failure(name: str, value: Any) -> None:
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
_DEFAULTS: Dict[str, Any] = {
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

KNOB_NAMES: FrozenSet[str] = frozenset(_DEFAULTS)
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

_COUNT_KNOBS = frozenset(
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
_FAILURE_KNOBS = frozenset({"fail_all", "whoami_fails", "refuse_attribution", "fail_registration"})

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
"""The simpler behaviour of earlier doubles (doubles.md §3), set at once by `legacy=True`."""

_SETTABLE = KNOB_NAMES | {"clock"}
_COUNTER_NAMES = (
    "experience_calls",
    "whoami_calls",
    "listings_in_flight",
    "listings_peak",
    "packs_issued",
    "rate_limited",
    "connections",
    "resets",
)


class Seen:
    """The recordings of one double (doubles.md §2.3), plain lists read by tests."""

    __slots__ = (
        "actors",
        "answers",
        "auth",
        "bodies",
        "builds",
        "erasures",
        "forgets",
        "headers",
        "idempotency",
        "recalls",
        "registrations",
        "requests",
        "writes",
    )

    def __init__(self) -> None:
        self.requests: List[str] = []
        self.auth: List[str] = []
        self.actors: List[Optional[str]] = []
        self.headers: List[Dict[str, str]] = []
        self.bodies: List[bytes] = []
        self.idempotency: List[Tuple[Optional[str], Optional[str]]] = []
        self.writes: List[Any] = []
        self.recalls: List[Any] = []
        self.answers: List[Any] = []
        self.forgets: List[Any] = []
        self.erasures: List[Any] = []
        self.builds: List[Any] = []
        self.registrations: List[Dict[str, Any]] = []

    def clear(self) -> None:
        """Empty every recording (the scope registry included)."""
        for name in self.__slots__:
            getattr(self, name).clear()

    def __repr__(self) -> str:
        return f"Seen(requests={len(self.requests)}, writes={len(self.writes)})"


class DoubleState:
    """Knobs, recordings (`seen`), `counters`, the event `log`, `lock` and `clock`.

    Every handler holds `lock` (an `RLock`) while it reads or changes state. A test
    assigns single knobs freely and takes the lock for compound edits.
    """

    # Knob annotations (values come from the defaults table in __init__).
    full_error_body: bool
    real_auth_codes: bool
    check_actor: bool
    whoami_tenant_id: Optional[str]
    public_admin: bool
    admin_detail: bool
    honour_wait: bool
    wait_timeout_seconds: float
    index_delay_seconds: float
    real_packs: bool
    pack_ttl_seconds: float
    answer_without_pack: bool
    context_block: bool
    bulk_max_items: Optional[int]
    max_labels: Optional[int]
    allowed_scope_types: Optional[FrozenSet[str]]
    size_counts_role_prefix: bool
    rate_limit_requests: Optional[int]
    rate_limit_window_seconds: float
    fail_all: Any
    accept_token: Optional[str]
    token_rejection_code: str
    whoami_caller: Optional[str]
    whoami_fails: Any
    whoami_answer: Any
    refuse_attribution: Any
    fail_registration: Any
    hide_listing_for: Count
    rate_limit_events: Count
    state_change_events: Count
    rate_limit_experience: Count
    rate_limit_forget: Count
    apply_then_fail: Count
    claim_then_fail: Count
    fail_nth_experience: int
    arm_after_write: Optional[Tuple[Count, Count]]
    legacy_conflict_400: bool
    recall_down: bool
    expire_packs: Count
    refers_unlisted: bool
    version_down: bool
    refers_refused: bool
    listing_delay_ms: int
    request_delay_ms: int
    padding_scopes: int
    string_prefix_scopes: bool
    erase_all_missing: bool
    erase_all_answer: Any
    scoped_erase_missing: bool
    erasure_incomplete_for: Count
    scoped_erase_answer: Any
    erasure_running_for: Count
    erasure_ends: Optional[str]
    erasure_poll_omits_status: bool
    erasure_poll_status: Optional[str]
    erasure_post_omits_status: bool
    drop_connection_after_bytes: Any
    truncate_body: Any
    slow_body_bytes_per_second: Any
    oversize_body_bytes: Any
    malformed_json: Any
    gzip_body: Any
    retry_after_seconds: Any
    ratelimit_reset_seconds: Any
    reset_after: Any

    clock: Callable[[], float]

    def __init__(self, wire: str = "direct") -> None:
        if wire not in ("direct", "hosted"):
            raise ValueError("wire must be 'direct' or 'hosted'")
        lock = threading.RLock()
        object.__setattr__(self, "wire", wire)
        object.__setattr__(self, "lock", lock)
        object.__setattr__(self, "seen", Seen())
        object.__setattr__(self, "counters", dict.fromkeys(_COUNTER_NAMES, 0))
        object.__setattr__(self, "log", EventLog(lock))
        object.__setattr__(self, "_request_number", 0)
        object.__setattr__(self, "_windows", {})
        for name, value in _DEFAULTS.items():
            object.__setattr__(self, name, value)
        if wire == "hosted":
            # The hosted backend's rate limiter: 300 requests a minute per token.
            object.__setattr__(self, "rate_limit_requests", 300)
        object.__setattr__(self, "clock", time.monotonic)

    # The attributes set once in __init__ (declared for type checkers).
    wire: str
    lock: threading.RLock
    seen: Seen
    counters: Dict[str, int]
    log: EventLog
    _request_number: int
    _windows: Dict[str, List[float]]

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _SETTABLE:
            raise AttributeError(f"{name!r} is not a knob of DoubleState")
        if name in _COUNT_KNOBS:
            _check_count(name, value)
        elif name in _FAILURE_KNOBS:
            _check_failure(name, value)
        elif name == "arm_after_write" and value is not None:
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ValueError("arm_after_write must be (rate_limit_events, hide_listing_for)")
            _check_count("arm_after_write[0]", value[0])
            _check_count("arm_after_write[1]", value[1])
            value = (value[0], value[1])
        elif name == "allowed_scope_types" and value is not None:
            value = frozenset(value)
        elif name == "clock" and not callable(value):
            raise TypeError("clock must be a zero-argument callable returning seconds")
        with self.lock:
            object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{name!r} cannot be deleted; assign its default instead")

    def __repr__(self) -> str:
        with self.lock:
            return (
                f"DoubleState(wire={self.wire!r}, events={self.event_count()}, "
                f"requests={len(self.seen.requests)}, writes={len(self.seen.writes)}, "
                f"packs={len(self.log.packs)})"
            )

    # -- profiles and knobs ---------------------------------------------------------------

    def apply_legacy_profile(self) -> None:
        """Set every fidelity knob to its legacy value (doubles.md §3)."""
        with self.lock:
            for name, value in LEGACY_PROFILE.items():
                setattr(self, name, value)

    def set_knobs(self, **knobs: Any) -> None:
        """Set several knobs at once, under the lock; an unknown name is `TypeError`."""
        unknown = sorted(set(knobs) - _SETTABLE)
        if unknown:
            raise TypeError(f"unknown knob(s): {', '.join(unknown)}")
        with self.lock:
            for name, value in knobs.items():
                setattr(self, name, value)

    def take_one(self, name: str) -> bool:
        """The counter idiom: if knob `name` is above 0, decrement it and return True.

        `FOREVER` fires without running out; 0 is off.
        """
        with self.lock:
            value = getattr(self, name)
            if value is FOREVER:
                return True
            if isinstance(value, int) and value > 0:
                object.__setattr__(self, name, value - 1)
                return True
            return False

    def transport(
        self, name: str, request_line: str, applies: Optional[Callable[[Any], bool]] = None
    ) -> Any:
        """Resolve transport knob `name` for one response, consuming a matching fault.

        Returns the knob's value when it fires, else None. A bare value fires
        on every response `applies` accepts; a `Fault` only on the next
        `remaining` responses whose request line starts with its route.
        """
        with self.lock:
            knob = getattr(self, name)
            if knob is None or knob is False:
                return None
            if not isinstance(knob, Fault):
                return knob if _applies(applies, knob) else None
            if knob.route is not None and not request_line.startswith(knob.route):
                return None
            remaining = knob.remaining
            if remaining is not FOREVER and (not isinstance(remaining, int) or remaining <= 0):
                return None
            if not _applies(applies, knob.value):
                return None
            if knob.remaining is not FOREVER and isinstance(knob.remaining, int):
                knob.remaining -= 1
            return knob.value

    # -- recordings and helpers -----------------------------------------------------------

    def count(self, prefix: str) -> int:
        """How many recorded request lines start with `prefix`."""
        with self.lock:
            return sum(1 for line in self.seen.requests if line.startswith(prefix))

    def requests(self) -> List[str]:
        """Every recorded request line, in order (a copy)."""
        with self.lock:
            return list(self.seen.requests)

    def event_count(self) -> int:
        """Events held now (forgotten and erased excluded, indexed or not)."""
        with self.lock:
            return len(self.log.events)

    def clear_seen(self) -> None:
        """Empty every recording."""
        with self.lock:
            self.seen.clear()

    def bump(self, counter: str, by: int = 1) -> int:
        """Add `by` to a counter under the lock and return the new value."""
        with self.lock:
            self.counters[counter] = self.counters.get(counter, 0) + by
            return self.counters[counter]

    def next_request_number(self) -> int:
        """Number one received request (the `req_<n>` of Direct failure bodies)."""
        with self.lock:
            number = self._request_number + 1
            object.__setattr__(self, "_request_number", number)
            return number

    def admit(self, token: str) -> bool:
        """The sliding rate window per token: admit and record, or refuse (§5.1 step 6)."""
        with self.lock:
            limit = self.rate_limit_requests
            if limit is None:
                return True
            now = self.clock()
            window = self.rate_limit_window_seconds
            stamps = [t for t in self._windows.get(token, []) if now - t < window]
            if len(stamps) >= limit:
                # A refused request is not added, so the window drains.
                self._windows[token] = stamps
                return False
            stamps.append(now)
            self._windows[token] = stamps
            return True


def _applies(applies: Optional[Callable[[Any], bool]], value: Any) -> bool:
    if value is None or value is False:
        return False
    return True if applies is None else bool(applies(value))

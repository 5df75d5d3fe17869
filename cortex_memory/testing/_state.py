"""`DoubleState`: the knobs, recordings, counters, lock and clock of one double.

A test changes knobs while the server runs, so every knob lives on one object
guarded by one re-entrant lock. Handlers hold the lock while they read or change
state and never while they sleep. Assigning a name that is not a knob raises
`AttributeError`: a misspelt knob must never silently do nothing.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

from cortex_memory.testing._knobs import (
    COUNT_KNOBS,
    DEFAULTS,
    FAILURE_KNOBS,
    FOREVER,
    KNOB_NAMES,
    LEGACY_PROFILE,
    Count,
    Fault,
    check_count,
    check_failure,
)
from cortex_memory.testing._log import EventLog

__all__ = ["DoubleState", "Seen"]

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
        for name, value in DEFAULTS.items():
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
        if name in COUNT_KNOBS:
            check_count(name, value)
        elif name in FAILURE_KNOBS:
            check_failure(name, value)
        elif name == "arm_after_write" and value is not None:
            if not isinstance(value, (tuple, list)) or len(value) != 2:
                raise ValueError("arm_after_write must be (rate_limit_events, hide_listing_for)")
            check_count("arm_after_write[0]", value[0])
            check_count("arm_after_write[1]", value[1])
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

    def record(self, into: List[Any], body: Any) -> Any:
        """Append `body` to `into` (one of `seen`'s lists) under the lock; return it."""
        with self.lock:
            into.append(body)
        return body

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

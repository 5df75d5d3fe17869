"""The fault matrix's knob cases: settings, the routes they fire on, the allowed outcomes.

Behaviour knobs (doubles.md §8.2), the fidelity knobs of §3 at their legacy or a
stress value, and the transport knobs of §8.3, both on every response and aimed
at one route. Knobs that act only on routes no operation of this release sends
are listed in :data:`UNREACHABLE` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Type

from cortex_memory import (
    ConflictError,
    EngineError,
    Error,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
)
from cortex_memory.cortex.transport import SUCCESS_CAP
from cortex_memory.testing import FOREVER, fault

from ._ops import ANY, BOTH, GATED, HOSTED

__all__ = ["CASES", "UNREACHABLE", "Case", "knobs_named"]

# -- knob cases ------------------------------------------------------------------------------

Settings = Callable[[Any, Optional[str]], Dict[str, Any]]
ErrorTypes = Tuple[Type[Error], ...]


@dataclass(frozen=True)
class Case:
    """Knob settings, where they can fire, and what an operation may then do.

    ``errors``: the documented errors a call may raise (``hosted_errors``
    overrides them on that wire). ``transparent``: the call must succeed with
    the unfaulted result. Otherwise a successful call must give the unfaulted
    result (``exact``) or a part of it (the knob hides data the server holds).
    ``per_route``: the settings aim a transport fault at one route, and the
    matrix has one cell per route the operation uses. ``succeeds``: the wires on
    which the engine's own retries or recovery must absorb the fault (the call
    must then succeed); for aimed faults ``retried`` says the same per route.
    """

    label: str
    settings: Settings
    routes: FrozenSet[str]
    wires: FrozenSet[str] = BOTH
    errors: ErrorTypes = ()
    hosted_errors: Optional[ErrorTypes] = None
    transparent: bool = False
    exact: bool = True
    per_route: bool = False
    succeeds: FrozenSet[str] = frozenset()
    retried: bool = False

    def allowed(self, wire: str) -> ErrorTypes:
        """The errors a call may raise on ``wire``."""
        if wire == "hosted" and self.hosted_errors is not None:
            return self.hosted_errors
        return self.errors


def on(*routes: str) -> FrozenSet[str]:
    """The logical routes a case can fire on."""
    return frozenset(routes)


def knobs(**values: Any) -> Settings:
    """Fixed settings (values are never mutable faults)."""
    return lambda state, route: dict(values)


def aimed(name: str, value: Any, **extra: Any) -> Settings:
    """A transport fault on the next response of the cell's route (a fresh ``fault`` each time)."""

    def settings(state: Any, route: Optional[str]) -> Dict[str, Any]:
        out = dict(extra)
        out[name] = fault(value, times=1, route=route)
        return out

    return settings


U: ErrorTypes = (UnavailableError,)
E: ErrorTypes = (EngineError,)

_STATUS = {401: UnauthorizedError, 402: EngineError, 404: NotFoundError, 409: ConflictError}


def _status_class(status: int, code: str, hosted: bool) -> Type[Error]:
    if hosted and status == 400 and code == "CONFLICT":
        return ConflictError
    if status in _STATUS:
        return _STATUS[status]
    if status in (400, 413, 422):
        return InvalidRequestError
    if status in (408, 429, 500, 502, 503, 504):
        return UnavailableError
    return EngineError


_FAILURES = (
    (503, "UNAVAILABLE"),
    (500, "INTERNAL"),
    (429, "RATE_LIMITED"),
    (401, "UNAUTHORIZED"),
    (402, "USER_INSUFFICIENT_CREDITS"),
    (404, "NOT_FOUND"),
    (409, "CONFLICT"),
    (400, "CONFLICT"),
    (422, "VALIDATION_ERROR"),
    (418, "TEAPOT"),
)


def _behaviour_cases() -> List[Case]:
    cases = [
        Case(
            f"fail_all={status}:{code}",
            knobs(fail_all=(status, code)),
            GATED,
            errors=(_status_class(status, code, False),),
            hosted_errors=(_status_class(status, code, True),),
            # A 404 from the scopes listing means "no such route": nothing is held.
            exact=status != 404,
        )
        for status, code in _FAILURES
    ]
    cases += [
        Case(
            "accept_token",
            knobs(accept_token="someone-else"),
            GATED,
            errors=(UnauthorizedError,),
        ),
        Case(
            "token_rejection_code",
            knobs(accept_token="someone-else", token_rejection_code="REVOKED_TOKEN"),
            GATED,
            wires=frozenset({"direct"}),
            errors=(UnauthorizedError,),
        ),
        Case(
            "whoami_caller",
            knobs(whoami_caller="user:local"),
            ANY,
            wires=frozenset({"direct"}),
            transparent=True,
        ),
        Case(
            "whoami_fails+caller",
            knobs(whoami_caller="user:local", whoami_fails=(503, "UNAVAILABLE")),
            ANY,
            wires=frozenset({"direct"}),
            errors=(UnauthorizedError,),
        ),
        Case(
            "whoami_fails",
            knobs(whoami_fails=(500, "INTERNAL")),
            frozenset({"whoami"}),
            wires=frozenset({"direct"}),
            transparent=True,
        ),
        Case(
            "whoami_answer=unusable",
            knobs(whoami_caller="user:local", whoami_answer={"caller": 5}),
            ANY,
            wires=frozenset({"direct"}),
            errors=(UnauthorizedError,),
        ),
        Case(
            "whoami_answer=padded",
            knobs(whoami_caller="user:local", whoami_answer={"caller": " user:local "}),
            ANY,
            wires=frozenset({"direct"}),
            transparent=True,
        ),
        # The engine sends no attribution in this release, so the refusal never fires.
        Case(
            "refuse_attribution",
            knobs(refuse_attribution=(403, "POLICY_DENIED")),
            frozenset({"write"}),
            transparent=True,
        ),
    ]
    for count in (1, 4, FOREVER):
        cases.append(
            Case(
                f"hide_listing_for={count!r}",
                knobs(hide_listing_for=count),
                frozenset({"events"}),
                errors=U,
                exact=False,
                succeeds=BOTH if count in (1, 4) else frozenset(),
            )
        )
    for count in (1, 3, FOREVER):
        cases.append(
            Case(
                f"rate_limit_events={count!r}",
                knobs(rate_limit_events=count),
                frozenset({"events"}),
                errors=U,
                succeeds=BOTH if count == 1 else frozenset(),
            )
        )
    cases += [
        Case(
            f"state_change_events={n}",
            knobs(state_change_events=n),
            frozenset({"events"}),
            wires=frozenset({"direct"}),
            errors=U,
            succeeds=BOTH if n == 5 else frozenset(),
        )
        for n in (5, 6)
    ]
    cases += [
        Case(
            f"rate_limit_experience={n}",
            knobs(rate_limit_experience=n),
            on("write"),
            errors=U,
            succeeds=HOSTED if n == 1 else frozenset(),
        )
        for n in (1, 3)
    ]
    cases += [
        Case(
            f"rate_limit_forget={n}",
            knobs(rate_limit_forget=n),
            on("forget"),
            errors=U,
            succeeds=HOSTED if n == 1 else frozenset(),
        )
        for n in (1, 3)
    ]
    cases += [
        Case("apply_then_fail", knobs(apply_then_fail=1), on("write"), errors=U, succeeds=HOSTED),
        Case("claim_then_fail", knobs(claim_then_fail=1), on("write"), errors=U),
        Case(
            "apply_then_fail+legacy_conflict_400",
            knobs(apply_then_fail=1, legacy_conflict_400=True),
            on("write"),
            wires=HOSTED,
            errors=U,
            succeeds=HOSTED,
        ),
    ]
    for ahead in (1, 2):
        cases.append(
            Case(
                f"fail_nth_experience=+{ahead}",
                lambda state, route, ahead=ahead: {
                    "fail_nth_experience": state.counters["experience_calls"] + ahead
                },
                on("write"),
                errors=(InvalidRequestError,),
            )
        )
    for armed in ((3, 2), (4, 0), (0, 3), (FOREVER, 0), (0, FOREVER)):
        cases.append(
            Case(
                f"arm_after_write={armed!r}",
                knobs(arm_after_write=armed),
                on("write"),
                errors=U,
                exact=False,
            )
        )
    cases += [
        Case("recall_down", knobs(recall_down=True), on("recall"), errors=U),
        Case(
            "expire_packs=1",
            knobs(expire_packs=1),
            on("answer"),
            errors=(NotFoundError,),
            succeeds=BOTH,
        ),
        Case("expire_packs=3", knobs(expire_packs=3), on("answer"), errors=(NotFoundError,)),
        # The engine sends no date hint in this release, so the refusal never fires.
        Case("refers_refused", knobs(refers_refused=True), on("recall"), transparent=True),
        Case("listing_delay_ms", knobs(listing_delay_ms=40), on("events"), transparent=True),
        Case("request_delay_ms", knobs(request_delay_ms=20), GATED, transparent=True),
        Case("padding_scopes", knobs(padding_scopes=40), on("scopes"), transparent=True),
        Case(
            "string_prefix_scopes", knobs(string_prefix_scopes=True), on("scopes"), transparent=True
        ),
    ]
    return cases


def _fidelity_cases() -> List[Case]:
    direct = frozenset({"direct"})
    hosted = frozenset({"hosted"})
    return [
        Case(
            "full_error_body=False",
            knobs(full_error_body=False, state_change_events=6),
            on("events"),
            wires=direct,
            errors=U,
        ),
        Case(
            "real_auth_codes=False",
            knobs(real_auth_codes=False, accept_token="someone-else"),
            GATED,
            wires=direct,
            errors=(UnauthorizedError,),
        ),
        Case(
            "check_actor=False",
            knobs(check_actor=False, whoami_caller="user:local"),
            ANY,
            wires=direct,
            transparent=True,
        ),
        Case(
            "whoami_tenant_id=None",
            knobs(whoami_tenant_id=None, whoami_caller="user:local"),
            ANY,
            wires=direct,
            transparent=True,
        ),
        Case(
            "honour_wait=False",
            knobs(honour_wait=False),
            on("write"),
            wires=direct,
            transparent=True,
        ),
        Case(
            "wait_timeout_seconds=0",
            knobs(wait_timeout_seconds=0.0, index_delay_seconds=0.05),
            on("write"),
            wires=direct,
            transparent=True,
        ),
        Case("index_delay_seconds", knobs(index_delay_seconds=0.05), on("write"), transparent=True),
        Case("real_packs=False", knobs(real_packs=False), on("recall", "answer"), transparent=True),
        Case(
            "pack_ttl_seconds=0", knobs(pack_ttl_seconds=0.0), on("answer"), errors=(NotFoundError,)
        ),
        Case(
            "answer_without_pack=False",
            knobs(answer_without_pack=False),
            on("answer"),
            transparent=True,
        ),
        Case("context_block=False", knobs(context_block=False), on("recall"), transparent=True),
        Case(
            "bulk_max_items=1",
            knobs(bulk_max_items=1),
            on("write"),
            wires=direct,
            errors=(InvalidRequestError,),
        ),
        Case("max_labels=1", knobs(max_labels=1), on("events"), errors=(InvalidRequestError,)),
        Case(
            "allowed_scope_types",
            knobs(allowed_scope_types=frozenset({"user"})),
            on("write"),
            errors=(InvalidRequestError,),
        ),
        Case(
            "size_counts_role_prefix=False",
            knobs(size_counts_role_prefix=False),
            on("write"),
            transparent=True,
        ),
        Case("rate_limit_requests=3", knobs(rate_limit_requests=3), GATED, wires=hosted, errors=U),
        Case(
            "rate_limit_window_seconds",
            knobs(rate_limit_requests=2, rate_limit_window_seconds=0.01),
            GATED,
            wires=hosted,
            errors=U,
        ),
    ]


_AIMED: Tuple[Tuple[str, Any, ErrorTypes, bool], ...] = (
    ("drop_connection_after_bytes", 5, U, False),
    ("truncate_body", 3, E, False),
    ("slow_body_bytes_per_second", 40, U, False),
    ("oversize_body_bytes", SUCCESS_CAP + 1, E, False),
    ("malformed_json", True, E, False),
    ("gzip_body", True, (), True),
    ("reset_after", "request", U, False),
    ("reset_after", "response", U, False),
)


def _transport_cases() -> List[Case]:
    cases = []
    for name, value, errors, transparent in _AIMED:
        cases.append(
            Case(
                f"{name}={value!r}@route",
                aimed(name, value),
                ANY,
                errors=errors,
                transparent=transparent,
                per_route=True,
                retried=errors == U,  # a transient fault: retried where the engine retries
            )
        )
        settings: Dict[str, Any] = {name: value}
        cases.append(
            Case(
                f"{name}={value!r}", knobs(**settings), ANY, errors=errors, transparent=transparent
            )
        )
    http_date = "Wed, 21 Oct 2015 07:28:00 GMT"
    cases += [
        Case(
            "retry_after_seconds@events",
            knobs(rate_limit_events=1, retry_after_seconds=1),
            on("events"),
            errors=U,
            succeeds=BOTH,
        ),
        Case(
            "retry_after_seconds=date+ratelimit_reset_seconds@events",
            knobs(rate_limit_events=1, retry_after_seconds=http_date, ratelimit_reset_seconds=1),
            on("events"),
            errors=U,
            succeeds=BOTH,
        ),
        Case(
            "retry_after_seconds@write",
            knobs(rate_limit_experience=1, retry_after_seconds=1),
            on("write"),
            errors=U,
            succeeds=HOSTED,
        ),
        Case(
            "ratelimit_reset_seconds@forget",
            knobs(rate_limit_forget=1, ratelimit_reset_seconds=" 7 "),
            on("forget"),
            errors=U,
            succeeds=HOSTED,
        ),
    ]
    return cases


CASES: Tuple[Case, ...] = tuple(_behaviour_cases() + _fidelity_cases() + _transport_cases())

UNREACHABLE: Dict[str, Tuple[str, Any]] = {
    # knob -> (why no operation of this release meets it, a value that would fire)
    "fail_registration": ("scope registration is Later (v3 layout)", (403, "POLICY_DENIED")),
    "public_admin": ("health proves the key on whoami; no operation sends the admin routes", False),
    "admin_detail": ("health proves the key on whoami; no operation sends the admin routes", False),
    "refers_unlisted": ("the version probe belongs to date hints (Later)", True),
    "version_down": ("the version probe belongs to date hints (Later)", True),
    "erase_all_missing": ("erase is Later: UnsupportedError, nothing sent", True),
    "erase_all_answer": ("erase is Later", {"erased": "no"}),
    "scoped_erase_missing": ("erase is Later", True),
    "erasure_incomplete_for": ("erase is Later", 10),
    "scoped_erase_answer": ("erase is Later", {"erasure_ids": "x"}),
    "erasure_running_for": ("erase is Later", 100000),
    "erasure_ends": ("erase is Later", "failed"),
    "erasure_poll_omits_status": ("erase is Later", True),
    "erasure_poll_status": ("erase is Later", "failed"),
    "erasure_post_omits_status": ("erase is Later", True),
}
"""Knobs that act only on routes no operation of this release sends."""


def knobs_named() -> FrozenSet[str]:
    """Every knob some case sets, plus the unreachable ones."""
    from cortex_memory.testing import DoubleState

    names = set(UNREACHABLE)
    for case in CASES:
        for wire in case.wires:
            names.update(case.settings(DoubleState(wire), "GET /x"))
    return frozenset(names)

"""The common gate, failure bodies, upstream mapping, scope grammar and scope types.

doubles.md §5: every route except whoami passes the gate in a fixed order; a
refusal becomes the Direct failure body or the hosted envelope; failures the log
produces reach hosted callers through the backend's upstream mapping.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Optional, Tuple, Union

from cortex_memory.testing._reply import NO_BODY, RATE_LIMIT, RAW, UPSTREAM, Refusal, Reply

if TYPE_CHECKING:
    from cortex_memory.testing._reply import Request
    from cortex_memory.testing._state import DoubleState

__all__ = [
    "RATE_LIMIT_MESSAGE",
    "check_bearer",
    "check_grammar",
    "check_scope_types",
    "direct_failure_body",
    "gate",
    "grammar_ok",
    "render",
    "upstream",
]

RATE_LIMIT_MESSAGE = "Rate limit exceeded. Please retry after a brief wait."
_NEVER_RETRIABLE = frozenset({"SYNTHESIZER_UNCONFIGURED", "STORAGE_UNWIRED", "ANSWER_UNAVAILABLE"})
_SEGMENT_HALF = re.compile(r"[A-Za-z0-9_-]+")
_MAX_SEGMENTS = 31


# -- scopes ---------------------------------------------------------------------------------


def grammar_ok(scope: Any) -> bool:
    """The hosted scope grammar (§5.5): at most 31 `type:id` segments of `[A-Za-z0-9_-]`."""
    if not isinstance(scope, str) or not scope:
        return False
    segments = scope.split("/")
    if len(segments) > _MAX_SEGMENTS:
        return False
    for segment in segments:
        kind, sep, ident = segment.partition(":")
        if not sep or not _SEGMENT_HALF.fullmatch(kind) or not _SEGMENT_HALF.fullmatch(ident):
            return False
    return True


def check_grammar(scope: Any) -> None:
    """Refuse a scope outside the hosted grammar with 400 `BAD_REQUEST` (enveloped)."""
    if not grammar_ok(scope):
        raise Refusal(400, "BAD_REQUEST")


def check_scope_types(scope: str, allowed: Optional[FrozenSet[str]]) -> None:
    """Refuse a segment type outside `allowed` with 422 `UNREGISTERED_SCOPE_TYPE` (§5.7)."""
    if allowed is None:
        return
    for segment in scope.split("/"):
        kind, sep, _ = segment.partition(":")
        if sep and kind not in allowed:
            raise Refusal(422, "UNREGISTERED_SCOPE_TYPE", kind=UPSTREAM)


# -- the gate -------------------------------------------------------------------------------


def record(state: DoubleState, request: Request) -> None:
    """Gate step 1: record the request line, credentials, headers and body."""
    seen = state.seen
    seen.requests.append(request.line)
    seen.auth.append(request.headers.get("authorization", ""))
    seen.actors.append(request.headers.get("x-cortex-actor"))
    seen.headers.append(dict(request.headers))
    seen.bodies.append(request.body)


def gate(state: DoubleState, request: Request, *, hosted: bool, public: bool = False) -> str:
    """Run the common gate (§5.1) and return the bearer token ("" on a public route).

    Raises `Refusal` at the first failing step.
    """
    with state.lock:
        record(state, request)
        token = ""
        if not (public and not hosted and state.public_admin):
            token = check_bearer(state, request, hosted=hosted)
            caller = state.whoami_caller
            checked = not hosted and caller is not None and state.check_actor
            if checked and request.headers.get("x-cortex-actor") != caller:
                raise Refusal(401, "ACTOR_MISMATCH")
            if not state.admit(token):
                raise Refusal(429, "RATE_LIMITED", kind=RATE_LIMIT)
        if state.fail_all is not None:
            raise Refusal.from_knob(state.fail_all)
        return token


def check_bearer(state: DoubleState, request: Request, *, hosted: bool) -> str:
    """Gate steps 3 and 4: the bearer token, or `Refusal` 401 (missing, or not `accept_token`).

    Whoami runs these steps too (outside the rest of the gate), as the real service
    checks the bearer of every route but its public admin ones.
    """
    header = request.headers.get("authorization", "")
    token = header[len("Bearer ") :] if header.startswith("Bearer ") else ""
    real_codes = not hosted and state.real_auth_codes
    if not token:
        raise Refusal(401, "MISSING_TOKEN" if real_codes else "UNAUTHORIZED")
    if state.accept_token is not None and token != state.accept_token:
        raise Refusal(401, state.token_rejection_code if real_codes else "UNAUTHORIZED")
    return token


# -- rendering ------------------------------------------------------------------------------


def upstream(status: int, legacy_conflict_400: bool) -> Tuple[int, str]:
    """The hosted backend's mapping of an engine status onto its own (§5.4)."""
    if status == 402:
        return 402, "USER_INSUFFICIENT_CREDITS"
    if status == 503:
        return 503, "UPSTREAM_UNAVAILABLE"
    if status in (401, 403):
        return 502, "UPSTREAM_UNAVAILABLE"
    if status == 404:
        return 404, "NOT_FOUND"
    if status == 409:
        return (400 if legacy_conflict_400 else 409), "CONFLICT"
    if status == 413:
        return 413, "PAYLOAD_TOO_LARGE"
    if 400 <= status < 500:
        return 400, "BAD_REQUEST"
    return 502, "UPSTREAM_UNAVAILABLE"


def direct_failure_body(
    state: DoubleState, status: int, code: str, message: Optional[str], number: int
) -> Dict[str, Any]:
    """The Direct failure body (§5.2), or `{error_code}` alone under the legacy profile."""
    if not state.full_error_body:
        return {"error_code": code}
    retriable = (status == 429 or status >= 500) and code not in _NEVER_RETRIABLE
    return {
        "error_code": code,
        "message": message or f"The request was refused with {code}.",
        "request_id": f"req_{number}",
        "retriable": retriable,
    }


def render(
    state: DoubleState, outcome: Union[Reply, Refusal], *, hosted: bool, number: int
) -> Tuple[int, Any]:
    """Turn a handler's outcome into `(status, body)`; `NO_BODY` means no bytes."""
    if isinstance(outcome, Reply):
        if hosted and not outcome.raw:
            return outcome.status, {"success": True, "data": outcome.body}
        return outcome.status, outcome.body
    refusal = outcome
    if refusal.kind == RAW:
        return refusal.status, (NO_BODY if refusal.body is None else refusal.body)
    if not hosted:
        code = "RATE_LIMITED" if refusal.kind == RATE_LIMIT else refusal.code
        body = direct_failure_body(state, refusal.status, code, refusal.message, number)
        return refusal.status, body
    if refusal.kind == RATE_LIMIT:
        return 429, {"error": {"message": RATE_LIMIT_MESSAGE, "type": "rate_limit_error"}}
    status, code, message = refusal.status, refusal.code, refusal.message
    if refusal.kind == UPSTREAM:
        status, code = upstream(status, state.legacy_conflict_400)
        message = None
    return status, {
        "success": False,
        "error": message if message is not None else f"failed: {code}",
        "errorCode": code,
    }

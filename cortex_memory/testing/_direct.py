"""The Direct double: CortexDB's own `/v1/*` API (doubles.md §6).

The routes shared with the hosted double live in `_writes` and `_reads`; the
Direct-only ones (whoami, admin, erasures, scope registration, beliefs) live here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Tuple
from urllib.parse import unquote

from cortex_memory.testing import _reads, _writes
from cortex_memory.testing._gate import check_bearer, check_scope_types, direct_failure_body
from cortex_memory.testing._reply import Refusal, Reply, Request
from cortex_memory.testing._routing import Route, RouteTable
from cortex_memory.testing._server import BaseDouble

if TYPE_CHECKING:
    from cortex_memory.testing._state import DoubleState

__all__ = ["VERSION", "DirectDouble", "erasure_poll"]

VERSION = "v0.10.5"
_VERSION_DETAIL = {
    "version": VERSION,
    "crate_version": "0.10.5",
    "git_sha": "0000000",
    "built_at": "2026-09-01T00:00:00Z",
}


# -- whoami (outside the gate) and admin ----------------------------------------------------


def whoami(double: BaseDouble, request: Request) -> Reply:
    """`GET /v1/auth/whoami`: outside the gate (not recorded, no `fail_all`, no actor check),
    counted in `whoami_calls`, but the bearer is checked first, as on every route of the
    real service: a missing or rejected bearer is 401 (gate steps 3 and 4).
    """
    state = double.state
    with state.lock:
        state.bump("whoami_calls")
        try:
            check_bearer(state, request, hosted=False)
        except Refusal as refusal:
            return _failure_reply(state, refusal, request.number)
        if state.whoami_fails is not None:
            failure = Refusal.from_knob(state.whoami_fails)
            return _failure_reply(state, failure, request.number)
        if state.whoami_answer is not None:
            return Reply(200, state.whoami_answer)
        caller = state.whoami_caller
        if caller is None:
            # A server from before the actor model has no whoami route.
            return _failure_reply(state, Refusal(404, "NOT_FOUND"), request.number)
        if state.whoami_tenant_id is None:
            return Reply(200, {"caller": caller})
        return Reply(200, {"caller": caller, "tenant_id": state.whoami_tenant_id})


def _failure_reply(state: DoubleState, failure: Refusal, number: int) -> Reply:
    body = direct_failure_body(state, failure.status, failure.code, failure.message, number)
    return Reply(failure.status, body)


def health(double: BaseDouble, request: Request) -> Reply:
    """`GET /v1/admin/health` (public by default)."""
    if double.state.admin_detail:
        return Reply(200, {"status": "healthy", "version": VERSION})
    return Reply(200, {"status": "healthy"})


def version(double: BaseDouble, request: Request) -> Reply:
    """`GET /v1/admin/version` (public by default), with the capability list."""
    state = double.state
    with state.lock:
        if state.version_down:
            raise Refusal(500, "INTERNAL")
        capabilities = (
            ["temporal_lenient_v1"]
            if state.refers_unlisted
            else ["refers_to_v1", "temporal_lenient_v1"]
        )
        if state.admin_detail:
            return Reply(200, dict(_VERSION_DETAIL, capabilities=capabilities))
        return Reply(200, {"version": VERSION, "capabilities": capabilities})


# -- erasures (§6.6) ------------------------------------------------------------------------


def _erasure_status(state: DoubleState) -> str:
    if state.take_one("erasure_running_for"):
        return "running"
    return state.erasure_ends if state.erasure_ends is not None else "completed"


def erasures(double: BaseDouble, request: Request) -> Reply:
    """`POST /v1/erasures`: applied at once; the status may still say `running`."""
    state = double.state
    body = request.json
    with state.lock:
        state.seen.erasures.append(body)
        erasure_id = state.log.erase(
            body.get("scope"), body.get("confirm_all"), selector="selector" in body
        )
        answer: Dict[str, Any] = {"erasure_id": erasure_id, "status": "completed"}
        if state.erasure_post_omits_status:
            del answer["status"]
        else:
            answer["status"] = _erasure_status(state)
    return Reply(202, answer)


def erasure_poll(double: BaseDouble, request: Request) -> Reply:
    """`GET /v1/erasures/{id}` (and the hosted passthrough): any id is accepted."""
    state = double.state
    erasure_id = unquote(request.path.rsplit("/", 1)[-1])
    with state.lock:
        if state.erasure_poll_status is not None:
            status = state.erasure_poll_status
        else:
            status = _erasure_status(state)
        answer: Dict[str, Any] = {"erasure_id": erasure_id, "status": status}
        if state.erasure_poll_omits_status:
            del answer["status"]
    return Reply(200, answer, raw=True)


# -- scope registration --------------------------------------------------------------------


def _with_text(request: Request, key: str, code: str) -> Tuple[Dict[str, Any], str]:
    """The JSON body and its non-empty string at `key`; anything else is a 422 `code`."""
    body: Dict[str, Any] = request.json
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise Refusal(422, code)
    return body, value


def _registered(state: DoubleState, path: Any) -> int:
    for index, record in enumerate(state.seen.registrations):
        if record.get("path") == path:
            return index
    return -1


def _named_record(state: DoubleState, request: Request) -> int:
    """The index of the record the query's `path` names (the lock held); else a 404."""
    index = _registered(state, request.params.get("path"))
    if index < 0:
        raise Refusal(404, "NOT_FOUND")
    return index


def register_scope(double: BaseDouble, request: Request) -> Reply:
    """`POST /v1/scopes`: registers a path once; a second attempt is 409."""
    state = double.state
    body, path = _with_text(request, "path", "INVALID_BODY")
    with state.lock:
        check_scope_types(path, state.allowed_scope_types)
        if state.fail_registration is not None:
            raise Refusal.from_knob(state.fail_registration)
        if _registered(state, path) >= 0:
            raise Refusal(409, "SCOPE_REGISTRATION_EXISTS")
        state.seen.registrations.append(body)
    return Reply(201, body)


def scope_record(double: BaseDouble, request: Request) -> Reply:
    """`GET /v1/scopes?path=`: the stored registration record."""
    state = double.state
    with state.lock:
        index = _named_record(state, request)
        return Reply(200, state.seen.registrations[index])


def scope_members(double: BaseDouble, request: Request) -> Reply:
    """`PUT /v1/scopes/members?path=`: replace the record's members."""
    state = double.state
    with state.lock:
        index = _named_record(state, request)
        record = dict(state.seen.registrations[index], members=request.json.get("members"))
        state.seen.registrations[index] = record
        return Reply(200, record)


# -- beliefs (§6.9) ------------------------------------------------------------------------


def build_beliefs(double: BaseDouble, request: Request) -> Reply:
    """`POST /v1/beliefs/build`: synchronous, one belief per indexed event without one."""
    state = double.state
    body, scope = _with_text(request, "scope", "VALIDATION_ERROR")
    with state.lock:
        state.seen.builds.append(body)
        built, scanned = state.log.build_beliefs(scope, state.clock())
    return Reply(
        200, {"built": built, "items": [], "facts_scanned": scanned, "events_scanned": scanned}
    )


def beliefs(double: BaseDouble, request: Request) -> Reply:
    """`GET /v1/beliefs?scope=`: the beliefs of exactly that scope, newest first."""
    items = double.state.log.beliefs_of(request.params.get("scope", ""))
    return Reply(200, {"items": items, "has_more": False})


_JSON = {"json_body": True}

DIRECT_ROUTES = RouteTable(
    {
        "/v1/auth/whoami": {"GET": Route(whoami, gated=False)},
        "/v1/experience": {"POST": Route(_writes.experience, **_JSON)},
        "/v1/experience/bulk": {"POST": Route(_writes.bulk, **_JSON)},
        "/v1/events": {"GET": Route(_reads.events)},
        "/v1/recall": {"POST": Route(_reads.recall, **_JSON)},
        "/v1/forget": {"POST": Route(_writes.forget, **_JSON)},
        "/v1/erasures": {"POST": Route(erasures, **_JSON)},
        "/v1/answer": {"POST": Route(_reads.answer, **_JSON)},
        "/v1/admin/health": {"GET": Route(health, public=True)},
        "/v1/admin/version": {"GET": Route(version, public=True)},
        "/v1/scopes/list": {"GET": Route(_reads.scopes)},
        "/v1/scopes": {
            "POST": Route(register_scope, **_JSON),
            "GET": Route(scope_record),
        },
        "/v1/scopes/members": {"PUT": Route(scope_members, **_JSON)},
        "/v1/beliefs/build": {"POST": Route(build_beliefs, **_JSON)},
        "/v1/beliefs": {"GET": Route(beliefs)},
    },
    [(r"/v1/erasures/[^/]+", {"GET": Route(erasure_poll)})],
)


class DirectDouble(BaseDouble):
    """A loopback double of CortexDB Direct (`/v1/*`) on `127.0.0.1`.

    `DirectDouble(*, legacy=False, **knobs)`: `legacy=True` applies the legacy
    profile first, then each keyword sets a knob (an unknown one is `TypeError`).
    Use it as a context manager, or call `start()` and `close()`.
    """

    wire = "direct"
    routes = DIRECT_ROUTES

"""The hosted double: the TinyHumans backend's `/memory/*` API (doubles.md §7).

The same handlers as Direct (enveloped, with the scope grammar, claims and the
strict answer schema switched on by `double.hosted`) plus the hosted-only
erase routes. No bulk, admin, beliefs, whoami or registration route: those
paths get the bare 404.
"""

from __future__ import annotations

from typing import Any, Dict, List

from cortex_memory.testing import _reads, _writes
from cortex_memory.testing._direct import erasure_poll
from cortex_memory.testing._gate import check_grammar
from cortex_memory.testing._log import at_or_below
from cortex_memory.testing._reply import RAW, Refusal, Reply, Request
from cortex_memory.testing._routing import Route, RouteTable, framework_not_found
from cortex_memory.testing._server import BaseDouble

__all__ = ["HostedDouble"]

_ERASE_KEYS = ("scope", "audit_note")


def erase_all(double: BaseDouble, request: Request) -> Reply:
    """`DELETE /memory`: every scope erased deepest first, every pack dropped."""
    state = double.state
    with state.lock:
        if state.erase_all_missing:
            raise framework_not_found()
        state.seen.erasures.append({"all": True})
        erased = state.log.erase_everything()
        state.log.drop_packs()
        data: Any = {"erased": True, "scopes": erased}
        if state.erase_all_answer is not None:
            data = state.erase_all_answer
    return Reply(200, data)


def scoped_erasure(double: BaseDouble, request: Request) -> Reply:
    """`POST /memory/v1/erasures`: a passthrough whose own bodies are never enveloped."""
    state = double.state
    with state.lock:
        if state.scoped_erase_missing:
            raise framework_not_found()
    body: Dict[str, Any] = request.json
    for key in body:
        if key not in _ERASE_KEYS:
            raise Refusal(400, kind=RAW, body={"error_code": "UNKNOWN_FIELD", "message": key})
    scope = body.get("scope")
    if not isinstance(scope, str):
        raise Refusal(400, kind=RAW, body={"error_code": "INVALID_SCOPE"})
    if scope in ("", "/"):
        raise Refusal(422, kind=RAW, body={"error_code": "ROOT_ERASURE_REFUSED"})
    check_grammar(scope)
    with state.lock:
        state.seen.erasures.append(body)
        if state.take_one("erasure_incomplete_for"):
            raise Refusal(
                502,
                kind=RAW,
                body={"erased": False, "error_code": "ERASURE_INCOMPLETE", "retriable": True},
            )
        receipts: List[str] = []
        if any(at_or_below(held, scope) for held in state.log.scopes_holding_events()):
            receipts.append(state.log.erase(scope, True))
        state.log.drop_packs()
        answer: Any = {
            "erased": True,
            "scope": scope,
            "scopes": len(receipts),
            "erasure_ids": receipts,
        }
        if state.scoped_erase_answer is not None:
            answer = state.scoped_erase_answer
    return Reply(200, answer, raw=True)


_JSON = {"json_body": True}

HOSTED_ROUTES = RouteTable(
    {
        "/memory/experience": {"POST": Route(_writes.experience, **_JSON)},
        "/memory/events": {"GET": Route(_reads.events)},
        "/memory/recall": {"POST": Route(_reads.recall, **_JSON)},
        "/memory/forget": {"POST": Route(_writes.forget, **_JSON)},
        "/memory/answer": {"POST": Route(_reads.answer, **_JSON)},
        "/memory/scopes": {"GET": Route(_reads.scopes)},
        "/memory": {"DELETE": Route(erase_all)},
        "/memory/v1/erasures": {"POST": Route(scoped_erasure, **_JSON)},
    },
    [(r"/memory/v1/erasures/[^/]+", {"GET": Route(erasure_poll)})],
)


class HostedDouble(BaseDouble):
    """A loopback double of the TinyHumans hosted memory API (`/memory/*`) on `127.0.0.1`.

    `HostedDouble(*, legacy=False, **knobs)`: `legacy=True` applies the legacy
    profile first, then each keyword sets a knob (an unknown one is `TypeError`).
    The rate window is real by default (300 requests a minute per token).
    """

    wire = "hosted"
    routes = HOSTED_ROUTES

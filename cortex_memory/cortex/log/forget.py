"""Forgetting events by id (engine.md §8.5).

Each request names at most 100 event ids of one scope with ``cascade:
"redact_events"``: CortexDB's default cascade (``derived_only``) keeps the events
and removes only what was derived from them, so a forget without it would report
success and remove nothing. The selector is never empty and never
``confirm_all``. Direct sends each request once; hosted retries a transient
failure (each attempt under a new claim) and treats a 404 on a retry as done,
since an earlier attempt must have applied: the policy
:data:`~cortex_memory.cortex.timing.HOSTED_FORGETS`.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence

from cortex_memory.cortex.log.read import Log
from cortex_memory.cortex.log.sizes import FORGET_BATCH
from cortex_memory.cortex.timing import HOSTED_FORGETS, Deadline
from cortex_memory.cortex.wire import Route

__all__ = ["AUDIT_NOTE", "forget_events", "forget_body"]

AUDIT_NOTE = "tinymemory: forget"
"""The audit note every forget carries."""


def forget_body(scope: str, ids: Sequence[str]) -> Dict[str, Any]:
    """The forget request removing ``ids`` (at most 100) from ``scope``."""
    return {
        "scope": scope,
        "layers": ["events"],
        "selector": {"memory_ids": list(ids)},
        "cascade": "redact_events",
        "audit_note": AUDIT_NOTE,
    }


def forget_events(log: Log, scope: str, ids: Sequence[str], deadline: Deadline) -> None:
    """Forget the events ``ids`` of ``scope``, 100 per request; no ids sends nothing."""
    for start in range(0, len(ids), FORGET_BATCH):
        _forget_batch(log, forget_body(scope, ids[start : start + FORGET_BATCH]), deadline)


def _forget_batch(log: Log, body: Dict[str, Any], deadline: Deadline) -> None:
    client = log.client
    route = log.route(Route.FORGET)
    if not log.hosted:
        client.once("POST", route, body, deadline=deadline)
        return
    where = f"memory API {route} on {client.host}"

    def send() -> None:
        client.once("POST", route, body, deadline=deadline)

    # A 404 on a retry: an earlier attempt applied, so the forget is done.
    backoff = log.timing.read_backoff
    HOSTED_FORGETS.run(send, deadline, where, backoff=backoff, applied=lambda err: None)

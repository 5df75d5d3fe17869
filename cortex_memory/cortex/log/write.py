"""Writing events, and recovering a hosted write whose outcome is unknown (engine.md §8.3).

Direct: one event is one ``POST v1/experience``; several go as
``POST v1/experience/bulk`` batches of at most 1000 events and 8 MiB of body
(``ordering: "strict_temporal"``), each batch's body built as it is sent, so a
long document's store holds one bulk body at a time. :func:`write_events` takes
the events of any number of items and scopes (``store_many`` sends a whole
batch's events together) and answers one receipt per event; :func:`write` is the
one-item form.
``?wait=indexed`` asks the server to answer once the events are readable
(``WaitFor.VISIBLE``). Writes are sent once: a timeout leaves it unknown whether
they applied, and the body idempotency key makes a host's retry a replay.

Hosted: one event per request, each under its own fresh ``Idempotency-Key`` claim,
reused only across that request's three attempts (the policy
:data:`~cortex_memory.cortex.timing.HOSTED_WRITES`). A claim refused as already used
(409, or 400 ``CONFLICT`` from older backends) on a retry means an earlier attempt
may have applied: the writer then looks for the event in its scope (same text,
same labels) for up to the recovery budget, and otherwise reports that the
outcome is unknown.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from cortex_memory.contract.requests import WaitFor
from cortex_memory.cortex.envelope.request import ExperienceRequest
from cortex_memory.cortex.log.read import Log
from cortex_memory.cortex.log.sizes import MAX_BULK_BYTES, MAX_BULK_EVENTS, PAGE_LIMIT
from cortex_memory.cortex.timing import HOSTED_WRITES, Deadline, PollPolicy, poll_until
from cortex_memory.cortex.transport.client import HttpClient
from cortex_memory.cortex.transport.failure import build_failure
from cortex_memory.cortex.transport.keys import fresh_claim
from cortex_memory.cortex.wire import Route
from cortex_memory.errors import EngineError, Error, UnavailableError

__all__ = [
    "Receipt",
    "Written",
    "bulk_body",
    "find_written",
    "recover",
    "write",
    "write_events",
    "write_one",
    "written",
]

logger = logging.getLogger(__name__)

_ORDERING = "strict_temporal"
_BULK_HEAD = b'{"items":['
_BULK_TAIL = b'],"ordering":"' + _ORDERING.encode() + b'"}'
_WAIT_INDEXED = "?wait=indexed"


class Receipt(NamedTuple):
    """What the server said about one write: the event id and whether it was a replay."""

    event_id: str
    replayed: bool


class Written(NamedTuple):
    """The last event a write produced, as the visibility waits need it."""

    scope: str
    item_label: str
    text: str
    labels: Sequence[str]
    event_id: str
    replayed: bool


def bulk_body(requests: Sequence[ExperienceRequest]) -> bytes:
    """The bytes of ``{"items": [...], "ordering": "strict_temporal"}`` as the transport
    writes a JSON body (compact, keys sorted: ``items`` before ``ordering``), joined
    from each event's :meth:`~ExperienceRequest.body` rather than written again.

    ``UnicodeEncodeError`` as :meth:`ExperienceRequest.body`.
    """
    return _bulk_of([request.body() for request in requests])


def _bulks(
    client: HttpClient, requests: Sequence[ExperienceRequest]
) -> Iterator[Tuple[Sequence[ExperienceRequest], bytes]]:
    """``requests`` in bulk batches, each with its body: at most
    :data:`MAX_BULK_EVENTS` events, and no more than :data:`MAX_BULK_BYTES` of body
    unless one event alone is larger. A batch's body is built when it is sent.

    A text UTF-8 cannot carry (a lone surrogate) fails as the transport fails a
    body it cannot encode, and before anything is sent.
    """
    for request in requests:
        if not request.sendable:
            _encoded(client, request)  # raises the build failure
    batch: List[ExperienceRequest] = []
    bodies: List[bytes] = []
    size = len(_BULK_HEAD) + len(_BULK_TAIL)
    for request in requests:
        body = _encoded(client, request)
        if batch and (
            len(batch) >= MAX_BULK_EVENTS or size + len(body) + 1 > MAX_BULK_BYTES
        ):
            yield batch, _bulk_of(bodies)
            batch, bodies, size = [], [], len(_BULK_HEAD) + len(_BULK_TAIL)
        batch.append(request)
        bodies.append(body)
        size += len(body) + 1
    if batch:
        yield batch, _bulk_of(bodies)


def _bulk_of(bodies: List[bytes]) -> bytes:
    # One join (not a join inside a join): the parts and the body, never a third copy.
    parts = [_BULK_HEAD]
    for body in bodies:
        parts += (body, b",")
    parts[-1] = _BULK_TAIL
    bodies.clear()
    data = b"".join(parts)
    parts.clear()  # the parts go before the request is sent
    return data


def _encoded(client: HttpClient, request: ExperienceRequest) -> bytes:
    try:
        return request.body()
    except UnicodeEncodeError as exc:
        raise build_failure(client.host) from exc


def _checked(request: ExperienceRequest) -> ExperienceRequest:
    if not isinstance(request, ExperienceRequest):
        raise TypeError(f"write takes ExperienceRequest values, not {type(request).__name__}")
    if not request.scope or not isinstance(request.text, str) or not request.labels:
        raise EngineError("an experience request lacks its scope, text or item label")
    return request


def _receipt(data: object, where: Union[str, Callable[[], str]]) -> Receipt:
    # ``where`` may be a function: a write's name is built only for its error.
    if not isinstance(data, dict) or not isinstance(data.get("event_id"), str):
        shown = where if isinstance(where, str) else where()
        raise EngineError(f"{shown} accepted a write but omitted event_id")
    return Receipt(data["event_id"], data.get("replayed_from_idempotency") is True)


def write(
    log: Log, requests: Sequence[ExperienceRequest], wait: WaitFor, deadline: Deadline
) -> Written:
    """Write ``requests`` (the events of one item, in order) and return the last one written.

    ``replayed`` is true only when every event was a replay.
    """
    receipts = write_events(log, requests, wait, deadline)
    return written(requests[-1], receipts)


def written(last: ExperienceRequest, receipts: Sequence[Receipt]) -> Written:
    """The :class:`Written` of an item whose last request is ``last``, from its events' receipts.

    ``replayed`` is true only when every receipt is a replay.
    """
    if not receipts:
        raise EngineError("a write needs at least one event")
    replayed = all(receipt.replayed for receipt in receipts)
    return Written(
        last.scope, last.item_label, last.text, last.labels, receipts[-1].event_id, replayed
    )


def write_events(
    log: Log, requests: Sequence[ExperienceRequest], wait: WaitFor, deadline: Deadline
) -> List[Receipt]:
    """Write ``requests`` in order (any items, any scopes); one receipt per event, in order.

    Direct: one event is one ``POST v1/experience``; several go as bulk batches of
    at most 1000 events and 8 MiB of body (one larger event goes alone). Hosted:
    one request per event. On an error the events written before it stay written
    and the error is raised.
    """
    if not requests:
        raise EngineError("a write needs at least one event")
    checked = [_checked(request) for request in requests]
    if log.hosted:
        return [_write_one_hosted(log, request, deadline) for request in checked]
    return _write_direct(log, checked, wait, deadline)


# -- Direct ---------------------------------------------------------------------------


def _write_direct(
    log: Log, requests: List[ExperienceRequest], wait: WaitFor, deadline: Deadline
) -> List[Receipt]:
    query = _WAIT_INDEXED if wait is WaitFor.VISIBLE else ""
    client = log.client
    if len(requests) == 1:
        return [write_one(log, _encoded(client, requests[0]), wait, deadline)]
    route = log.route(Route.BULK)
    where = f"memory API {route} on {client.host}"
    receipts: List[Receipt] = []
    for batch, body in _bulks(client, requests):
        data = client.once("POST", route + query, body, deadline=deadline).data
        del body  # sent: a long document's store holds one bulk body at a time
        results: Any = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise EngineError(f"{where} omitted bulk results")
        if len(results) != len(batch):
            raise EngineError(
                f"{where} returned {len(results)} bulk results for {len(batch)} events"
            )
        receipts.extend(_receipt(result, where) for result in results)
    return receipts


def write_one(log: Log, body: bytes, wait: WaitFor, deadline: Deadline) -> Receipt:
    """Direct: one event's request body (as :meth:`ExperienceRequest.body` gives it)
    sent as one ``POST v1/experience``; its receipt."""
    client = log.client
    route = log.route(Route.EXPERIENCE)
    query = _WAIT_INDEXED if wait is WaitFor.VISIBLE else ""
    data = client.once("POST", route + query, body, deadline=deadline).data
    return _receipt(data, lambda: f"memory API {route} on {client.host}")


# -- hosted ---------------------------------------------------------------------------


def _write_one_hosted(log: Log, request: ExperienceRequest, deadline: Deadline) -> Receipt:
    client = log.client
    route = log.route(Route.EXPERIENCE)
    where = f"memory API {route} on {client.host}"
    body = request.to_json()
    claim = fresh_claim()

    def send() -> Receipt:
        return _receipt(client.json_keyed(route, body, claim, deadline=deadline).data, where)

    def applied(err: Error) -> Receipt:
        # A retry refused as already claimed: an earlier attempt may have written it.
        return Receipt(recover(log, request, deadline, cause=err), False)

    backoff = log.timing.read_backoff
    return HOSTED_WRITES.run(send, deadline, where, backoff=backoff, applied=applied)[0]


def find_written(events: Sequence[object], text: str, labels: Sequence[str]) -> Optional[str]:
    """The id of the event whose text and labels equal the request's exactly, if listed.

    Comparing every label tells apart two identical turns of one conversation
    (their v3 parts differ).
    """
    wanted = list(labels)
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("id"), str):
            continue
        content = event.get("content")
        context = event.get("context")
        if (
            isinstance(content, dict)
            and content.get("text") == text
            and isinstance(context, dict)
            and context.get("labels") == wanted
        ):
            return str(event["id"])
    return None


def recover(
    log: Log, request: ExperienceRequest, deadline: Deadline, *, cause: Optional[Error] = None
) -> str:
    """Find the event an earlier attempt may have written; its id, or ``UnavailableError``.

    Polls the item's events in the request's scope for up to the recovery budget
    (transient listing failures count as "not yet"; others raise).
    """
    budget = log.timing.recovery
    where = f"memory API {log.route(Route.EXPERIENCE)} on {log.client.host}"

    def look() -> Optional[str]:
        try:
            page = log.page(request.scope, [request.item_label], None, PAGE_LIMIT, deadline)
        except UnavailableError as err:
            if deadline.expired():
                raise
            logger.debug("%s: recovery listing unavailable: %s", where, err.message)
            return None
        return find_written(page.items, request.text, request.labels)

    found = poll_until(look, PollPolicy.of(log.timing, budget, hosted=log.hosted), deadline, where)
    if found is None:
        raise UnavailableError(
            f"{where}: a retried write was refused as already claimed, and no matching "
            f"event appeared in the scope within {budget:g} s; the outcome is unknown"
        ) from cause
    return found

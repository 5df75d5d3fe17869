"""Waiting until a written event can be read back (engine.md §8.4).

A store that promised ``WaitFor.VISIBLE`` must not return before its events are
readable, or a read right after it would miss them. Two stages:

* **listed** (fatal): poll the item's events in its scope until the written event
  id appears; past the visibility budget the store fails with a message counting
  the polls (reporting success would break read-after-write);
* **settled** (best effort, never raises): ask ranked recall for the event's text
  until the event shows up there too, so a fetch right after the store finds it.

Both read only what they must, so a store costs the same in a scope of ten events
or of ten thousand: every poll is narrowed to the item's own lookup label
(``tm:i:``) and asks for a few events. A listing is newest first and the written
event is its item's newest, so the first page of :data:`LISTED_LIMIT` events
holds it once it is readable; only a full first page without it (a re-store
filling in one piece of a long item, or a concurrent writer of the same item)
reads on, through the item's own older events. The settle pack is narrowed to
the item's events and capped at :data:`SETTLE_EVENTS`, so it never carries the
scope's other events that share the written words.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Optional

from cortex_memory.cortex.log.read import Log, event_id
from cortex_memory.cortex.log.sizes import (
    LISTED_LIMIT,
    PAGE_LIMIT,
    SETTLE_EVENTS,
    SETTLE_QUERY_CHARS,
    WALK_PAGES,
    whole_items_budget,
)
from cortex_memory.cortex.log.write import Written
from cortex_memory.cortex.timing import Deadline, PollPolicy, poll_until
from cortex_memory.cortex.transport.failure import health_reason
from cortex_memory.errors import Error, UnavailableError

__all__ = ["await_listed", "await_settled", "await_written", "is_listed", "settle_body"]

logger = logging.getLogger(__name__)


def await_written(log: Log, written: Written, deadline: Deadline, *, settle: bool = True) -> None:
    """Wait until ``written`` is listed, then (when ``settle``) until it is settled."""
    await_listed(log, written, deadline)
    if settle:
        await_settled(log, written, deadline)


def await_listed(log: Log, written: Written, deadline: Deadline) -> None:
    """Poll until ``written.event_id`` is listed in its scope; ``UnavailableError`` past the
    visibility budget.

    Hosted transient failures count as "not yet" (the hosted API rate-limits polls);
    any other failure raises, a Direct transient one included (the transport has
    already retried it).
    """
    budget = log.timing.visibility
    answered = failed = 0
    last_fault: Optional[str] = None
    where = f"waiting for event {written.event_id!r} in scope {written.scope!r}"

    def poll() -> Optional[bool]:
        nonlocal answered, failed, last_fault
        try:
            listed = is_listed(log, written, deadline)
        except UnavailableError as err:
            if not log.hosted or deadline.expired():
                raise
            failed += 1
            last_fault = health_reason(err)
            return None
        if listed:
            return True
        answered += 1
        return None

    policy = PollPolicy.of(log.timing, budget, hosted=log.hosted)
    if poll_until(poll, policy, deadline, where) is None:
        tail = f"{answered} polls answered without it, {failed} failed transiently"
        if failed and last_fault is not None:
            tail += f", the last: {last_fault}"
        raise UnavailableError(
            f"the write was accepted (event {written.event_id}) but did not become "
            f"readable within {budget:g} s; reporting success would break "
            f"read-after-write ({tail})"
        )


def is_listed(log: Log, written: Written, deadline: Deadline) -> bool:
    """One listed poll: is ``written.event_id`` among its item's listed events?

    The first page asks for :data:`LISTED_LIMIT` events of the item, newest first;
    only a full page without it reads on (pages of 200, the item's events only).
    """
    labels = [written.item_label]
    page = log.page(written.scope, labels, None, LISTED_LIMIT, deadline)
    for _ in range(WALK_PAGES):
        if any(event_id(event) == written.event_id for event in page.items):
            return True
        if page.next_cursor is None:
            return False
        page = log.page(written.scope, labels, page.next_cursor, PAGE_LIMIT, deadline)
    return False


def settle_body(written: Written) -> Dict[str, Any]:
    """The settle probe's recall: the written text, narrowed to the item, a few events."""
    return {
        "scope": written.scope,
        "query": written.text[:SETTLE_QUERY_CHARS],
        "view": "granular",
        "include": ["events"],
        "budgets": {
            "max_tokens": whole_items_budget(SETTLE_EVENTS),
            "per_layer_limits": {"events": SETTLE_EVENTS},
        },
        "filters": {"metadata": {"labels": [written.item_label]}},
    }


def await_settled(log: Log, written: Written, deadline: Deadline) -> None:
    """Ask recall for the written text until the event ranks; best effort, never raises."""
    body = settle_body(written)

    def probe() -> Optional[bool]:
        # True: it ranks; False: the probe failed, so settling gives up; None: not yet.
        try:
            pack = log.recall(body, deadline)
        except Error as err:
            logger.debug("settle probe for scope %r gave up: %s", written.scope, err.message)
            return False
        return True if _holds(pack, written.event_id) else None

    policy = PollPolicy.of(log.timing, log.timing.settle, hosted=log.hosted)
    try:
        settled = poll_until(probe, policy, deadline, "settle")
    except UnavailableError:
        return  # the next sleep would pass the deadline: settling is best effort
    if settled is None:
        logger.debug(
            "event %s of scope %r did not rank within the settle budget",
            written.event_id,
            written.scope,
        )


def _holds(pack: Dict[str, Any], wanted: str) -> bool:
    layers = pack.get("layers")
    events = layers.get("events") if isinstance(layers, dict) else None
    if not isinstance(events, list):
        return False
    return any(event_id(event) == wanted for event in events)

"""store and store_many (engine.md §9.4).

1. The batch is validated by the caller (1..100 valid items).
2. Every item's id is its fingerprint (``observed_actor`` never counts).
3. **Plan everything first**: every event of every item is built and encoded, so a
   size error aborts before a single write.
4. **Lookup** (replay detection): the items' ``tm:i:`` labels are listed per scope
   and the parts already held are noted. Skipped only on the turn-logging hot path
   (Direct, ``ACCEPTED``, one conversation of one turn), where the body key makes
   the server answer a replay by itself.
5. Each item writes only its missing events (a partial conversation left by a
   failed store is completed); an item written earlier in the batch is a replay
   of its first copy and writes nothing.
6. ``VISIBLE``: wait until the last write of every scope touched is listed, and
   until the very last one settles in ranked recall.

**Writes (a deliberate deviation from §9.4's one write per item, Direct only).**
Direct sends the missing events of *all* items together, in item order (each
item's events in order), as ``POST v1/experience/bulk`` batches of at most 1000
events (a single event overall is one ``POST v1/experience``): 100 items in 3
scopes cost 3 lookups + 1 bulk + 3 listed polls + 1 settle = 8 requests instead
of 107. Receipts stay per item (an item is a replay when every one of its events
is). Hosted has no bulk route and still writes one event per request, item by
item.

On an error, events written before it stay written (a bulk refused part-way
keeps the events before the refused one); sending the batch again gives replays
for complete items and fills in whatever a failed item left missing.

**Replace** (``replace=True``): an item that a later item of the batch replaces
(the same source) is not written at all, since it would be forgotten at once;
after the writes (and the ``VISIBLE`` waits) the other versions of each
surviving item are found and forgotten (:mod:`.replace`), so a failure in
between leaves the new version stored.
"""

from __future__ import annotations

import logging
import time
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from cortex_memory.contract.items import Conversation, ItemId, StoreItem, StoreReceipt
from cortex_memory.contract.replacing import ReplaceBatch
from cortex_memory.contract.requests import WaitFor
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.fanout import ASSEMBLY_WORKERS, fan_out
from cortex_memory.cortex.engine.items import item_parts
from cortex_memory.cortex.engine.replace import replace_versions
from cortex_memory.cortex.engine.scopes import KindScope, kind_scope
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import encode_checked
from cortex_memory.cortex.envelope.request import ExperienceRequest, experience_request
from cortex_memory.cortex.envelope.turn import plan_turn
from cortex_memory.cortex.log.sizes import PAGE_LIMIT
from cortex_memory.cortex.log.visibility import await_listed, await_settled
from cortex_memory.cortex.log.write import Written, write, write_events, write_one, written
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import EngineError

__all__ = ["Plan", "plan_item", "store_many", "store_one"]

logger = logging.getLogger(__name__)

Part = Optional[int]

#: Bytes of event text a replay check reads per listing page, at most: a long
#: document already stored is read back a few pieces at a time, never whole.
LOOKUP_PAGE_BYTES = 4 * 1024 * 1024


class Plan(NamedTuple):
    """One item ready to write: its id, scope, and each event's part and request."""

    id: ItemId
    scope: KindScope
    events: Tuple[Tuple[Part, ExperienceRequest], ...]


def plan_item(item: StoreItem) -> Plan:
    """Build and encode every event of ``item`` (``InvalidRequestError`` if one is too large)."""
    item_id = item.fingerprint()
    events = []
    for env in envelopes(item, item_id):
        events.append((env.part(), experience_request(env, encode_checked(env))))
    return Plan(item_id, kind_scope(item.meta.namespace, item.item_kind), tuple(events))


def _hot_path(ctx: EngineContext, items: Sequence[StoreItem], wait: WaitFor) -> bool:
    return len(items) == 1 and _hot_item(ctx, items[0], wait)


def _hot_item(ctx: EngineContext, item: StoreItem, wait: WaitFor) -> bool:
    """Direct, ``ACCEPTED``, a conversation of one turn: the turn-logging hot path."""
    return (
        wait is WaitFor.ACCEPTED
        and isinstance(item, Conversation)
        and len(item.turns) == 1
        and not ctx.hosted
    )


def _page_limit(plans: Sequence[Plan]) -> int:
    """Events per replay-check page: 200, or fewer when the events are long."""
    largest = max(
        (len(r.text) if r.text.isascii() else 4 * len(r.text))  # a bound on UTF-8 bytes
        for plan in plans
        for _, r in plan.events
    )
    return max(1, min(PAGE_LIMIT, LOOKUP_PAGE_BYTES // max(1, largest)))


def _store_turn(ctx: EngineContext, item: StoreItem, deadline: Deadline) -> StoreReceipt:
    """The turn-logging hot path (:func:`_hot_path`, no ``replace``): one planned event,
    no lookup, one write, no wait.

    What :func:`store_many` does for such a batch, without its batch bookkeeping
    (no replay lookup, no copies, no pending list, no visibility wait): the
    receipt is a replay exactly when the server answered the write as one.
    """
    timed = logger.isEnabledFor(logging.DEBUG)
    started = time.monotonic() if timed else 0.0
    turn = plan_turn(item)
    if turn is not None:
        item_id, scope = turn.id, turn.scope
        planned = time.monotonic() if timed else 0.0
        replayed = write_one(ctx.log, turn.body, WaitFor.ACCEPTED, deadline).replayed
    else:  # what plan_turn leaves to the general plan (and its checks)
        plan = plan_item(item)
        item_id, scope = plan.id, plan.scope.path
        planned = time.monotonic() if timed else 0.0
        requests = [request for _, request in plan.events]
        receipts = write_events(ctx.log, requests, WaitFor.ACCEPTED, deadline)
        # As written() decides for an item: a replay only when every event was one.
        replayed = bool(receipts) and all(receipt.replayed for receipt in receipts)
    ctx.recency.touch(scope)
    if timed:
        logger.debug(
            "stored 1 turn (no wait): plan %.1f ms, write %.1f ms",
            (planned - started) * 1000,
            (time.monotonic() - planned) * 1000,
        )
    return StoreReceipt(item_id, replayed)


def _held_parts(
    ctx: EngineContext, plans: Sequence[Plan], deadline: Deadline
) -> Dict[ItemId, Set[Part]]:
    by_scope: Dict[KindScope, List[ItemId]] = {}
    in_scope: Dict[KindScope, List[Plan]] = {}
    for plan in plans:
        ids = by_scope.setdefault(plan.scope, [])
        if plan.id not in ids:
            ids.append(plan.id)
        in_scope.setdefault(plan.scope, []).append(plan)
    scopes = sorted(by_scope)

    def lookup(scope: KindScope) -> Dict[ItemId, Set[Part]]:
        limit = _page_limit(in_scope[scope])
        return item_parts(ctx, scope, by_scope[scope], deadline, page_limit=limit)

    held: Dict[ItemId, Set[Part]] = {}
    for found in fan_out(lookup, scopes, ASSEMBLY_WORKERS):
        held.update(found)
    return held


def _write_pending(
    ctx: EngineContext,
    pending: Sequence[Tuple[int, Plan, List[ExperienceRequest]]],
    wait: WaitFor,
    deadline: Deadline,
) -> List[Tuple[int, Written]]:
    """Write every pending item's events; each item's index and :class:`Written`, in order."""
    if not pending:
        return []
    out: List[Tuple[int, Written]] = []
    if ctx.hosted:
        # No bulk on the hosted wire: item by item, so a failure leaves the scopes
        # of the items written before it touched.
        for index, plan, requests in pending:
            out.append((index, write(ctx.log, requests, wait, deadline)))
            ctx.recency.touch(plan.scope.path)
        return out
    flat = [request for _, _, requests in pending for request in requests]
    receipts = write_events(ctx.log, flat, wait, deadline)
    start = 0
    for index, _, requests in pending:
        end = start + len(requests)
        out.append((index, written(requests[-1], receipts[start:end])))
        start = end
    for scope in dict.fromkeys(plan.scope.path for _, plan, _ in pending):
        ctx.recency.touch(scope)
    return out


def store_one(
    ctx: EngineContext,
    item: StoreItem,
    wait: WaitFor,
    deadline: Deadline,
    *,
    replace: bool = False,
) -> StoreReceipt:
    """:func:`store_many` of one validated item: its receipt."""
    if not replace and _hot_item(ctx, item, wait):
        return _store_turn(ctx, item, deadline)
    receipts = store_many(ctx, (item,), wait, deadline, replace=replace)
    if not receipts:
        raise EngineError("the store produced no receipt")
    return receipts[0]


def store_many(
    ctx: EngineContext,
    items: Sequence[StoreItem],
    wait: WaitFor,
    deadline: Deadline,
    *,
    replace: bool = False,
) -> List[StoreReceipt]:
    """Store a validated batch; receipts in item order (see the module docs)."""
    if not replace and _hot_path(ctx, items, wait):
        return [_store_turn(ctx, items[0], deadline)]
    started = time.monotonic()
    plans = [plan_item(item) for item in items]
    batch = ReplaceBatch.of(items, [plan.id for plan in plans]) if replace else None
    planned = time.monotonic()
    held: Dict[ItemId, Set[Part]] = {}
    if not _hot_path(ctx, items, wait):
        held = _held_parts(ctx, plans, deadline)
    looked = time.monotonic()

    replayed: List[bool] = []
    pending: List[Tuple[int, Plan, List[ExperienceRequest]]] = []
    done: Set[ItemId] = set()
    seen: Set[ItemId] = set()  # every id met so far, replaced ones included
    copies: List[bool] = []  # True where an earlier item of the batch has the same id
    for index, plan in enumerate(plans):
        copies.append(plan.id in seen)
        seen.add(plan.id)
        replayed.append(True)
        present = held.get(plan.id, set())
        requests = [request for part, request in plan.events if part not in present]
        if batch is not None and not batch.survives[index]:
            # Replaced by a later item of the batch: not written (it would be
            # forgotten at once); a replay when held or an earlier copy.
            replayed[index] = copies[index] or not requests
            continue
        if plan.id in done:
            continue  # a replay of its first copy in this batch
        done.add(plan.id)
        if requests:
            pending.append((index, plan, requests))

    last_per_scope: List[Tuple[str, Written]] = []
    for index, item_written in _write_pending(ctx, pending, wait, deadline):
        # An earlier copy in the batch (replaced, so not written) makes it a replay too.
        replayed[index] = item_written.replayed or copies[index]
        # The list ends with the most recently written scope.
        last_per_scope = [entry for entry in last_per_scope if entry[0] != item_written.scope]
        last_per_scope.append((item_written.scope, item_written))
    receipts = [StoreReceipt(plan.id, flag) for plan, flag in zip(plans, replayed)]
    wrote = time.monotonic()

    if wait is WaitFor.VISIBLE and last_per_scope:
        for _, last in last_per_scope:
            await_listed(ctx.log, last, deadline)
        listed = time.monotonic()
        await_settled(ctx.log, last_per_scope[-1][1], deadline)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "stored %d items: plan %.1f ms, lookup %.1f ms, write %.1f ms, "
                "listed %.1f ms, settled %.1f ms",
                len(plans),
                (planned - started) * 1000,
                (looked - planned) * 1000,
                (wrote - looked) * 1000,
                (listed - wrote) * 1000,
                (time.monotonic() - listed) * 1000,
            )
    elif logger.isEnabledFor(logging.DEBUG):  # a store without a wait ends here
        logger.debug(
            "stored %d items (no wait): plan %.1f ms, lookup %.1f ms, write %.1f ms",
            len(plans),
            (planned - started) * 1000,
            (looked - planned) * 1000,
            (wrote - looked) * 1000,
        )
    if batch is None:
        return receipts
    gone = replace_versions(ctx, batch, [plan.scope for plan in plans], deadline)
    return batch.receipts(receipts, gone)

"""store and store_many (engine.md §9.4).

1. The batch is validated by the caller (1..100 valid items).
2. Every item's id is its fingerprint (``observed_actor`` never counts).
3. **Plan everything first**: every event of every item is built and encoded, so a
   size error aborts before a single write.
4. **Lookup** (replay detection): the items' ``tm:i:`` labels are listed per scope
   and the parts already held are noted. Skipped only on the turn-logging hot path
   (Direct, ``ACCEPTED``, one conversation of one turn), where the body key makes
   the server answer a replay by itself.
5. Each item in order writes only its missing events (a partial conversation left
   by a failed store is completed), one log write per item.
6. ``VISIBLE``: wait until the last write of every scope touched is listed, and
   until the very last one settles in ranked recall.

On an error, items written before it stay written; sending the batch again gives
replays and fills in whatever a failed item left missing.
"""

from __future__ import annotations

import logging
import time
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from cortex_memory.contract.items import Conversation, ItemId, StoreItem, StoreReceipt
from cortex_memory.contract.requests import WaitFor
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.fanout import ASSEMBLY_WORKERS, fan_out
from cortex_memory.cortex.engine.items import item_events
from cortex_memory.cortex.engine.scopes import KindScope, kind_scope
from cortex_memory.cortex.envelope.build import envelopes
from cortex_memory.cortex.envelope.codec import encode_checked
from cortex_memory.cortex.envelope.request import ExperienceRequest, experience_request
from cortex_memory.cortex.log.visibility import await_listed, await_settled
from cortex_memory.cortex.log.write import Written, write
from cortex_memory.cortex.timing import Deadline

__all__ = ["Plan", "plan_item", "store_many"]

logger = logging.getLogger(__name__)

Part = Optional[int]


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
    if ctx.hosted or wait is not WaitFor.ACCEPTED or len(items) != 1:
        return False
    item = items[0]
    return isinstance(item, Conversation) and len(item.turns) == 1


def _held_parts(
    ctx: EngineContext, plans: Sequence[Plan], deadline: Deadline
) -> Dict[ItemId, Set[Part]]:
    by_scope: Dict[KindScope, List[ItemId]] = {}
    for plan in plans:
        ids = by_scope.setdefault(plan.scope, [])
        if plan.id not in ids:
            ids.append(plan.id)
    scopes = sorted(by_scope)

    def lookup(scope: KindScope) -> Dict[ItemId, Set[Part]]:
        found = item_events(ctx, scope, by_scope[scope], deadline)
        return {item_id: {env.part() for env in envs} for item_id, envs in found.items()}

    held: Dict[ItemId, Set[Part]] = {}
    for found in fan_out(lookup, scopes, ASSEMBLY_WORKERS):
        held.update(found)
    return held


def store_many(
    ctx: EngineContext, items: Sequence[StoreItem], wait: WaitFor, deadline: Deadline
) -> List[StoreReceipt]:
    """Store a validated batch; receipts in item order (see the module docs)."""
    started = time.monotonic()
    plans = [plan_item(item) for item in items]
    planned = time.monotonic()
    held: Dict[ItemId, Set[Part]] = {}
    if not _hot_path(ctx, items, wait):
        held = _held_parts(ctx, plans, deadline)
    looked = time.monotonic()

    receipts: List[StoreReceipt] = []
    done: Set[ItemId] = set()
    last_per_scope: List[Tuple[str, Written]] = []
    for plan in plans:
        if plan.id in done:
            receipts.append(StoreReceipt(plan.id, True))
            continue
        done.add(plan.id)
        present = held.get(plan.id, set())
        requests = [request for part, request in plan.events if part not in present]
        if not requests:
            receipts.append(StoreReceipt(plan.id, True))
            continue
        written = write(ctx.log, requests, wait, deadline)
        ctx.recency.touch(plan.scope.path)
        last_per_scope = [entry for entry in last_per_scope if entry[0] != written.scope]
        last_per_scope.append((written.scope, written))
        receipts.append(StoreReceipt(plan.id, written.replayed))
    wrote = time.monotonic()

    if wait is WaitFor.VISIBLE and last_per_scope:
        for _, written in last_per_scope:
            await_listed(ctx.log, written, deadline)
        listed = time.monotonic()
        await_settled(ctx.log, last_per_scope[-1][1], deadline)
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
    else:
        logger.debug(
            "stored %d items (no wait): plan %.1f ms, lookup %.1f ms, write %.1f ms",
            len(plans),
            (planned - started) * 1000,
            (looked - planned) * 1000,
            (wrote - looked) * 1000,
        )
    return receipts

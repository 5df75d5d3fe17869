"""forget by ids or by filter (engine.md §9.10).

By ids the search is unscoped: every scope the root holds is read (service
sandboxes included), because an id names an item wherever it lives. By filter
only the scopes the filter reaches are read, narrowed by its lookup labels and
re-checked event by event. Either way every event of every item found is
forgotten by event id (see :mod:`cortex_memory.cortex.log.forget`), and the
report counts distinct items; unknown ids are not counted.
"""

from __future__ import annotations

from typing import Dict, List, Set

from cortex_memory.contract.forget import ForgetFilter, ForgetIds, ForgetReport, ForgetTarget
from cortex_memory.contract.items import ItemId
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.items import item_event_ids
from cortex_memory.cortex.engine.scopes import every_scope, scopes_for
from cortex_memory.cortex.envelope.codec import decode_event
from cortex_memory.cortex.envelope.labels import narrowing
from cortex_memory.cortex.envelope.reads import Keeper
from cortex_memory.cortex.log.forget import forget_events
from cortex_memory.cortex.log.read import event_id
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import InvalidRequestError

__all__ = ["forget"]


def forget(ctx: EngineContext, target: ForgetTarget, deadline: Deadline) -> ForgetReport:
    """Forget the target's items (already validated); the report counts items found."""
    if isinstance(target, ForgetIds):
        return _forget_ids(ctx, target, deadline)
    if isinstance(target, ForgetFilter):
        return _forget_filter(ctx, target, deadline)
    raise InvalidRequestError("unknown forget target")


def _forget_ids(ctx: EngineContext, target: ForgetIds, deadline: Deadline) -> ForgetReport:
    wanted: List[ItemId] = list(dict.fromkeys(target.ids))
    forgotten: Set[ItemId] = set()
    for scope in every_scope(ctx, deadline):
        found = item_event_ids(ctx, scope, wanted, deadline)
        ids: Dict[str, None] = {}  # insertion-ordered set of event ids
        for item_id, pairs in found.items():
            forgotten.add(item_id)
            for eid, _ in pairs:
                if eid is not None:
                    ids.setdefault(eid, None)
        forget_events(ctx.log, scope.path, list(ids), deadline)
    return ForgetReport(len(forgotten))


def _forget_filter(ctx: EngineContext, target: ForgetFilter, deadline: Deadline) -> ForgetReport:
    flt = target.filter
    labels = narrowing(flt)
    forgotten: Set[ItemId] = set()
    for scope in scopes_for(ctx, flt, deadline):
        keeper = Keeper(flt, scope.kind)
        by_item: Dict[ItemId, Dict[str, None]] = {}
        for event in ctx.log.walk(scope.path, labels or None, deadline):
            env = decode_event(event)
            eid = event_id(event)
            if env is None or eid is None or not keeper.keeps(env):
                continue
            by_item.setdefault(env.id, {}).setdefault(eid, None)
        ids = [eid for events in by_item.values() for eid in events]
        forgotten.update(by_item)
        forget_events(ctx.log, scope.path, ids, deadline)
    return ForgetReport(len(forgotten))

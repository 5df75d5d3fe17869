"""Finding items by id in their scopes, and putting them back together (engine.md §9.3).

:func:`item_events` lists a scope by the items' ``tm:i:`` labels and keeps the
envelopes that really belong to the asked ids (a 64-bit label digest only narrows).
:func:`assembled` does that for many (id, namespace) pairs of one kind, a few
namespaces at a time, and rebuilds each whole item (a chunked document missing a
piece is left out, never returned short).
"""

from __future__ import annotations

from typing import Collection, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from cortex_memory.contract.items import ItemId, ItemKind, StoreItem
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.fanout import ASSEMBLY_WORKERS, fan_out
from cortex_memory.cortex.engine.scopes import KindScope, kind_scope
from cortex_memory.cortex.envelope.codec import decode_event
from cortex_memory.cortex.envelope.envelope import Envelope
from cortex_memory.cortex.envelope.labels import item_label
from cortex_memory.cortex.envelope.rebuild import rebuild_whole
from cortex_memory.cortex.log.read import event_id
from cortex_memory.cortex.timing import Deadline

__all__ = ["assembled", "decoded", "item_event_ids", "item_events", "item_parts"]


def decoded(events: Iterable[object]) -> List[Envelope]:
    """The envelopes of the events that are ours, in order (others are skipped)."""
    out: List[Envelope] = []
    for event in events:
        env = decode_event(event)
        if env is not None:
            out.append(env)
    return out


def item_events(
    ctx: EngineContext,
    scope: KindScope,
    ids: Collection[ItemId],
    deadline: Deadline,
) -> Dict[ItemId, List[Envelope]]:
    """The envelopes of ``ids`` held in ``scope``, grouped by id, in listing order.

    Lists by the ids' ``tm:i:`` labels (50 per listing) and keeps an envelope only
    when its kind is the scope's and its id is one asked (the re-check against
    digest collisions). Ids with no event are absent from the result.
    """
    return {
        item_id: [env for _, env in pairs]
        for item_id, pairs in item_event_ids(ctx, scope, ids, deadline).items()
    }


def item_event_ids(
    ctx: EngineContext,
    scope: KindScope,
    ids: Collection[ItemId],
    deadline: Deadline,
) -> Dict[ItemId, List[Tuple[Optional[str], Envelope]]]:
    """Like :func:`item_events`, each envelope paired with its event id (None when absent)."""
    wanted = set(ids)
    if not wanted:
        return {}
    labels = sorted({item_label(item_id) for item_id in wanted})
    grouped: Dict[ItemId, List[Tuple[Optional[str], Envelope]]] = {}
    for event in ctx.log.walk_labels(scope.path, labels, deadline):
        env = decode_event(event)
        if env is not None and env.kind is scope.kind and env.id in wanted:
            grouped.setdefault(env.id, []).append((event_id(event), env))
    return grouped


def item_parts(
    ctx: EngineContext,
    scope: KindScope,
    ids: Collection[ItemId],
    deadline: Deadline,
    *,
    page_limit: int,
) -> Dict[ItemId, Set[Optional[int]]]:
    """The parts (turn or piece indexes, None for a whole item) of ``ids`` held in
    ``scope``: what a store's replay check needs.

    Read ``page_limit`` events a page and keeping only the part numbers, so
    checking a long document that is already stored holds one page of it.
    """
    wanted = set(ids)
    held: Dict[ItemId, Set[Optional[int]]] = {}
    if not wanted:
        return held
    labels = sorted({item_label(item_id) for item_id in wanted})
    for events in ctx.log.label_pages(scope.path, labels, deadline, limit=page_limit):
        for event in events:
            env = decode_event(event)
            if env is not None and env.kind is scope.kind and env.id in wanted:
                held.setdefault(env.id, set()).add(env.part())
    return held


def assembled(
    ctx: EngineContext,
    kind: ItemKind,
    pairs: Sequence[Tuple[ItemId, Namespace]],
    deadline: Deadline,
) -> Dict[ItemId, StoreItem]:
    """Whole items of ``kind`` for ``(id, namespace)`` pairs; unassemblable ids are absent.

    Grouped by namespace (sorted), one :func:`item_events` per namespace, up to 4
    in flight; the first occurrence of an id wins; each is rebuilt with
    ``rebuild_whole``.
    """
    by_ns: Dict[Namespace, List[ItemId]] = {}
    for item_id, ns in pairs:
        ids = by_ns.setdefault(ns, [])
        if item_id not in ids:
            ids.append(item_id)
    scopes = [kind_scope(ns, kind) for ns in sorted(by_ns)]

    def lookup(scope: KindScope) -> Dict[ItemId, List[Envelope]]:
        return item_events(ctx, scope, by_ns[scope.namespace], deadline)

    out: Dict[ItemId, StoreItem] = {}
    for found in fan_out(lookup, scopes, ASSEMBLY_WORKERS):
        for item_id, envs in found.items():
            if item_id in out:
                continue
            item = rebuild_whole(envs)
            if item is not None:
                out[item_id] = item
    return out

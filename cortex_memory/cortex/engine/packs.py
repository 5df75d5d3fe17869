"""Recall packs as fetch, recall and beliefs read them (engine.md §9.8, §9.9, §9.12).

A *pack* is what ``POST recall`` answers for one scope: ``pack_id`` plus
``layers.events`` (best first) and ``layers.beliefs``. This module holds what the
three query operations share: the token budget, the pack body, reading a pack's
events into ranked envelopes (each event decoded once), and the round-robin
interleave that merges per-scope rankings.
"""

from __future__ import annotations

from typing import (
    Any,
    Callable,
    Dict,
    Hashable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    TypeVar,
)

from cortex_memory.cortex.envelope import Envelope, Keeper, decode_event

# The budget lives with the log layer (the settle probe uses it too); re-exported here.
from cortex_memory.cortex.log.sizes import EVENT_TOKENS, MAX_PACK_TOKENS, whole_items_budget

__all__ = [
    "EVENTS_PER_HIT",
    "EVENT_TOKENS",
    "MAX_PACK_EVENTS",
    "MAX_PACK_TOKENS",
    "Ranked",
    "interleave",
    "layer",
    "pack_body",
    "ranked",
    "whole_items_budget",
]

EVENTS_PER_HIT = 3
"""Events a fetch asks for per hit it wants (duplicates and other items share a pack)."""

MAX_PACK_EVENTS = 1000
"""The most events one fetch pack asks for."""

_T = TypeVar("_T")


def pack_body(
    scope: str,
    query: str,
    labels: Sequence[str],
    *,
    limits: Mapping[str, int],
    max_tokens: int,
    include: Sequence[str] = ("events",),
) -> Dict[str, Any]:
    """The recall body of one pack: granular view, budgets, and the narrowing labels.

    ``{scope, query, view: "granular", include, budgets: {max_tokens,
    per_layer_limits}}`` plus ``filters: {metadata: {labels}}`` when ``labels`` is
    non-empty. Packs are always read granular (README decision 5): no read relies
    on server-side traversal.
    """
    body: Dict[str, Any] = {
        "scope": scope,
        "query": query,
        "view": "granular",
        "include": list(include),
        "budgets": {"max_tokens": max_tokens, "per_layer_limits": dict(limits)},
    }
    if labels:
        body["filters"] = {"metadata": {"labels": list(labels)}}
    return body


def layer(pack: Mapping[str, Any], name: str) -> List[Any]:
    """``pack.layers.<name>`` when it is a list, else ``[]``."""
    layers = pack.get("layers")
    found = layers.get(name) if isinstance(layers, dict) else None
    return found if isinstance(found, list) else []


class Ranked(NamedTuple):
    """A pack's events that pass the filter, best first, one envelope per item.

    ``admitted`` counts the events that passed (before the per-item dedupe):
    recall answers from the pack with the most.
    """

    envelopes: List[Envelope]
    admitted: int


def ranked(pack: Mapping[str, Any], keeper: Keeper) -> Ranked:
    """Decode ``layers.events`` once each, keep those ``keeper`` keeps, dedupe by item id.

    The first event of an item is its best rank, so it is the one kept. Events
    that are not ours (no envelope) are skipped.
    """
    out: List[Envelope] = []
    seen: Set[str] = set()
    admitted = 0
    for event in layer(pack, "events"):
        env = decode_event(event)
        if env is None or not keeper.keeps(env):
            continue
        admitted += 1
        if env.id in seen:
            continue
        seen.add(env.id)
        out.append(env)
    return Ranked(out, admitted)


def interleave(
    lists: Sequence[Sequence[_T]], key: Callable[[_T], Hashable], limit: Optional[int] = None
) -> List[_T]:
    """Round-robin by rank across ``lists``, each key once at its best rank.

    Rank 0 of every list in order, then rank 1, and so on; a key already taken
    (at a better rank, or an earlier list at the same rank) is skipped. Stops at
    ``limit`` entries when one is given.
    """
    out: List[_T] = []
    if limit is not None and limit <= 0:
        return out
    seen: Set[Hashable] = set()
    depth = max((len(entries) for entries in lists), default=0)
    for rank in range(depth):
        for entries in lists:
            if rank >= len(entries):
                continue
            entry = entries[rank]
            k = key(entry)
            if k in seen:
                continue
            seen.add(k)
            out.append(entry)
            if limit is not None and len(out) >= limit:
                return out
    return out

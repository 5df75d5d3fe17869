"""Which CortexDB scopes a read, write or forget touches (engine.md §9.2).

A :class:`KindScope` is one (namespace, kind) pair and its scope path. Sorting
scopes as tuples makes reads kind-major (documents, conversations, learnings),
then in namespace order, which fixes listing order and so cursor resume.

Discovery (a scopes listing) is needed only when the reach reads descendants or
there is no reach; otherwise the scopes follow from the reach's nodes without a
request. Every function here lists at most once per prefix, so a call discovers
its scopes once.
"""

from __future__ import annotations

from typing import Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.namespace import Namespace, Reach, admitted_by
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.envelope.scopes import (
    ROOT_SEGMENT,
    node_prefixes,
    parse_scope,
    scope_path,
)
from cortex_memory.cortex.timing import Deadline

__all__ = [
    "ALL_KINDS",
    "KindScope",
    "admitted_kinds",
    "all_scopes_for",
    "every_scope",
    "held",
    "kind_scope",
    "known",
    "needs_discovery",
    "scopes_for",
]

ALL_KINDS: Tuple[ItemKind, ...] = (ItemKind.DOCUMENT, ItemKind.CONVERSATION, ItemKind.LEARNING)
"""Every item kind, in contract order (which is the scope order)."""

_ORDER = {kind: index for index, kind in enumerate(ALL_KINDS)}


class KindScope(NamedTuple):
    """One scope: ``(order, namespace, kind, path)``; ``order`` is the kind's index in ``ALL``.

    ``path`` is always our rendering of ``(namespace, kind)``, never the server's
    spelling (which may carry a tenant prefix).
    """

    order: int
    namespace: Namespace
    kind: ItemKind
    path: str


def kind_scope(ns: Namespace, kind: ItemKind) -> KindScope:
    """The scope of ``kind`` items at ``ns``."""
    return KindScope(_ORDER[kind], ns, kind, scope_path(ns, kind))


def admitted_kinds(flt: MetaFilter) -> List[ItemKind]:
    """The kinds ``flt`` admits, in ``ALL`` order."""
    return [kind for kind in ALL_KINDS if flt.admits_kind(kind)]


def known(reach: Reach, kinds: Iterable[ItemKind]) -> List[KindScope]:
    """``reach.nodes()`` × ``kinds``, sorted: the scopes readable without discovery."""
    wanted = list(kinds)
    return sorted({kind_scope(ns, kind) for ns in reach.nodes() for kind in wanted})


def needs_discovery(reach: Optional[Reach]) -> bool:
    """True when the scopes must be listed: no reach, or a reach reading descendants."""
    return reach is None or reach.descendants


def scopes_for(ctx: EngineContext, flt: MetaFilter, deadline: Deadline) -> List[KindScope]:
    """The scopes ``flt`` reads (lenient: a maybe-truncated listing is only logged)."""
    return _scopes_for(ctx, flt, deadline, complete=False)


def all_scopes_for(ctx: EngineContext, flt: MetaFilter, deadline: Deadline) -> List[KindScope]:
    """The scopes ``flt`` reads; a maybe-truncated listing is ``EngineError``."""
    return _scopes_for(ctx, flt, deadline, complete=True)


def _scopes_for(
    ctx: EngineContext, flt: MetaFilter, deadline: Deadline, *, complete: bool
) -> List[KindScope]:
    kinds = admitted_kinds(flt)
    if not kinds:
        return []
    reach = flt.reach
    if not needs_discovery(reach):
        assert reach is not None  # needs_discovery is False only with a reach
        if not reach.inherit:
            # One node (the usual exact reach): known()'s scopes, already in order
            # (the kinds are distinct and in ALL order), without its set and sort.
            return [kind_scope(reach.at, kind) for kind in kinds]
        return known(reach, kinds)
    found: Set[KindScope] = set(known(reach or Reach.default(), kinds))
    at = reach.at if reach is not None else Namespace.root()
    wanted = set(kinds)
    for prefix in node_prefixes(at):
        listing = (
            ctx.log.all_scopes(prefix, deadline) if complete else ctx.log.scopes(prefix, deadline)
        )
        for ns, kind in _parsed(listing):
            if kind in wanted and admitted_by(reach, ns):
                found.add(kind_scope(ns, kind))
    return sorted(found)


def held(
    ctx: EngineContext, reach: Reach, kinds: Sequence[ItemKind], deadline: Deadline
) -> List[KindScope]:
    """The scopes that exist on the server under ``reach`` with one of ``kinds``.

    Used by consolidate, beliefs and an unscoped recall: only scopes holding
    events count, so nothing is asked of an empty scope.
    """
    wanted = set(kinds)
    found = {
        kind_scope(ns, kind)
        for ns, kind in _parsed(ctx.log.scopes(ROOT_SEGMENT, deadline))
        if kind in wanted and reach.admits(ns)
    }
    return sorted(found)


def every_scope(ctx: EngineContext, deadline: Deadline) -> List[KindScope]:
    """The root's scopes of every kind plus every scope listed under the root.

    Service sandboxes included (forget by ids reaches everywhere); a
    maybe-truncated listing is ``EngineError``, since a forget must not miss a scope.
    """
    found = set(known(Reach.exact(Namespace.root()), ALL_KINDS))
    for ns, kind in _parsed(ctx.log.all_scopes(ROOT_SEGMENT, deadline)):
        found.add(kind_scope(ns, kind))
    return sorted(found)


def _parsed(paths: Iterable[str]) -> List[Tuple[Namespace, ItemKind]]:
    out: List[Tuple[Namespace, ItemKind]] = []
    for path in paths:
        parsed = parse_scope(path)
        if parsed is not None:
            out.append(parsed)
    return out

"""The fault matrix's operations: the routes each one uses and how to read its result.

The world every cell starts from is fixed here too: the sample items (and one
belief) seeded straight into a double's log, plus new items (with canary content
and local paths) for the store operations to write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Mapping, Tuple

from cortex_memory import (
    BeliefsRequest,
    ConsolidateRequest,
    Conversation,
    ExploreRequest,
    Facet,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    RecallRequest,
    Role,
    StoreItem,
    Turn,
    WaitFor,
)
from cortex_memory.testing import sample_items

from ._support import new_items, seed, seed_beliefs

__all__ = [
    "ANY",
    "BOTH",
    "GATED",
    "HOSTED",
    "OPS",
    "PREFIXES",
    "RETRIED_READS",
    "ROOT",
    "WIRES",
    "Op",
    "prepare",
    "route_of",
]

WIRES = ("direct", "hosted")
BOTH = frozenset(WIRES)
HOSTED = frozenset({"hosted"})

# Logical routes and the request-line prefix each has on a wire.
PREFIXES: Dict[str, Dict[str, str]] = {
    "direct": {
        "whoami": "GET /v1/auth/whoami",
        "events": "GET /v1/events",
        "scopes": "GET /v1/scopes/list",
        "write": "POST /v1/experience",
        "recall": "POST /v1/recall",
        "answer": "POST /v1/answer",
        "forget": "POST /v1/forget",
        "beliefs": "GET /v1/beliefs",
        "build": "POST /v1/beliefs/build",
        "health": "GET /v1/admin/health",
    },
    "hosted": {
        "events": "GET /memory/events",
        "scopes": "GET /memory/scopes",
        "write": "POST /memory/experience",
        "recall": "POST /memory/recall",
        "answer": "POST /memory/answer",
        "forget": "POST /memory/forget",
    },
}
RETRIED_READS = frozenset({"events", "scopes", "recall", "beliefs"})
GATED = frozenset(r for table in PREFIXES.values() for r in table) - {"whoami"}
ANY = GATED | {"whoami"}


def route_of(wire: str, line: str) -> str:
    """The logical route of a recorded request line (the longest matching prefix)."""
    best = ""
    name = "?"
    for route, prefix in PREFIXES[wire].items():
        if line.startswith(prefix) and len(prefix) > len(best):
            best, name = prefix, route
    return name


# -- the world every cell starts from ------------------------------------------------------

SEED = sample_items()
SEED_IDS = tuple(item.fingerprint() for item in SEED)
NEW = new_items()
TURN = Conversation((Turn(Role.USER, "log this one turn"),), MemoryMeta(thread_id="t-turn"))
ROOT = Reach(Namespace.parse(""))


def prepare(double: Any) -> None:
    """Seed the sample items and one belief (from the learning)."""
    seed(double, SEED)
    seed_beliefs(double, SEED[2])


# -- operations ----------------------------------------------------------------------------


def _ids(values: Any) -> Tuple[str, ...]:
    return tuple(value.id for value in values)


def _subset(result: Tuple[str, ...], base: Tuple[str, ...]) -> bool:
    return set(result) <= set(base)


@dataclass(frozen=True)
class Op:
    """One public engine operation, how to read its result and what it touches."""

    name: str
    call: Callable[[Any, float], Any]
    normal: Callable[[Any], Any]
    routes: Mapping[str, FrozenSet[str]]
    kind: str = "read"  # read, write, forget, consolidate, health
    partial: Callable[[Any, Any], bool] = lambda result, base: False
    stores: Tuple[StoreItem, ...] = ()
    forgets: Tuple[str, ...] = ()

    def uses(self, wire: str) -> FrozenSet[str]:
        """Every logical route the operation sends on ``wire`` (whoami included)."""
        routes = self.routes.get(wire, frozenset())
        if wire == "direct" and routes:
            return routes | {"whoami"}
        return routes


def _r(*names: str) -> FrozenSet[str]:
    return frozenset(names)


def _same(*names: str) -> Dict[str, FrozenSet[str]]:
    return {"direct": _r(*names), "hosted": _r(*names)}


_STORE_ROUTES = _same("events", "write", "recall")


def _fetch_normal(page: Any) -> Any:
    return (_ids(page.hits), tuple(b.text for b in page.beliefs))


def _fetch_partial(result: Any, base: Any) -> bool:
    return _subset(result[0], base[0]) and set(result[1]) <= set(base[1])


def _recall_normal(answer: Any) -> Any:
    return (answer.answer, tuple(c.id for c in answer.citations))


def _recall_partial(result: Any, base: Any) -> bool:
    return result[0] in (base[0], "") and _subset(result[1], base[1])


def _explore_normal(page: Any) -> Any:
    return (tuple((b.value, b.count) for b in page.buckets), page.total, page.missing)


def _explore_partial(result: Any, base: Any) -> bool:
    counts = dict(base[0])
    return all(count <= counts.get(value, 0) for value, count in result[0]) and result[1] <= base[1]


def _consolidate_normal(receipt: Any) -> Any:
    return (receipt.status.value, receipt.built, receipt.scopes)


def _consolidate_partial(result: Any, base: Any) -> bool:
    return result[0] == base[0] and (result[1] or 0) <= (base[1] or 0)


OPS: Tuple[Op, ...] = (
    Op(
        "store",
        lambda e, d: e.store(NEW[0], deadline=d),
        lambda r: (r.id,),
        _STORE_ROUTES,
        kind="write",
        stores=(NEW[0],),
    ),
    Op(
        "store_many",
        lambda e, d: e.store_many(NEW, deadline=d),
        _ids,
        _STORE_ROUTES,
        kind="write",
        stores=tuple(NEW),
    ),
    Op(
        "store_again",
        lambda e, d: e.store_many(SEED, deadline=d),
        _ids,
        _same("events"),
        kind="write",
        stores=tuple(SEED),
    ),
    Op(
        "log_turn",
        lambda e, d: e.store(TURN, wait=WaitFor.ACCEPTED, deadline=d),
        lambda r: (r.id,),
        {"direct": _r("write"), "hosted": _r("events", "write")},
        kind="write",
        stores=(TURN,),
    ),
    Op(
        "list",
        lambda e, d: e.list(ListRequest(MetaFilter(), 10), deadline=d),
        lambda page: (_ids(page.items), page.next_cursor),
        _same("scopes", "events"),
        partial=lambda r, b: _subset(r[0], b[0]),
    ),
    Op(
        "get",
        lambda e, d: e.get(GetRequest(SEED_IDS), deadline=d),
        _ids,
        _same("scopes", "events"),
        partial=_subset,
    ),
    Op(
        "fetch",
        lambda e, d: e.fetch(
            FetchRequest("which editor helix", FetchMode.HYBRID, 5, beliefs=2), deadline=d
        ),
        _fetch_normal,
        _same("scopes", "recall", "events"),
        partial=_fetch_partial,
    ),
    Op(
        "recall",
        lambda e, d: e.recall(RecallRequest("which editor do I use", 3), deadline=d),
        _recall_normal,
        _same("scopes", "recall", "answer"),
        partial=_recall_partial,
    ),
    Op(
        "forget_ids",
        lambda e, d: e.forget(ForgetTarget.ids(SEED_IDS[:2]), deadline=d),
        lambda report: report.forgotten,
        _same("scopes", "events", "forget"),
        kind="forget",
        partial=lambda r, b: r <= b,
        forgets=SEED_IDS[:2],
    ),
    Op(
        "forget_filter",
        lambda e, d: e.forget(ForgetTarget.filter(MetaFilter(thread_id="t-learn")), deadline=d),
        lambda report: report.forgotten,
        _same("scopes", "events", "forget"),
        kind="forget",
        partial=lambda r, b: r <= b,
        forgets=SEED_IDS[2:],
    ),
    Op(
        "explore",
        lambda e, d: e.explore(ExploreRequest(Facet.KIND, 10), deadline=d),
        _explore_normal,
        _same("scopes", "events"),
        partial=_explore_partial,
    ),
    Op(
        "beliefs",
        lambda e, d: e.beliefs(BeliefsRequest(ROOT, 10), deadline=d),
        _ids,
        {"direct": _r("scopes", "beliefs"), "hosted": _r()},
        partial=_subset,
    ),
    Op(
        "beliefs_query",
        lambda e, d: e.beliefs(BeliefsRequest(ROOT, 10, "helix"), deadline=d),
        _ids,
        _same("scopes", "recall"),
        partial=_subset,
    ),
    Op(
        "consolidate",
        lambda e, d: e.consolidate(ConsolidateRequest(ROOT), deadline=d),
        _consolidate_normal,
        {"direct": _r("scopes", "build"), "hosted": _r()},
        kind="consolidate",
        partial=_consolidate_partial,
    ),
    Op(
        "health",
        lambda e, d: e.health(deadline=d),
        lambda health: health.state.value,
        # Direct proves the key with whoami; the default double has none (404), so the
        # listing probe follows, as on a server from before the actor model.
        {"direct": _r("scopes"), "hosted": _r("scopes")},
        kind="health",
        partial=lambda r, b: True,
    ),
)

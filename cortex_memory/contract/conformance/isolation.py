"""``run_isolation(a, b)``: two users of one backing store cannot reach each other
(contract.md §9.4).

A stores the round-trip items; B must not list, get, fetch, recall, count or
forget them, must store A's first item as a new item of its own, and an item
B stores at ``user:<marker>-a`` must stay invisible to A. Every failure
reports the check ``isolation``; cleanup runs for B, then for A.
"""

from __future__ import annotations

import logging
from typing import Collection, Optional, Sequence

from cortex_memory.contract.conformance.errors import CheckFailure
from cortex_memory.contract.conformance.fixtures import round_trip_items
from cortex_memory.contract.conformance.harness import Run, Session, run_then_clean
from cortex_memory.contract.conformance.report import id_list
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.forget import ForgetFilter, ForgetIds
from cortex_memory.contract.items import ItemId
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import (
    ExploreRequest,
    FetchRequest,
    GetRequest,
    RecallRequest,
)

__all__ = ["ISOLATION", "run_isolation"]

#: The check name every isolation failure reports.
ISOLATION = "isolation"
_FETCH_LIMIT = 50
_RECALL_LIMIT = 5

_log = logging.getLogger(__name__)

_REACHES = (("none", None), ("subtree(root)", Reach.subtree(Namespace.root())))


def _leaked(seen: Sequence[ItemId], a_ids: Collection[ItemId]) -> Sequence[ItemId]:
    return [i for i in seen if i in a_ids]


def _check(sa: Session, sb: Session) -> None:
    run = sa.run
    b = sb.engine
    items = round_trip_items(run)
    a_ids = [item.fingerprint() for item in items]
    receipts = sa.store_many(items)
    sa.expect(
        [r.id for r in receipts] == a_ids,
        f"A's store_many of the round-trip items answered {id_list([r.id for r in receipts])}",
    )
    listed = sa.list_ids(run.filter())
    sa.expect(
        sorted(listed) == sorted(a_ids),
        f"A lists {id_list(listed)} after storing the round-trip items {id_list(a_ids)}",
    )
    # 1-2. B can neither list nor get A's items, under no reach or the whole tree.
    for label, reach in _REACHES:
        leak = _leaked(sb.list_ids(run.filter().with_reach(reach)), a_ids)
        sb.expect(not leak, f"B lists A's items with reach {label}: {id_list(leak)}")
        hits = sb.call("get", b.get, GetRequest(tuple(a_ids), reach))
        leak = _leaked([h.id for h in hits], a_ids)
        sb.expect(not leak, f"B gets A's items with reach {label}: {id_list(leak)}")
    # 3-4. Nor find them by fetch in any mode, nor cite them in a recall.
    for mode in sb.call("descriptor", b.descriptor).fetch_modes:
        page = sb.call(
            "fetch", b.fetch, FetchRequest(run.marker, mode, _FETCH_LIMIT, run.filter())
        )
        leak = _leaked([h.id for h in page.hits], a_ids)
        sb.expect(not leak, f"B's {mode} fetch of A's marker finds {id_list(leak)}")
    answer = sb.call(
        "recall", b.recall, RecallRequest(run.marker, _RECALL_LIMIT, run.filter())
    )
    leak = _leaked([c.id for c in answer.citations], a_ids)
    sb.expect(not leak, f"B's recall of A's marker cites {id_list(leak)}")
    # 5. Nor count them.
    facets = sb.call(
        "explore", b.explore, ExploreRequest(Facet.NAMESPACE, 10, run.filter())
    )
    counted = sum(bucket.count for bucket in facets.buckets)
    sb.expect(
        facets.total == 0 and counted == 0,
        f"B's namespace facet over the run counts {facets.total} items ({counted} in buckets)",
    )
    # 6. Nor forget them.
    report = sb.call("forget", b.forget, ForgetIds(tuple(a_ids)))
    sb.expect(report.forgotten == 0, f"B's forget of A's ids forgot {report.forgotten} items")
    report = sb.call("forget", b.forget, ForgetFilter(run.filter()))
    sb.expect(
        report.forgotten == 0, f"B's forget of the run filter forgot {report.forgotten} items"
    )
    _expect_a_unchanged(sa, a_ids, "after B's forgets")
    # 7. A's item stored by B is B's own new item.
    receipt = sb.store(items[0])
    sb.expect(not receipt.replayed, "B storing A's first item was a replay of A's copy")
    b_listed = sb.list_ids(run.filter())
    sb.expect(
        b_listed == [receipt.id],
        f"after storing A's first item, B lists {id_list(b_listed)}; expected only "
        f"`{receipt.id}`",
    )
    _expect_a_unchanged(sa, a_ids, "after B stored A's first item")
    # 8. B's item at a user node A might share stays B's.
    user = Namespace.parse(f"user:{run.marker}-a")
    own = run.document("isolated", run.meta().with_namespace(user))
    own_id = sb.store(own).id
    at_user = run.filter().with_reach(Reach.exact(user))
    sb.expect(
        own_id in sb.list_ids(at_user),
        f"B's item `{own_id}` at `{user}` does not list for B with reach exact({user})",
    )
    for label, reach in (*_REACHES, (f"exact({user})", Reach.exact(user))):
        seen = sa.list_ids(run.filter().with_reach(reach))
        sa.expect(own_id not in seen, f"A lists B's item `{own_id}` with reach {label}")


def _expect_a_unchanged(sa: Session, a_ids: Sequence[ItemId], when: str) -> None:
    listed = sa.list_ids(sa.run.filter())
    sa.expect(
        sorted(listed) == sorted(a_ids),
        f"{when}, A lists {id_list(listed)}; expected its {len(a_ids)} items unchanged",
    )


def run_isolation(a: MemoryEngine, b: MemoryEngine, *, identity: Optional[Run] = None) -> None:
    """Check that ``a`` and ``b``, two users of one backing store, cannot reach each other.

    Returns None or raises ``ConformanceError`` (check ``isolation``, or
    ``cleanup``). Passing the same engine twice fails at once.
    """
    if a is b:
        raise CheckFailure(
            ISOLATION,
            "run_isolation needs two engines acting as two users; it was given one engine twice",
        )
    run = identity if identity is not None else Run.fresh()
    sa, sb = Session(a, run, ISOLATION), Session(b, run, ISOLATION)
    run_then_clean(lambda: _check(sa, sb), (sb, sa), "isolation", _log)

"""Checks on the second-wave contract: replace, deadline and bulk (after the 17 of §9.3).

``replace`` holds ``store(replace=True)`` and ``store_many(replace=True)`` to
the replace rules (:mod:`cortex_memory.contract.replacing`); ``bulk`` holds
``store_many`` to any iterable, ``progress`` and the receipts a failure
reports; ``deadline`` holds every operation to ``deadline=``: a call whose
deadline has passed raises ``UnavailableError`` and writes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterator, List, Optional, Sequence, Set, Tuple

from cortex_memory.contract.conformance.errors import CheckEngineFailure
from cortex_memory.contract.conformance.harness import Session
from cortex_memory.contract.conformance.report import brief, id_list
from cortex_memory.contract.consolidation import BeliefsRequest, ConsolidateRequest
from cortex_memory.contract.deadline import Deadline
from cortex_memory.contract.erase import EraseRequest
from cortex_memory.contract.explore import ExploreRequest
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.forget import ForgetIds
from cortex_memory.contract.items import ItemId, LearningKind, StoreItem, StoreReceipt
from cortex_memory.contract.limits import MAX_STORE_MANY, SCAN_PAGE
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import FetchRequest, GetRequest, ListRequest, RecallRequest
from cortex_memory.contract.responses import Hit
from cortex_memory.errors import (
    Error,
    InvalidRequestError,
    UnavailableError,
    UnsupportedError,
)

__all__ = ["BULK_ITEMS", "check_bulk", "check_deadline", "check_replace", "past_deadline"]

#: Items the bulk check stores in one call: more than one batch of the wire.
BULK_ITEMS = MAX_STORE_MANY + 5


def _listed(s: Session) -> Set[ItemId]:
    """Every id the run's filter lists, 200 per page (these checks store a few hundred)."""
    found: Set[ItemId] = set()
    cursor: Optional[str] = None
    for _ in range(1000):
        page = s.call("list", s.engine.list, ListRequest(s.run.filter(), SCAN_PAGE, cursor))
        found.update(hit.id for hit in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return found
    raise s.failure("list did not end after 1000 pages")


def _expect_listed(
    s: Session, what: str, present: Sequence[ItemId], absent: Sequence[ItemId]
) -> None:
    listed = _listed(s)
    missing = [i for i in present if i not in listed]
    s.expect(not missing, f"{what}: {id_list(missing)} should still list and do not")
    kept = [i for i in absent if i in listed]
    s.expect(not kept, f"{what}: {id_list(kept)} should be gone and still list")


def _expect_replaced(
    s: Session, what: str, receipt: StoreReceipt, replayed: bool, replaced: Sequence[ItemId]
) -> None:
    s.expect(
        receipt.replayed is replayed,
        f"{what} answered replayed={receipt.replayed}, expected {replayed}",
    )
    expected = tuple(sorted(replaced))
    s.expect(
        receipt.replaced == expected,
        f"{what} reported replaced {id_list(receipt.replaced)}, expected {id_list(expected)}",
    )


def check_replace(s: Session) -> None:
    """``replace=True`` forgets the other versions of the item's source, and only them.

    Versions are the items of the same kind, in the same namespace, with the
    same ``meta.source.id`` (else the same ``meta.file_path``, matched exactly).
    """
    run = s.run
    m = run.marker
    path = f"notes/{m}/replace.md"
    file_meta = replace(run.meta(), file_path=path)

    def doc(label: str, meta: MemoryMeta = file_meta) -> StoreItem:
        return StoreItem.document(f"{m} replace {label} note", meta)

    v1, v2 = doc("first"), doc("second")
    elsewhere = Namespace.parse(f"agent:{m}-replace")
    left_alone = [
        StoreItem.learning(f"{m} replace learning", LearningKind.FACT, 0.9, file_meta),
        doc("elsewhere", file_meta.with_namespace(elsewhere)),
        doc("below", replace(file_meta, file_path=f"{path}/appendix")),
        doc("named", replace(file_meta, source=Source(SourceKind.FILE, f"{m}-named"))),
    ]
    kept = [item.fingerprint() for item in left_alone]
    s.store_many([v1, *left_alone])

    receipt = s.store(v2, replace=True)
    _expect_replaced(s, "store(replace=True) of a new version", receipt, False, [v1.fingerprint()])
    _expect_listed(s, "after replacing by file path", [v2.fingerprint(), *kept], [v1.fingerprint()])
    again = s.store(v2, replace=True)
    _expect_replaced(s, "store(replace=True) of the held version again", again, True, [])

    # The source id names the source when set, whatever the file path says.
    named = replace(run.meta(), source=Source(SourceKind.IMPORT, f"{m}-source"))
    s1 = doc("source one", replace(named, file_path="one.md"))
    s2 = doc("source two", replace(named, file_path="two.md"))
    s.store(s1)
    by_source = s.store(s2, replace=True)
    _expect_replaced(s, "store(replace=True) by source id", by_source, False, [s1.fingerprint()])
    _expect_listed(s, "after replacing by source id", [s2.fingerprint(), *kept], [s1.fingerprint()])

    before = _listed(s)
    nameless = StoreItem.document(f"{m} replace nameless note", run.meta())
    s.refused(
        "store(replace=True) of an item without source id or file path",
        (InvalidRequestError,), s.engine.store, nameless, replace=True,
    )
    s.refused(
        "store_many(replace=True) holding an item without source identity",
        (InvalidRequestError,), s.engine.store_many, [doc("refused"), nameless], replace=True,
    )
    s.expect(_listed(s) == before, "a refused replace stored something")

    # In a batch, the last version of a source wins and its receipt lists the rest.
    v3, v4 = doc("third"), doc("fourth")
    other = doc("other file", replace(file_meta, file_path=f"{path}.other"))
    receipts = s.store_many([v3, other, v4], replace=True)
    s.expect(len(receipts) == 3, f"store_many of 3 items answered {len(receipts)} receipts")
    _expect_replaced(s, "store_many(replace=True): the earlier version", receipts[0], False, [])
    _expect_replaced(s, "store_many(replace=True): another source", receipts[1], False, [])
    _expect_replaced(
        s, "store_many(replace=True): the last version", receipts[2], False,
        [v2.fingerprint(), v3.fingerprint()],
    )
    _expect_listed(
        s, "after store_many(replace=True)",
        [v4.fingerprint(), other.fingerprint(), *kept],
        [v2.fingerprint(), v3.fingerprint()],
    )


def _generate(items: Sequence[StoreItem]) -> Iterator[StoreItem]:
    """The items as a generator: no ``len``, one pass."""
    yield from items


def _progress_problem(
    calls: Sequence[Tuple[int, Optional[int]]], done: int, total: Optional[int]
) -> Optional[str]:
    if not calls:
        return "progress was never called"
    last = 0
    for got_done, got_total in calls:
        if got_total != total:
            return f"progress was called with total {got_total!r}, expected {total!r}"
        if got_done <= last:
            return f"progress went from {last} to {got_done}; it must grow after each batch"
        last = got_done
    if last != done:
        return f"progress ended at {last} of {done} items"
    return None


def check_bulk(s: Session) -> None:
    """``store_many`` takes any iterable of any length, reports progress, and says what
    a failure part-way kept (``err.receipts``), so sending again stores only the rest."""
    run = s.run
    items = [run.document(f"many-{i}") for i in range(BULK_ITEMS)]
    ids = [item.fingerprint() for item in items]
    calls: List[Tuple[int, Optional[int]]] = []
    try:
        receipts = s.engine.store_many(
            _generate(items), progress=lambda d, t: calls.append((d, t))
        )
    except InvalidRequestError as exc:
        s.fail(
            f"store_many refused a generator of {BULK_ITEMS} valid items (`{exc}`); it must "
            "take any number of items and batch them itself", exc,
        )
    except Error as exc:
        raise CheckEngineFailure(s.check, exc, "store_many") from exc
    s.expect(
        [r.id for r in receipts] == ids and not any(r.replayed for r in receipts),
        f"store_many of a generator of {BULK_ITEMS} items answered {len(receipts)} receipts "
        "that are not the items' fresh ids in order",
    )
    problem = _progress_problem(calls, BULK_ITEMS, None)
    s.expect(problem is None, f"store_many of a generator: {problem}")
    missing = [i for i in ids if i not in _listed(s)]
    s.expect(not missing, f"items of a bulk store_many do not list: {id_list(missing)}")

    calls.clear()
    again = s.store_many(items, progress=lambda d, t: calls.append((d, t)))
    s.expect(
        [r.id for r in again] == ids and all(r.replayed for r in again),
        "store_many of the same list again did not replay every item in order",
    )
    problem = _progress_problem(calls, BULK_ITEMS, BULK_ITEMS)
    s.expect(problem is None, f"store_many of a list: {problem}")

    # A bad item past the first batch: what was stored is reported, and only that.
    fresh = [run.document(f"resume-{i}") for i in range(MAX_STORE_MANY + 3)]
    bad_at = MAX_STORE_MANY + 1
    broken = [*fresh[:bad_at], StoreItem.document(" "), *fresh[bad_at + 1 :]]
    error = s.refused(
        "store_many holding a blank document", (InvalidRequestError,),
        s.engine.store_many, _generate(broken),
    )
    stored = [r.id for r in error.receipts]
    expected_prefix = [item.fingerprint() for item in fresh[: len(stored)]]
    s.expect(
        len(stored) <= bad_at and stored == expected_prefix,
        f"a store_many stopped at item {bad_at} reported receipts {id_list(stored)}; they "
        "must be the receipts of items before it, in order",
    )
    resumed = s.store_many(fresh)
    replayed = [r.id for r in resumed if r.replayed]
    s.expect(
        replayed == stored,
        f"after a failed store_many reported {len(stored)} stored items, sending the items "
        f"again replayed {len(replayed)}: {id_list(replayed)}; the failure must report "
        "exactly what was stored",
    )


def past_deadline() -> Deadline:
    """A bounded deadline that has already passed (its clock jumps an hour once built)."""
    now = [0.0]
    deadline = Deadline(1.0, clock=lambda: now[0])
    now[0] = 3600.0
    return deadline


def _expect_unavailable(
    s: Session, what: str, fn: Callable[..., object], *args: object,
    allowed: Tuple[type, ...] = (), **kwargs: object,
) -> None:
    try:
        answer = fn(*args, deadline=past_deadline(), **kwargs)
    except UnavailableError:
        return
    except Error as exc:
        if allowed and isinstance(exc, allowed):
            return
        s.fail(f"{what} past its deadline raised `{exc}` instead of UnavailableError", exc)
    s.fail(f"{what} past its deadline answered {brief(answer)} instead of UnavailableError")


def check_deadline(s: Session) -> None:
    """A call past its deadline raises ``UnavailableError`` and writes nothing; a call
    within its deadline is served as usual."""
    run = s.run
    engine = s.engine
    before = _listed(s)
    late = run.document("late")
    _expect_unavailable(s, "store", engine.store, late)
    _expect_unavailable(s, "store_many", engine.store_many, [late, run.document("late too")])
    s.expect(_listed(s) == before, "a store past its deadline left items behind")

    kept = run.document("deadline kept")
    receipt = s.store(kept, deadline=60.0)
    s.expect(not receipt.replayed, "a store within its deadline was a replay")
    kept_id = receipt.id
    _expect_unavailable(s, "forget", engine.forget, ForgetIds((kept_id,)))
    _expect_unavailable(
        s, "forget_within", engine.forget_within, [kept_id], Reach.subtree(Namespace.root())
    )
    s.expect(kept_id in _listed(s), "a forget past its deadline forgot the item anyway")

    flt = run.filter()
    mode = engine.descriptor().fetch_modes[0]
    _expect_unavailable(s, "list", engine.list, ListRequest(flt, 5))
    _expect_unavailable(s, "list_preview", engine.list_preview, ListRequest(flt, 5))
    _expect_unavailable(s, "get", engine.get, GetRequest((kept_id,)))
    _expect_unavailable(s, "fetch", engine.fetch, FetchRequest(run.marker, mode, 5, flt))
    _expect_unavailable(s, "recall", engine.recall, RecallRequest(run.marker, 5, flt))
    _expect_unavailable(s, "explore", engine.explore, ExploreRequest(Facet.KIND, 5, flt))
    optional = (UnsupportedError,)
    _expect_unavailable(s, "export", engine.export, ListRequest(flt, 5), allowed=optional)
    node = Namespace.parse(f"agent:{run.marker}-deadline")
    _expect_unavailable(
        s, "erase", engine.erase, EraseRequest(Reach.subtree(node)), allowed=optional
    )
    _expect_unavailable(
        s, "consolidate", engine.consolidate, ConsolidateRequest.new(Reach.exact(node)),
        allowed=optional,
    )
    beliefs: List[Hit] = []
    try:
        beliefs = engine.beliefs(BeliefsRequest(Reach.exact(node), 5), deadline=past_deadline())
    except UnavailableError:
        pass
    except Error as exc:
        s.fail(f"beliefs past its deadline raised `{exc}` instead of UnavailableError", exc)
    s.expect(not beliefs, f"beliefs past its deadline answered {brief(beliefs)}")
    health = s.call("health", engine.health, deadline=past_deadline())
    s.expect(health is not None, "health past its deadline answered nothing")

    hits = s.call("get", engine.get, GetRequest((kept_id,)), deadline=60.0)
    s.expect(
        [hit.id for hit in hits] == [kept_id],
        "a get within its deadline does not find the item stored within its deadline",
    )

"""``ReferenceEngine``: an in-memory engine that follows the contract to the letter.

It is the suite's calibration subject (contract.md §9.6): the suite must pass
on it, and every fault injected into it must be caught. Items are held in
insertion order under a lock, keyed by their fingerprint; ranking is the
simple keyword/trigram scoring of :mod:`.scoring`; consolidation distils one
learning per item (:mod:`.distil`).

Several engines may share one :class:`ReferenceStore`, each in its own
``tenant`` partition: that is how ``run_isolation`` is exercised without a
server.
"""

from __future__ import annotations

import builtins
import re
import threading
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar

from cortex_memory.contract._enum import quote
from cortex_memory.contract.bulk import BatchStore
from cortex_memory.contract.conformance.distil import distil
from cortex_memory.contract.conformance.scoring import Query, score
from cortex_memory.contract.consolidation import (
    BeliefsRequest,
    ConsolidateReceipt,
    ConsolidateRequest,
)
from cortex_memory.contract.deadline import Deadline, DeadlineLike
from cortex_memory.contract.descriptor import Consolidation, EngineDescriptor, EngineHealth
from cortex_memory.contract.engine import (
    MemoryEngine,
)
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.forget import ForgetFilter, ForgetIds, ForgetReport, ForgetTarget
from cortex_memory.contract.items import ItemId, ItemKind, StoreItem, StoreReceipt
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.replacing import is_version_of, version_key
from cortex_memory.contract.requests import (
    EraseRequest,
    FetchMode,
    FetchRequest,
    ListRequest,
    RecallRequest,
    WaitFor,
)
from cortex_memory.contract.responses import (
    Citation,
    EraseReport,
    Exported,
    ExportPage,
    FetchPage,
    Hit,
    ListPage,
    RecallAnswer,
)
from cortex_memory.errors import EngineError, Error, InvalidRequestError, UnsupportedError

__all__ = ["REFERENCE_ENGINE_ID", "ReferenceEngine", "ReferenceStore"]

#: The reference engine's id.
REFERENCE_ENGINE_ID = "reference"
_LABEL = "Reference (in-memory)"
_DESCRIPTION = (
    "An in-memory engine that follows the contract to the letter; "
    "the conformance suite's calibration subject."
)
_NOTHING = "Nothing stored answers this question."
# A decimal offset; longer than 18 digits is no offset this engine handed out.
_CURSOR = re.compile(r"[0-9]{1,18}")

_T = TypeVar("_T")
_UNBOUNDED = Deadline(None)
_Held = Dict[ItemId, StoreItem]


class ReferenceStore:
    """What one or more reference engines hold: items per tenant, in insertion order.

    One lock guards everything. An unexpected exception while the lock is
    held poisons the store (as a poisoned mutex would): every later call then
    fails with ``EngineError`` instead of reading state that may be half-changed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tenants: Dict[str, _Held] = {}
        self._poisoned = False

    @contextmanager
    def held(self, tenant: str) -> Iterator[_Held]:
        """Hold the lock and yield ``tenant``'s items (fingerprint → item, insertion order)."""
        with self._lock:
            if self._poisoned:
                raise EngineError("the reference engine's state is poisoned by an earlier failure")
            items = self._tenants.setdefault(tenant, {})
            try:
                yield items
            except Error:
                raise  # a refusal changes nothing
            except Exception:
                self._poisoned = True
                raise

    def count(self) -> int:
        """How many items all tenants hold together."""
        with self._lock:
            return sum(len(items) for items in self._tenants.values())


def _offset(cursor: Optional[str]) -> int:
    if cursor is None:
        return 0
    if _CURSOR.fullmatch(cursor) is None:
        raise InvalidRequestError(f"unknown cursor {quote(cursor)}")
    return int(cursor)


def _page(values: Sequence[_T], start: int, limit: int) -> Tuple[List[_T], Optional[str]]:
    end = start + limit
    return list(values[start:end]), (str(end) if end < len(values) else None)


class ReferenceEngine(MemoryEngine):
    """The in-memory calibration engine of the conformance suite.

    ``consolidation`` is what the descriptor declares (and how ``consolidate``
    answers). ``store`` and ``tenant`` let several engines share one backing
    store as separate users. Every fetch mode is offered. Thread-safe.
    ``get``, ``explore`` and ``forget_within`` are the contract's defaults.
    """

    def __init__(
        self,
        consolidation: Consolidation = Consolidation.ON_DEMAND,
        *,
        store: Optional[ReferenceStore] = None,
        tenant: str = "default",
    ) -> None:
        self._descriptor = EngineDescriptor(
            REFERENCE_ENGINE_ID,
            _LABEL,
            _DESCRIPTION,
            fetch_modes=tuple(FetchMode),
            consolidation=consolidation,
        )
        if store is not None and not isinstance(store, ReferenceStore):
            raise TypeError(f"store must be a ReferenceStore, not {type(store).__name__}")
        if not isinstance(tenant, str):
            raise TypeError(f"tenant must be a str, not {type(tenant).__name__}")
        self._store = ReferenceStore() if store is None else store
        self._tenant = tenant

    def __repr__(self) -> str:
        return (
            f"ReferenceEngine(consolidation={self._descriptor.consolidation.value!r}, "
            f"tenant={self._tenant!r})"
        )

    @property
    def backing_store(self) -> ReferenceStore:
        """The store this engine reads and writes (shared when given to several engines)."""
        return self._store

    @property
    def tenant(self) -> str:
        """This engine's partition of the backing store."""
        return self._tenant

    def snapshot(self) -> Tuple[StoreItem, ...]:
        """Every item this engine's tenant holds, in insertion order (for tests and hosts)."""
        with self._store.held(self._tenant) as held:
            return tuple(held.values())

    # -- what it is ---------------------------------------------------------------

    def descriptor(self) -> EngineDescriptor:
        """Id ``reference``; every fetch mode; the consolidation given at construction."""
        return self._descriptor

    def health(self, *, deadline: DeadlineLike = None) -> EngineHealth:
        """Always ok: nothing outside the process can fail (so a deadline cannot pass)."""
        Deadline.of(deadline)
        return EngineHealth.ok()

    # -- writes -------------------------------------------------------------------

    def store(
        self,
        item: StoreItem,
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        deadline: DeadlineLike = None,
    ) -> StoreReceipt:
        """Validate, then keep ``item`` unless its fingerprint is held (a replay).

        With ``replace``, the other versions of its source are removed under
        the same lock hold. Every store is visible at once, so ``wait`` changes
        nothing; a deadline already past refuses the store before it writes.
        """
        if not isinstance(item, StoreItem):
            raise TypeError(f"store takes a StoreItem, not {type(item).__name__}")
        item.validate()
        key = version_key(item) if replace else None
        bound = Deadline.of(deadline)
        bound.check("store")
        item_id = item.fingerprint()
        with self._store.held(self._tenant) as held:
            replayed = item_id in held
            if not replayed:
                held[item_id] = item
            if key is None:
                return StoreReceipt(item_id, replayed)
            gone = [
                other for other, it in held.items()
                if other != item_id and is_version_of(key, it.item_kind, it.meta)
            ]
            for other in gone:
                del held[other]
        return StoreReceipt(item_id, replayed, tuple(sorted(gone)))

    def _batch_store(self, *, replace: bool, wait: WaitFor, deadline: Deadline) -> BatchStore:
        # The deadline is checked before each batch; an in-memory store is instant,
        # so no item of a batch is refused part-way.
        return super()._batch_store(replace=replace, wait=wait, deadline=_UNBOUNDED)

    def forget(self, target: ForgetTarget, *, deadline: DeadlineLike = None) -> ForgetReport:
        """Forget ids (compared to fingerprints, anywhere) or everything a filter admits."""
        if not isinstance(target, ForgetTarget):
            raise TypeError(f"forget takes a ForgetTarget, not {type(target).__name__}")
        target.validate()
        Deadline.of(deadline).check("forget")
        with self._store.held(self._tenant) as held:
            if isinstance(target, ForgetIds):
                doomed = [i for i in dict.fromkeys(target.ids) if i in held]
            elif isinstance(target, ForgetFilter):
                flt = target.filter
                doomed = [i for i, it in held.items() if flt.matches(it.item_kind, it.meta)]
            else:  # pragma: no cover - ForgetTarget has exactly two variants
                raise TypeError(f"unknown forget target {type(target).__name__}")
            for item_id in doomed:
                del held[item_id]
        return ForgetReport(len(doomed))

    def erase(self, request: EraseRequest, *, deadline: DeadlineLike = None) -> EraseReport:
        """Hard-delete by reach (never upwards) and kinds; counts distinct (node, kind) pairs."""
        request.validate()
        Deadline.of(deadline).check("erase")
        reach = Reach(request.reach.at, False, request.reach.descendants)
        kinds = request.kinds or tuple(ItemKind)
        scopes = set()
        with self._store.held(self._tenant) as held:
            doomed = [
                i for i, it in held.items()
                if it.item_kind in kinds and reach.admits(it.meta.namespace)
            ]
            for item_id in doomed:
                item = held.pop(item_id)
                scopes.add((item.meta.namespace, item.item_kind))
        return EraseReport(len(scopes))

    def consolidate(
        self, request: ConsolidateRequest, *, deadline: DeadlineLike = None
    ) -> ConsolidateReceipt:
        """Validate, then answer as declared: none refuses, scheduled schedules, and
        on_demand or automatic distil one learning per admitted item at once."""
        request.validate()
        bound = Deadline.of(deadline)
        promise = self._descriptor.consolidation
        if promise is Consolidation.NONE:
            raise UnsupportedError(f"engine `{REFERENCE_ENGINE_ID}` does not consolidate memory")
        bound.check("consolidate")
        if promise is Consolidation.SCHEDULED:
            return ConsolidateReceipt.scheduled()
        kinds = request.admitted_kinds()
        reach = request.reach
        with self._store.held(self._tenant) as held:
            sources = [
                item for item in held.values()
                if item.item_kind is not ItemKind.LEARNING
                and item.item_kind in kinds
                and item.meta.derive is not False
                and reach.admits(item.meta.namespace)
            ]
        built = [learning for learning in map(distil, sources) if learning is not None]
        bound.check("consolidate")  # distilling took time: write nothing past the deadline
        with self._store.held(self._tenant) as held:
            for learning in built:
                held.setdefault(learning.fingerprint(), learning)
        return ConsolidateReceipt.completed(len(reach.nodes()) * len(kinds), len(built))

    # -- reads --------------------------------------------------------------------

    def _matching(self, flt: MetaFilter) -> List[StoreItem]:
        with self._store.held(self._tenant) as held:
            return [item for item in held.values() if flt.matches(item.item_kind, item.meta)]

    def beliefs(
        self, request: BeliefsRequest, *, deadline: DeadlineLike = None
    ) -> builtins.list[Hit]:
        """No separate belief layer: always ``[]`` (after validating)."""
        request.validate()
        Deadline.of(deadline).check("beliefs")
        return []

    def list(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        """The items the filter admits, in insertion order, paged by a decimal offset."""
        request.validate()
        Deadline.of(deadline).check("list")
        start = _offset(request.cursor)
        items, cursor = _page(self._matching(request.filter), start, request.limit)
        return ListPage(tuple(Hit.of(item) for item in items), cursor)

    def export(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ExportPage:
        """Like ``list``, giving each item back whole."""
        request.validate()
        Deadline.of(deadline).check("export")
        start = _offset(request.cursor)
        items, cursor = _page(self._matching(request.filter), start, request.limit)
        return ExportPage(
            tuple(Exported(item.fingerprint(), item) for item in items), (), cursor
        )

    def _ranked(self, query: str, mode: FetchMode, flt: MetaFilter) -> List[Hit]:
        prepared = Query(query)
        scored: List[Tuple[float, int, StoreItem]] = []
        # Score outside the lock: the matching items are an immutable snapshot.
        for position, item in enumerate(self._matching(flt)):
            value, hit = score(prepared, item.render_text(), mode)
            if hit:
                scored.append((value, position, item))
        scored.sort(key=lambda entry: (-entry[0], entry[1]))
        return [Hit.of(item, value) for value, _, item in scored]

    def fetch(self, request: FetchRequest, *, deadline: DeadlineLike = None) -> FetchPage:
        """Rank by the mode, best first (ties in insertion order), reorder by the time
        hint, page by a decimal offset. Beliefs are always empty."""
        self._descriptor.ensure_mode(request.mode)
        request.validate()
        Deadline.of(deadline).check("fetch")
        start = _offset(request.cursor)
        hits = self._ranked(request.query, request.mode, request.filter)
        if request.refers_to is not None:
            hits = request.refers_to.rank(hits)
        page, cursor = _page(hits, start, request.limit)
        return FetchPage(tuple(page), cursor)

    def recall(self, request: RecallRequest, *, deadline: DeadlineLike = None) -> RecallAnswer:
        """Cite the best ``limit`` hybrid hits; the answer joins their texts.

        ``"From N stored items: s1 | s2"``, or ``"Nothing stored answers this
        question."`` when nothing matches. A time hint reorders before the cut.
        """
        request.validate()
        Deadline.of(deadline).check("recall")
        hits = self._ranked(request.question, FetchMode.HYBRID, request.filter)
        if request.refers_to is not None:
            hits = request.refers_to.rank(hits)
        citations = tuple(
            Citation(hit.id, hit.kind, hit.text, hit.meta, hit.score)
            for hit in hits[: request.limit]
        )
        if not citations:
            return RecallAnswer(_NOTHING, (), REFERENCE_ENGINE_ID)
        snippets = " | ".join(citation.snippet for citation in citations)
        return RecallAnswer(
            f"From {len(citations)} stored items: {snippets}", citations, REFERENCE_ENGINE_ID
        )

"""``MemoryEngine``: the contract every engine implements, with its defaults.

A minimal engine implements seven methods (``descriptor``, ``health``,
``recall``, ``fetch``, ``store``, ``forget``, ``list``); the rest have defaults
built on those (contract.md §3). Every method validates its request first, so
every engine refuses the same bad call with the same ``InvalidRequestError``;
the refusing defaults validate before they refuse.

Every operation but ``descriptor`` and ``close`` takes ``deadline=`` (seconds,
or a :class:`~cortex_memory.contract.deadline.Deadline`): one bound over the
whole call, past which it raises ``UnavailableError`` ("deadline exceeded")
and leaves nothing half-written. ``store`` and ``store_many`` take
``replace=`` (see :mod:`cortex_memory.contract.replacing`) and ``store_many``
takes any iterable with an optional ``progress`` callback
(:mod:`cortex_memory.contract.bulk`).

The default helpers are module functions (:mod:`cortex_memory.contract.defaults`,
re-exported here) so engines can call them directly.
The defaults pass ``replace=True`` and a bounded ``deadline`` on to the
engine's own methods only when given, so an engine written before those
keywords existed keeps working with calls that do not use them.
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import ClassVar, Iterable, List, Optional, Type, TypeVar

from cortex_memory.contract.bulk import (
    BatchStore,
    Progress,
    store_in_batches,
    stored_one_by_one,
)
from cortex_memory.contract.consolidation import (
    BeliefsRequest,
    ConsolidateReceipt,
    ConsolidateRequest,
)
from cortex_memory.contract.deadline import Deadline, DeadlineLike
from cortex_memory.contract.defaults import (
    cursor_from_offset,
    deadline_keywords,
    explore_by_listing,
    explore_page_of,
    forget_within_by_get,
    forget_within_ids,
    get_by_listing,
    in_request_order,
    offset_from_cursor,
)
from cortex_memory.contract.descriptor import EngineDescriptor, EngineHealth
from cortex_memory.contract.erase import EraseReport, EraseRequest
from cortex_memory.contract.explore import ExplorePage, ExploreRequest
from cortex_memory.contract.forget import ForgetReport, ForgetTarget
from cortex_memory.contract.items import ItemId, StoreItem, StoreReceipt
from cortex_memory.contract.limits import MAX_STORE_MANY
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.requests import (
    FetchRequest,
    GetRequest,
    ListRequest,
    RecallRequest,
    WaitFor,
)
from cortex_memory.contract.responses import (
    ExportPage,
    FetchPage,
    Hit,
    ListPage,
    RecallAnswer,
)
from cortex_memory.errors import UnsupportedError

__all__ = [
    "MemoryEngine",
    "cursor_from_offset",
    "deadline_keywords",
    "explore_by_listing",
    "explore_page_of",
    "forget_within_by_get",
    "forget_within_ids",
    "get_by_listing",
    "in_request_order",
    "offset_from_cursor",
]

_E = TypeVar("_E", bound="MemoryEngine")


class MemoryEngine(abc.ABC):
    """A memory engine: stores items and reads, ranks, answers from and forgets them.

    Methods block; one instance is shared safely by many threads. Engines are
    context managers (``with engine: ...`` closes it). Every operation but
    :meth:`descriptor` and :meth:`close` takes ``deadline=``: seconds or a
    :class:`~cortex_memory.contract.deadline.Deadline` bounding the whole call;
    past it the call raises ``UnavailableError`` and writes nothing more (what
    a write had stored whole stays stored; nothing is left half-written).
    """

    # -- the seven an engine must implement -------------------------------------

    @abc.abstractmethod
    def descriptor(self) -> EngineDescriptor:
        """What the engine is and offers; does no I/O."""

    @abc.abstractmethod
    def health(self, *, deadline: DeadlineLike = None) -> EngineHealth:
        """How the engine is; never raises (trouble is ``degraded`` or ``down``)."""

    @abc.abstractmethod
    def recall(self, request: RecallRequest, *, deadline: DeadlineLike = None) -> RecallAnswer:
        """Answer a question from the items the filter admits, with citations."""

    @abc.abstractmethod
    def fetch(self, request: FetchRequest, *, deadline: DeadlineLike = None) -> FetchPage:
        """Rank the items the filter admits, best first.

        ``descriptor().ensure_mode(request.mode)`` runs before ``validate()``.
        """

    @abc.abstractmethod
    def store(
        self,
        item: StoreItem,
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        deadline: DeadlineLike = None,
    ) -> StoreReceipt:
        """Store an item at ``meta.namespace``; the same item again is a replay (same id).

        The receipt's id is ``item.fingerprint()``. An engine without a cheaper
        acknowledgement serves ``ACCEPTED`` as ``VISIBLE``. With ``replace``,
        the other versions of the item's source (same kind, namespace and
        ``meta.source.id``, else ``meta.file_path``) are forgotten once the item
        is stored, and ``receipt.replaced`` lists them; an item without a
        source identity is refused (``InvalidRequestError``).
        """

    @abc.abstractmethod
    def forget(self, target: ForgetTarget, *, deadline: DeadlineLike = None) -> ForgetReport:
        """Forget by ids (wherever they live) or by filter (inside its reach)."""

    @abc.abstractmethod
    def list(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        """Page through the items the filter admits; every hit's score is 0.0."""

    # -- defaults -----------------------------------------------------------------

    #: Items per :meth:`store_many` batch; an engine that writes a batch at once may say more.
    _store_batch_size: ClassVar[int] = MAX_STORE_MANY

    def store_many(
        self,
        items: Iterable[StoreItem],
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        progress: Optional[Progress] = None,
        deadline: DeadlineLike = None,
    ) -> List[StoreReceipt]:
        """Store any number of items (any iterable, taken lazily); receipts in item order.

        Items go in batches (100 unless the engine says otherwise), each
        validated whole before any of it is stored; ``progress(done, total)``
        is called after each batch (``total`` is ``None`` when ``items`` has no
        ``len``). An item repeated in the call replays its first copy. An error
        stops the call; its ``receipts`` attribute lists the items stored
        before it, and sending the items again gives replays for those. With
        ``replace``, the last item of each source replaces the others (see
        :meth:`store`). The default stores each item of a batch with
        :meth:`store` (passing ``wait``) and stops at the first error; an
        engine may store a batch at once (the local engine in one transaction,
        CortexDB in one request where its wire allows).
        """
        bound = Deadline.of(deadline)
        return store_in_batches(
            items,
            self._batch_store(replace=replace, wait=wait, deadline=bound),
            deadline=bound,
            progress=progress,
            replace=replace,
            batch_size=self._store_batch_size,
        )

    def _batch_store(self, *, replace: bool, wait: WaitFor, deadline: Deadline) -> BatchStore:
        """How :meth:`store_many` stores one validated batch: here each item with :meth:`store`.

        Called once per ``store_many``, before the first batch, so an engine
        may check ``wait`` here.
        """

        def store_one(item: StoreItem, replacing: bool) -> StoreReceipt:
            return self.store(item, wait=wait, **deadline_keywords(deadline, replace=replacing))

        return lambda batch: stored_one_by_one(store_one, batch, replace=replace)

    def list_preview(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        """Like ``list`` (same items, order, ids, meta and cursors); ``text`` may be cut.

        The default is ``list`` itself.
        """
        return self.list(request, **deadline_keywords(Deadline.of(deadline)))

    def get(self, request: GetRequest, *, deadline: DeadlineLike = None) -> List[Hit]:
        """Whole items by id, in the order asked; unknown or out-of-reach ids are omitted."""
        return get_by_listing(self, request, deadline=deadline)

    def explore(self, request: ExploreRequest, *, deadline: DeadlineLike = None) -> ExplorePage:
        """Count the items the filter admits by a facet."""
        return explore_by_listing(self, request, deadline=deadline)

    def forget_within(
        self, ids: Iterable[ItemId], reach: Reach, *, deadline: DeadlineLike = None
    ) -> ForgetReport:
        """Forget ``ids`` only where ``reach`` admits them, looking nowhere else."""
        return forget_within_by_get(self, ids, reach, deadline=deadline)

    def export(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ExportPage:
        """Page through the items whole (as ``StoreItem``); unsupported by default."""
        request.validate()
        Deadline.of(deadline)
        raise UnsupportedError(f"engine `{self.descriptor().id}` does not export items")

    def erase(self, request: EraseRequest, *, deadline: DeadlineLike = None) -> EraseReport:
        """Hard-delete by node(s) and kinds; unsupported by default (callers fall back
        to ``forget``)."""
        request.validate()
        Deadline.of(deadline)
        raise UnsupportedError(f"engine `{self.descriptor().id}` does not erase")

    def consolidate(
        self, request: ConsolidateRequest, *, deadline: DeadlineLike = None
    ) -> ConsolidateReceipt:
        """Ask for a belief build over the reach; unsupported by default."""
        request.validate()
        Deadline.of(deadline)
        raise UnsupportedError(
            f"engine `{self.descriptor().id}` does not consolidate memory"
        )

    def beliefs(self, request: BeliefsRequest, *, deadline: DeadlineLike = None) -> List[Hit]:
        """Beliefs within the reach (learning hits tagged ``belief``); none by default."""
        request.validate()
        Deadline.of(deadline)
        return []

    def close(self) -> None:
        """Release what the engine holds; the default holds nothing and does nothing."""
        return

    def __enter__(self: _E) -> _E:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

"""``LocalEngine``: the whole engine contract on one SQLite file (or in memory).

Every public method validates its request first (the contract's rule), then
borrows a connection from the pool for the length of the call, bounded by the
call's ``deadline=`` when it has one (:mod:`.bounded`); the connections,
sessions and snapshots are :mod:`.sessions`' part. The SQL lives in the
modules next to this one: ``writes`` (store, forget, erase), ``reads`` (list,
export, get, fetch), ``explore``, ``consolidate``, ``recall`` and ``replies``.
"""

from __future__ import annotations

import builtins
import logging
import sqlite3
from typing import Iterable, List, Optional, Tuple

from cortex_memory.contract import (
    BeliefsRequest,
    ConsolidateReceipt,
    ConsolidateRequest,
    Consolidation,
    Deadline,
    DeadlineLike,
    EngineDescriptor,
    EngineHealth,
    EraseReport,
    EraseRequest,
    ExplorePage,
    ExploreRequest,
    ExportPage,
    FetchMode,
    FetchPage,
    FetchRequest,
    ForgetFilter,
    ForgetIds,
    ForgetReport,
    ForgetTarget,
    GetRequest,
    Hit,
    ItemId,
    ListPage,
    ListRequest,
    Reach,
    RecallAnswer,
    RecallRequest,
    StoreItem,
    StoreReceipt,
    WaitFor,
    forget_within_ids,
)
from cortex_memory.contract.bulk import BatchStore
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.replacing import ReplaceBatch
from cortex_memory.errors import Error, UnavailableError
from cortex_memory.local import consolidate as beliefs_layer
from cortex_memory.local import reads, single, writes
from cortex_memory.local.bounded import where as bounded_where
from cortex_memory.local.connections import sqlite_errors
from cortex_memory.local.corpus import BELIEFS, ITEMS
from cortex_memory.local.explore import explore as explore_sql
from cortex_memory.local.recall import answer
from cortex_memory.local.replies import replies
from cortex_memory.local.sessions import EngineSessions, refresh_statistics_quietly
from cortex_memory.local.store import Prepared

__all__ = ["LOCAL_BATCH", "LOCAL_ENGINE_ID", "LocalEngine", "local_descriptor"]

_log = logging.getLogger(__name__)

#: Items per write transaction of ``store_many`` (and per ``progress`` call).
LOCAL_BATCH = 500

#: The registry id of the local engine.
LOCAL_ENGINE_ID = "local"

#: The error mapping of one-item stores (it holds no state: one serves every call).
_STORING = sqlite_errors("storing items")

_DESCRIPTOR = EngineDescriptor(
    id=LOCAL_ENGINE_ID,
    label="Local (SQLite)",
    description="Memory in one SQLite file on this machine: no server, no account.",
    hosted=False,
    needs_endpoint=False,
    needs_key=False,
    default_endpoint=None,
    fetch_modes=(FetchMode.KEYWORD, FetchMode.VECTOR, FetchMode.HYBRID),
    consolidation=Consolidation.ON_DEMAND,
)


def local_descriptor() -> EngineDescriptor:
    """What the local engine is and offers (the registry lists it under ``local``)."""
    return _DESCRIPTOR


class LocalEngine(EngineSessions, MemoryEngine):
    """The embedded engine: SQLite (stdlib ``sqlite3``), FTS5 where the build has it.

    ``path`` is a database file (created, with its folder, when missing) or
    ``":memory:"`` for a private database that lives as long as the engine.
    ``tenant`` is a hidden partition: engines with different tenants on one
    file never see or touch each other's items. One engine may be shared by
    any number of threads; several processes may use one file (WAL mode).

    ``embedder`` makes the vectors of the ``vector`` and ``hybrid`` modes: an
    :class:`~cortex_memory.local.embedders.Embedder`, or a name (``"ngram"``,
    the default, character n-gram similarity; ``"semantic"``, the offline
    model of the ``[semantic]`` extra; ``"module:factory"``).

    Keyword-only tuning: ``timeout`` is SQLite's busy timeout in seconds (how
    long a write waits for another writer before ``UnavailableError``);
    ``use_fts=False`` ranks keywords without FTS5 even when the build has it
    (the documented fallback); ``pool_size`` caps the connections to a file;
    ``vector_backend`` is ``"auto"`` (NumPy when it can be imported),
    ``"numpy"`` or ``"python"`` (bounded candidates, no NumPy).

    ``store_many`` writes :data:`LOCAL_BATCH` items per transaction. Each item
    is all or nothing; if one fails, those before it stay stored and the
    error's ``receipts`` lists every item stored by the call.
    """

    # -- what the engine is ----------------------------------------------------

    def descriptor(self) -> EngineDescriptor:
        """Id ``local``: keyword, vector and hybrid fetch; consolidation on demand."""
        return _DESCRIPTOR

    def health(self, *, deadline: DeadlineLike = None) -> EngineHealth:
        """``ok`` when the database opens and reads; ``down`` with the reason otherwise.

        Never raises: a deadline that passes first gives ``degraded``.
        """
        bound = Deadline.of(deadline)
        try:
            with self._session("checking health", bound) as conn:
                conn.execute("SELECT count(*) FROM engine_info").fetchone()
        except UnavailableError as exc:
            return EngineHealth.degraded(exc.message)
        except Error as exc:
            return EngineHealth.down(exc.message)
        except Exception as exc:  # health never raises
            return EngineHealth.down(f"the local database cannot be read ({type(exc).__name__})")
        return EngineHealth.ok()

    # -- writes ------------------------------------------------------------------

    def store(
        self,
        item: StoreItem,
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        deadline: DeadlineLike = None,
    ) -> StoreReceipt:
        """Store ``item`` (id = fingerprint); the same item again is a replay.

        A write is visible as soon as it returns, so ``ACCEPTED`` is served as
        ``VISIBLE``. With ``replace``, the other versions of the item's source
        are removed in the same transaction (``receipt.replaced`` lists them).
        """
        if not isinstance(item, StoreItem):
            raise TypeError(f"store takes a StoreItem, not {type(item).__name__}")
        if wait is not WaitFor.VISIBLE:
            _check_wait(wait)
        item.validate()
        batch = (item,)
        if replace or deadline is not None:
            bound = Deadline.of(deadline)
            if replace or bound.bounded:
                return self._write_batch(batch, replace, bound)[0]
        # The common case (a script's or a GUI's note) takes the shortest way:
        # no replace rules, no deadline to watch, one item (see local/single.py).
        with _STORING:
            prepared = self._vectors.prepare(batch)
            with self._pool.connection() as conn:
                self._ensure_ready(conn)
                receipt = single.store_one(
                    conn, self._tenant, prepared[0], fts=self._fts, model=self._vectors.model
                )
                if receipt is not None:
                    if not receipt.replayed and self._count_writes(1):
                        refresh_statistics_quietly(conn)
                    return receipt
        return self._write_batch(batch, replace, Deadline.of(deadline), prepared)[0]

    _store_batch_size = LOCAL_BATCH

    def _batch_store(self, *, replace: bool, wait: WaitFor, deadline: Deadline) -> BatchStore:
        """Each batch of :data:`LOCAL_BATCH` items is written in one transaction.

        Each item is all or nothing; if one fails, those before it stay stored
        and the error's ``receipts`` lists every item stored by the call.
        """
        _check_wait(wait)
        return lambda batch: self._write_batch(batch, replace, deadline)

    def _write_batch(
        self,
        batch: Tuple[StoreItem, ...],
        replace: bool,
        deadline: Deadline,
        prepared: Optional[List[Prepared]] = None,
    ) -> List[StoreReceipt]:
        """Write one validated batch in one transaction (see :func:`writes.store_batch`);
        ``prepared``: the batch already prepared."""
        replacing = ReplaceBatch.of(batch) if replace else None
        if deadline.bounded:  # before the embedder's work, which nothing interrupts
            deadline.check(bounded_where("storing items"))
        if prepared is None:
            with sqlite_errors("storing items"):
                prepared = self._vectors.prepare(batch)
        kept: List[StoreReceipt] = []
        try:
            with self._session("storing items", deadline) as conn:
                receipts = writes.store_batch(
                    conn, self._tenant, prepared, fts=self._fts,
                    model=self._vectors.model, replacing=replacing, kept=kept,
                )
                if self._count_writes(sum(1 for r in receipts if not r.replayed)):
                    refresh_statistics_quietly(conn)
        except Error as err:
            err.receipts = (*kept, *err.receipts)
            raise
        return receipts

    def forget(self, target: ForgetTarget, *, deadline: DeadlineLike = None) -> ForgetReport:
        """By ids: wherever they live (sandboxes too). By filter: inside its reach."""
        if not isinstance(target, ForgetTarget):
            raise TypeError(f"forget takes a ForgetTarget, not {type(target).__name__}")
        target.validate()
        with self._session("forgetting items", Deadline.of(deadline)) as conn:
            if isinstance(target, ForgetIds):
                count = writes.forget_ids(conn, self._tenant, target.ids, fts=self._fts)
            elif isinstance(target, ForgetFilter):
                count = writes.forget_filter(conn, self._tenant, target.filter, fts=self._fts)
            else:
                raise TypeError(f"unknown forget target {type(target).__name__}")
        return ForgetReport(count)

    def forget_within(
        self, ids: Iterable[ItemId], reach: Reach, *, deadline: DeadlineLike = None
    ) -> ForgetReport:
        """Forget ``ids`` only where ``reach`` admits them, in one transaction."""
        unique = forget_within_ids(ids)
        if not isinstance(reach, Reach):
            raise TypeError(f"forget_within takes a Reach, not {type(reach).__name__}")
        with self._session("forgetting items", Deadline.of(deadline)) as conn:
            count = writes.forget_within(conn, self._tenant, unique, reach, fts=self._fts)
        return ForgetReport(count)

    def erase(self, request: EraseRequest, *, deadline: DeadlineLike = None) -> EraseReport:
        """Hard-delete by node(s) and kinds (``inherit`` is ignored: never upwards)."""
        request.validate()
        with self._session("erasing items", Deadline.of(deadline)) as conn:
            scopes = writes.erase_reach(
                conn, self._tenant, request.reach, request.kinds, fts=self._fts
            )
        return EraseReport(scopes)

    # -- reads -------------------------------------------------------------------

    def list(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        """The items the filter admits in insertion order (≤ 1000 per page, score 0.0)."""
        request.validate()
        with self._session("listing items", Deadline.of(deadline)) as conn:
            return reads.list_page(
                conn, self._tenant, request.filter, request.cursor, request.limit
            )

    def list_preview(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        """Like :meth:`list`, with each text cut to its first 512 characters."""
        request.validate()
        with self._session("listing items", Deadline.of(deadline)) as conn:
            return reads.list_page(
                conn, self._tenant, request.filter, request.cursor, request.limit,
                preview=True,
            )

    def export(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ExportPage:
        """The items the filter admits, whole, paged like :meth:`list`."""
        request.validate()
        with self._session("exporting items", Deadline.of(deadline)) as conn:
            return reads.export_page(
                conn, self._tenant, request.filter, request.cursor, request.limit
            )

    def get(self, request: GetRequest, *, deadline: DeadlineLike = None) -> builtins.list[Hit]:
        """Whole items by id in the order asked; unknown or out-of-reach ids left out."""
        request.validate()
        with self._session("reading items", Deadline.of(deadline)) as conn:
            return reads.get_hits(conn, self._tenant, request.ids, request.reach)

    def explore(self, request: ExploreRequest, *, deadline: DeadlineLike = None) -> ExplorePage:
        """Facet counts over the first ``scan_limit`` items the filter admits."""
        request.validate()
        with self._session("exploring items", Deadline.of(deadline)) as conn:
            return explore_sql(conn, self._tenant, request)

    def fetch(self, request: FetchRequest, *, deadline: DeadlineLike = None) -> FetchPage:
        """Rank the items the filter admits (keyword, vector or hybrid), best first."""
        _DESCRIPTOR.ensure_mode(request.mode)
        request.validate()
        bound = Deadline.of(deadline)
        offset = reads.offset_of(request.cursor)
        belief_query = request.beliefs > 0
        query = self._vectors.query(
            request.query, FetchMode.HYBRID if belief_query else request.mode
        )


        def read(conn: sqlite3.Connection, use_fts: bool) -> FetchPage:
            # A keyword ranking never looks at the vectors: no space to build.
            keyword = request.mode is FetchMode.KEYWORD
            pairs, cursor, _ranking = reads.ranked_hits(
                conn, self._tenant, request.mode, query, request.filter,
                request.refers_to, offset, request.limit, use_fts=use_fts,
                space=None if keyword else self._vectors.space(ITEMS),
            )
            beliefs: builtins.list[Hit] = []
            if belief_query:
                beliefs = beliefs_layer.read(
                    conn, self._tenant, request.filter.reach, query,
                    min(request.beliefs, reads.MAX_PAGE),
                    use_fts=use_fts, space=self._vectors.space(BELIEFS),
                )
            return reads.fetch_page([hit for hit, _ in pairs], cursor, beliefs)

        return self._ranked_call("fetching items", bound, read)

    def recall(self, request: RecallRequest, *, deadline: DeadlineLike = None) -> RecallAnswer:
        """An extractive answer: the best sentences of the best items, with citations."""
        request.validate()
        bound = Deadline.of(deadline)
        query = self._vectors.query(request.question, FetchMode.HYBRID)

        def read(
            conn: sqlite3.Connection, use_fts: bool
        ) -> Tuple[builtins.list[Tuple[Hit, str]], reads.Ranking]:
            pairs, _cursor, ranking = reads.ranked_hits(
                conn, self._tenant, FetchMode.HYBRID, query, request.filter,
                request.refers_to, 0, request.limit, use_fts=use_fts,
                space=self._vectors.space(ITEMS),
            )
            return pairs, ranking

        with self._session("recalling", bound) as conn:
            pairs, ranking = self._ranked_read(conn, read)
            ranked = reads.items_of(pairs)
            follow = replies(conn, self._tenant, request.filter, ranked)
        weights = reads.term_rarity(query, ranking)
        vectors = self._vectors
        return answer(query, ranked, vectors.embedder, vectors.floor, weights, follow)

    # -- beliefs -----------------------------------------------------------------

    def consolidate(
        self, request: ConsolidateRequest, *, deadline: DeadlineLike = None
    ) -> ConsolidateReceipt:
        """Distil beliefs from the items in reach now; answers ``completed``."""
        request.validate()
        with self._session("consolidating", Deadline.of(deadline)) as conn:
            return beliefs_layer.build(
                conn, self._tenant, request,
                fts=self._fts, embedder=self._vectors.writer, model=self._vectors.model,
            )

    def beliefs(
        self, request: BeliefsRequest, *, deadline: DeadlineLike = None
    ) -> builtins.list[Hit]:
        """Beliefs at nodes the reach admits: ranked by the query, or most confident
        first, then newest."""
        request.validate()
        bound = Deadline.of(deadline)
        query = None
        if request.query is not None:
            query = self._vectors.query(request.query, FetchMode.HYBRID)


        def read(conn: sqlite3.Connection, use_fts: bool) -> builtins.list[Hit]:
            return beliefs_layer.read(
                conn, self._tenant, request.reach, query,
                min(request.limit, reads.MAX_PAGE),
                use_fts=use_fts, space=self._vectors.space(BELIEFS),
            )

        return self._ranked_call("reading beliefs", bound, read)

def _check_wait(wait: object) -> None:
    if not isinstance(wait, WaitFor):
        raise TypeError(f"wait must be a WaitFor, not {type(wait).__name__}")

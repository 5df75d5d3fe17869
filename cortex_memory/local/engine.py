"""``LocalEngine``: the whole engine contract on one SQLite file (or in memory).

Every public method validates its request first (the contract's rule), then
borrows a connection from the pool for the length of the call, bounded by the
call's ``deadline=`` when it has one (:mod:`.bounded`). The SQL lives in the
modules next to this one: ``writes`` (store, forget, erase), ``reads`` (list,
export, get, fetch), ``explore``, ``consolidate`` and ``recall``.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import sqlite3
import threading
from typing import Callable, Iterable, Iterator, List, Optional, Tuple, TypeVar, Union

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
    validate_each,
)
from cortex_memory.contract.bulk import BatchStore
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.replacing import ReplaceBatch
from cortex_memory.errors import Error, InvalidRequestError, UnavailableError
from cortex_memory.local import consolidate as beliefs_layer
from cortex_memory.local import reads, writes
from cortex_memory.local.bounded import bounded
from cortex_memory.local.bounded import where as bounded_where
from cortex_memory.local.connections import (
    ConnectionPool,
    open_connection,
    read_transaction,
    sqlite_errors,
    write_transaction,
)
from cortex_memory.local.corpus import BELIEFS, ITEMS
from cortex_memory.local.embedders import Embedder
from cortex_memory.local.explore import explore as explore_sql
from cortex_memory.local.files import MEMORY, check_path, shown, warn_if_shared
from cortex_memory.local.lexical import StaleIndex
from cortex_memory.local.recall import answer
from cortex_memory.local.replies import replies
from cortex_memory.local.schema import (
    ensure_schema,
    fts5_available,
    rebuild_fts,
    refresh_statistics,
)
from cortex_memory.local.space import Vectors

__all__ = ["LOCAL_BATCH", "LOCAL_ENGINE_ID", "LocalEngine", "local_descriptor"]

_log = logging.getLogger(__name__)

#: New items between two checks of the planner statistics.
_STATS_EVERY = 2000
#: Times a read rebuilds a keyword index that keeps going stale under it.
_REBUILDS = 3

_T = TypeVar("_T")

#: Items per write transaction of ``store_many`` (and per ``progress`` call).
LOCAL_BATCH = 500

#: The registry id of the local engine.
LOCAL_ENGINE_ID = "local"

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


class LocalEngine(MemoryEngine):
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

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        tenant: str = "default",
        timeout: float = 10.0,
        use_fts: bool = True,
        pool_size: int = 4,
        embedder: Union[Embedder, str, None] = None,
        vector_backend: str = "auto",
    ) -> None:
        fspath = check_path(path, "LocalEngine")
        if not isinstance(tenant, str):
            raise TypeError(f"LocalEngine tenant must be a str, not {type(tenant).__name__}")
        if not tenant.strip():
            raise InvalidRequestError("a local tenant must not be blank")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"LocalEngine timeout must be a number, not {type(timeout).__name__}")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int):
            raise TypeError(f"LocalEngine pool_size must be an int, not {type(pool_size).__name__}")
        if not timeout >= 0:
            raise InvalidRequestError("a local busy timeout must be zero or more seconds")
        if pool_size < 1:
            raise InvalidRequestError("a local connection pool holds at least one connection")
        if not fspath:
            raise InvalidRequestError("a local database path must not be empty")
        self._vectors = Vectors(embedder, vector_backend, tenant)
        self._path = fspath
        self._tenant = tenant
        self._timeout = float(timeout)
        self._want_fts = bool(use_fts)
        self._memory = self._path == MEMORY
        self._pool = ConnectionPool(self._connect, 1 if self._memory else pool_size)
        self._init_lock = threading.Lock()
        self._ready = False
        self._fts = False
        self._written = 0  # items written since statistics were last checked

    def __repr__(self) -> str:
        return f"LocalEngine({self._path!r})"

    # -- connections -----------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return open_connection(self._path, self._timeout)

    def _ensure_ready(self, conn: sqlite3.Connection) -> None:
        # The first call sets the file up (schema, WAL, FTS5, vectors of this
        # engine's model); later calls only take the lock to read the flag.
        with self._init_lock:
            if self._ready:
                return
            fts = self._want_fts and fts5_available(conn)
            ensure_schema(
                conn, use_fts=fts, memory=self._memory, name=shown(self._path),
                timeout=self._timeout,
            )
            warn_if_shared(self._path, "local database")
            self._vectors.ready(conn, write_transaction)
            _refresh_statistics(conn)
            self._fts = fts
            self._ready = True
            _log.debug("local database ready (fts5: %s, vectors: %s)", fts,
                       self._vectors.embedder.model_id)

    @property
    def embedder(self) -> Embedder:
        """The embedder that makes this engine's vectors."""
        return self._vectors.embedder

    @contextlib.contextmanager
    def _session(
        self, action: str, deadline: Optional[Deadline] = None
    ) -> Iterator[sqlite3.Connection]:
        with sqlite_errors(action), self._pool.connection(deadline) as conn:
            if deadline is not None and deadline.bounded:
                with bounded(conn, deadline, action, self._timeout):
                    self._ensure_ready(conn)
                    yield conn
            else:  # the common case sets nothing on the connection
                self._ensure_ready(conn)
                yield conn

    def _ranked_read(
        self, conn: sqlite3.Connection, read: Callable[[sqlite3.Connection, bool], _T]
    ) -> _T:
        """``read(conn, use_fts)`` in one read transaction (one snapshot).

        The keyword index is checked in the same statement that reads its
        statistics; when another connection wrote without it (``use_fts=False``
        or a build without FTS5), the read stops, the index is rebuilt and the
        read runs again.
        """
        with self._init_lock:
            use_fts = self._fts
        for _attempt in range(_REBUILDS):
            try:
                with read_transaction(conn):
                    return read(conn, use_fts)
            except StaleIndex:
                rebuild_fts(conn)
        raise UnavailableError(
            "the local keyword index kept being written without (rebuilt "
            f"{_REBUILDS} times while reading); try again"
        )

    @property
    def uses_fts(self) -> bool:
        """True when keyword ranking runs on FTS5 (known once the database is open)."""
        with self._init_lock:
            return self._fts

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
        _check_wait(wait)
        batch = validate_each((item,))
        return self._write_batch(batch, replace, Deadline.of(deadline))[0]

    _store_batch_size = LOCAL_BATCH

    def _batch_store(self, *, replace: bool, wait: WaitFor, deadline: Deadline) -> BatchStore:
        """Each batch of :data:`LOCAL_BATCH` items is written in one transaction.

        Each item is all or nothing; if one fails, those before it stay stored
        and the error's ``receipts`` lists every item stored by the call.
        """
        _check_wait(wait)
        return lambda batch: self._write_batch(batch, replace, deadline)

    def _write_batch(
        self, batch: Tuple[StoreItem, ...], replace: bool, deadline: Deadline
    ) -> List[StoreReceipt]:
        """Write one validated batch in one transaction (see :func:`writes.store_batch`)."""
        replacing = ReplaceBatch.of(batch) if replace else None
        if deadline.bounded:  # before the embedder's work, which nothing interrupts
            deadline.check(bounded_where("storing items"))
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
                    _refresh_statistics(conn)
        except Error as err:
            err.receipts = (*kept, *err.receipts)
            raise
        return receipts

    def _count_writes(self, created: int) -> bool:
        """Count new items; True every :data:`_STATS_EVERY` (time to check statistics)."""
        with self._init_lock:
            self._written += created
            if self._written < _STATS_EVERY:
                return False
            self._written = 0
            return True

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
            pairs, cursor, _ranking = reads.ranked_hits(
                conn, self._tenant, request.mode, query, request.filter,
                request.refers_to, offset, request.limit, use_fts=use_fts,
                space=self._vectors.space(ITEMS),
            )
            beliefs: builtins.list[Hit] = []
            if belief_query:
                beliefs = beliefs_layer.read(
                    conn, self._tenant, request.filter.reach, query,
                    min(request.beliefs, reads.MAX_PAGE),
                    use_fts=use_fts, space=self._vectors.space(BELIEFS),
                )
            return FetchPage(tuple(hit for hit, _ in pairs), cursor, tuple(beliefs))

        with self._session("fetching items", bound) as conn:
            return self._ranked_read(conn, read)

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

        with self._session("reading beliefs", bound) as conn:
            return self._ranked_read(conn, read)

    def close(self) -> None:
        """Close every connection (busy ones as their calls finish); later calls fail."""
        self._pool.close()


def _refresh_statistics(conn: sqlite3.Connection) -> None:
    # Maintenance, not the caller's business: a busy or failing ANALYZE is
    # tried again later and never fails the call that triggered it.
    try:
        refresh_statistics(conn)
    except sqlite3.Error as exc:
        _log.info("planner statistics not refreshed: %s", exc)


def _check_wait(wait: object) -> None:
    if not isinstance(wait, WaitFor):
        raise TypeError(f"wait must be a WaitFor, not {type(wait).__name__}")

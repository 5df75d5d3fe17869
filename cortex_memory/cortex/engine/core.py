"""``CortexEngine``: the memory contract over CortexDB, on either wire (engine.md §3, §9.1).

The engine object is thin: it holds an :class:`~cortex_memory.cortex.engine.context.EngineContext`
(descriptor, wire, log, recency map) and hands each public call to its operation
module with a :class:`~cortex_memory.cortex.timing.Deadline` built from the call's
``deadline=`` keyword. Copies (``copy.copy`` and the ``with_*`` builders) share the
connection pool, the actor cache, the rate-limit pause and the recency map.
"""

from __future__ import annotations

import builtins
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from cortex_memory.contract.bulk import BatchStore
from cortex_memory.contract.consolidation import (
    BeliefsRequest,
    ConsolidateReceipt,
    ConsolidateRequest,
)
from cortex_memory.contract.defaults import forget_within_ids
from cortex_memory.contract.descriptor import Consolidation, EngineDescriptor, EngineHealth
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.erase import EraseReport, EraseRequest
from cortex_memory.contract.explore import ExplorePage, ExploreRequest
from cortex_memory.contract.forget import ForgetReport, ForgetTarget
from cortex_memory.contract.items import ItemId, StoreItem, StoreReceipt, validate_each
from cortex_memory.contract.limits import MAX_GET_IDS
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.replacing import ReplaceBatch
from cortex_memory.contract.requests import (
    FetchRequest,
    GetRequest,
    ListRequest,
    RecallRequest,
    WaitFor,
)
from cortex_memory.contract.responses import ExportPage, FetchPage, Hit, ListPage, RecallAnswer
from cortex_memory.cortex.descriptors import descriptor_for, direct_consolidation
from cortex_memory.cortex.engine import beliefs as _beliefs
from cortex_memory.cortex.engine import consolidate as _consolidate
from cortex_memory.cortex.engine import explore as _explore
from cortex_memory.cortex.engine import fetch as _fetch
from cortex_memory.cortex.engine import forget as _forget
from cortex_memory.cortex.engine import health as _health
from cortex_memory.cortex.engine import listing as _listing
from cortex_memory.cortex.engine import recall as _recall
from cortex_memory.cortex.engine import store as _store
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.recency import RecencyMap
from cortex_memory.cortex.log.read import Log
from cortex_memory.cortex.network import Network
from cortex_memory.cortex.timing import Deadline, DeadlineLike, Timing
from cortex_memory.cortex.transport.client import HttpClient
from cortex_memory.cortex.wire import CortexWire
from cortex_memory.credential import BearerSource, EngineCredential, required

__all__ = ["CortexEngine"]


class CortexEngine(MemoryEngine):
    """The CortexDB memory engine: Direct (``/v1/*``) or hosted (``/memory/*``).

    Build it with :meth:`direct`, :meth:`tinyhumans` or ``CortexEngine(wire,
    endpoint, credential, timing=..., network=...)``, where ``credential`` is an
    :class:`~cortex_memory.EngineCredential` (``static(key)`` or
    ``dynamic(source)``; ``NONE`` is a ``ConfigError``); ``network`` (a
    :class:`~cortex_memory.cortex.Network`) sets the proxy and TLS options, fixed
    for the engine and its copies. Any construction fault is ``ConfigError``.
    One engine is shared safely by many threads. Every public operation takes an
    optional ``deadline=`` (seconds, or a :class:`~cortex_memory.cortex.Deadline`)
    bounding the whole call; past it the call raises ``UnavailableError``.
    ``store_many`` stores 100 items per batch (the wire's write limit); an error
    part-way carries the receipts of the batches stored before it in ``err.receipts``.
    """

    __slots__ = ("_ctx",)

    _ctx: EngineContext

    def __init__(
        self,
        wire: CortexWire,
        endpoint: str,
        credential: EngineCredential,
        *,
        timing: Optional[Timing] = None,
        network: Optional[Network] = None,
    ) -> None:
        if not isinstance(credential, EngineCredential):
            raise TypeError(
                f"credential must be an EngineCredential, not {type(credential).__name__}"
            )
        if credential.is_none and isinstance(wire, CortexWire):  # HttpClient checks the wire
            required(credential, wire.value)
        client = HttpClient(wire, endpoint, credential, timing=timing, network=network)
        consolidation = (
            Consolidation.SCHEDULED if wire.hosted else direct_consolidation(client.origin)
        )
        self._ctx = EngineContext(
            descriptor_for(wire, consolidation), wire, Log(client), RecencyMap()
        )

    # -- constructors --------------------------------------------------------------------

    @classmethod
    def new(
        cls,
        wire: CortexWire,
        endpoint: str,
        credential: EngineCredential,
        *,
        timing: Optional[Timing] = None,
        network: Optional[Network] = None,
    ) -> CortexEngine:
        """The same as ``CortexEngine(wire, endpoint, credential, timing=..., network=...)``."""
        return cls(wire, endpoint, credential, timing=timing, network=network)

    @classmethod
    def direct(
        cls,
        endpoint: str,
        credential: EngineCredential,
        *,
        timing: Optional[Timing] = None,
        network: Optional[Network] = None,
    ) -> CortexEngine:
        """CortexDB's own API at ``endpoint`` (normally with ``EngineCredential.static(key)``)."""
        return cls(CortexWire.DIRECT, endpoint, credential, timing=timing, network=network)

    @classmethod
    def tinyhumans(
        cls,
        endpoint: str,
        source: Union[EngineCredential, BearerSource],
        *,
        timing: Optional[Timing] = None,
        network: Optional[Network] = None,
    ) -> CortexEngine:
        """The TinyHumans hosted API at ``endpoint``, authenticated by ``source``.

        ``source`` is an :class:`~cortex_memory.EngineCredential`, or a
        :class:`~cortex_memory.BearerSource` (the same as
        ``EngineCredential.dynamic(source)``): asked on every attempt.
        """
        if isinstance(source, EngineCredential):
            credential = source
        elif callable(getattr(source, "bearer", None)):
            credential = EngineCredential.dynamic(source)
        else:
            raise TypeError("source must be a BearerSource: an object with a bearer() method")
        return cls(CortexWire.TINYHUMANS, endpoint, credential, timing=timing, network=network)

    # -- identity, copies, lifecycle -----------------------------------------------------

    @property
    def wire(self) -> CortexWire:
        """The HTTP surface this engine talks to."""
        return self._ctx.wire

    @property
    def timing(self) -> Timing:
        """The timings in use."""
        return self._ctx.timing

    @property
    def proxy(self) -> Optional[str]:
        """The proxy requests go through (``scheme://host:port``, never credentials), or ``None``.

        Decided when the engine was built, from ``network=`` or the environment.
        """
        return self._ctx.client.proxy

    @property
    def context(self) -> EngineContext:
        """The shared state the operation modules receive (for extensions and tests)."""
        return self._ctx

    def _with(self, ctx: EngineContext) -> CortexEngine:
        clone = object.__new__(type(self))
        clone._ctx = ctx
        return clone

    def __copy__(self) -> CortexEngine:
        return self._with(self._ctx)

    def __deepcopy__(self, memo: Dict[int, object]) -> CortexEngine:
        # Still one family: the pool, caches and locks are shared, never duplicated.
        return self._with(self._ctx)

    def _with_client(self, client: HttpClient) -> CortexEngine:
        ctx = self._ctx
        return self._with(EngineContext(ctx.descriptor, ctx.wire, Log(client), ctx.recency))

    def with_timing(self, timing: Timing) -> CortexEngine:
        """A copy using ``timing`` (sharing pool, actor cache, pause and recency map)."""
        return self._with_client(self._ctx.client.with_timing(timing))

    def with_default_headers(self, headers: Mapping[str, str]) -> CortexEngine:
        """A copy sending exactly ``headers`` with every request (the whole set is replaced).

        Credential, framing and idempotency headers are refused (``ConfigError``).
        """
        return self._with_client(self._ctx.client.with_default_headers(headers))

    def with_consolidation(self, mode: Consolidation) -> CortexEngine:
        """A copy describing its consolidation as ``mode``.

        Direct takes ``on_demand`` or ``automatic``; hosted only ``scheduled``;
        anything else is ``ConfigError``.
        """
        ctx = self._ctx
        descriptor = descriptor_for(ctx.wire, mode)
        return self._with(EngineContext(descriptor, ctx.wire, ctx.log, ctx.recency))

    def close(self) -> None:
        """Close the shared pooled connections; later calls open new ones."""
        self._ctx.client.close()

    def __repr__(self) -> str:
        return f"CortexEngine(wire={self._ctx.wire.id!r}, endpoint={self._ctx.client.origin!r})"

    # -- the contract --------------------------------------------------------------------

    def descriptor(self) -> EngineDescriptor:
        """What this engine is; no I/O."""
        return self._ctx.descriptor

    def health(self, *, deadline: DeadlineLike = None) -> EngineHealth:
        """One authenticated probe: ``ok``; ``degraded`` when unavailable; ``down`` otherwise
        (a rejected credential: ``unauthorized: …``). Never raises."""
        return _health.health(self._ctx, Deadline.of(deadline))

    def store(
        self,
        item: StoreItem,
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        deadline: DeadlineLike = None,
    ) -> StoreReceipt:
        """Store one item; the same item again is a replay (same id, ``replayed``).

        With ``replace``, the other versions of the item's source are forgotten
        once it is stored (and listed, with ``VISIBLE``); ``receipt.replaced``
        lists them.
        """
        batch = validate_each((item,))
        if replace:
            ReplaceBatch.of(batch)  # refuses an item without a source identity
        return _store.store_one(self._ctx, item, wait, Deadline.of(deadline), replace=replace)

    def _batch_store(self, *, replace: bool, wait: WaitFor, deadline: Deadline) -> BatchStore:
        # A batch of 100 (the wire's write limit) goes out as one write where the
        # wire takes bulk writes; an error part-way carries the receipts so far.
        ctx = self._ctx
        return lambda batch: _store.store_many(ctx, batch, wait, deadline, replace=replace)

    def list(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        """Page through the items the filter admits (opaque cursor); scores are 0.0."""
        request.validate()
        return _listing.list_items(self._ctx, request, Deadline.of(deadline), preview=False)

    def list_preview(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        """Like :meth:`list`, taking long items from their first event (text may be cut)."""
        request.validate()
        return _listing.list_items(self._ctx, request, Deadline.of(deadline), preview=True)

    def get(self, request: GetRequest, *, deadline: DeadlineLike = None) -> builtins.list[Hit]:
        """Whole items by id, in the order asked; unknown or out-of-reach ids are omitted."""
        request.validate()
        return _listing.get_items(self._ctx, request, Deadline.of(deadline))

    def fetch(self, request: FetchRequest, *, deadline: DeadlineLike = None) -> FetchPage:
        """Rank the items the filter admits (``hybrid`` only), best first."""
        self._ctx.descriptor.ensure_mode(request.mode)
        request.validate()
        return _fetch.fetch(self._ctx, request, Deadline.of(deadline))

    def recall(self, request: RecallRequest, *, deadline: DeadlineLike = None) -> RecallAnswer:
        """Answer a question from the admitted items, with citations."""
        request.validate()
        return _recall.recall(self._ctx, request, Deadline.of(deadline))

    def forget(self, target: ForgetTarget, *, deadline: DeadlineLike = None) -> ForgetReport:
        """Forget by ids (everywhere, sandboxes included) or by filter (inside its reach)."""
        if not isinstance(target, ForgetTarget):
            raise TypeError(f"target must be a ForgetTarget, not {type(target).__name__}")
        target.validate()
        return _forget.forget(self._ctx, target, Deadline.of(deadline))

    def forget_within(
        self, ids: Iterable[ItemId], reach: Reach, *, deadline: DeadlineLike = None
    ) -> ForgetReport:
        """Forget ``ids`` only where ``reach`` admits them (get inside the reach, then forget)."""
        unique = forget_within_ids(ids)
        bound = Deadline.of(deadline)
        found: builtins.list[ItemId] = []
        for start in range(0, len(unique), MAX_GET_IDS):
            chunk = unique[start : start + MAX_GET_IDS]
            asked = set(chunk)
            for hit in self.get(GetRequest(tuple(chunk), reach), deadline=bound):
                if hit.id in asked:
                    asked.discard(hit.id)
                    found.append(hit.id)
        if not found:
            return ForgetReport(0)
        return self.forget(ForgetTarget.ids(found), deadline=bound)

    def explore(self, request: ExploreRequest, *, deadline: DeadlineLike = None) -> ExplorePage:
        """Count the admitted items by a facet."""
        request.validate()
        return _explore.explore(self._ctx, request, Deadline.of(deadline))

    def beliefs(
        self, request: BeliefsRequest, *, deadline: DeadlineLike = None
    ) -> builtins.list[Hit]:
        """Beliefs within the reach, as learning hits tagged ``belief``."""
        request.validate()
        return _beliefs.beliefs(self._ctx, request, Deadline.of(deadline))

    def consolidate(
        self, request: ConsolidateRequest, *, deadline: DeadlineLike = None
    ) -> ConsolidateReceipt:
        """Ask for a belief build (Direct, per held scope); hosted answers ``scheduled``."""
        request.validate()
        return _consolidate.consolidate(self._ctx, request, Deadline.of(deadline))

    def export(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ExportPage:
        """Not offered in this release: validates, then ``UnsupportedError``."""
        Deadline.of(deadline)
        return super().export(request)

    def erase(self, request: EraseRequest, *, deadline: DeadlineLike = None) -> EraseReport:
        """Not offered in this release: validates, then ``UnsupportedError``."""
        Deadline.of(deadline)
        return super().erase(request)

    def __reduce__(self) -> Any:
        raise TypeError("a CortexEngine holds live connections and cannot be pickled")

"""The remote memory backend: memories as learnings in any ``MemoryEngine``.

Each version of a memory is one learning at the store's namespace, tagged
with its key (:mod:`.keys`), so a key read back on another machine names the
same memory. Scans are the engine's ``fetch`` (hybrid when offered) over the
store's read reach, which by default is the namespace and its ancestors: the
authenticated namespace plus the team namespaces above it. Put and delete
write only at the store's own namespace and need the ``writer`` role.

Usage counters and probation live in a local :class:`~.sidecar.Sidecar`
keyed by (namespace, id); a memory first seen here gets ``created +
probation`` as its probation end, so every machine computes the same one.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.forget import ForgetTarget
from cortex_memory.contract.items import ItemKind, Learning, LearningKind
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import FetchMode, FetchRequest, ListRequest
from cortex_memory.contract.responses import Hit
from cortex_memory.errors import InvalidRequestError
from cortex_memory.tools.memory.decode import is_unicode
from cortex_memory.tools.memory.errors import (
    CONTENT_NOT_UNICODE,
    CONTENT_REJECTED,
    KEY_NOT_FOUND,
    WRITER_REQUIRED,
    MemoryRequestError,
    MemoryUnauthorizedError,
)
from cortex_memory.tools.memory.keys import (
    MEMORY_TAG,
    KeyTags,
    derive_key_id,
    key_tag,
    memory_tags,
    read_tags,
)
from cortex_memory.tools.memory.local import (
    DEFAULT_PROBATION,
    DEFAULT_THRESHOLD,
    now_ms,
    probation_ms,
)
from cortex_memory.tools.memory.records import (
    Backend,
    MemoryKey,
    MemoryRecord,
    MemoryStore,
    ScanCandidate,
    ScanResult,
    preview_of,
)
from cortex_memory.tools.memory.secrets import looks_like_secret
from cortex_memory.tools.memory.sidecar import Sidecar, Slot, Usage

__all__ = ["READER", "RemoteMemoryStore", "WRITER"]

READER = "reader"
WRITER = "writer"

_LIST_PAGE = 200
_FETCH_PER_CANDIDATE = 4  # stale versions may share a query's hits; dedupe needs slack
_LEARNINGS = (ItemKind.LEARNING,)

Found = Tuple[Hit, KeyTags]


class RemoteMemoryStore(MemoryStore):
    """Memories stored through ``engine`` at ``namespace``.

    ``role`` is ``"writer"`` (default) or ``"reader"`` (put and delete refused);
    ``reach`` is what scans and reads see (default ``Reach.of(namespace)``);
    ``sidecar`` is a path for the counters file or a :class:`Sidecar`
    (default: a private in-memory one). The store does not close the engine.
    """

    def __init__(
        self,
        engine: MemoryEngine,
        namespace: Union[Namespace, str],
        *,
        role: str = WRITER,
        reach: Optional[Reach] = None,
        sidecar: Union[Sidecar, str, None] = None,
        probation: timedelta = DEFAULT_PROBATION,
        threshold: float = DEFAULT_THRESHOLD,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        if not isinstance(engine, MemoryEngine):
            raise TypeError(f"engine must be a MemoryEngine, not {type(engine).__name__}")
        if role not in (READER, WRITER):
            raise ValueError("role must be 'reader' or 'writer'")
        ns = namespace if isinstance(namespace, Namespace) else Namespace.parse(namespace)
        self._engine = engine
        self._namespace = ns
        self._ns_text = str(ns)
        self._role = role
        self._reach = reach if reach is not None else Reach.of(ns)
        self._owns_sidecar = not isinstance(sidecar, Sidecar)
        self._sidecar = sidecar if isinstance(sidecar, Sidecar) else Sidecar(sidecar or ":memory:")
        self._probation_ms = probation_ms(probation)
        self._threshold = float(threshold)
        self._clock = clock

    def access(self) -> Backend:
        """``{source: "remote", namespace: <namespace>, role: <role>}``."""
        return Backend("remote", self._ns_text, self._role)

    # -- reads -------------------------------------------------------------------------

    def scan(self, query: str, limit: int) -> ScanResult:
        """Fetch memories for ``query`` across the read reach; keep the best ``limit``."""
        descriptor = self._engine.descriptor()
        mode = FetchMode.HYBRID
        if not descriptor.supports(mode) and descriptor.fetch_modes:
            mode = descriptor.fetch_modes[0]
        flt = MetaFilter(reach=self._reach, kinds=_LEARNINGS, tags_any=(MEMORY_TAG,))
        page = self._engine.fetch(FetchRequest(query, mode, limit * _FETCH_PER_CANDIDATE, flt))
        best: Dict[Slot, Found] = {}
        for hit in page.hits:
            tags = read_tags(hit.meta.tags)
            if tags is None or hit.score < self._threshold:
                continue
            slot = (str(hit.meta.namespace), tags.key_id)
            held = best.get(slot)
            if held is None or tags.version > held[1].version:
                best[slot] = (hit, tags)
        ranked = sorted(best.items(), key=lambda pair: -pair[1][0].score)[:limit]
        if not ranked:
            return ScanResult(True)
        self._sidecar.scanned(
            ((slot, self._probation_end(tags)) for slot, (_, tags) in ranked), self._clock()
        )
        return ScanResult(
            False,
            tuple(
                ScanCandidate(MemoryKey(tags.key_id, tags.version, slot[0]),
                              preview_of(hit.text), hit.score)
                for slot, (hit, tags) in ranked
            ),
        )

    def read(self, keys: Sequence[MemoryKey]) -> List[MemoryRecord]:
        """The current records of ``keys`` inside the read reach, in the order asked."""
        by_ns: Dict[Namespace, List[MemoryKey]] = {}
        for key in keys:
            ns = self._key_namespace(key)
            if ns is not None and self._reach.admits(ns):
                by_ns.setdefault(ns, []).append(key)
        found: Dict[MemoryKey, Found] = {}
        for ns, wanted in by_ns.items():
            current = self._current(ns, {k.id for k in wanted})
            for key in wanted:
                held = current.get(key.id)
                if held is not None and held[1].version == key.version:
                    found[key] = held
        if not found:
            return []
        hits = [(key, found[key]) for key in keys if key in found]
        slots = [((str(h.meta.namespace), t.key_id), self._probation_end(t)) for _, (h, t) in hits]
        self._sidecar.used(slots, self._clock())
        return self._records([(h, t) for _, (h, t) in hits])

    def list(self) -> List[MemoryRecord]:
        """Every current memory in the read reach (for hosts and tests; the tool never lists)."""
        latest: Dict[Slot, Found] = {}
        for hit, tags in self._listing(MetaFilter(reach=self._reach, kinds=_LEARNINGS,
                                                  tags_any=(MEMORY_TAG,))):
            slot = (str(hit.meta.namespace), tags.key_id)
            if slot not in latest or tags.version > latest[slot][1].version:
                latest[slot] = (hit, tags)
        return self._records(list(latest.values()))

    # -- writes ------------------------------------------------------------------------

    def put(self, content: str, replace: Optional[MemoryKey] = None) -> MemoryRecord:
        """Store a new memory (on probation), or the next version of ``replace``."""
        self._require_writer()
        if not is_unicode(content):
            raise MemoryRequestError(CONTENT_NOT_UNICODE)
        if looks_like_secret(content):
            raise MemoryRequestError(CONTENT_REJECTED)
        now = self._clock()
        stale: List[str] = []
        if replace is None:
            first = self._learning(content, memory_tags(1, now, now), now)
            key_id, version, created = derive_key_id(first.fingerprint()), 1, now
        else:
            versions = self._own_versions(replace)
            current = max(versions, key=lambda found: found[1].version)[1]
            key_id, version, created = replace.id, current.version + 1, current.created_ms
            stale = [hit.id for hit, _ in versions]
        item = self._learning(content, memory_tags(version, created, now, key_id), now)
        receipt = self._engine.store(item)
        if stale:
            # The new version is stored first, so a failure here leaves an extra
            # old version that reads skip (they take the highest), never a gap.
            self._engine.forget(ForgetTarget.ids([i for i in stale if i != receipt.id]))
        slot = (self._ns_text, key_id)
        tags = KeyTags(key_id, version, created, now)
        if replace is None:
            self._sidecar.start(slot, self._probation_end(tags))
        else:
            self._sidecar.ensure(slot, self._probation_end(tags))
        usage = self._sidecar.usage([slot]).get(slot, Usage())
        return _record(MemoryKey(key_id, version, self._ns_text), content, tags, usage)

    def delete(self, key: MemoryKey) -> None:
        """Forget every version of the memory ``key`` names (it must be the current one)."""
        self._require_writer()
        versions = self._own_versions(key)
        self._engine.forget(ForgetTarget.ids([hit.id for hit, _ in versions]))
        self._sidecar.forget((self._ns_text, key.id))

    def close(self) -> None:
        """Close the sidecar when this store opened it (the engine stays open)."""
        if self._owns_sidecar:
            self._sidecar.close()

    # -- helpers -----------------------------------------------------------------------

    def _require_writer(self) -> None:
        if self._role != WRITER:
            raise MemoryUnauthorizedError(WRITER_REQUIRED)

    def _key_namespace(self, key: MemoryKey) -> Optional[Namespace]:
        if key.namespace is None:
            return self._namespace
        try:
            return Namespace.parse(key.namespace)
        except InvalidRequestError:
            return None

    def _own_versions(self, key: MemoryKey) -> List[Found]:
        """Every stored version of ``key`` at the own namespace; the newest must match it."""
        if self._key_namespace(key) != self._namespace:
            raise MemoryRequestError(KEY_NOT_FOUND)
        versions = [
            found
            for found in self._listing(self._key_filter(self._namespace, {key.id}))
            if found[1].key_id == key.id
        ]
        if not versions or max(t.version for _, t in versions) != key.version:
            raise MemoryRequestError(KEY_NOT_FOUND)
        return versions

    def _current(self, ns: Namespace, ids: Iterable[int]) -> Dict[int, Found]:
        wanted = set(ids)
        latest: Dict[int, Found] = {}
        for hit, tags in self._listing(self._key_filter(ns, wanted)):
            if tags.key_id in wanted and (
                tags.key_id not in latest or tags.version > latest[tags.key_id][1].version
            ):
                latest[tags.key_id] = (hit, tags)
        return latest

    @staticmethod
    def _key_filter(ns: Namespace, ids: Iterable[int]) -> MetaFilter:
        tags = tuple(sorted(key_tag(i) for i in ids))
        return MetaFilter(reach=Reach.exact(ns), kinds=_LEARNINGS, tags_any=tags)

    def _listing(self, flt: MetaFilter) -> Iterable[Found]:
        cursor: Optional[str] = None
        while True:
            page = self._engine.list(ListRequest(flt, _LIST_PAGE, cursor))
            for hit in page.items:
                tags = read_tags(hit.meta.tags)
                if tags is not None:
                    yield hit, tags
            if page.next_cursor is None or page.next_cursor == cursor:
                return
            cursor = page.next_cursor

    def _learning(self, content: str, tags: Tuple[str, ...], updated: int) -> Learning:
        meta = MemoryMeta(
            namespace=self._namespace,
            source=Source(SourceKind.AGENT),
            tags=tags,
            observed_at=datetime.fromtimestamp(updated / 1000, tz=timezone.utc),
        )
        return Learning(content, LearningKind.OTHER, 1.0, meta=meta)

    def _probation_end(self, tags: KeyTags) -> int:
        return tags.created_ms + self._probation_ms

    def _records(self, found: List[Found]) -> List[MemoryRecord]:
        slots = [(str(hit.meta.namespace), tags.key_id) for hit, tags in found]
        usage = self._sidecar.usage(slots)
        return [
            _record(
                MemoryKey(tags.key_id, tags.version, slot[0]),
                hit.text,
                tags,
                usage.get(slot, Usage(probation_until_ms=self._probation_end(tags))),
            )
            for slot, (hit, tags) in zip(slots, found)
        ]


def _record(key: MemoryKey, content: str, tags: KeyTags, usage: Usage) -> MemoryRecord:
    return MemoryRecord(
        key,
        content,
        tags.created_ms,
        tags.updated_ms,
        usage.last_scanned_at_ms,
        usage.scan_count,
        usage.last_used_at_ms,
        usage.use_count,
        usage.probation_until_ms,
    )

"""What the memory tool works with: keys, records, backends, scans, and the store contract.

A :class:`MemoryStore` is one backend (local SQLite, or remote over any
``MemoryEngine``). The tool validates and authorizes; the store ranks, reads,
writes and counts. Every value here is frozen and turns into the JSON the
published output schema describes.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cortex_memory.tools.memory.schemas import MAX_PREVIEW_CHARS

__all__ = [
    "Backend",
    "MemoryKey",
    "MemoryRecord",
    "MemoryStore",
    "ScanCandidate",
    "ScanResult",
    "preview_of",
]


@dataclass(frozen=True)
class MemoryKey:
    """The stable name of one version of one memory ↔ ``{id, version, namespace?}``.

    Local keys have no namespace; remote keys name the engine namespace the
    memory lives at.
    """

    id: int
    version: int
    namespace: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """``{id, version, namespace?}`` (namespace omitted when None)."""
        out: Dict[str, Any] = {"id": self.id, "version": self.version}
        if self.namespace is not None:
            out["namespace"] = self.namespace
        return out


@dataclass(frozen=True)
class Backend:
    """Which backend answered ↔ ``{source, namespace, role}``.

    ``source`` is ``"local"`` or ``"remote"``; a local backend has no namespace
    and no role; a remote one names its namespace and its credential's role
    (``"reader"`` or ``"writer"``).
    """

    source: str
    namespace: Optional[str] = None
    role: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        """``{source, namespace, role}``; all three always written."""
        return {"source": self.source, "namespace": self.namespace, "role": self.role}


@dataclass(frozen=True)
class MemoryRecord:
    """One memory with its timestamps (milliseconds since the epoch) and usage counters."""

    key: MemoryKey
    content: str
    created_at_ms: int
    updated_at_ms: int
    last_scanned_at_ms: Optional[int] = None
    scan_count: int = 0
    last_used_at_ms: Optional[int] = None
    use_count: int = 0
    probation_until_ms: Optional[int] = None

    def __repr__(self) -> str:
        # Memory content never lands in a log line or a traceback by accident.
        return (
            f"MemoryRecord(key={self.key!r}, content=<{len(self.content)} chars>, "
            f"created_at_ms={self.created_at_ms}, updated_at_ms={self.updated_at_ms})"
        )

    def to_json(self) -> Dict[str, Any]:
        """Every field, in schema order; unset optional fields are written as null."""
        return {
            "key": self.key.to_json(),
            "content": self.content,
            "created_at_ms": self.created_at_ms,
            "updated_at_ms": self.updated_at_ms,
            "last_scanned_at_ms": self.last_scanned_at_ms,
            "scan_count": self.scan_count,
            "last_used_at_ms": self.last_used_at_ms,
            "use_count": self.use_count,
            "probation_until_ms": self.probation_until_ms,
        }


@dataclass(frozen=True)
class ScanCandidate:
    """A ranked scan hit: its key, a preview of at most 64 characters, and its score."""

    key: MemoryKey
    preview: str
    score: float

    def __repr__(self) -> str:
        return f"ScanCandidate(key={self.key!r}, score={self.score!r})"

    def to_json(self) -> Dict[str, Any]:
        """``{key, preview, score}``."""
        return {"key": self.key.to_json(), "preview": self.preview, "score": float(self.score)}


@dataclass(frozen=True)
class ScanResult:
    """A scan's answer: the candidates, or ``abstained`` when nothing was relevant enough."""

    abstained: bool
    candidates: Tuple[ScanCandidate, ...] = ()


def preview_of(content: str) -> str:
    """A one-line preview: whitespace runs collapsed, cut to 64 characters."""
    return " ".join(content.split())[:MAX_PREVIEW_CHARS]


class MemoryStore(abc.ABC):
    """One memory backend. Methods block; an instance is shared safely by many threads.

    Stores trust the tool for validation and authorization, but refuse
    secret-looking content themselves too, so a host that calls ``put``
    directly cannot store a credential either.
    """

    @abc.abstractmethod
    def access(self) -> Backend:
        """Which backend this is (its source, namespace and role)."""

    @abc.abstractmethod
    def scan(self, query: str, limit: int) -> ScanResult:
        """Rank memories against ``query``; bump the returned candidates' scan counters."""

    @abc.abstractmethod
    def read(self, keys: Sequence[MemoryKey]) -> List[MemoryRecord]:
        """The records for ``keys`` in the order asked (unknown keys left out); bump use."""

    @abc.abstractmethod
    def put(self, content: str, replace: Optional[MemoryKey] = None) -> MemoryRecord:
        """Store a new memory, or a new version of ``replace``; return its record."""

    @abc.abstractmethod
    def delete(self, key: MemoryKey) -> None:
        """Remove the memory ``key`` names (every version of it)."""

    def close(self) -> None:
        """Release what the store holds."""
        return

"""The local memory backend: one small SQLite table, no engine, no account.

Each row is one memory: its id (the row id, which is the key's ``id``), its
version, its content, its timestamps, its usage counters and the end of its
probation. Ids are never reused (``AUTOINCREMENT``), so a key read back later,
by another process on the same file, names the same memory or nothing. Local
keys have no ``namespace``.

Ranking is in process (:mod:`.scoring`): rows are read in pages, so a scan
holds at most a page plus the best ``limit`` candidates in memory.
"""

from __future__ import annotations

import heapq
import time
from datetime import timedelta
from typing import Callable, List, Optional, Sequence, Tuple

from cortex_memory.local.files import FileKind
from cortex_memory.tools._sqlite import MEMORY_PATH, Database, StrPath
from cortex_memory.tools.memory.decode import is_unicode
from cortex_memory.tools.memory.errors import (
    CONTENT_NOT_UNICODE,
    CONTENT_REJECTED,
    KEY_NOT_FOUND,
    MemoryRequestError,
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
from cortex_memory.tools.memory.scoring import QueryScorer
from cortex_memory.tools.memory.secrets import looks_like_secret

__all__ = ["DEFAULT_PROBATION", "DEFAULT_THRESHOLD", "LocalMemoryStore", "now_ms", "probation_ms"]

#: How long a new memory stays on probation unless the store is told otherwise.
DEFAULT_PROBATION = timedelta(days=7)
#: A scan abstains when its best score is below this.
DEFAULT_THRESHOLD = 0.2

_PAGE = 500
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    version INTEGER NOT NULL,
    content TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    last_scanned_at_ms INTEGER,
    scan_count INTEGER NOT NULL DEFAULT 0,
    last_used_at_ms INTEGER,
    use_count INTEGER NOT NULL DEFAULT 0,
    probation_until_ms INTEGER
)
"""
#: The store's kind of file (files from before application ids: this table only).
STORE_FILE = FileKind(
    "local memory store",
    1,
    frozenset({"memories"}),
    frozenset({"memories", "sqlite_sequence"}),
)
_SELECT_ONE = (
    "SELECT id, version, content, created_at_ms, updated_at_ms, last_scanned_at_ms, "
    "scan_count, last_used_at_ms, use_count, probation_until_ms FROM memories WHERE id = ?"
)
_SELECT_ALL = (
    "SELECT id, version, content, created_at_ms, updated_at_ms, last_scanned_at_ms, "
    "scan_count, last_used_at_ms, use_count, probation_until_ms FROM memories ORDER BY id"
)
_MAX_ROW_ID = 2**63 - 1

Row = Tuple[int, int, str, int, int, Optional[int], int, Optional[int], int, Optional[int]]


def now_ms() -> int:
    """The wall clock in whole milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def probation_ms(probation: timedelta) -> int:
    """A probation period in whole milliseconds (refusing a negative one)."""
    if not isinstance(probation, timedelta):
        raise TypeError(f"probation must be a timedelta, not {type(probation).__name__}")
    if probation < timedelta(0):
        raise ValueError("probation must not be negative")
    return probation // timedelta(milliseconds=1)


def _fits(key: MemoryKey) -> bool:
    # SQLite integers are 64-bit; a larger id or version names no row.
    return key.id <= _MAX_ROW_ID and key.version <= _MAX_ROW_ID


def _record(row: Row) -> MemoryRecord:
    return MemoryRecord(MemoryKey(row[0], row[1]), *row[2:])


class LocalMemoryStore(MemoryStore):
    """Memories in a local SQLite file (``":memory:"`` for a private, temporary one).

    ``probation`` is how long a new memory stays on probation (7 days by
    default); ``threshold`` is the score below which a scan abstains;
    ``clock`` returns the time in milliseconds (tests pass their own).
    """

    def __init__(
        self,
        path: StrPath = MEMORY_PATH,
        *,
        probation: timedelta = DEFAULT_PROBATION,
        threshold: float = DEFAULT_THRESHOLD,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._probation_ms = probation_ms(probation)
        self._threshold = float(threshold)
        self._clock = clock
        self._db = Database(path, _SCHEMA, kind=STORE_FILE)

    def access(self) -> Backend:
        """``{source: "local", namespace: null, role: null}``."""
        return Backend("local")

    def scan(self, query: str, limit: int) -> ScanResult:
        """Rank every memory against ``query``; keep the best ``limit`` above the threshold."""
        scorer = QueryScorer(query)
        best: List[Tuple[float, int, int, int, str]] = []  # (score, -id, id, version, preview)
        with self._db.reading() as cur:
            last_id = 0
            while True:
                cur.execute(
                    "SELECT id, version, content FROM memories WHERE id > ? ORDER BY id LIMIT ?",
                    (last_id, _PAGE),
                )
                rows = cur.fetchall()
                if not rows:
                    break
                for row_id, version, content in rows:
                    score = scorer.score(content)
                    if score < self._threshold:
                        continue
                    entry = (score, -row_id, row_id, version, preview_of(content))
                    if len(best) < limit:
                        heapq.heappush(best, entry)
                    elif entry > best[0]:
                        heapq.heapreplace(best, entry)
                last_id = rows[-1][0]
        ranked = sorted(best, reverse=True)
        if not ranked:
            return ScanResult(True)
        now = self._clock()
        with self._db.transaction() as cur:
            cur.executemany(
                "UPDATE memories SET scan_count = scan_count + 1, last_scanned_at_ms = ? "
                "WHERE id = ?",
                [(now, entry[2]) for entry in ranked],
            )
        return ScanResult(
            False,
            tuple(
                ScanCandidate(MemoryKey(row_id, version), preview, score)
                for score, _, row_id, version, preview in ranked
            ),
        )

    def read(self, keys: Sequence[MemoryKey]) -> List[MemoryRecord]:
        """The current records of ``keys``; a stale version or a namespaced key names nothing."""
        wanted = [k for k in keys if k.namespace is None and _fits(k)]
        if not wanted:
            return []
        now = self._clock()
        records: List[MemoryRecord] = []
        with self._db.transaction() as cur:
            for key in wanted:
                cur.execute(
                    "UPDATE memories SET use_count = use_count + 1, last_used_at_ms = ? "
                    "WHERE id = ? AND version = ?",
                    (now, key.id, key.version),
                )
                if cur.rowcount:
                    cur.execute(_SELECT_ONE, (key.id,))
                    records.append(_record(cur.fetchone()))
        return records

    def put(self, content: str, replace: Optional[MemoryKey] = None) -> MemoryRecord:
        """Insert a memory on probation, or give ``replace`` its next version."""
        if not is_unicode(content):
            raise MemoryRequestError(CONTENT_NOT_UNICODE)
        if looks_like_secret(content):
            raise MemoryRequestError(CONTENT_REJECTED)
        now = self._clock()
        with self._db.transaction() as cur:
            if replace is None:
                cur.execute(
                    "INSERT INTO memories (version, content, created_at_ms, updated_at_ms, "
                    "probation_until_ms) VALUES (1, ?, ?, ?, ?)",
                    (content, now, now, now + self._probation_ms),
                )
                row_id = cur.lastrowid
            else:
                self._check_key(replace)
                cur.execute(
                    "UPDATE memories SET version = version + 1, content = ?, updated_at_ms = ? "
                    "WHERE id = ? AND version = ?",
                    (content, now, replace.id, replace.version),
                )
                if not cur.rowcount:
                    raise MemoryRequestError(KEY_NOT_FOUND)
                row_id = replace.id
            cur.execute(_SELECT_ONE, (row_id,))
            return _record(cur.fetchone())

    def delete(self, key: MemoryKey) -> None:
        """Remove the memory; a stale version or an unknown id is ``KEY_NOT_FOUND``."""
        self._check_key(key)
        with self._db.transaction() as cur:
            cur.execute(
                "DELETE FROM memories WHERE id = ? AND version = ?", (key.id, key.version)
            )
            if not cur.rowcount:
                raise MemoryRequestError(KEY_NOT_FOUND)

    def list(self) -> List[MemoryRecord]:
        """Every memory, oldest first (for hosts and tests; the tool never lists)."""
        with self._db.reading() as cur:
            cur.execute(_SELECT_ALL)
            return [_record(row) for row in cur.fetchall()]

    def close(self) -> None:
        """Close the database file."""
        self._db.close()

    @staticmethod
    def _check_key(key: MemoryKey) -> None:
        if key.namespace is not None or not _fits(key):
            raise MemoryRequestError(KEY_NOT_FOUND)

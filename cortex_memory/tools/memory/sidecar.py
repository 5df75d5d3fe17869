"""The remote backend's local sidecar: usage counters and probation per (namespace, id).

A remote engine stores the memories; how often this machine scanned or used
them, and when their probation ends, is local bookkeeping kept in a small
SQLite file (``":memory:"`` by default). It holds no content: only the
namespace, the key id, two counters and three timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from cortex_memory.local.files import FileKind
from cortex_memory.tools._sqlite import MEMORY_PATH, Database, StrPath

__all__ = ["Sidecar", "Usage"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_usage (
    namespace TEXT NOT NULL,
    id INTEGER NOT NULL,
    last_scanned_at_ms INTEGER,
    scan_count INTEGER NOT NULL DEFAULT 0,
    last_used_at_ms INTEGER,
    use_count INTEGER NOT NULL DEFAULT 0,
    probation_until_ms INTEGER,
    PRIMARY KEY (namespace, id)
)
"""

#: The sidecar's kind of file (files from before application ids: this table only).
SIDECAR_FILE = FileKind(
    "memory sidecar", 1, frozenset({"memory_usage"}), frozenset({"memory_usage"})
)

_BUMP_SCAN = (
    "UPDATE memory_usage SET scan_count = scan_count + 1, last_scanned_at_ms = ? "
    "WHERE namespace = ? AND id = ?"
)
_BUMP_USE = (
    "UPDATE memory_usage SET use_count = use_count + 1, last_used_at_ms = ? "
    "WHERE namespace = ? AND id = ?"
)


@dataclass(frozen=True)
class Usage:
    """The counters of one memory as this machine knows them."""

    last_scanned_at_ms: Optional[int] = None
    scan_count: int = 0
    last_used_at_ms: Optional[int] = None
    use_count: int = 0
    probation_until_ms: Optional[int] = None


Slot = Tuple[str, int]  # (namespace, key id)


class Sidecar:
    """Counters and probation for remote memories, keyed by (namespace, id)."""

    def __init__(self, path: StrPath = MEMORY_PATH) -> None:
        self._db = Database(path, _SCHEMA, kind=SIDECAR_FILE)

    def start(self, slot: Slot, probation_until_ms: int) -> None:
        """Record a new memory's probation (counters at zero)."""
        with self._db.transaction() as cur:
            cur.execute(
                "INSERT INTO memory_usage (namespace, id, probation_until_ms) VALUES (?, ?, ?) "
                "ON CONFLICT (namespace, id) DO UPDATE SET "
                "probation_until_ms = excluded.probation_until_ms",
                (*slot, probation_until_ms),
            )

    def ensure(self, slot: Slot, probation_until_ms: int) -> None:
        """Create the row when missing (a memory first seen here), keeping an existing one."""
        with self._db.transaction() as cur:
            cur.execute(
                "INSERT OR IGNORE INTO memory_usage (namespace, id, probation_until_ms) "
                "VALUES (?, ?, ?)",
                (*slot, probation_until_ms),
            )

    def scanned(self, slots: Iterable[Tuple[Slot, int]], now_ms: int) -> None:
        """Bump the scan counter of each slot (given with its default probation end)."""
        self._bump(slots, now_ms, _BUMP_SCAN)

    def used(self, slots: Iterable[Tuple[Slot, int]], now_ms: int) -> None:
        """Bump the use counter of each slot (given with its default probation end)."""
        self._bump(slots, now_ms, _BUMP_USE)

    def _bump(self, slots: Iterable[Tuple[Slot, int]], now_ms: int, statement: str) -> None:
        rows = [(ns, key_id, probation) for (ns, key_id), probation in slots]
        if not rows:
            return
        with self._db.transaction() as cur:
            cur.executemany(
                "INSERT OR IGNORE INTO memory_usage (namespace, id, probation_until_ms) "
                "VALUES (?, ?, ?)",
                rows,
            )
            cur.executemany(statement, [(now_ms, ns, key_id) for ns, key_id, _ in rows])

    def usage(self, slots: Iterable[Slot]) -> Dict[Slot, Usage]:
        """What is known of each slot (slots never seen are left out)."""
        out: Dict[Slot, Usage] = {}
        with self._db.reading() as cur:
            for ns, key_id in slots:
                cur.execute(
                    "SELECT last_scanned_at_ms, scan_count, last_used_at_ms, use_count, "
                    "probation_until_ms FROM memory_usage WHERE namespace = ? AND id = ?",
                    (ns, key_id),
                )
                row = cur.fetchone()
                if row is not None:
                    out[(ns, key_id)] = Usage(*row)
        return out

    def forget(self, slot: Slot) -> None:
        """Drop a deleted memory's row."""
        with self._db.transaction() as cur:
            cur.execute("DELETE FROM memory_usage WHERE namespace = ? AND id = ?", slot)

    def close(self) -> None:
        """Close the sidecar file."""
        self._db.close()

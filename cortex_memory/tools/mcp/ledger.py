"""The write ledger: sessions, observation references, topics, handoff idempotency, relations.

A small SQLite file next to the local store (or ``":memory:"`` for tests).
What it holds, and why:

* ``sessions``: the session ids a host started (``start_session``); a write
  naming an unknown session is refused before any mutation;
* ``observations``: one row per stored item id; the row id is the local
  reference (``local_id``) and ``public_id`` is the deterministic UUID, so a
  relation target can be checked in either namespace; ``retired`` marks an
  item replaced through its topic;
* ``topics``: a digest of (project, scope, topic_key) → the current item id;
* ``handoffs``: (scope, digest of the idempotency key) → digest of the payload
  → observation row. It never stores the key or the payload itself;
* ``relations``: the handed-off relation and its opaque capability tuple
  (kept here, never in the item, so item ids stay stable).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
import uuid
from dataclasses import dataclass
from typing import Optional

from cortex_memory.contract.text import is_blank
from cortex_memory.errors import EngineError
from cortex_memory.local.files import FileKind
from cortex_memory.tools._sqlite import MEMORY_PATH, Database, StrPath
from cortex_memory.tools.mcp.contract import WriteValidationError

__all__ = [
    "HandoffRecord",
    "Ledger",
    "MAX_SESSION_ID_CHARS",
    "ObservationRow",
    "RelationRow",
    "public_id_of",
]

MAX_SESSION_ID_CHARS = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    started_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS observations (
    local_id INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL UNIQUE,
    public_id TEXT NOT NULL UNIQUE,
    retired INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS topics (
    topic_digest TEXT PRIMARY KEY,
    item_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS handoffs (
    scope TEXT NOT NULL,
    key_digest TEXT NOT NULL,
    payload_digest TEXT NOT NULL,
    local_id INTEGER NOT NULL REFERENCES observations (local_id),
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (scope, key_digest)
);
CREATE TABLE IF NOT EXISTS relations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_local_id INTEGER NOT NULL REFERENCES observations (local_id),
    target_local_id INTEGER NOT NULL REFERENCES observations (local_id),
    type TEXT NOT NULL,
    weight REAL,
    confidence REAL,
    reasoning TEXT,
    capability_json TEXT,
    created_at_ms INTEGER NOT NULL
)
"""


#: The ledger's kind of file (files from before application ids: these tables only).
LEDGER_FILE = FileKind(
    "write ledger",
    1,
    frozenset({"sessions", "observations"}),
    frozenset(
        {"sessions", "observations", "topics", "handoffs", "relations", "sqlite_sequence"}
    ),
)

_SELECT_OBSERVATION = {
    "local_id": "SELECT local_id, item_id, public_id, retired FROM observations "
    "WHERE local_id = ?",
    "item_id": "SELECT local_id, item_id, public_id, retired FROM observations "
    "WHERE item_id = ?",
    "public_id": "SELECT local_id, item_id, public_id, retired FROM observations "
    "WHERE public_id = ?",
}


def public_id_of(item_id: str) -> str:
    """The public reference of an item: ``uuid5(NAMESPACE_URL, "cortex-memory:item:" + id)``."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "cortex-memory:item:" + item_id))


def _key_digest(idempotency_key: str) -> str:
    data = ("cortex-memory:idempotency:" + idempotency_key).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class ObservationRow:
    """An observation the ledger knows: its local id, item id, public id, and retirement."""

    local_id: int
    item_id: str
    public_id: str
    retired: bool


@dataclass(frozen=True)
class HandoffRecord:
    """A recorded handoff: the payload digest and the observation it produced."""

    payload_digest: str
    observation: ObservationRow


@dataclass(frozen=True)
class RelationRow:
    """A relation as the ledger keeps it (the target resolved to its local row)."""

    target_local_id: int
    type: str
    weight: Optional[float] = None
    confidence: Optional[float] = None
    reasoning: Optional[str] = None
    capability_json: Optional[str] = None


class Ledger:
    """The write ledger over one SQLite file; safe to share between threads."""

    def __init__(self, path: StrPath = MEMORY_PATH) -> None:
        self._db = Database(path, _SCHEMA, kind=LEDGER_FILE)

    # -- sessions ------------------------------------------------------------------------

    def start_session(self, session_id: str) -> None:
        """Register ``session_id`` (again is fine); writes may then name it."""
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
        if is_blank(session_id) or len(session_id) > MAX_SESSION_ID_CHARS:
            raise WriteValidationError(
                f"a session id must be 1 to {MAX_SESSION_ID_CHARS} characters and not blank"
            )
        with self._db.transaction() as cur:
            cur.execute(
                "INSERT OR IGNORE INTO sessions (session_id, started_at_ms) VALUES (?, ?)",
                (session_id, _now_ms()),
            )

    def has_session(self, session_id: str) -> bool:
        """True when ``session_id`` was started."""
        with self._db.reading() as cur:
            cur.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,))
            return cur.fetchone() is not None

    # -- observations --------------------------------------------------------------------

    def remember(self, item_id: str) -> ObservationRow:
        """The row of ``item_id``, created (or un-retired) as the item is stored again."""
        with self._db.transaction() as cur:
            # Look first: an upsert would burn an AUTOINCREMENT id on every replay.
            row = self._row(cur, "item_id", item_id)
            if row is not None:
                if row.retired:
                    cur.execute(
                        "UPDATE observations SET retired = 0 WHERE local_id = ?", (row.local_id,)
                    )
                    row = ObservationRow(row.local_id, row.item_id, row.public_id, False)
                return row
            cur.execute(
                "INSERT INTO observations (item_id, public_id, created_at_ms) VALUES (?, ?, ?)",
                (item_id, public_id_of(item_id), _now_ms()),
            )
            row = self._row(cur, "item_id", item_id)
        if row is None:  # the insert above guarantees the row; refuse to invent one
            raise EngineError("write ledger lost an observation row")
        return row

    def by_local_id(self, local_id: int) -> Optional[ObservationRow]:
        """The observation with ``local_id``, if any."""
        with self._db.reading() as cur:
            return self._row(cur, "local_id", local_id)

    def by_public_id(self, public_id: str) -> Optional[ObservationRow]:
        """The observation with ``public_id``, if any."""
        with self._db.reading() as cur:
            return self._row(cur, "public_id", public_id)

    def by_item_id(self, item_id: str) -> Optional[ObservationRow]:
        """The observation stored as ``item_id``, if any."""
        with self._db.reading() as cur:
            return self._row(cur, "item_id", item_id)

    @staticmethod
    def _row(cur: sqlite3.Cursor, column: str, value: object) -> Optional[ObservationRow]:
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            return None
        cur.execute(_SELECT_OBSERVATION[column], (value,))
        row = cur.fetchone()
        if row is None:
            return None
        return ObservationRow(row[0], row[1], row[2], bool(row[3]))

    # -- topics ----------------------------------------------------------------------------

    def topic(self, topic_digest: str) -> Optional[str]:
        """The item currently holding the topic, if any."""
        with self._db.reading() as cur:
            cur.execute("SELECT item_id FROM topics WHERE topic_digest = ?", (topic_digest,))
            row = cur.fetchone()
            return None if row is None else str(row[0])

    def replace_topic(self, topic_digest: str, item_id: str, old_item_id: Optional[str]) -> None:
        """Point the topic at ``item_id``; retire ``old_item_id`` (now forgotten)."""
        with self._db.transaction() as cur:
            cur.execute(
                "INSERT INTO topics (topic_digest, item_id) VALUES (?, ?) "
                "ON CONFLICT (topic_digest) DO UPDATE SET item_id = excluded.item_id",
                (topic_digest, item_id),
            )
            if old_item_id is not None and old_item_id != item_id:
                cur.execute("UPDATE observations SET retired = 1 WHERE item_id = ?", (old_item_id,))

    # -- handoffs ----------------------------------------------------------------------------

    def handoff(self, scope: str, idempotency_key: str) -> Optional[HandoffRecord]:
        """The handoff recorded for (scope, key), if any."""
        with self._db.reading() as cur:
            cur.execute(
                "SELECT h.payload_digest, o.local_id, o.item_id, o.public_id, o.retired "
                "FROM handoffs h JOIN observations o ON o.local_id = h.local_id "
                "WHERE h.scope = ? AND h.key_digest = ?",
                (scope, _key_digest(idempotency_key)),
            )
            row = cur.fetchone()
        if row is None:
            return None
        return HandoffRecord(row[0], ObservationRow(row[1], row[2], row[3], bool(row[4])))

    def record_handoff(
        self,
        scope: str,
        idempotency_key: str,
        payload_digest: str,
        observation: ObservationRow,
        relation: Optional[RelationRow] = None,
    ) -> HandoffRecord:
        """Record a handoff (and its relation) once; answer what is recorded.

        When another writer recorded the same (scope, key) first, nothing is
        written and that record is returned, so the caller can replay or refuse.
        """
        now = _now_ms()
        with self._db.transaction() as cur:
            cur.execute(
                "INSERT OR IGNORE INTO handoffs "
                "(scope, key_digest, payload_digest, local_id, created_at_ms) "
                "VALUES (?, ?, ?, ?, ?)",
                (scope, _key_digest(idempotency_key), payload_digest, observation.local_id, now),
            )
            inserted = cur.rowcount == 1
            if inserted and relation is not None:
                cur.execute(
                    "INSERT INTO relations (source_local_id, target_local_id, type, weight, "
                    "confidence, reasoning, capability_json, created_at_ms) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        observation.local_id,
                        relation.target_local_id,
                        relation.type,
                        relation.weight,
                        relation.confidence,
                        relation.reasoning,
                        relation.capability_json,
                        now,
                    ),
                )
        if inserted:
            return HandoffRecord(payload_digest, observation)
        held = self.handoff(scope, idempotency_key)
        if held is None:  # the row that blocked the insert cannot vanish: rows are never deleted
            raise EngineError("write ledger lost a handoff row")
        return held

    def relations_of(self, local_id: int) -> int:
        """How many relations start at ``local_id`` (for hosts and tests)."""
        with self._db.reading() as cur:
            cur.execute("SELECT COUNT(*) FROM relations WHERE source_local_id = ?", (local_id,))
            return int(cur.fetchone()[0])

    def close(self) -> None:
        """Close the ledger file."""
        self._db.close()


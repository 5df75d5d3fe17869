"""``cortex_save`` and ``cortex_handoff`` over any ``MemoryEngine`` (tools.md §B).

:class:`MemoryWriter` turns decoded observations into stored items and write
results, with the ledger keeping sessions, references, topics and handoff
idempotency. Its ``save``/``handoff`` methods take the tools' raw arguments
and always answer a contract payload (success or error); ``write_save`` /
``write_handoff`` are the typed layer under them, raising on refusal.

Order of a write: decode (size first) → session check → (handoff: replay or
conflict) → relation target check → store → topic replacement → ledger.
Nothing is mutated before the checks pass. One lock serialises writes in this
process; the ledger's unique keys settle races between processes.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, Union

from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.forget import ForgetTarget
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import GetRequest
from cortex_memory.errors import (
    ConflictError,
    Error,
    InvalidRequestError,
    UnauthorizedError,
)
from cortex_memory.tools.mcp.contract import (
    CODE_CONFLICT,
    CODE_PERSISTENCE,
    MESSAGES,
    STATUS_CREATED,
    STATUS_REPLAYED,
    STATUS_UPDATED,
    HandoffConflictError,
    ObservationRef,
    PersistenceError,
    WriteResult,
    WriteValidationError,
    from_error,
    from_write_result,
)
from cortex_memory.tools.mcp.ledger import Ledger, ObservationRow, RelationRow
from cortex_memory.tools.mcp.observation import (
    HandoffRequest,
    Observation,
    Relation,
    decode_handoff,
    decode_save,
    to_item,
    topic_digest,
)

__all__ = ["LOCAL_REFERENCES", "MemoryWriter", "PUBLIC_REFERENCES"]

logger = logging.getLogger(__name__)

LOCAL_REFERENCES = "local"
PUBLIC_REFERENCES = "public"
_LOCAL_ENGINE_ID = "local"
_DEFAULT_SCOPE = "project"

_T = TypeVar("_T")


class MemoryWriter:
    """Durable writes for the two MCP tools over ``engine``, with ``ledger``.

    ``namespace`` is where observations are stored (default: the root).
    ``references`` is ``"local"`` (answer ``local_id``; accept only
    ``local_id`` relation targets) or ``"public"`` (answer ``public_id``);
    by default the local engine gets local references and every other engine
    public ones. The writer closes neither the engine nor the ledger.
    """

    def __init__(
        self,
        engine: MemoryEngine,
        ledger: Ledger,
        *,
        namespace: Union[Namespace, str, None] = None,
        references: Optional[str] = None,
    ) -> None:
        if not isinstance(engine, MemoryEngine):
            raise TypeError(f"engine must be a MemoryEngine, not {type(engine).__name__}")
        if not isinstance(ledger, Ledger):
            raise TypeError(f"ledger must be a Ledger, not {type(ledger).__name__}")
        if references is None:
            local = engine.descriptor().id == _LOCAL_ENGINE_ID
            references = LOCAL_REFERENCES if local else PUBLIC_REFERENCES
        if references not in (LOCAL_REFERENCES, PUBLIC_REFERENCES):
            raise ValueError("references must be 'local' or 'public'")
        if namespace is None:
            namespace = Namespace.root()
        elif isinstance(namespace, str):
            namespace = Namespace.parse(namespace)
        self._engine = engine
        self._ledger = ledger
        self._namespace = namespace
        self._local = references == LOCAL_REFERENCES
        self._lock = threading.Lock()

    @property
    def ledger(self) -> Ledger:
        """The ledger this writer keeps."""
        return self._ledger

    # -- the tools: arguments in, payload out ------------------------------------------------

    def save(self, arguments: object) -> Dict[str, Any]:
        """Run ``cortex_save``: a success payload or an error payload, never an exception."""
        try:
            return from_write_result(self.write_save(decode_save(arguments)))
        except Exception as exc:
            return self._lowered("cortex_save", exc)

    def handoff(self, arguments: object) -> Dict[str, Any]:
        """Run ``cortex_handoff``: a success payload or an error payload, never an exception."""
        try:
            return from_write_result(self.write_handoff(decode_handoff(arguments)))
        except Exception as exc:
            return self._lowered("cortex_handoff", exc)

    @staticmethod
    def _lowered(tool: str, exc: Exception) -> Dict[str, Any]:
        payload = from_error(exc)
        # The class and the code only: messages may quote what a backend said.
        level = logging.DEBUG if payload["error"]["code"] == "validation" else logging.WARNING
        logger.log(level, "%s failed: %s (%s)", tool, payload["error"]["code"],
                   type(exc).__name__)
        return payload

    # -- typed layer ----------------------------------------------------------------------

    def write_save(self, observation: Observation) -> WriteResult:
        """Store ``observation``: created, replayed (same observation) or updated (same topic)."""
        with self._lock:
            self._check_session(observation)
            row, status = self._store(observation)
            return WriteResult(self._ref(row), status)

    def write_handoff(self, request: HandoffRequest) -> WriteResult:
        """Record a handoff once per (scope, key): replay the same payload, refuse another."""
        scope = request.observation.scope or _DEFAULT_SCOPE
        with self._lock:
            self._check_session(request.observation)
            held = self._ledger.handoff(scope, request.idempotency_key)
            if held is not None:
                return self._replay_or_conflict(held.payload_digest, request, held.observation)
            target = self._relation_target(request.relation)
            row, status = self._store(request.observation)
            relation = None
            if request.relation is not None and target is not None:
                relation = _relation_row(request.relation, target, request.capability_json)
            held = self._ledger.record_handoff(
                scope, request.idempotency_key, request.digest, row, relation
            )
            if held.observation.local_id != row.local_id or held.payload_digest != request.digest:
                # Another process recorded this key between our check and our write.
                return self._replay_or_conflict(held.payload_digest, request, held.observation)
            return WriteResult(self._ref(row), status)

    # -- steps --------------------------------------------------------------------------------

    def _replay_or_conflict(
        self, held_digest: str, request: HandoffRequest, row: ObservationRow
    ) -> WriteResult:
        if held_digest != request.digest:
            raise HandoffConflictError(MESSAGES[CODE_CONFLICT])
        return WriteResult(self._ref(row), STATUS_REPLAYED)

    def _check_session(self, observation: Observation) -> None:
        session = observation.session_id
        if session is not None and not self._ledger.has_session(session):
            raise WriteValidationError("observation.session_id names no started session")

    def _relation_target(self, relation: Optional[Relation]) -> Optional[ObservationRow]:
        if relation is None:
            return None
        if self._local:
            if relation.target_local_id is None:
                raise WriteValidationError(
                    "the local runtime accepts only local_id relation targets"
                )
            row = self._ledger.by_local_id(relation.target_local_id)
        else:
            if relation.target_public_id is None:
                raise WriteValidationError("this runtime accepts only public_id relation targets")
            row = self._ledger.by_public_id(relation.target_public_id)
        if row is None or row.retired or not self._exists(row.item_id):
            raise WriteValidationError("relation.target names no existing observation")
        return row

    def _exists(self, item_id: str) -> bool:
        hits = self._call(
            lambda: self._engine.get(GetRequest((item_id,), Reach.exact(self._namespace)))
        )
        return any(hit.id == item_id for hit in hits)

    def _store(self, observation: Observation) -> Tuple[ObservationRow, str]:
        item = to_item(observation, self._namespace)
        item.validate()
        topic = topic_digest(observation)
        current = self._ledger.topic(topic) if topic is not None else None
        receipt = self._call(lambda: self._engine.store(item))
        status = STATUS_REPLAYED if receipt.replayed else STATUS_CREATED
        if current is not None and current != receipt.id:
            # Stored first, forgotten second: a failure in between leaves both
            # (the retry forgets), never neither.
            self._call(lambda: self._engine.forget(ForgetTarget.ids([current])))
            status = STATUS_UPDATED
        row = self._ledger.remember(receipt.id)
        if topic is not None:
            self._ledger.replace_topic(topic, row.item_id, current)
        return row, status

    def _call(self, operation: Callable[[], _T]) -> _T:
        try:
            return operation()
        except (InvalidRequestError, ConflictError, UnauthorizedError):
            raise
        except Error as exc:
            if self._local:
                # The local engine has no transport: whatever failed, it was the store.
                raise PersistenceError(MESSAGES[CODE_PERSISTENCE]) from exc
            raise

    def _ref(self, row: ObservationRow) -> ObservationRef:
        if self._local:
            return ObservationRef(local_id=row.local_id)
        return ObservationRef(public_id=row.public_id)


def _relation_row(
    relation: Relation, target: ObservationRow, capability_json: Optional[str]
) -> RelationRow:
    return RelationRow(
        target.local_id,
        relation.type,
        relation.weight,
        relation.confidence,
        relation.reasoning,
        capability_json,
    )


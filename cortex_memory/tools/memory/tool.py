"""``MemoryTool``: the bounded, explicit ``memory`` tool an agent loop hands to its model.

The tool is the policy; the store is the backend. On every call it decodes
the input (closed shapes, bounds first), then:

* **scan** ranks memories and, on success, arms exactly one put;
* **read** returns the records for exact keys;
* **put** asks the mutation authorizer, consumes the armed scan (an invalid
  scan arms nothing; a put that fails after this point has still used it),
  refuses secret-looking content, then stores or replaces;
* **delete** asks the authorizer, then removes the memory.

The armed flag belongs to the tool instance (the object the agent loop holds),
not to a session, and a lock guards it. The tool never logs memory content and
keeps none of it after the call returns.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Mapping, Optional, Protocol, Union

from cortex_memory.errors import Error
from cortex_memory.tools.memory.decode import (
    DeleteCall,
    PutCall,
    ReadCall,
    ScanCall,
    decode_call,
)
from cortex_memory.tools.memory.errors import (
    CONTENT_REJECTED,
    MUTATION_DENIED,
    ROOT_ONLY,
    SCAN_FIRST,
    MemoryRequestError,
    MemoryToolError,
    MemoryUnauthorizedError,
)
from cortex_memory.tools.memory.records import MemoryStore
from cortex_memory.tools.memory.schemas import (
    TOOL_DESCRIPTION,
    TOOL_NAME,
    input_schema,
    output_schema,
)
from cortex_memory.tools.memory.secrets import looks_like_secret

__all__ = ["AllowAllMutations", "MemoryTool", "MutationAuthorizer", "RootSessions"]

logger = logging.getLogger(__name__)

class MutationAuthorizer(Protocol):
    """Decides whether a session may put or delete memories.

    ``authorize_memory_mutation`` returns when the session may mutate and
    raises otherwise; the tool turns any refusal into
    :class:`MemoryUnauthorizedError` carrying the refusal's message.
    """

    def authorize_memory_mutation(self, session_id: str) -> None:
        """Return when ``session_id`` may mutate memory; raise otherwise."""


class RootSessions:
    """An authorizer that lets only the named root-agent sessions mutate memory."""

    def __init__(self, *session_ids: str) -> None:
        for session_id in session_ids:
            if not isinstance(session_id, str):
                # RootSessions(["a", "b"]) would otherwise fail later, or (a
                # tuple of ids) name one session no agent ever has.
                raise TypeError(
                    "RootSessions takes each session id as its own argument (a str): "
                    "RootSessions('a', 'b') or RootSessions(*ids), "
                    f"not a {type(session_id).__name__}"
                )
        self._roots = frozenset(session_ids)

    def authorize_memory_mutation(self, session_id: str) -> None:
        """Refuse every session not named at construction."""
        if session_id not in self._roots:
            raise MemoryUnauthorizedError(ROOT_ONLY)


class AllowAllMutations:
    """An authorizer for a single-agent host: every session may mutate memory."""

    def authorize_memory_mutation(self, session_id: str) -> None:
        """Allow every session."""
        return


AuthorizerLike = Union[MutationAuthorizer, Callable[[str], None]]


class MemoryTool:
    """The ``memory`` tool over one :class:`MemoryStore`.

    ``authorizer`` is a :class:`MutationAuthorizer` (or a plain callable taking
    the session id) consulted before every put and delete. One instance serves
    one agent loop; its methods are safe to call from several threads.
    """

    def __init__(self, store: MemoryStore, authorizer: AuthorizerLike) -> None:
        if not isinstance(store, MemoryStore):
            raise TypeError(f"store must be a MemoryStore, not {type(store).__name__}")
        method: Optional[Callable[[str], None]] = getattr(
            authorizer, "authorize_memory_mutation", None
        )
        if method is None:
            if not callable(authorizer):
                raise TypeError("authorizer must have authorize_memory_mutation(session_id)")
            method = authorizer
        self._store = store
        self._authorize = method
        self._armed = False
        self._lock = threading.Lock()

    @property
    def store(self) -> MemoryStore:
        """The backend this tool reads and writes."""
        return self._store

    def definition(self) -> Dict[str, Any]:
        """``{name, description, input_schema, output_schema}``: what to register with a model.

        Each call returns fresh dicts, safe to change.
        """
        return {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "input_schema": input_schema(),
            "output_schema": output_schema(),
        }

    def execute(
        self,
        input_json: Union[str, bytes, bytearray, Mapping[str, Any]],
        session_id: str,
    ) -> Dict[str, Any]:
        """Run one call and return its output object (valid against ``output_schema``).

        ``input_json`` is the model's arguments as JSON text (or already parsed).
        Refusals raise :class:`MemoryToolError`; backend failures raise the
        engine's ``cortex_memory`` error.
        """
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
        call = decode_call(input_json)
        if isinstance(call, ScanCall):
            return self._scan(call)
        if isinstance(call, ReadCall):
            return self._read(call)
        if isinstance(call, PutCall):
            return self._put(call, session_id)
        return self._delete(call, session_id)

    # -- operations ------------------------------------------------------------------

    def _scan(self, call: ScanCall) -> Dict[str, Any]:
        backend = self._store.access()
        result = self._store.scan(call.query, call.limit)
        with self._lock:
            self._armed = True
        logger.debug("memory scan answered %d candidates", len(result.candidates))
        return {
            "operation": "scan",
            "backend": backend.to_json(),
            "abstained": result.abstained,
            "candidates": [c.to_json() for c in result.candidates[: call.limit]],
        }

    def _read(self, call: ReadCall) -> Dict[str, Any]:
        backend = self._store.access()
        records = self._store.read(call.keys)
        return {
            "operation": "read",
            "backend": backend.to_json(),
            "memories": [record.to_json() for record in records],
        }

    def _put(self, call: PutCall, session_id: str) -> Dict[str, Any]:
        self._check_authorized(session_id)
        with self._lock:
            armed, self._armed = self._armed, False
        if not armed:
            raise MemoryRequestError(SCAN_FIRST)
        if looks_like_secret(call.content):
            raise MemoryRequestError(CONTENT_REJECTED)
        backend = self._store.access()
        record = self._store.put(call.content, call.replace)
        logger.debug("memory put stored version %d", record.key.version)
        return {
            "operation": "put",
            "backend": backend.to_json(),
            "memory": record.to_json(),
            "replaced": call.replace is not None,
        }

    def _delete(self, call: DeleteCall, session_id: str) -> Dict[str, Any]:
        self._check_authorized(session_id)
        backend = self._store.access()
        self._store.delete(call.key)
        return {"operation": "delete", "backend": backend.to_json(), "key": call.key.to_json()}

    def _check_authorized(self, session_id: str) -> None:
        try:
            self._authorize(session_id)
        except MemoryToolError:
            raise
        except Error as exc:
            raise MemoryUnauthorizedError(exc.message or MUTATION_DENIED) from exc
        except Exception as exc:
            # Fail closed: an authorizer that breaks has not said yes.
            raise MemoryUnauthorizedError(str(exc) or MUTATION_DENIED) from exc

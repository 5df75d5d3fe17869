"""The bounded ``memory`` tool (tools.md §A): scan, read, put and delete short memories.

``MemoryTool(store, authorizer)`` is what an agent loop registers with its
model (``tool.definition()``) and calls with the model's arguments
(``tool.execute(input_json, session_id)``). The store is one backend:
:class:`LocalMemoryStore` (its own SQLite table) or :class:`RemoteMemoryStore`
(learnings in any ``MemoryEngine``, CortexDB included).
"""

from __future__ import annotations

from cortex_memory.tools.memory.errors import (
    MemoryRequestError,
    MemoryToolError,
    MemoryUnauthorizedError,
)
from cortex_memory.tools.memory.local import DEFAULT_PROBATION, DEFAULT_THRESHOLD, LocalMemoryStore
from cortex_memory.tools.memory.records import (
    Backend,
    MemoryKey,
    MemoryRecord,
    MemoryStore,
    ScanCandidate,
    ScanResult,
)
from cortex_memory.tools.memory.remote import READER, WRITER, RemoteMemoryStore
from cortex_memory.tools.memory.schemas import TOOL_NAME, input_schema, output_schema
from cortex_memory.tools.memory.secrets import looks_like_secret, redact
from cortex_memory.tools.memory.sidecar import Sidecar
from cortex_memory.tools.memory.tool import (
    AllowAllMutations,
    MemoryTool,
    MutationAuthorizer,
    RootSessions,
)

__all__ = [
    "AllowAllMutations",
    "Backend",
    "DEFAULT_PROBATION",
    "DEFAULT_THRESHOLD",
    "LocalMemoryStore",
    "MemoryKey",
    "MemoryRecord",
    "MemoryRequestError",
    "MemoryStore",
    "MemoryTool",
    "MemoryToolError",
    "MemoryUnauthorizedError",
    "MutationAuthorizer",
    "READER",
    "RemoteMemoryStore",
    "RootSessions",
    "ScanCandidate",
    "ScanResult",
    "Sidecar",
    "TOOL_NAME",
    "WRITER",
    "input_schema",
    "looks_like_secret",
    "output_schema",
    "redact",
]

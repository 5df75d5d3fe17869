"""Agent-facing surfaces over any ``MemoryEngine`` (tools.md, seeds 001 and 004).

* :mod:`cortex_memory.tools.memory` — the bounded ``memory`` tool an agent
  loop registers with its model (scan, read, put, delete), over a local
  SQLite table or learnings in any engine;
* :mod:`cortex_memory.tools.mcp` — the MCP write contract (``cortex_save``,
  ``cortex_handoff``) and a stdio MCP server
  (``python -m cortex_memory.tools.mcp``).

See ``docs/agents.md``.
"""

from __future__ import annotations

from cortex_memory.tools.mcp import (
    Ledger,
    McpServer,
    MemoryWriter,
    ObservationRef,
    WriteFailure,
    WriteResult,
    from_error,
    from_write_result,
    unavailable_error,
    validation_error,
)
from cortex_memory.tools.memory import (
    AllowAllMutations,
    LocalMemoryStore,
    MemoryKey,
    MemoryRecord,
    MemoryRequestError,
    MemoryStore,
    MemoryTool,
    MemoryToolError,
    MemoryUnauthorizedError,
    MutationAuthorizer,
    RemoteMemoryStore,
    RootSessions,
)

__all__ = [
    "AllowAllMutations",
    "Ledger",
    "LocalMemoryStore",
    "McpServer",
    "MemoryKey",
    "MemoryRecord",
    "MemoryRequestError",
    "MemoryStore",
    "MemoryTool",
    "MemoryToolError",
    "MemoryUnauthorizedError",
    "MemoryWriter",
    "MutationAuthorizer",
    "ObservationRef",
    "RemoteMemoryStore",
    "RootSessions",
    "WriteFailure",
    "WriteResult",
    "from_error",
    "from_write_result",
    "unavailable_error",
    "validation_error",
]

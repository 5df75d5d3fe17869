"""The MCP write contract (tools.md §B) and a stdio MCP server over any engine.

* :mod:`.contract` — tool names, hints, error codes and messages, references,
  :func:`from_write_result` and :func:`from_error`;
* :mod:`.schemas` — the handoff input schema (the seed's text, byte for
  byte), the save input schema and the output schema;
* :mod:`.observation` — decoding the tools' arguments, observation → item;
* :mod:`.ledger` — sessions, references, topics, handoff idempotency;
* :mod:`.writes` — :class:`MemoryWriter`, the two writes over an engine;
* :mod:`.server` — :class:`McpServer`, JSON-RPC 2.0 over stdio;
* :mod:`.cli` — ``python -m cortex_memory.tools.mcp`` (and ``cortex-memory mcp``).
"""

from __future__ import annotations

from cortex_memory.tools.mcp.contract import (
    CODE_CONFLICT,
    CODE_FORBIDDEN,
    CODE_PAYLOAD_TOO_LARGE,
    CODE_PERSISTENCE,
    CODE_TIMEOUT,
    CODE_TRANSPORT,
    CODE_UNAVAILABLE,
    CODE_VALIDATION,
    HANDOFF_HINTS,
    MAX_ERROR_MESSAGE_LENGTH,
    RETRYABLE_CODES,
    SAVE_HINTS,
    TOOL_HANDOFF,
    TOOL_SAVE,
    HandoffConflictError,
    Hints,
    ObservationRef,
    PayloadTooLargeError,
    PersistenceError,
    WriteFailure,
    WriteResult,
    WriteValidationError,
    from_error,
    from_write_result,
    unavailable_error,
    validation_error,
)
from cortex_memory.tools.mcp.ledger import Ledger, public_id_of
from cortex_memory.tools.mcp.schemas import (
    HANDOFF_INPUT_SCHEMA_JSON,
    WRITE_OUTPUT_SCHEMA_JSON,
    handoff_input_schema,
    save_input_schema,
    write_output_schema,
)
from cortex_memory.tools.mcp.server import PROTOCOL_VERSIONS, McpServer, tool_definitions
from cortex_memory.tools.mcp.writes import MemoryWriter

__all__ = [
    "CODE_CONFLICT",
    "CODE_FORBIDDEN",
    "CODE_PAYLOAD_TOO_LARGE",
    "CODE_PERSISTENCE",
    "CODE_TIMEOUT",
    "CODE_TRANSPORT",
    "CODE_UNAVAILABLE",
    "CODE_VALIDATION",
    "HANDOFF_HINTS",
    "HANDOFF_INPUT_SCHEMA_JSON",
    "HandoffConflictError",
    "Hints",
    "Ledger",
    "MAX_ERROR_MESSAGE_LENGTH",
    "McpServer",
    "MemoryWriter",
    "ObservationRef",
    "PROTOCOL_VERSIONS",
    "PayloadTooLargeError",
    "PersistenceError",
    "RETRYABLE_CODES",
    "SAVE_HINTS",
    "TOOL_HANDOFF",
    "TOOL_SAVE",
    "WRITE_OUTPUT_SCHEMA_JSON",
    "WriteFailure",
    "WriteResult",
    "WriteValidationError",
    "from_error",
    "from_write_result",
    "handoff_input_schema",
    "public_id_of",
    "save_input_schema",
    "tool_definitions",
    "unavailable_error",
    "validation_error",
    "write_output_schema",
]

"""The MCP write contract's schemas, as JSON text (seed 001).

``HANDOFF_INPUT_SCHEMA_JSON`` is the seed's ``HandoffInputSchemaJSON`` byte for
byte, so every server that publishes ``cortex_handoff`` publishes the same
contract. ``WRITE_OUTPUT_SCHEMA_JSON`` is the seed's ``WriteOutputSchemaJSON``
with one addition: the error object lists ``retryable`` (boolean) among its
properties, because every error payload carries it and must validate against
the schema it is published with. ``save_input_schema()`` is the handoff's
``observation`` object at top level (closed), the input of ``cortex_save``.

The ``*_schema()`` functions return fresh parsed copies, safe to change.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict

__all__ = [
    "HANDOFF_INPUT_SCHEMA_JSON",
    "WRITE_OUTPUT_SCHEMA_JSON",
    "handoff_input_schema",
    "save_input_schema",
    "write_output_schema",
]

# One literal per line of the seed's text (long lines split), so the value is exact.
HANDOFF_INPUT_SCHEMA_JSON = (
    '{\n'
    '"type": "object",\n'
    '"properties": {\n'
    '"idempotency_key": {\n'
    '"type": "string",\n'
    '"minLength": 1,\n'
    '"description": "Stable idempotency key; identical key+payload replays, differing'
    ' payload conflicts"\n'
    '},\n'
    '"observation": {\n'
    '"type": "object",\n'
    '"properties": {\n'
    '"title": {"type": "string", "minLength": 1},\n'
    '"content": {"type": "string", "minLength": 1},\n'
    '"type": {"type": "string"},\n'
    '"project": {"type": "string"},\n'
    '"scope": {"type": "string", "enum": ["project", "personal"]},\n'
    '"session_id": {"type": "string", "description": "Session the observation belongs to;'
    ' the local runtime requires a preexisting session and validates it before any'
    ' mutation"},\n'
    '"topic_key": {"type": "string"},\n'
    '"confidence": {"type": "number", "minimum": 0, "maximum": 1},\n'
    '"source": {"type": "string"},\n'
    '"tags": {"type": "array", "items": {"type": "string"}}\n'
    '},\n'
    '"required": ["title", "content"],\n'
    '"additionalProperties": false\n'
    '},\n'
    '"relation": {\n'
    '"type": "object",\n'
    '"properties": {\n'
    '"target": {\n'
    '"oneOf": [\n'
    '{\n'
    '"type": "object",\n'
    '"properties": {"local_id": {"type": "integer", "minimum": 1}},\n'
    '"required": ["local_id"],\n'
    '"additionalProperties": false\n'
    '},\n'
    '{\n'
    '"type": "object",\n'
    '"properties": {"public_id": {"type": "string", "format": "uuid"}},\n'
    '"required": ["public_id"],\n'
    '"additionalProperties": false\n'
    '}\n'
    ']\n'
    '},\n'
    '"type": {"type": "string", "minLength": 1},\n'
    '"weight": {"type": "number"},\n'
    '"confidence": {"type": "number"},\n'
    '"reasoning": {"type": "string"}\n'
    '},\n'
    '"required": ["target", "type"],\n'
    '"additionalProperties": false\n'
    '},\n'
    '"capability_tuple": {\n'
    '"description": "Opaque JSON evidence forwarded with the handoff; stored as data, never'
    ' interpreted"\n'
    '}\n'
    '},\n'
    '"required": ["idempotency_key", "observation"],\n'
    '"additionalProperties": false\n'
    '}'
)

WRITE_OUTPUT_SCHEMA_JSON = (
    '{\n'
    '"type": "object",\n'
    '"properties": {\n'
    '"observation_ref": {\n'
    '"oneOf": [\n'
    '{\n'
    '"type": "object",\n'
    '"properties": {\n'
    '"local_id": {"type": "integer", "minimum": 1}\n'
    '},\n'
    '"required": ["local_id"],\n'
    '"additionalProperties": false\n'
    '},\n'
    '{\n'
    '"type": "object",\n'
    '"properties": {\n'
    '"public_id": {"type": "string", "format": "uuid"}\n'
    '},\n'
    '"required": ["public_id"],\n'
    '"additionalProperties": false\n'
    '}\n'
    ']\n'
    '},\n'
    '"status": {"type": "string", "enum": ["created", "replayed", "updated"]},\n'
    '"error": {\n'
    '"type": "object",\n'
    '"properties": {\n'
    '"code": {"type": "string"},\n'
    '"message": {"type": "string"},\n'
    '"retryable": {"type": "boolean"}\n'
    '},\n'
    '"required": ["code", "message"],\n'
    '"additionalProperties": false\n'
    '}\n'
    '},\n'
    '"additionalProperties": false\n'
    '}'
)

_HANDOFF: Dict[str, Any] = json.loads(HANDOFF_INPUT_SCHEMA_JSON)
_OUTPUT: Dict[str, Any] = json.loads(WRITE_OUTPUT_SCHEMA_JSON)


def handoff_input_schema() -> Dict[str, Any]:
    """The ``cortex_handoff`` input schema (parsed from the seed's exact text)."""
    return copy.deepcopy(_HANDOFF)


def save_input_schema() -> Dict[str, Any]:
    """The ``cortex_save`` input schema: the handoff's observation object, closed."""
    return copy.deepcopy(_HANDOFF["properties"]["observation"])


def write_output_schema() -> Dict[str, Any]:
    """The output schema of both tools (the seed's, with ``retryable`` in the error object)."""
    return copy.deepcopy(_OUTPUT)

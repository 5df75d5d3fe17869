"""The ``memory`` tool's published surface: name, description, input and output schemas.

Both schemas are ``oneOf`` four closed objects tagged by ``operation``
(``additionalProperties: false`` everywhere), so a model cannot smuggle extra
authority into a call and a host can validate every answer. Each function
returns a fresh dict: callers may change what they get without touching the
next caller's copy.
"""

from __future__ import annotations

from typing import Any, Dict, List

__all__ = [
    "DEFAULT_SCAN_LIMIT",
    "MAX_CONTENT_CHARS",
    "MAX_PREVIEW_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_READ_KEYS",
    "MAX_SCAN_LIMIT",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "backend_schema",
    "input_schema",
    "key_schema",
    "output_schema",
    "record_schema",
]

TOOL_NAME = "memory"
#: Default and largest number of scan candidates.
DEFAULT_SCAN_LIMIT = 5
MAX_SCAN_LIMIT = 5
#: Bounds in characters (code points).
MAX_QUERY_CHARS = 512
MAX_CONTENT_CHARS = 1024
MAX_PREVIEW_CHARS = 64
#: Most keys one read takes (published as ``maxItems`` so the schema tells the truth).
MAX_READ_KEYS = 100

TOOL_DESCRIPTION = (
    "Searches, reads, stores, replaces or deletes short memories, explicitly, in exactly one "
    "configured backend (local or remote). Scan before you store: each scan allows one put. "
    "When reading, pass the keys that scan returned back unchanged, for example "
    '{"operation":"read","keys":[{"id":7,"version":1,"namespace":"alice"}]}. '
    "Remote reads include the authenticated and team namespaces. "
    "Put and delete are available to root agents only; remote mutation also needs a writer "
    "credential. Never store secrets such as passwords, tokens or keys."
)

_KEY_DESCRIPTION = (
    "A memory key exactly as scan, read, list or put returned it. "
    "Pass every field back unchanged."
)


def key_schema() -> Dict[str, Any]:
    """MemoryKey: ``{id ≥ 1, version ≥ 1, namespace?}``, closed."""
    return {
        "type": "object",
        "description": _KEY_DESCRIPTION,
        "properties": {
            "id": {"type": "integer", "minimum": 1},
            "version": {"type": "integer", "minimum": 1},
            "namespace": {"type": "string", "minLength": 1},
        },
        "required": ["id", "version"],
        "additionalProperties": False,
    }


def backend_schema() -> Dict[str, Any]:
    """Which backend answered: ``{source, namespace, role}``, all required."""
    return {
        "type": "object",
        "properties": {
            "source": {"type": "string", "enum": ["local", "remote"]},
            "namespace": {"type": ["string", "null"]},
            "role": {"type": ["string", "null"], "enum": ["reader", "writer", None]},
        },
        "required": ["source", "namespace", "role"],
        "additionalProperties": False,
    }


_RECORD_FIELDS: List[str] = [
    "key",
    "content",
    "created_at_ms",
    "updated_at_ms",
    "last_scanned_at_ms",
    "scan_count",
    "last_used_at_ms",
    "use_count",
    "probation_until_ms",
]


def record_schema() -> Dict[str, Any]:
    """MemoryRecord: the key, the content, timestamps and usage counters, closed."""
    return {
        "type": "object",
        "properties": {
            "key": key_schema(),
            "content": {"type": "string"},
            "created_at_ms": {"type": "integer"},
            "updated_at_ms": {"type": "integer"},
            "last_scanned_at_ms": {"type": ["integer", "null"]},
            "scan_count": {"type": "integer", "minimum": 0},
            "last_used_at_ms": {"type": ["integer", "null"]},
            "use_count": {"type": "integer", "minimum": 0},
            "probation_until_ms": {"type": ["integer", "null"]},
        },
        "required": list(_RECORD_FIELDS),
        "additionalProperties": False,
    }


def _operation(name: str) -> Dict[str, Any]:
    return {"type": "string", "const": name}


def input_schema() -> Dict[str, Any]:
    """The input: ``oneOf`` scan, read, put and delete, each closed."""
    return {
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "operation": _operation("scan"),
                    "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_SCAN_LIMIT,
                        "default": DEFAULT_SCAN_LIMIT,
                    },
                },
                "required": ["operation", "query"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "operation": _operation("read"),
                    "keys": {
                        "type": "array",
                        "items": key_schema(),
                        "minItems": 1,
                        "maxItems": MAX_READ_KEYS,
                        "description": (
                            "Keys exactly as scan returned them; keep each id, version and "
                            "namespace unchanged."
                        ),
                    },
                },
                "required": ["operation", "keys"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "operation": _operation("put"),
                    "content": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_CONTENT_CHARS,
                    },
                    "replace": key_schema(),
                },
                "required": ["operation", "content"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"operation": _operation("delete"), "key": key_schema()},
                "required": ["operation", "key"],
                "additionalProperties": False,
            },
        ]
    }


def output_schema() -> Dict[str, Any]:
    """The output: ``oneOf`` the four answers, each closed."""
    candidate = {
        "type": "object",
        "properties": {
            "key": key_schema(),
            "preview": {"type": "string", "maxLength": MAX_PREVIEW_CHARS},
            "score": {"type": "number"},
        },
        "required": ["key", "preview", "score"],
        "additionalProperties": False,
    }
    return {
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "operation": _operation("scan"),
                    "backend": backend_schema(),
                    "abstained": {"type": "boolean"},
                    "candidates": {
                        "type": "array",
                        "maxItems": MAX_SCAN_LIMIT,
                        "items": candidate,
                    },
                },
                "required": ["operation", "backend", "abstained", "candidates"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "operation": _operation("read"),
                    "backend": backend_schema(),
                    "memories": {"type": "array", "items": record_schema()},
                },
                "required": ["operation", "backend", "memories"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "operation": _operation("put"),
                    "backend": backend_schema(),
                    "memory": record_schema(),
                    "replaced": {"type": "boolean"},
                },
                "required": ["operation", "backend", "memory", "replaced"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "operation": _operation("delete"),
                    "backend": backend_schema(),
                    "key": key_schema(),
                },
                "required": ["operation", "backend", "key"],
                "additionalProperties": False,
            },
        ]
    }

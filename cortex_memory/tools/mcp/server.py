"""A stdio MCP server for ``cortex_save`` and ``cortex_handoff`` (JSON-RPC 2.0).

One JSON message per line on stdin, one per line on stdout. The server
answers ``initialize`` (echoing the client's ``protocolVersion`` when it is one
of :data:`PROTOCOL_VERSIONS`, else offering the newest), ``ping``,
``tools/list`` and ``tools/call``, and accepts ``notifications/initialized``.
Every malformed message gets the error JSON-RPC 2.0 calls for and the server
keeps reading: a line that is not JSON ``-32700``; a message that is not a
valid Request object (``{}``, a number, a wrong ``jsonrpc``, a missing or
non-string method, an id that is not a string, number or null, params that
are neither an object nor an array, an empty batch) ``-32600`` with a null id
unless its id could be read; an unknown method ``-32601``; params a method
cannot take (an array, a ``tools/call`` without a tool name or with non-object
arguments, an unknown tool) ``-32602``. A batch is answered with an array of
the answers owed (none for a batch of notifications). Notifications are never
answered. Nothing but protocol is written to stdout:
diagnostics go to the ``logging`` tree (stderr when run as a program), and
never carry a payload.

:class:`McpServer` is transport-free (``handle`` a message, ``handle_line``
a line, ``serve`` two binary streams) so hosts and tests can drive it in
process; :mod:`.cli` builds one from command-line arguments.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import IO, Any, Callable, Dict, List, Optional, Union

from cortex_memory.tools.mcp.contract import (
    HANDOFF_HINTS,
    SAVE_HINTS,
    TOOL_HANDOFF,
    TOOL_SAVE,
)
from cortex_memory.tools.mcp.schemas import (
    handoff_input_schema,
    save_input_schema,
    write_output_schema,
)
from cortex_memory.tools.mcp.writes import MemoryWriter

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_LINE_BYTES",
    "METHOD_NOT_FOUND",
    "McpServer",
    "PARSE_ERROR",
    "PROTOCOL_VERSIONS",
    "SERVER_NAME",
    "tool_definitions",
]

logger = logging.getLogger(__name__)

#: Protocol revisions this server speaks, newest first.
PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
SERVER_NAME = "cortex-memory"
#: The longest line read; a longer one is refused (and skipped) without being held.
MAX_LINE_BYTES = 4 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_SAVE_DESCRIPTION = (
    "Save one observation to durable memory as soon as it is worth keeping. The same "
    "observation again answers replayed with the same reference; a new observation with "
    "the same topic_key in the same project and scope replaces the old one (updated)."
)
_HANDOFF_DESCRIPTION = (
    "Record a durable, idempotent handoff: an observation, optionally related to an "
    "existing one. The same idempotency_key with the same payload replays the same "
    "reference; the same key with a different payload is a conflict."
)

Message = Dict[str, Any]
Response = Union[Message, List[Message], None]


def tool_definitions() -> List[Dict[str, Any]]:
    """Both tools as ``tools/list`` publishes them (fresh dicts)."""
    return [
        {
            "name": TOOL_SAVE,
            "title": SAVE_HINTS.title,
            "description": _SAVE_DESCRIPTION,
            "inputSchema": save_input_schema(),
            "outputSchema": write_output_schema(),
            "annotations": SAVE_HINTS.to_json(),
        },
        {
            "name": TOOL_HANDOFF,
            "title": HANDOFF_HINTS.title,
            "description": _HANDOFF_DESCRIPTION,
            "inputSchema": handoff_input_schema(),
            "outputSchema": write_output_schema(),
            "annotations": HANDOFF_HINTS.to_json(),
        },
    ]


def _error(request_id: object, code: int, message: str) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _result(request_id: object, result: Dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


#: A member left out (``params`` may be omitted; ``null`` is not "omitted").
_ABSENT = object()


def _valid_id(value: object) -> bool:
    # JSON-RPC 2.0: a String, a Number or null (the parser refuses NaN and Infinity).
    return value is None or isinstance(value, (str, float)) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


class McpServer:
    """The MCP server over one :class:`MemoryWriter`."""

    def __init__(self, writer: MemoryWriter, *, version: str = "0.1.0") -> None:
        self._writer = writer
        self._version = version
        self._initialized = False
        self._state_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._methods: Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
            "tools/list": lambda params: {"tools": tool_definitions()},
            "tools/call": self._call_tool,
        }

    @property
    def initialized(self) -> bool:
        """True once the client sent ``notifications/initialized``."""
        with self._state_lock:
            return self._initialized

    # -- messages --------------------------------------------------------------------------

    def handle(self, message: object) -> Response:
        """Answer one parsed message (or batch); ``None`` when nothing is owed."""
        if isinstance(message, list):
            if not message:
                return _error(None, INVALID_REQUEST, "Invalid Request")
            answers = [a for a in (self._handle_one(m) for m in message) if a is not None]
            return answers or None
        return self._handle_one(message)

    def _handle_one(self, message: object) -> Optional[Message]:
        # JSON-RPC 2.0 §4-5: a message that is not a valid Request object gets
        # -32600 with a null id (even without an id: it is not a notification
        # either); a notification, valid or not in its params, gets nothing.
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "Invalid Request")
        if "method" not in message and ("result" in message or "error" in message):
            return None  # a response to a request this server never sends
        is_request = "id" in message
        request_id = message.get("id")
        if not _valid_id(request_id):
            return _error(None, INVALID_REQUEST, "Invalid Request")
        method = message.get("method")
        params = message.get("params", _ABSENT)
        if (
            message.get("jsonrpc") != "2.0"
            or not isinstance(method, str)
            or not (params is _ABSENT or isinstance(params, (dict, list)))
        ):
            return _error(request_id, INVALID_REQUEST, "Invalid Request")
        if not is_request:
            self._notification(method)
            return None
        handler = self._methods.get(method)
        if handler is None:
            return _error(request_id, METHOD_NOT_FOUND, "Method not found")
        if params is _ABSENT:
            params = {}
        if not isinstance(params, dict):  # every method here takes named params
            return _error(request_id, INVALID_PARAMS, "Invalid params")
        try:
            return _result(request_id, handler(params))
        except _InvalidParams as exc:
            return _error(request_id, INVALID_PARAMS, str(exc))
        except Exception as exc:  # the server must outlive any one request
            logger.error("%s failed inside the server (%s)", method, type(exc).__name__)
            return _error(request_id, INTERNAL_ERROR, "Internal error")

    def _notification(self, method: str) -> None:
        if method == "notifications/initialized":
            with self._state_lock:
                self._initialized = True
        # Every other notification (cancelled, progress, ...) needs nothing from us.

    def _initialize(self, params: Dict[str, Any]) -> Dict[str, Any]:
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": self._version},
            "instructions": (
                "Use cortex_save to keep an observation and cortex_handoff for a durable, "
                "idempotent handoff. Errors carry a code and say whether a retry can help."
            ),
        }

    def _call_tool(self, params: Dict[str, Any]) -> Dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments", {})
        if not isinstance(name, str):
            raise _InvalidParams("Invalid params: `name` must be a string")
        if not isinstance(arguments, dict):
            raise _InvalidParams("Invalid params: `arguments` must be an object")
        if name == TOOL_SAVE:
            payload = self._writer.save(arguments)
        elif name == TOOL_HANDOFF:
            payload = self._writer.handoff(arguments)
        else:
            raise _InvalidParams("Unknown tool")
        text = json.dumps(payload, separators=(",", ":"))
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": payload,
            "isError": "error" in payload,
        }

    # -- lines and streams --------------------------------------------------------------------

    def handle_line(self, line: bytes) -> Optional[bytes]:
        """Answer one line of input with one line of output (``None`` when nothing is owed)."""
        if not line.strip():
            return None
        try:
            message = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return _encode(_error(None, PARSE_ERROR, "Parse error"))
        answer = self.handle(message)
        return None if answer is None else _encode(answer)

    def serve(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        """Read lines from ``stdin`` and answer on ``stdout`` until end of input."""
        while True:
            line = stdin.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                _skip_rest_of_line(stdin)
                out: Optional[bytes] = _encode(
                    _error(None, INVALID_REQUEST, "Request too large")
                )
            else:
                out = self.handle_line(line)
            if out is not None:
                with self._write_lock:
                    stdout.write(out)
                    stdout.flush()


class _InvalidParams(Exception):
    """A request whose params do not fit its method (becomes ``-32602``)."""


def _skip_rest_of_line(stream: IO[bytes]) -> None:
    while True:
        chunk = stream.readline(MAX_LINE_BYTES)
        if not chunk or chunk.endswith(b"\n"):
            return


def _encode(answer: Union[Message, List[Message]]) -> bytes:
    # ASCII JSON is valid UTF-8 whatever the strings hold (even lone surrogates).
    return json.dumps(answer, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"

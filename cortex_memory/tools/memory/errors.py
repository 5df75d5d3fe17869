"""The memory tool's refusals and their exact messages (tools.md §A).

Every refusal is a :class:`MemoryToolError`. A malformed or out-of-bounds call
is a :class:`MemoryRequestError` (an ``InvalidRequestError``); a session that
may not mutate memory, or a reader credential asked to write, is a
:class:`MemoryUnauthorizedError` (an ``UnauthorizedError``). ``err.message`` is
the exact message below; ``str(err)`` adds the variant prefix as every
``cortex_memory`` error does. No message ever quotes memory content.
"""

from __future__ import annotations

from cortex_memory.errors import Error, InvalidRequestError, UnauthorizedError

__all__ = [
    "CONTENT_EMPTY",
    "CONTENT_NOT_UNICODE",
    "CONTENT_REJECTED",
    "CONTENT_TOO_LONG",
    "KEY_NOT_FOUND",
    "MUTATION_DENIED",
    "MemoryRequestError",
    "MemoryToolError",
    "MemoryUnauthorizedError",
    "READ_NEEDS_KEYS",
    "READ_TOO_MANY_KEYS",
    "ROOT_ONLY",
    "SCAN_FIRST",
    "SCAN_LIMIT_RANGE",
    "SCAN_QUERY_EMPTY",
    "SCAN_QUERY_NOT_UNICODE",
    "SCAN_QUERY_TOO_LONG",
    "WRITER_REQUIRED",
]

SCAN_QUERY_EMPTY = "memory scan query is empty"
SCAN_QUERY_TOO_LONG = "memory scan query is too long (at most 512 characters)"
SCAN_QUERY_NOT_UNICODE = "memory scan query must be valid Unicode (it holds a lone surrogate)"
SCAN_LIMIT_RANGE = "memory scan limit must be between 1 and 5"
READ_NEEDS_KEYS = "memory read requires at least one key"
READ_TOO_MANY_KEYS = "memory read takes at most 100 keys"
CONTENT_EMPTY = "memory content is empty"
CONTENT_TOO_LONG = "memory content is too long (at most 1024 characters)"
CONTENT_NOT_UNICODE = "memory content must be valid Unicode (it holds a lone surrogate)"
SCAN_FIRST = "scan memory before storing a conclusion"
CONTENT_REJECTED = "memory content was rejected as a likely secret"
KEY_NOT_FOUND = "memory key was not found"
ROOT_ONLY = "memory mutation is only available to root agents"
MUTATION_DENIED = "memory mutation is not authorized"
WRITER_REQUIRED = "remote memory mutation requires a writer credential"


class MemoryToolError(Error):
    """A refusal of the ``memory`` tool; ``err.message`` is the exact message."""


class MemoryRequestError(MemoryToolError, InvalidRequestError):
    """The call is malformed, out of bounds, out of order or names no memory."""


class MemoryUnauthorizedError(MemoryToolError, UnauthorizedError):
    """The session may not mutate memory, or the backend holds only a reader credential."""

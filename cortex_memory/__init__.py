"""cortex_memory: durable, synchronous memory for Python applications.

One contract (:class:`MemoryEngine`) served by three engines: CortexDB over its
Direct ``/v1`` API, CortexDB behind the TinyHumans hosted ``/memory`` API, and an
embedded SQLite engine that needs no server and no account.

Importing the package has no side effects: it opens no file or socket and starts
no thread. The library logs through ``logging.getLogger("cortex_memory...")`` and
installs only a ``NullHandler``.
"""

from __future__ import annotations

import logging

from cortex_memory.errors import (
    ConfigError,
    ConflictError,
    EngineError,
    Error,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
    error_code,
    is_insufficient_credits,
)

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "ConfigError",
    "ConflictError",
    "EngineError",
    "Error",
    "InvalidRequestError",
    "NotFoundError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedError",
    "__version__",
    "error_code",
    "is_insufficient_credits",
]

"""The CortexDB engine: ``CortexEngine`` on CortexDB's own API or the TinyHumans hosted API.

Everything CortexDB-specific is importable from here: the engine, the wires and
their descriptors, credentials, timings, the network options (proxy, TLS) and the
hosted failure helpers. Importing this package opens no socket and starts no thread.

``CortexCredential`` is deprecated since 0.2.0: it is ``EngineCredential``, the
one credential type of every engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortex_memory._deprecation import moved_names
from cortex_memory.cortex.descriptors import cortexdb_descriptor, tinyhumans_descriptor
from cortex_memory.cortex.engine.core import CortexEngine
from cortex_memory.cortex.network import FROM_ENVIRONMENT, Network
from cortex_memory.cortex.timing import Deadline, Timing
from cortex_memory.cortex.transport.failure import health_reason
from cortex_memory.cortex.wire import (
    CORTEX_API_ENDPOINT,
    CORTEXDB_ENGINE_ID,
    TINYHUMANS_API_ENDPOINT,
    TINYHUMANS_ENGINE_ID,
    CortexWire,
)
from cortex_memory.credential import (
    CORTEX_CREDENTIAL_MOVED,
    BearerSource,
    EngineCredential,
    StaticBearer,
)
from cortex_memory.errors import error_code, is_insufficient_credits

__all__ = [
    "BearerSource",
    "CORTEXDB_ENGINE_ID",
    "CORTEX_API_ENDPOINT",
    "CortexEngine",
    "CortexWire",
    "Deadline",
    "EngineCredential",
    "FROM_ENVIRONMENT",
    "Network",
    "StaticBearer",
    "TINYHUMANS_API_ENDPOINT",
    "TINYHUMANS_ENGINE_ID",
    "Timing",
    "cortexdb_descriptor",
    "error_code",
    "health_reason",
    "is_insufficient_credits",
    "tinyhumans_descriptor",
]

if TYPE_CHECKING:
    from cortex_memory.credential import EngineCredential as CortexCredential  # noqa: F401
else:
    __getattr__ = moved_names(__name__, {"CortexCredential": CORTEX_CREDENTIAL_MOVED})

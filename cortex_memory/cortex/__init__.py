"""The CortexDB engine: credentials, timings, the two wires and their transport.

Everything CortexDB-specific is importable from here. Importing this package
opens no socket and starts no thread.
"""

from __future__ import annotations

from cortex_memory.cortex.credential import BearerSource, CortexCredential, StaticBearer
from cortex_memory.cortex.timing import Deadline, Timing
from cortex_memory.cortex.wire import (
    CORTEX_API_ENDPOINT,
    CORTEXDB_ENGINE_ID,
    TINYHUMANS_API_ENDPOINT,
    TINYHUMANS_ENGINE_ID,
    CortexWire,
)

__all__ = [
    "BearerSource",
    "CORTEXDB_ENGINE_ID",
    "CORTEX_API_ENDPOINT",
    "CortexCredential",
    "CortexWire",
    "Deadline",
    "StaticBearer",
    "TINYHUMANS_API_ENDPOINT",
    "TINYHUMANS_ENGINE_ID",
    "Timing",
]

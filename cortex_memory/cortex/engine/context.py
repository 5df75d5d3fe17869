"""The state one engine's operations share (engine.md §9.1).

Every operation module receives an :class:`EngineContext`: the descriptor, the wire,
the :class:`~cortex_memory.cortex.log.Log` (client plus timings) and the recency
map. Copies of an engine (``copy.copy``, the ``with_*`` builders) build a new
context around the same shared parts: the client family (pool, actor cache,
pause) and the same :class:`~cortex_memory.cortex.engine.recency.RecencyMap`.
"""

from __future__ import annotations

from dataclasses import dataclass

from cortex_memory.contract.descriptor import EngineDescriptor
from cortex_memory.cortex.engine.recency import RecencyMap
from cortex_memory.cortex.log.read import Log
from cortex_memory.cortex.timing import Timing
from cortex_memory.cortex.transport.client import HttpClient
from cortex_memory.cortex.wire import CortexWire

__all__ = ["EngineContext"]


@dataclass(frozen=True)
class EngineContext:
    """What an operation needs: descriptor, wire, log and the shared recency map.

    Immutable; its parts are thread-safe, so one context serves every thread.
    """

    descriptor: EngineDescriptor
    wire: CortexWire
    log: Log
    recency: RecencyMap

    @property
    def client(self) -> HttpClient:
        """The HTTP client (shared family)."""
        return self.log.client

    @property
    def timing(self) -> Timing:
        """The timings in use."""
        return self.log.timing

    @property
    def hosted(self) -> bool:
        """True on the TinyHumans hosted wire."""
        return self.wire.hosted

    @property
    def engine_id(self) -> str:
        """``cortexdb`` or ``tinyhumans``."""
        return self.descriptor.id

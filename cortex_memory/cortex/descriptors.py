"""The registrations of the two CortexDB engines (engine.md §3.1).

``cortexdb`` is CortexDB's own API; ``tinyhumans`` is CortexDB hosted by the
TinyHumans backend. Both fetch in ``hybrid`` mode only. Consolidation differs:
the managed CortexDB cloud (exactly ``https://api-v1.cortexdb.ai``) rebuilds
beliefs by itself (``automatic``), any other CortexDB builds them when asked
(``on_demand``), and the hosted backend runs them on its own schedule
(``scheduled``).
"""

from __future__ import annotations

from typing import Optional

from cortex_memory.contract.descriptor import Consolidation, EngineDescriptor
from cortex_memory.contract.requests import FetchMode
from cortex_memory.cortex.wire import CORTEX_API_ENDPOINT, CortexWire
from cortex_memory.errors import ConfigError

__all__ = [
    "cortexdb_descriptor",
    "descriptor_for",
    "direct_consolidation",
    "tinyhumans_descriptor",
]

_CORTEXDB_DESCRIPTION = (
    "CortexDB's own API: an append-only memory log with ranked recall and grounded answers"
)
_TINYHUMANS_DESCRIPTION = (
    "CortexDB hosted by the TinyHumans backend, billed to the signed-in account"
)

# Which modes `with_consolidation` accepts per wire.
_ALLOWED = {
    CortexWire.DIRECT: (Consolidation.ON_DEMAND, Consolidation.AUTOMATIC),
    CortexWire.TINYHUMANS: (Consolidation.SCHEDULED,),
}


def direct_consolidation(origin: str) -> Consolidation:
    """``automatic`` when ``origin`` is exactly the managed cloud's, else ``on_demand``.

    ``origin`` is scheme, host and non-default port, without a trailing slash.
    """
    return Consolidation.AUTOMATIC if origin == CORTEX_API_ENDPOINT else Consolidation.ON_DEMAND


def _cortex_descriptor(
    wire: CortexWire, label: str, description: str, consolidation: Consolidation
) -> EngineDescriptor:
    # What the two registrations share: a key, the wire's default endpoint, hybrid only.
    return EngineDescriptor(
        id=wire.id,
        label=label,
        description=description,
        hosted=wire.hosted,
        needs_endpoint=False,
        needs_key=True,
        default_endpoint=wire.default_endpoint,
        fetch_modes=(FetchMode.HYBRID,),
        consolidation=consolidation,
    )


def cortexdb_descriptor(consolidation: Optional[Consolidation] = None) -> EngineDescriptor:
    """The ``cortexdb`` descriptor.

    Without ``consolidation`` it describes the engine at its default endpoint, the
    managed cloud (``automatic``); an engine at another endpoint reports
    ``on_demand`` from its own ``descriptor()``.
    """
    if consolidation is None:
        consolidation = direct_consolidation(CORTEX_API_ENDPOINT)
    return _cortex_descriptor(CortexWire.DIRECT, "CortexDB", _CORTEXDB_DESCRIPTION, consolidation)


def tinyhumans_descriptor() -> EngineDescriptor:
    """The ``tinyhumans`` descriptor (consolidation ``scheduled``)."""
    return _cortex_descriptor(
        CortexWire.TINYHUMANS, "TinyHumans", _TINYHUMANS_DESCRIPTION, Consolidation.SCHEDULED
    )


def descriptor_for(wire: CortexWire, consolidation: Consolidation) -> EngineDescriptor:
    """The descriptor of an engine on ``wire`` with ``consolidation``.

    ``ConfigError`` (naming the engine id and the mode) when the wire does not
    offer that mode: Direct takes ``on_demand`` or ``automatic``, hosted only
    ``scheduled``.
    """
    if not isinstance(consolidation, Consolidation):
        raise TypeError(
            f"consolidation must be a Consolidation, not {type(consolidation).__name__}"
        )
    if consolidation not in _ALLOWED[wire]:
        raise ConfigError(
            f"engine `{wire.id}` does not support consolidation mode `{consolidation.value}`"
        )
    if wire.hosted:
        return tinyhumans_descriptor()
    return cortexdb_descriptor(consolidation)

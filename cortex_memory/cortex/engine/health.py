"""Health: one probe of the backend (engine.md §9.1).

Direct asks ``GET v1/admin/health``; hosted lists one scope under ``tmh:probe``
(the hosted API has no health route). The probe is sent once and its body is not
read. ``ok`` on success; ``degraded`` when the backend is unavailable (it may
come back by itself); ``down`` for anything else (a rejected credential, a
missing route, an answer we cannot use). The reason withholds the backend's own
text (``health_reason``), so a status surface never shows it.
"""

from __future__ import annotations

import logging

from cortex_memory.contract.descriptor import EngineHealth
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.cortex.transport.failure import health_reason
from cortex_memory.errors import Error, UnavailableError

__all__ = ["health"]

logger = logging.getLogger(__name__)


def health(ctx: EngineContext, deadline: Deadline) -> EngineHealth:
    """Probe once; never raises an ``Error``."""
    try:
        ctx.client.probe(ctx.wire.health_route(), deadline=deadline)
    except UnavailableError as err:
        logger.debug("health probe: unavailable")
        return EngineHealth.degraded(health_reason(err))
    except Error as err:
        logger.debug("health probe: down")
        return EngineHealth.down(health_reason(err))
    return EngineHealth.ok()

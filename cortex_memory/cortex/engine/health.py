"""Health: one authenticated probe of the backend (engine.md §9.1; issue 13 item 2).

A health report must prove the credential: a wrong key has to read ``down``, not
``ok`` until the first store fails. So the probe is a call the key must pass:

* **Direct**: ``GET v1/auth/whoami``, CortexDB's own "who am I" (``v1/admin/health``
  is public and would answer any key). A caller named: ``ok``, and the actor cache
  learns it, so the next request needs no lookup of its own. A 401 or 403: ``down``.
  Any other answer proves nothing either way (a server from before the actor model
  has no whoami, 404 or 405; a broken whoami; a 2xx naming no usable caller): then
  the cheap listing the hosted probe uses, ``GET v1/scopes/list?prefix=tmh%3Aprobe&limit=1``,
  decides, as any request would. A server known to have no whoami gets the listing
  straight away (the actor cache remembers it).
* **Hosted**: ``GET memory/scopes?prefix=tmh%3Aprobe&limit=1`` (the hosted API has no
  health route); the body is not read.

One request in the steady state, sent once. ``ok`` on success; ``degraded`` when
the backend is unavailable (unreachable, timed out, 5xx: it may come back by
itself); ``down`` for anything else, a rejected credential first of all (reason
``unauthorized: …``). The reason withholds the backend's own text
(``health_reason``), so a status surface never shows it.
"""

from __future__ import annotations

import logging

from cortex_memory.contract.descriptor import EngineHealth
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.cortex.transport.actor import ActorState
from cortex_memory.cortex.transport.failure import health_reason
from cortex_memory.errors import Error, UnavailableError

__all__ = ["health"]

logger = logging.getLogger(__name__)


def _prove(ctx: EngineContext, deadline: Deadline) -> None:
    client = ctx.client
    if not ctx.hosted and client.actor_state is not ActorState.ABSENT:
        try:
            if client.whoami(deadline=deadline) is not None:
                return
        except Error as err:
            # A rejected key, or no answer at all (unreachable, timed out): that is the
            # report. Any other status proves nothing about the key.
            if err.status is None or err.status in (401, 403):
                raise
        logger.debug("health: whoami named no caller; probing a listing instead")
    client.probe(ctx.wire.health_route(), deadline=deadline)


def health(ctx: EngineContext, deadline: Deadline) -> EngineHealth:
    """Probe once with the credential; never raises an ``Error``."""
    try:
        _prove(ctx, deadline)
    except UnavailableError as err:
        logger.debug("health probe: unavailable")
        return EngineHealth.degraded(health_reason(err))
    except Error as err:
        logger.debug("health probe: down")
        return EngineHealth.down(health_reason(err))
    return EngineHealth.ok()

"""consolidate: ask CortexDB to build beliefs from what is held (engine.md §9.13).

The hosted API builds beliefs on its own schedule, so a hosted engine answers
``scheduled`` and sends nothing. On Direct, each scope holding events under the
reach (of the admitted kinds) gets one ``POST v1/beliefs/build``; CortexDB 0.10
builds synchronously and says how many beliefs it ``built``, while a server that
queues the build answers with a job handle instead.
"""

from __future__ import annotations

import logging
from typing import List, Optional

from cortex_memory.contract.consolidation import ConsolidateReceipt, ConsolidateRequest
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.scopes import held
from cortex_memory.cortex.timing import Deadline
from cortex_memory.cortex.wire import Route

__all__ = ["consolidate", "job_handle"]

logger = logging.getLogger(__name__)

_HANDLE_FIELDS = ("job_id", "build_id", "id")


def job_handle(answer: object) -> Optional[str]:
    """The first of ``job_id``, ``build_id``, ``id`` that is a non-empty string or a number.

    A number is given as its decimal text; booleans are not numbers here.
    """
    if not isinstance(answer, dict):
        return None
    for name in _HANDLE_FIELDS:
        value = answer.get(name)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
    return None


def _built(answer: object) -> Optional[int]:
    """The answer's ``built`` count when it is a whole number, else None."""
    if not isinstance(answer, dict):
        return None
    value = answer.get("built")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def consolidate(
    ctx: EngineContext, req: ConsolidateRequest, deadline: Deadline
) -> ConsolidateReceipt:
    """Build beliefs for every held scope under ``req.reach`` (Direct), or answer scheduled.

    The request is validated by the caller. Each build is sent once, scopes in
    order; the receipt is ``completed`` with the summed ``built`` when every answer
    carries a numeric ``built`` (no scopes: completed, 0 built), else ``started``
    with the job handles.
    """
    if ctx.hosted:
        # Nothing is sent, but a call past its deadline still fails, as every call does.
        deadline.check("consolidate")
        return ConsolidateReceipt.scheduled()
    scopes = held(ctx, req.reach, req.admitted_kinds(), deadline)
    route = ctx.log.route(Route.BELIEFS_BUILD)
    builts: List[Optional[int]] = []
    jobs: List[str] = []
    for scope in scopes:
        answer = ctx.client.once("POST", route, {"scope": scope.path}, deadline=deadline).data
        builts.append(_built(answer))
        handle = job_handle(answer)
        if handle is not None:
            jobs.append(handle)
    if all(built is not None for built in builts):
        total = sum(built for built in builts if built is not None)
        logger.debug("belief build finished in %d scopes: %d built", len(scopes), total)
        return ConsolidateReceipt.completed(len(scopes), total)
    logger.debug("belief build started in %d scopes (%d job handles)", len(scopes), len(jobs))
    return ConsolidateReceipt.started(jobs, len(scopes))

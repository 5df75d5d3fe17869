"""The engine's consolidate (engine.md §9.13): belief builds per held scope (Direct).

Not built yet: the query-side helper replaces this body (see
/work/notes/engine-interface.md for the context and helpers it can use).
"""

from __future__ import annotations

from cortex_memory.contract.consolidation import ConsolidateReceipt, ConsolidateRequest
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import UnsupportedError

__all__ = ["consolidate"]


def consolidate(
    ctx: EngineContext, req: ConsolidateRequest, deadline: Deadline
) -> ConsolidateReceipt:
    """Serve ``consolidate`` for the engine (the request is already validated)."""
    raise UnsupportedError(f"engine `{ctx.engine_id}` consolidate is not built yet")

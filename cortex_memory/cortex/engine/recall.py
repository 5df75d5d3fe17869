"""The engine's recall (engine.md §9.9): one granular pack per scope, the answer from the best pack.

Not built yet: the query-side helper replaces this body (see
/work/notes/engine-interface.md for the context and helpers it can use).
"""

from __future__ import annotations

from cortex_memory.contract.requests import RecallRequest
from cortex_memory.contract.responses import RecallAnswer
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import UnsupportedError

__all__ = ["recall"]


def recall(ctx: EngineContext, req: RecallRequest, deadline: Deadline) -> RecallAnswer:
    """Serve ``recall`` for the engine (the request is already validated)."""
    raise UnsupportedError(f"engine `{ctx.engine_id}` recall is not built yet")

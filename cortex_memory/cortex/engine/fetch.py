"""The engine's fetch (engine.md §9.8): packs per scope, interleave, recency-capped scopes.

Not built yet: the query-side helper replaces this body (see
/work/notes/engine-interface.md for the context and helpers it can use).
"""

from __future__ import annotations

from cortex_memory.contract.requests import FetchRequest
from cortex_memory.contract.responses import FetchPage
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import UnsupportedError

__all__ = ["fetch"]


def fetch(ctx: EngineContext, req: FetchRequest, deadline: Deadline) -> FetchPage:
    """Serve ``fetch`` for the engine (the request is already validated)."""
    raise UnsupportedError(f"engine `{ctx.engine_id}` fetch is not built yet")

"""The engine's explore (engine.md §9.11): facet counts over the admitted scopes.

Not built yet: the query-side helper replaces this body (see
/work/notes/engine-interface.md for the context and helpers it can use).
"""

from __future__ import annotations

from cortex_memory.contract.explore import ExplorePage, ExploreRequest
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import UnsupportedError

__all__ = ["explore"]


def explore(ctx: EngineContext, req: ExploreRequest, deadline: Deadline) -> ExplorePage:
    """Serve ``explore`` for the engine (the request is already validated)."""
    raise UnsupportedError(f"engine `{ctx.engine_id}` explore is not built yet")

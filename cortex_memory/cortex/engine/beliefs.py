"""The engine's beliefs (engine.md §9.12): belief hits from packs or the beliefs listing.

Not built yet: the query-side helper replaces this body (see
/work/notes/engine-interface.md for the context and helpers it can use).
"""

from __future__ import annotations

from typing import List

from cortex_memory.contract.consolidation import BeliefsRequest
from cortex_memory.contract.responses import Hit
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import UnsupportedError

__all__ = ["beliefs"]


def beliefs(ctx: EngineContext, req: BeliefsRequest, deadline: Deadline) -> List[Hit]:
    """Serve ``beliefs`` for the engine (the request is already validated)."""
    raise UnsupportedError(f"engine `{ctx.engine_id}` beliefs is not built yet")

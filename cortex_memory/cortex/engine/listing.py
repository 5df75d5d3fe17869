"""list, list_preview and get (engine.md §9.6, §9.7). Being built."""

from __future__ import annotations

from typing import List

from cortex_memory.contract.requests import GetRequest, ListRequest
from cortex_memory.contract.responses import Hit, ListPage
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import UnsupportedError

__all__ = ["get_items", "list_items"]


def list_items(
    ctx: EngineContext, req: ListRequest, deadline: Deadline, *, preview: bool
) -> ListPage:
    """One page of the admitted items."""
    raise UnsupportedError("list is not built yet")


def get_items(ctx: EngineContext, req: GetRequest, deadline: Deadline) -> List[Hit]:
    """Whole items by id, in request order."""
    raise UnsupportedError("get is not built yet")

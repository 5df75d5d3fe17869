"""store / store_many (engine.md §9.4). Being built."""

from __future__ import annotations

from typing import List, Sequence

from cortex_memory.contract.items import StoreItem, StoreReceipt
from cortex_memory.contract.requests import WaitFor
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import UnsupportedError

__all__ = ["store_many"]


def store_many(
    ctx: EngineContext, items: Sequence[StoreItem], wait: WaitFor, deadline: Deadline
) -> List[StoreReceipt]:
    """Store a validated batch; receipts in item order."""
    raise UnsupportedError("store is not built yet")

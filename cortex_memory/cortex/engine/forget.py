"""forget by ids or by filter (engine.md §9.10). Being built."""

from __future__ import annotations

from cortex_memory.contract.forget import ForgetReport, ForgetTarget
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import UnsupportedError

__all__ = ["forget"]


def forget(ctx: EngineContext, target: ForgetTarget, deadline: Deadline) -> ForgetReport:
    """Forget the target's items."""
    raise UnsupportedError("forget is not built yet")

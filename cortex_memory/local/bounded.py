"""A call's deadline on a borrowed SQLite connection (``deadline=`` on the local engine).

While a bounded call holds a connection, two SQLite mechanisms keep it within
its deadline:

- the **busy timeout** (how long a statement waits for another connection's
  lock) is cut to the time the call has left, so a write queued behind
  another writer gives up when the deadline passes instead of after the
  engine's whole ``timeout``;
- a **progress handler** interrupts any statement still running once the
  deadline has passed (every :data:`STEPS` virtual machine steps it asks the
  deadline), so a long scan or ranked read ends there too.

An interrupted or timed-out statement inside a write transaction rolls the
whole transaction back, so a call past its deadline leaves nothing half
written; the failure is ``UnavailableError`` ("deadline exceeded"). An
unbounded call changes nothing on the connection (no cost on the hot path).
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from typing import Iterator

from cortex_memory.contract.deadline import Deadline

__all__ = ["STEPS", "bounded", "where"]

#: Virtual machine steps between two looks at the deadline (a few hundred µs of work).
STEPS = 4000


def where(action: str) -> str:
    """How a deadline failure names the call: ``the local engine while <action>``."""
    return f"the local engine while {action}"


def _left_ms(seconds: float) -> int:
    # Rounded up, so a lock given up on means the deadline has passed (the
    # failure then says "deadline exceeded", not "stayed locked").
    return math.ceil(seconds * 1000)


@contextlib.contextmanager
def bounded(
    conn: sqlite3.Connection, deadline: Deadline, action: str, busy_timeout: float
) -> Iterator[None]:
    """Run the block's statements on ``conn`` within ``deadline``; ``busy_timeout`` is
    the engine's own (restored afterwards).

    A failed statement once the deadline has passed (interrupted, or locked
    past the shortened busy timeout) leaves as the deadline's
    ``UnavailableError``, with the ``sqlite3`` error as its cause.
    """
    if not deadline.bounded:
        yield
        return
    left = deadline.remaining() or 0.0
    if left <= 0:
        raise deadline.error(where(action))
    if left < busy_timeout:
        conn.execute(f"PRAGMA busy_timeout = {_left_ms(left)}")
    conn.set_progress_handler(lambda: 1 if deadline.expired() else 0, STEPS)
    try:
        yield
    except sqlite3.Error as exc:
        if deadline.expired():
            raise deadline.error(where(action)) from exc
        raise
    finally:
        conn.set_progress_handler(None, 0)
        if left < busy_timeout:
            # What sqlite3.connect(timeout=...) set: whole milliseconds, truncated.
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")

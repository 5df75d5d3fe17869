"""Bounded fan-out over worker threads (engine.md §10).

Packs, scope reads, assembly lookups and recency probes run a few at a time on a
``ThreadPoolExecutor`` built for the one call (no pool outlives it, so an engine
holds no threads between calls). Results come back in input order; when inputs
fail, the earliest failing input's error is raised once the in-flight ones end.
"""

from __future__ import annotations

from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Callable, List, Optional, Sequence, TypeVar

__all__ = ["ASSEMBLY_WORKERS", "PACK_WORKERS", "PROBE_WORKERS", "SCOPE_WORKERS", "fan_out"]

PACK_WORKERS = 4
"""Recall packs in flight at once (fetch, recall)."""

SCOPE_WORKERS = 4
"""Scopes read at once (beliefs, explore)."""

ASSEMBLY_WORKERS = 4
"""Item lookups in flight while assembling conversations and chunked documents."""

PROBE_WORKERS = 8
"""Recency probes in flight at once."""

_T = TypeVar("_T")
_R = TypeVar("_R")


def fan_out(fn: Callable[[_T], _R], inputs: Sequence[_T], workers: int) -> List[_R]:
    """``[fn(x) for x in inputs]`` with at most ``workers`` calls in flight.

    Results keep the input order. When a call raises, inputs not yet started are
    cancelled, the running ones are allowed to end, and the error of the earliest
    failing input is raised. One input (or ``workers`` of 1) runs on the calling
    thread.
    """
    items = list(inputs)
    if len(items) <= 1 or workers <= 1:
        return [fn(item) for item in items]
    pool = ThreadPoolExecutor(
        max_workers=min(workers, len(items)), thread_name_prefix="cortex-fanout"
    )
    futures: List[Future[_R]] = []
    try:
        futures = [pool.submit(fn, item) for item in items]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        if any(f.exception() is not None for f in done if not f.cancelled()):
            for future in futures:
                future.cancel()
    finally:
        # Waits for the running calls; cancelled ones never start.
        pool.shutdown(wait=True)
    first: Optional[BaseException] = None
    for future in futures:
        if future.cancelled():
            continue
        error = future.exception()
        if error is not None:
            first = error
            break
    if first is not None:
        raise first
    return [future.result() for future in futures]

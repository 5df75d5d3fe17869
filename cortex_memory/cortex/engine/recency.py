"""The recency map and scope picking for a capped fetch (engine.md §9.8).

A fetch capped by ``max_scopes`` reads the scopes the query names first, then the
most recently written ones. How recent a scope is comes from the
:class:`RecencyMap`, shared by an engine and its copies: our own writes ``touch``
their scope; a scope without a fresh entry is probed (its newest 20 events) and
what the probe saw is ``learn``-ed. An entry is trusted for 10 minutes.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from cortex_memory.contract.jsonfmt import parse_timestamp
from cortex_memory.cortex.engine.fanout import PROBE_WORKERS, fan_out
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import Error

if TYPE_CHECKING:  # pragma: no cover - the context imports this module
    from cortex_memory.cortex.engine.context import EngineContext
    from cortex_memory.cortex.engine.scopes import KindScope

__all__ = [
    "PROBE_EVENTS",
    "TRUSTED_SECONDS",
    "Recency",
    "RecencyMap",
    "is_named",
    "newest_observed",
    "pick_scopes",
    "query_words",
]

logger = logging.getLogger(__name__)

TRUSTED_SECONDS = 600.0
"""How long an entry is trusted (10 minutes)."""

PROBE_EVENTS = 20
"""Events one probe lists (the newest of the scope)."""

_MIN_WORD = 3
_WORD_SPLIT = re.compile(r"[^0-9A-Za-z]+")
_ID_SPLIT = re.compile(r"[-_]")


class Recency(NamedTuple):
    """One scope's entry: its newest ``observed_at`` (or None) and when that was learned."""

    newest: Optional[datetime]
    learned_at: float


class RecencyMap:
    """Scope path → :class:`Recency`, behind a lock; shared by an engine and its copies.

    ``clock`` (monotonic seconds) and ``now`` (aware UTC datetime) are injectable for tests.
    """

    __slots__ = ("_clock", "_entries", "_lock", "_now")

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        now: Optional[Callable[[], datetime]] = None,
    ) -> None:
        self._lock = threading.Lock()
        self._entries: Dict[str, Recency] = {}
        self._clock = clock
        self._now = now if now is not None else _utc_now

    def touch(self, path: str) -> None:
        """Record that we just wrote to ``path`` (newest = now)."""
        now = self._now()
        with self._lock:
            self._entries[path] = Recency(now, self._clock())

    def learn(self, path: str, newest: Optional[datetime]) -> None:
        """Record what a probe saw, unless a fresh entry already holds a newer date."""
        stamp = self._clock()
        with self._lock:
            held = self._entries.get(path)
            if (
                held is not None
                and stamp - held.learned_at < TRUSTED_SECONDS
                and held.newest is not None
                and (newest is None or held.newest > newest)
            ):
                return
            self._entries[path] = Recency(newest, stamp)

    def fresh(self, path: str) -> Optional[Recency]:
        """The entry of ``path`` while it is trusted, else None."""
        stamp = self._clock()
        with self._lock:
            held = self._entries.get(path)
        if held is None or stamp - held.learned_at >= TRUSTED_SECONDS:
            return None
        return held

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"RecencyMap({len(self)} scopes)"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def newest_observed(events: Sequence[object]) -> Optional[datetime]:
    """The newest parseable RFC 3339 ``context.observed_at`` among ``events``."""
    newest: Optional[datetime] = None
    for event in events:
        if not isinstance(event, dict):
            continue
        context = event.get("context")
        value = context.get("observed_at") if isinstance(context, dict) else None
        if not isinstance(value, str):
            continue
        try:
            at = parse_timestamp(value, truncate=True)
        except Error:
            continue
        if newest is None or at > newest:
            newest = at
    return newest


def query_words(query: str) -> Set[str]:
    """The query's words: split on non-alphanumerics, at least 3 characters, lowercased."""
    return {word.lower() for word in _WORD_SPLIT.split(query) if len(word) >= _MIN_WORD}


def is_named(scope: KindScope, words: Set[str]) -> bool:
    """True when a namespace segment id (or a ``-``/``_`` part of it, ≥ 3 chars) is a word."""
    for segment in scope.namespace.segments:
        ident = segment.id.lower()
        if ident in words:
            return True
        for part in _ID_SPLIT.split(ident):
            if len(part) >= _MIN_WORD and part in words:
                return True
    return False


def pick_scopes(
    ctx: EngineContext,
    scopes: Sequence[KindScope],
    query: str,
    limit: int,
    deadline: Deadline,
) -> List[KindScope]:
    """The ``limit`` scopes a capped fetch reads, in their original order.

    (1) Probe every scope without a fresh entry, 8 at a time (a failed probe is
    logged at debug and leaves the scope undated); (2) rank named scopes first,
    then newer dates (undated last), then original position; (3) keep ``limit``.
    """
    recency = ctx.recency
    stale = [scope for scope in scopes if recency.fresh(scope.path) is None]

    def probe(scope: KindScope) -> None:
        try:
            page = ctx.log.page(scope.path, None, None, PROBE_EVENTS, deadline)
        except Error as err:
            logger.debug("recency probe of scope %r failed: %s", scope.path, err)
            return
        recency.learn(scope.path, newest_observed(page.items))

    fan_out(probe, stale, PROBE_WORKERS)
    words = query_words(query)
    ranked: List[Tuple[int, int, float, int]] = []
    for position, scope in enumerate(scopes):
        entry = recency.fresh(scope.path)
        newest = entry.newest if entry is not None else None
        key = (
            0 if is_named(scope, words) else 1,
            0 if newest is not None else 1,
            -newest.timestamp() if newest is not None else 0.0,
            position,
        )
        ranked.append(key)
    ranked.sort()
    chosen = sorted(key[3] for key in ranked[: max(limit, 0)])
    return [scopes[position] for position in chosen]

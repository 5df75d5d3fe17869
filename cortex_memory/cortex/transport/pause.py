"""The rate-limit pause shared by an engine and its copies (engine.md §5.10).

When the server answers 429 with ``Retry-After`` (or, failing that,
``RateLimit-Reset``) in whole seconds, every later request of the client family
waits until that moment before it is sent. The wait is capped
(``Timing.max_pause``, 10 s by default:
:func:`~cortex_memory.cortex.timing.pause_for`), an HTTP-date ``Retry-After`` is
not honoured (it does not parse as seconds, so ``RateLimit-Reset`` is
consulted), and when two answers overlap the later "until" wins.

No lock is held while sleeping; a waiter re-reads the "until" after each sleep,
so a longer pause recorded meanwhile holds it too. Every sleep respects the
call's :class:`~cortex_memory.cortex.timing.Deadline`.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Mapping, Optional

from cortex_memory.cortex.timing import Deadline, pause_for

__all__ = ["RateLimitPause", "parse_pause_seconds"]

# The first header that parses wins, in this order.
_PAUSE_HEADERS = ("Retry-After", "RateLimit-Reset")

# u64::MAX has 20 digits; anything longer is not a valid number of seconds (and
# Python refuses to convert very long digit strings anyway).
_MAX_DIGITS = 20


def parse_pause_seconds(headers: Mapping[str, str]) -> Optional[int]:
    """The first of ``Retry-After``, ``RateLimit-Reset`` that is a non-negative integer.

    ``headers`` must look names up case-insensitively (urllib3's header dict
    does). Returns ``None`` when neither parses; ``0`` is a valid answer and
    stops the search.
    """
    for name in _PAUSE_HEADERS:
        raw = headers.get(name)
        if raw is None:
            continue
        value = raw.strip(" \t")
        if value and len(value) <= _MAX_DIGITS and value.isascii() and value.isdigit():
            seconds = int(value)
            if seconds < 2**64:
                return seconds
    return None


class RateLimitPause:
    """The moment before which no request of the client family may be sent."""

    __slots__ = ("_clock", "_lock", "_sleep", "_until")

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._lock = threading.Lock()
        self._until = 0.0
        self._clock = clock
        self._sleep = sleep

    def note(self, headers: Mapping[str, str], cap: float) -> float:
        """Record the pause a 429 answer asks for; return the seconds recorded (0 if none).

        The wait is capped at ``cap`` seconds; a zero wait records nothing, and
        an earlier "until" never replaces a later one.
        """
        wait = pause_for(parse_pause_seconds(headers), cap)
        if wait <= 0:
            return 0.0
        until = self._clock() + wait
        with self._lock:
            if until > self._until:
                self._until = until
        return wait

    def remaining(self) -> float:
        """Seconds until requests may be sent again (0 when not paused)."""
        with self._lock:
            until = self._until
        return max(0.0, until - self._clock())

    def holding(self) -> bool:
        """True while requests must still wait (the clock is read only once a pause was noted).

        The transport asks this before every attempt and calls :meth:`wait` only
        when it is true, so an unpaused request never builds the name ``wait``
        would put in a deadline error.
        """
        with self._lock:
            until = self._until
        return until > 0.0 and until > self._clock()

    def wait(self, deadline: Deadline, where: str) -> None:
        """Block until the pause is over; raise when the deadline would pass first."""
        while True:
            left = self.remaining()
            if left <= 0:
                return
            deadline.sleep(left, where, sleep=self._sleep)

    def clear(self) -> None:
        """Forget any recorded pause."""
        with self._lock:
            self._until = 0.0

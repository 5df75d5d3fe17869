"""The per-call deadline every ``MemoryEngine`` operation takes (``deadline=``).

:class:`Deadline` is the optional overall bound of one public call. Every
attempt, poll, sleep and long scan below the call asks it how long it may still
take; past it the call raises :class:`~cortex_memory.errors.UnavailableError`
with a message ending in "deadline exceeded". It lives in the contract layer so
the contract and every engine share one class;
``cortex_memory.cortex.timing.Deadline`` is the same class.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Optional, Union

from cortex_memory.errors import InvalidRequestError, UnavailableError

__all__ = ["Deadline", "DeadlineLike"]


class Deadline:
    """An optional overall bound, in seconds, on one public call.

    ``Deadline(None)`` is unbounded. A bounded deadline starts counting when it
    is built, on the monotonic clock. It never sleeps past its end: a sleep that
    could not finish in time raises at once instead of waiting for a failure.
    """

    __slots__ = ("_clock", "_end", "seconds")

    seconds: Optional[float]
    _end: Optional[float]

    def __init__(
        self,
        seconds: Optional[float] = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if seconds is not None:
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
                raise TypeError(
                    f"deadline must be a number of seconds or None, not {type(seconds).__name__}"
                )
            if not math.isfinite(seconds) or seconds <= 0:
                raise InvalidRequestError("deadline must be a positive, finite number of seconds")
            seconds = float(seconds)
        self.seconds = seconds
        self._clock = clock
        self._end = None if seconds is None else clock() + seconds

    @classmethod
    def of(cls, value: DeadlineLike) -> Deadline:
        """Return ``value`` if it is a :class:`Deadline`, else a new one of that many seconds."""
        if isinstance(value, Deadline):
            return value
        if value is None:
            return _UNBOUNDED
        return cls(value)

    @property
    def bounded(self) -> bool:
        """True when the deadline has an end."""
        return self._end is not None

    def remaining(self) -> Optional[float]:
        """Seconds left (never negative), or ``None`` when unbounded."""
        if self._end is None:
            return None
        return max(0.0, self._end - self._clock())

    def expired(self) -> bool:
        """True once a bounded deadline has passed."""
        return self._end is not None and self._clock() >= self._end

    def cap(self, seconds: float) -> float:
        """Return ``seconds`` shortened to what is left of the deadline."""
        left = self.remaining()
        return seconds if left is None else min(seconds, left)

    def error(self, where: str) -> UnavailableError:
        """The error a call raises when this deadline is exceeded; ``where`` names the call."""
        return UnavailableError(f"{where}: deadline exceeded ({self.seconds:g} s)")

    def check(self, where: str) -> None:
        """Raise :meth:`error` if the deadline has passed."""
        if self.expired():
            raise self.error(where)

    def sleep(
        self,
        seconds: float,
        where: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Sleep ``seconds``, or raise at once when the deadline would pass first.

        Waiting until the deadline only to fail then would hold the caller for
        nothing, so a sleep that cannot end in time fails immediately.
        """
        if seconds <= 0:
            self.check(where)
            return
        left = self.remaining()
        if left is not None and seconds >= left:
            raise self.error(where)
        sleep(seconds)

    def __repr__(self) -> str:
        if self.seconds is None:
            return "Deadline(None)"
        return f"Deadline({self.seconds:g}, remaining={self.remaining():.3f})"


# Shared: an unbounded deadline has no state that changes.
_UNBOUNDED = Deadline(None)

DeadlineLike = Union[None, float, int, Deadline]
"""What a ``deadline=`` keyword accepts: ``None``, seconds, or a :class:`Deadline`."""

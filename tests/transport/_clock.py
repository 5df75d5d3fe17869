"""A fake monotonic clock for the timing tests: it only moves when something sleeps on it."""

from __future__ import annotations

from typing import List


class FakeClock:
    """Call it for the time; pass :meth:`sleep` where a ``sleep`` is taken."""

    def __init__(self, start: float = 100.0) -> None:
        self.now = start
        self.slept: List[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0, "a negative sleep"
        self.slept.append(seconds)
        self.now += seconds

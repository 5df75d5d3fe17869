"""A value built once, on first use, by whichever thread gets there first.

The transport defers a few things until the first request: importing urllib3
(the import opens a probe socket), defining the watched pool classes (they
subclass urllib3's) and building the one ``Retry(total=False)``. Each is
process-wide and shared by every thread, so each is built under a lock and
read without one afterwards (a single reference read; the value never changes
once set).
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, Optional, TypeVar

__all__ = ["Lazy"]

T = TypeVar("T")


class Lazy(Generic[T]):
    """``build()``'s value, built on the first :meth:`get` and then kept.

    Threads racing to the first ``get`` build it once: the first takes the
    lock and builds, the others wait and read its value.
    """

    __slots__ = ("_build", "_lock", "_value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._value: Optional[T] = None

    def get(self) -> T:
        """The value, built now if no thread has built it yet."""
        value = self._value
        if value is not None:
            return value
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value

    def peek(self) -> Optional[T]:
        """The value if it was built, else ``None`` (never builds)."""
        return self._value

    def __repr__(self) -> str:
        state = "built" if self._value is not None else "not built"
        return f"Lazy({getattr(self._build, '__name__', 'build')}, {state})"

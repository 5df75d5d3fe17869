"""The watchdog that ends an HTTP exchange when its deadline passes (engine.md §5.2).

urllib3's read timeout applies to each socket receive, so a server that drips
one byte at a time never trips it, and a blocking ``read(n)`` waits for all
``n`` bytes. The transport therefore arms a :class:`Watch` for each exchange;
when its deadline passes, the socket of the connection in use is shut down
(``SHUT_RDWR``), which wakes the blocked receive, and the exchange reports
"timed out". Slow headers and slow bodies both end on time.

One shared timer thread serves every watch. It is started lazily by the first
:meth:`Watchdog.arm` (never at import), is a daemon (it never keeps the
interpreter alive), exits by itself after a while with nothing to watch, and
:meth:`Watchdog.stop` ends it at once. Disarming is lazy and cheap: a finished
watch stays in the heap until its time comes or the heap is compacted, so the
thread is woken only when a new watch ends before the one it sleeps towards.

The connection is attached by the transport's connection classes when it
connects and from inside urllib3's ``request()`` (see :mod:`.pool`): the
thread that arms a watch is the thread that sends the request, so a
thread-local "current watch" joins them.

The watch covers the TLS handshake and a proxy's ``CONNECT`` exchange too
(each socket operation of the connect is also bounded by the connect timeout);
a watch that fires before the socket exists keeps checking until it does.

The transport uses :func:`current_watchdog`: the process default
(:data:`WATCHDOG`) unless a host or a test has put another in its place with
:func:`install_watchdog`, which returns the one it replaced so it can be put
back. Install one between exchanges: an exchange keeps the watchdog it armed.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import socket
import threading
import time
from typing import Any, List, Optional, Tuple

__all__ = ["WATCHDOG", "Watch", "Watchdog", "current_watchdog", "install_watchdog"]

logger = logging.getLogger(__name__)

# A watch that fires while the connection has no socket yet looks again this soon.
_RECHECK = 0.05
# The thread exits after this long with nothing left to watch.
_IDLE_EXIT = 30.0
# Rebuild the heap when stale entries outnumber live ones by this much.
_COMPACT_SLACK = 64


class Watch:
    """One armed exchange: its deadline, its connection and whether it fired."""

    __slots__ = ("_conn", "_done", "_fired", "_response", "deadline")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self._conn: Any = None
        self._response: Any = None
        self._fired = False
        self._done = False

    @property
    def fired(self) -> bool:
        """True once the deadline passed and the connection was (or is being) cut."""
        return self._fired

    def expired(self) -> bool:
        """True when the deadline has passed (whether or not the watchdog got to it yet)."""
        return self._fired or time.monotonic() >= self.deadline


class Watchdog:
    """A single timer thread that cuts the connections of overdue exchanges."""

    def __init__(self) -> None:
        # The condition's own lock, held directly where nothing waits or is
        # notified (a plain lock costs no Python frame to enter).
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._heap: List[Tuple[float, int, Watch]] = []
        self._live = 0
        self._seq = itertools.count()
        self._thread: Optional[threading.Thread] = None
        self._target = float("inf")  # when the thread will next wake on its own
        self._generation = 0  # bumped by stop(): a thread of an older generation exits
        self._local = threading.local()

    # -- used by the transport ---------------------------------------------------

    def arm(self, seconds: float) -> Watch:
        """Start watching an exchange of the current thread that must end within ``seconds``."""
        watch = Watch(time.monotonic() + seconds)
        with self._mutex:
            heapq.heappush(self._heap, (watch.deadline, next(self._seq), watch))
            self._live += 1
            if self._thread is None:
                # (None also in a forked child: see _forked.)
                self._generation += 1
                self._thread = threading.Thread(
                    target=self._run,
                    args=(self._generation,),
                    name="cortex-memory-watchdog",
                    daemon=True,
                )
                self._thread.start()
            elif watch.deadline < self._target:
                self._cond.notify()
        self._local.watch = watch
        return watch

    def attach(self, conn: Any) -> None:
        """Record the connection the current thread's watch is using (called by urllib3 hooks)."""
        watch: Optional[Watch] = getattr(self._local, "watch", None)
        if watch is None:
            return
        with self._mutex:
            if not watch._done:
                watch._conn = conn

    def follow(self, watch: Watch, response: Any) -> None:
        """Record the response of ``watch``; once it has released its connection, nothing is cut."""
        with self._mutex:
            watch._response = response

    def disarm(self, watch: Watch) -> None:
        """Stop watching; the watch's entry is dropped lazily."""
        if getattr(self._local, "watch", None) is watch:
            self._local.watch = None
        with self._mutex:
            if watch._done:
                return
            watch._done = True
            watch._conn = None
            watch._response = None
            self._live -= 1
            if len(self._heap) > 2 * self._live + _COMPACT_SLACK:
                self._heap = [entry for entry in self._heap if not entry[2]._done]
                heapq.heapify(self._heap)

    def stop(self, timeout: float = 5.0) -> None:
        """End the timer thread now (a later :meth:`arm` starts a new one)."""
        with self._cond:
            thread = self._thread
            self._thread = None
            self._generation += 1
            self._target = float("inf")
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        """True while the timer thread is alive."""
        with self._cond:
            return self._thread is not None

    # -- the timer thread ----------------------------------------------------------

    def _run(self, generation: int) -> None:
        me = threading.current_thread()
        with self._cond:
            try:
                while self._generation == generation:
                    now = time.monotonic()
                    due = self._pop_due(now)
                    if due:
                        self._cond.release()
                        try:
                            for watch in due:
                                self._fire(watch)
                        finally:
                            self._cond.acquire()
                        continue
                    if self._heap:
                        self._target = self._heap[0][0]
                        self._cond.wait(self._target - now)
                    else:
                        self._target = now + _IDLE_EXIT
                        self._cond.wait(_IDLE_EXIT)
                        if not self._heap and time.monotonic() >= self._target:
                            break
            finally:
                if self._thread is me:
                    self._thread = None
                    self._target = float("inf")

    def _pop_due(self, now: float) -> List[Watch]:
        due: List[Watch] = []
        while self._heap and self._heap[0][0] <= now:
            _, _, watch = heapq.heappop(self._heap)
            if not watch._done:
                due.append(watch)
        return due

    def _fire(self, watch: Watch) -> None:
        """Cut the watch's connection; if it has no socket yet, look again shortly."""
        with self._cond:
            if watch._done:
                return
            watch._fired = True
            conn = watch._conn
            response = watch._response
            if response is not None and getattr(response, "connection", None) is None:
                # The body was read and the connection went back to the pool;
                # it may already serve another request, so it is not ours to cut.
                return
            sock = getattr(conn, "sock", None) if conn is not None else None
            if sock is None:
                heapq.heappush(self._heap, (time.monotonic() + _RECHECK, next(self._seq), watch))
                return
        # Already closed or never connected: the exchange then ends by itself.
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        logger.debug("an HTTP exchange passed its deadline; its connection was cut")

    def _forked(self) -> None:
        """In a forked child: the parent's timer thread does not exist here."""
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._thread = None
        self._target = float("inf")
        self._heap = []
        self._live = 0
        self._local = threading.local()


WATCHDOG = Watchdog()
"""The process-wide default watchdog (it starts no thread until the first request)."""

_current = WATCHDOG
_current_lock = threading.Lock()


def current_watchdog() -> Watchdog:
    """The watchdog new exchanges arm: :data:`WATCHDOG` unless another was installed."""
    # Read without the lock: it is one reference, written whole under the lock by
    # install_watchdog, so a reader sees the old watchdog or the new one, both
    # working. (Every request reads it twice; the lock would cost more than the read.)
    return _current


def install_watchdog(watchdog: Watchdog) -> Watchdog:
    """Make ``watchdog`` the one new exchanges arm; return the one it replaces.

    For hosts and tests: ``previous = install_watchdog(mine)`` ... then
    ``install_watchdog(previous)``. Exchanges already under way keep theirs.
    """
    global _current
    if not isinstance(watchdog, Watchdog):
        raise TypeError(f"watchdog must be a Watchdog, not {type(watchdog).__name__}")
    with _current_lock:
        previous = _current
        _current = watchdog
    return previous


def _forked() -> None:
    """In a forked child: no timer thread exists, and the parent may have held the lock."""
    global _current_lock
    _current_lock = threading.Lock()
    WATCHDOG._forked()
    if _current is not WATCHDOG:
        _current._forked()


if hasattr(os, "register_at_fork"):  # POSIX: a child starts with no watchdog thread
    os.register_at_fork(after_in_child=_forked)

"""The ``X-Cortex-Actor`` cache of the Direct wire, shared by copies (engine.md §5.9).

CortexDB serves every request as an actor; a minted token is accepted only when
the request names its subject in ``X-Cortex-Actor``. The client learns that
subject once from ``GET v1/auth/whoami`` and caches it in one of three states:

* **unknown** (initial, and after any 401/403): the next request asks whoami;
* **known(value)**: ``value`` is sent on every request;
* **absent** (whoami is 404/405, or its 2xx body names no usable caller): no
  header, and whoami is never asked again.

A failed lookup (any other status, a transport error) caches nothing: the
request goes out without the header and reports its own result.

Threading: ``_lock`` guards the state and is never held during I/O. The lookup
is single-flight: ``_lookup_lock`` admits one asker; threads that waited for it
use its outcome (no header if it failed) instead of asking again. A reset that
happens while a lookup is in flight wins: the stale answer is not stored.
"""

from __future__ import annotations

import enum
import json
import threading
from typing import Callable, Optional, Tuple

from cortex_memory.cortex.transport.text import is_header_value, trim

__all__ = ["ActorCache", "ActorState", "LookupOutcome", "actor_from_whoami"]


class ActorState(enum.Enum):
    """The three states of the actor cache."""

    UNKNOWN = "unknown"
    KNOWN = "known"
    ABSENT = "absent"


# What a whoami lookup learned: (state, value). UNKNOWN means "nothing learned".
LookupOutcome = Tuple[ActorState, Optional[str]]

_NOTHING: LookupOutcome = (ActorState.UNKNOWN, None)


def actor_from_whoami(status: int, body: bytes) -> LookupOutcome:
    """Map a whoami answer to a cache outcome.

    2xx with a ``caller`` string that is non-empty after trimming and a valid
    header value → known(trimmed); any other 2xx body → absent; 404 or 405 →
    absent; every other status → nothing learned.
    """
    if status in (404, 405):
        return (ActorState.ABSENT, None)
    if not 200 <= status < 300:
        return _NOTHING
    try:
        parsed = json.loads(body) if body else None
    except (ValueError, RecursionError):  # not JSON, or nested past the recursion limit
        return (ActorState.ABSENT, None)
    caller = parsed.get("caller") if isinstance(parsed, dict) else None
    if isinstance(caller, str):
        value = trim(caller)
        if value and is_header_value(value):
            return (ActorState.KNOWN, value)
    return (ActorState.ABSENT, None)


class ActorCache:
    """The shared actor state with a single-flight whoami lookup."""

    __slots__ = ("_epoch", "_lock", "_lookup_lock", "_lookups", "_state", "_value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lookup_lock = threading.Lock()
        self._state = ActorState.UNKNOWN
        self._value: Optional[str] = None
        self._epoch = 0  # bumped by reset(); a lookup from an older epoch is dropped
        self._lookups = 0  # completed lookups, so waiters can tell one finished

    def _snapshot(self) -> Tuple[ActorState, Optional[str], int, int]:
        with self._lock:
            return self._state, self._value, self._lookups, self._epoch

    @property
    def state(self) -> ActorState:
        """The current state."""
        with self._lock:
            return self._state

    def reset(self) -> None:
        """Forget what was learned (after any 401 or 403): the next request asks again."""
        with self._lock:
            self._state = ActorState.UNKNOWN
            self._value = None
            self._epoch += 1

    def learn(self, outcome: LookupOutcome) -> None:
        """Record what a whoami answer outside a request's own lookup taught (``health``).

        Only an unknown state is filled in, and "nothing learned" changes nothing.
        """
        state, value = outcome
        if state is ActorState.UNKNOWN:
            return
        with self._lock:
            if self._state is ActorState.UNKNOWN:
                self._state = state
                self._value = value

    def settled(self) -> Tuple[bool, Optional[str]]:
        """``(True, value)`` when known or absent (value ``None``); ``(False, None)`` when unknown.

        The cheap check a request makes first: only an unknown state needs
        :meth:`header` and its lookup.
        """
        with self._lock:
            if self._state is ActorState.UNKNOWN:
                return False, None
            return True, self._value

    def header(self, lookup: Callable[[], LookupOutcome]) -> Optional[str]:
        """The header value to send now, asking ``lookup`` first when the state is unknown.

        ``lookup`` performs the whoami request and must not raise; it returns
        :data:`LookupOutcome`. Returns ``None`` when no header is to be sent.
        """
        state, value, seen, _ = self._snapshot()
        if state is ActorState.KNOWN:
            return value
        if state is ActorState.ABSENT:
            return None
        with self._lookup_lock:
            state, value, lookups, epoch = self._snapshot()
            if lookups != seen or state is not ActorState.UNKNOWN:
                # Someone looked up while we waited: use their outcome, even a
                # failed one (no header), rather than asking again.
                return value if state is ActorState.KNOWN else None
            state, value = lookup()
            with self._lock:
                self._lookups += 1
                if self._epoch == epoch and state is not ActorState.UNKNOWN:
                    self._state = state
                    self._value = value
            return value if state is ActorState.KNOWN else None

"""Every timing and wait policy of the CortexDB engine, in one module (engine.md §3, §5, §8).

The way urllib3 keeps ``Timeout`` and ``Retry`` as values beside its pool, this module
holds what the engine waits for and how, as frozen values and pure functions:

* :class:`Timing` — the durations (request and connect timeouts, read backoff, poll
  gaps, visibility, settle and recovery budgets, rate-limit pause cap). Production
  defaults are the specification's numbers; tests pass shorter ones.
* :class:`Deadline` — the optional overall bound of one public call. It is defined in
  :mod:`cortex_memory.contract.deadline` (the contract and every engine share it) and is
  the same class here.
* :func:`backoff` — the sleep after a failed attempt; :func:`pause_for` — how long a
  rate-limited answer's ``Retry-After`` holds requests back, capped.
* :class:`RetryPolicy` and :meth:`RetryPolicy.run` — the one retry loop: attempts,
  backoff, which errors are retried and which, met on a retry, show an earlier
  attempt applied. :data:`READS`, :data:`HOSTED_WRITES` and :data:`HOSTED_FORGETS` are
  the engine's three policies.
* :class:`PollPolicy` and :func:`poll_until` — the one poll loop: first gap, growth,
  budget; the visibility, settle and recovery waits are calls to it.

Nothing here sends a request or holds shared state; every sleep goes through the
call's :class:`Deadline`, which never sleeps past its end.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, fields
from typing import Callable, Optional, Tuple, Type, TypeVar, Union

from cortex_memory.contract.deadline import Deadline, DeadlineLike
from cortex_memory.errors import ConfigError, ConflictError, Error, NotFoundError, UnavailableError

__all__ = [
    "AUTHORIZATION_STATE_CHANGED",
    "Deadline",
    "DeadlineLike",
    "FORGET_ATTEMPTS",
    "HOSTED_FORGETS",
    "HOSTED_WRITES",
    "PollPolicy",
    "READS",
    "READ_ATTEMPTS",
    "RetryPolicy",
    "STATE_CHANGE_ATTEMPTS",
    "Timing",
    "WRITE_ATTEMPTS",
    "backoff",
    "next_poll",
    "pause_for",
    "poll_until",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

Sleep = Callable[[float], None]

Where = Union[str, Callable[[], str]]
"""How a retried call is named in a deadline error and the log: the name, or a function
building it (a read's name is built only if one of its attempts fails)."""


@dataclass(frozen=True)
class Timing:
    """Every timing the engine uses, in seconds (frozen; validated at construction).

    ``request_timeout`` bounds one whole HTTP exchange (connect, headers and
    body); ``connect_timeout`` bounds the connection set-up and is never longer
    than the request timeout. ``read_backoff`` is the base of the read retry
    backoff (base, then twice the base, ...). ``poll_interval`` is the gap
    between visibility polls, which the hosted wire doubles up to
    ``hosted_poll_ceiling``. ``visibility``, ``settle`` and ``recovery`` are the
    budgets of the visibility wait, the settle wait and hosted write recovery.
    ``max_pause`` caps the pause a rate-limited answer can impose.
    """

    request_timeout: float = 60.0
    connect_timeout: float = 10.0
    read_backoff: float = 0.25
    poll_interval: float = 0.25
    hosted_poll_ceiling: float = 2.0
    visibility: float = 30.0
    settle: float = 10.0
    recovery: float = 30.0
    max_pause: float = 10.0

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = _seconds(
                f"Timing.{spec.name}", getattr(self, spec.name), positive=spec.name in _POSITIVE
            )
            # Normalise ints so reprs and arithmetic are uniform.
            object.__setattr__(self, spec.name, value)

    @property
    def effective_connect_timeout(self) -> float:
        """The connect timeout actually used: ``min(connect_timeout, request_timeout)``."""
        return min(self.connect_timeout, self.request_timeout)


# A zero request or connect timeout could never succeed; the rest may be zero
# (a zero backoff or poll gap is a valid, if impolite, test timing).
_POSITIVE = frozenset({"request_timeout", "connect_timeout"})


def _seconds(name: str, value: object, *, positive: bool = False) -> float:
    """``value`` as a finite float, non-negative (or, when ``positive``, greater than zero).

    A wrong type is a ``TypeError`` and a wrong value a ``ConfigError``, each naming ``name``.
    """
    # bool is an int subclass, but True seconds is a mistake, not a timing.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number of seconds")
    if positive:
        if value <= 0:
            raise ConfigError(f"{name} must be greater than zero")
    elif value < 0:
        raise ConfigError(f"{name} must not be negative")
    return float(value)


# -- backoff and the rate-limit pause ---------------------------------------------------

READ_ATTEMPTS = 3
"""Attempts of one read (event, scope and belief listings, recall packs)."""

STATE_CHANGE_ATTEMPTS = 6
"""Attempts of one read while the backend answers ``AUTHORIZATION_STATE_CHANGED``."""

WRITE_ATTEMPTS = 3
"""Attempts of one hosted write under its claim."""

FORGET_ATTEMPTS = 3
"""Attempts of one hosted forget request."""

AUTHORIZATION_STATE_CHANGED = "AUTHORIZATION_STATE_CHANGED"
"""The error code of a backend whose authorization state is settling: a read keeps trying."""


def backoff(attempt: int, base: float) -> float:
    """Seconds to sleep after failed attempt ``attempt`` (1-based): ``base × 2^(attempt−1)``."""
    return base * (1 << (attempt - 1))


def pause_for(asked: Optional[int], cap: float) -> float:
    """Seconds a rate-limited answer holds requests back: the ``Retry-After`` it ``asked``
    for (whole seconds, ``None`` when it named none), at most ``cap``; 0 for no pause.
    """
    if not asked:
        return 0.0
    wait = min(float(asked), cap)
    return wait if wait > 0 else 0.0


# -- retries ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """How one call is retried (frozen; validated at construction).

    ``attempts`` is the most attempts in all (1: sent once). Only an error of a
    ``retry_on`` type is retried; an error whose ``code`` is named in ``longer``
    earns that many attempts instead. After failed attempt *n* the call sleeps
    :func:`backoff` ``(n, backoff)`` within its deadline, so the sleeps run
    ``backoff``, twice it, ... An error of an ``applied_on_retry`` type met on a
    retry means an earlier attempt applied (a hosted write whose claim is already
    used, a forget that finds nothing): the loop stops and the caller's ``applied``
    decides the answer. On the first attempt it is an ordinary failure.

    Every attempt also waits out the client family's shared rate-limit pause
    before it is sent (the transport does that per attempt, for calls sent once
    too), so after a 429 the retry goes no sooner than the answer's
    ``Retry-After`` allows, capped by ``Timing.max_pause`` (:func:`pause_for`).
    """

    attempts: int = READ_ATTEMPTS
    backoff: float = 0.25  # Timing().read_backoff
    retry_on: Tuple[Type[Error], ...] = (UnavailableError,)
    longer: Tuple[Tuple[str, int], ...] = ()
    applied_on_retry: Tuple[Type[Error], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "attempts", _attempts("RetryPolicy.attempts", self.attempts))
        object.__setattr__(self, "backoff", _seconds("RetryPolicy.backoff", self.backoff))
        for name in ("retry_on", "applied_on_retry"):
            kinds = getattr(self, name)
            if not isinstance(kinds, tuple) or not all(
                isinstance(kind, type) and issubclass(kind, Error) for kind in kinds
            ):
                raise TypeError(f"RetryPolicy.{name} must be a tuple of Error subclasses")
        if set(self.retry_on) & set(self.applied_on_retry):
            raise ConfigError("an error cannot be both retried and taken as applied")
        if not isinstance(self.longer, tuple) or not all(
            isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
            for pair in self.longer
        ):
            raise TypeError("RetryPolicy.longer must be a tuple of (error code, attempts) pairs")
        for code, attempts in self.longer:
            _attempts(f"RetryPolicy.longer[{code!r}]", attempts)

    def limit(self, err: Error) -> int:
        """The attempts ``err`` allows in all: its code's in ``longer``, else ``attempts``."""
        for code, attempts in self.longer:
            if err.code == code:
                return attempts
        return self.attempts

    def delay(self, attempt: int, base: Optional[float] = None) -> float:
        """Seconds to sleep after failed attempt ``attempt`` (1-based), from the policy's
        backoff base or ``base``."""
        return backoff(attempt, self.backoff if base is None else base)

    def run(
        self,
        call: Callable[[], T],
        deadline: Deadline,
        where: Where,
        *,
        backoff: Optional[float] = None,
        applied: Optional[Callable[[Error], T]] = None,
        sleep: Sleep = time.sleep,
    ) -> Tuple[T, int]:
        """Call ``call`` under this policy; its value and the attempts made.

        An error the policy does not retry propagates at once; the last retried one
        propagates when the attempts are spent. A backoff sleep the ``deadline``
        cannot hold raises ``deadline.error(where)`` at once, chained from the
        error that caused the retry. With ``applied``, an ``applied_on_retry``
        error met on a retry becomes ``applied(err)`` (called while handling it, so
        what ``applied`` raises is never retried); without it, that error propagates.
        ``where`` names the call in that error and in the log (never a query string);
        it may be a function, called only once an attempt has failed. ``backoff`` is
        this call's backoff base (an engine's ``Timing.read_backoff``) in place of
        the policy's.
        """
        attempt = 1
        while True:
            try:
                return call(), attempt
            except self.retry_on as err:
                if attempt >= self.limit(err):
                    raise
                delay = self.delay(attempt, backoff)
                if not isinstance(where, str):
                    where = where()
                logger.debug(
                    "%s: attempt %d failed (%s), retrying in %.3f s",
                    where, attempt, type(err).__name__, delay,
                )  # fmt: skip
                try:
                    deadline.sleep(delay, where, sleep=sleep)
                except UnavailableError as exceeded:
                    raise exceeded from err
            except self.applied_on_retry as err:
                if attempt == 1 or applied is None:
                    raise
                logger.debug(
                    "%s: retry %d met %s; an earlier attempt applied",
                    where if isinstance(where, str) else where(), attempt, type(err).__name__,
                )  # fmt: skip
                return applied(err), attempt
            attempt += 1


def _attempts(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ConfigError(f"{name} must be at least 1")
    return value


READS = RetryPolicy(longer=((AUTHORIZATION_STATE_CHANGED, STATE_CHANGE_ATTEMPTS),))
"""A read: 3 attempts on ``UnavailableError``, 6 while the backend's state is changing."""

HOSTED_WRITES = RetryPolicy(WRITE_ATTEMPTS, applied_on_retry=(ConflictError,))
"""A hosted write under its claim: 3 attempts; a claim refused as used on a retry means
an earlier attempt may have applied (the writer then looks for the event)."""

HOSTED_FORGETS = RetryPolicy(FORGET_ATTEMPTS, applied_on_retry=(NotFoundError,))
"""A hosted forget: 3 attempts; a 404 on a retry means an earlier attempt applied."""


# -- polls --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PollPolicy:
    """How a wait polls (frozen; validated at construction).

    The first gap is ``interval``. With a ``ceiling`` the gap doubles after every
    poll up to it (the hosted API rate-limits polls); without one it stays.
    ``budget`` bounds the whole wait, measured from its first poll.
    """

    budget: float
    interval: float
    ceiling: Optional[float] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "budget", _seconds("PollPolicy.budget", self.budget))
        object.__setattr__(self, "interval", _seconds("PollPolicy.interval", self.interval))
        if self.ceiling is not None:
            object.__setattr__(self, "ceiling", _seconds("PollPolicy.ceiling", self.ceiling))

    @classmethod
    def of(cls, timing: Timing, budget: float, *, hosted: bool) -> PollPolicy:
        """The engine's polls: ``timing``'s gap, doubling to its ceiling on hosted only."""
        return cls(budget, timing.poll_interval, timing.hosted_poll_ceiling if hosted else None)

    def after(self, gap: float) -> float:
        """The gap after ``gap``: the same, or doubled up to the ceiling."""
        return gap if self.ceiling is None else min(gap * 2.0, self.ceiling)


def next_poll(gap: float, timing: Timing, hosted: bool) -> float:
    """The poll gap after ``gap``: Direct keeps it; hosted doubles it up to the ceiling.

    With the production timings the hosted gaps run 250, 500, 1000, 2000, 2000 ms…
    """
    return PollPolicy.of(timing, 0.0, hosted=hosted).after(gap)


def poll_until(
    check: Callable[[], Optional[T]],
    policy: PollPolicy,
    deadline: Deadline,
    where: str,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Sleep = time.sleep,
) -> Optional[T]:
    """Call ``check`` until it returns something other than ``None``, and return that.

    Returns ``None`` once ``policy.budget`` is spent (each caller says what that
    means: a failed store, an unknown outcome, a settle given up). Between checks it
    sleeps the policy's gap, never past the budget's end; a sleep the ``deadline``
    cannot hold raises ``deadline.error(where)`` (``UnavailableError``, "deadline
    exceeded") at once. What ``check`` raises propagates: a check that takes a
    failure as "not yet" catches it and returns ``None``.
    """
    end = clock() + policy.budget
    gap = policy.interval
    while True:
        value = check()
        if value is not None:
            return value
        left = end - clock()
        if left <= 0:
            return None
        deadline.sleep(min(gap, left), where, sleep=sleep)
        gap = policy.after(gap)

"""Every timing the CortexDB engine uses, and the per-call deadline.

:class:`Timing` is a frozen dataclass holding the request and connect timeouts,
the read backoff, the poll gaps, the visibility, settle and recovery budgets and
the rate-limit pause cap (engine.md §3). The production defaults are the
specification's numbers; tests pass shorter ones (5 ms polls and backoff, 2 s
visibility, sub-second request timeouts) so no test waits a minute.

:class:`Deadline` (the optional overall bound of one public call) is defined in
:mod:`cortex_memory.contract.deadline`, where the contract and every engine
share it; it is re-exported here as the same class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from cortex_memory.contract.deadline import Deadline, DeadlineLike
from cortex_memory.errors import ConfigError

__all__ = ["Deadline", "DeadlineLike", "Timing"]


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
            value = getattr(self, spec.name)
            # bool is an int subclass, but True seconds is a mistake, not a timing.
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(
                    f"Timing.{spec.name} must be a number of seconds, not {type(value).__name__}"
                )
            if not math.isfinite(value):
                raise ConfigError(f"Timing.{spec.name} must be a finite number of seconds")
            if spec.name in _POSITIVE:
                if value <= 0:
                    raise ConfigError(f"Timing.{spec.name} must be greater than zero")
            elif value < 0:
                raise ConfigError(f"Timing.{spec.name} must not be negative")
            # Normalise ints so reprs and arithmetic are uniform.
            object.__setattr__(self, spec.name, float(value))

    @property
    def effective_connect_timeout(self) -> float:
        """The connect timeout actually used: ``min(connect_timeout, request_timeout)``."""
        return min(self.connect_timeout, self.request_timeout)


# A zero request or connect timeout could never succeed; the rest may be zero
# (a zero backoff or poll gap is a valid, if impolite, test timing).
_POSITIVE = frozenset({"request_timeout", "connect_timeout"})

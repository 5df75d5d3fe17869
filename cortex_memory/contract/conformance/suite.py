"""``run(engine)``: hold an engine to the contract, check by check (contract.md §9.3).

Checks run in a fixed order and stop at the first failure; cleanup always
runs afterwards, under the check name ``cleanup``, and leaves items stored
before the run alone.
"""

from __future__ import annotations

import logging
from typing import Callable, Optional, Tuple

from cortex_memory.contract.conformance.checks_consolidate import check_consolidate
from cortex_memory.contract.conformance.checks_forget import (
    check_empty_forget,
    check_erase,
    check_forget_by_filter,
    check_forget_by_id,
)
from cortex_memory.contract.conformance.checks_items import (
    check_export,
    check_health,
    check_replay,
    check_round_trip,
    check_store_many,
    check_store_with,
)
from cortex_memory.contract.conformance.checks_namespaces import check_namespaces
from cortex_memory.contract.conformance.checks_reads import (
    check_explore,
    check_fetch_filters,
    check_get,
    check_recall,
    check_unsupported_modes,
)
from cortex_memory.contract.conformance.checks_writes import (
    check_bulk,
    check_deadline,
    check_replace,
)
from cortex_memory.contract.conformance.harness import Run, Session, run_then_clean
from cortex_memory.contract.engine import MemoryEngine

__all__ = ["CHECKS", "CHECK_NAMES", "Check", "run", "run_checks"]

_log = logging.getLogger(__name__)

#: A check: drives the engine through a session and raises on a failure.
Check = Callable[[Session], None]

#: Every check, in the order it runs, with the name a failure reports.
CHECKS: Tuple[Tuple[str, Check], ...] = (
    ("health", check_health),
    ("round_trip", check_round_trip),
    ("export", check_export),
    ("replay", check_replay),
    ("explore", check_explore),
    ("get", check_get),
    ("store_many", check_store_many),
    ("store_with", check_store_with),
    ("fetch_filters", check_fetch_filters),
    ("unsupported_modes", check_unsupported_modes),
    ("namespaces", check_namespaces),
    ("empty_forget", check_empty_forget),
    ("forget_by_id", check_forget_by_id),
    ("forget_by_filter", check_forget_by_filter),
    ("erase", check_erase),
    ("recall", check_recall),
    ("consolidate", check_consolidate),
    ("replace", check_replace),
    ("deadline", check_deadline),
    ("bulk", check_bulk),
)

#: The check names, in order (``cleanup`` runs after them all).
CHECK_NAMES: Tuple[str, ...] = tuple(name for name, _ in CHECKS)


def run_checks(session: Session, checks: Tuple[Tuple[str, Check], ...] = CHECKS) -> None:
    """Run ``checks`` in order on ``session``, then clean up, whatever happened.

    The first failure stops the checks and is raised after cleanup; a cleanup
    failure is raised only when every check passed (otherwise it is logged,
    so the first failure stays the one reported).
    """

    def body() -> None:
        for name, check in checks:
            session.check = name
            check(session)

    run_then_clean(body, (session,), "conformance", _log)


def run(engine: MemoryEngine, *, identity: Optional[Run] = None) -> None:
    """Hold ``engine`` to the contract; return None, or raise ``ConformanceError``.

    Raises :class:`CheckFailure` when the engine answered wrongly and
    :class:`CheckEngineFailure` when it raised on a call it must serve, each
    naming the check. Programming errors (``TypeError``...) propagate as they
    are. ``identity`` fixes the run's nonce (a fresh one by default).
    """
    run_checks(Session(engine, identity if identity is not None else Run.fresh()))

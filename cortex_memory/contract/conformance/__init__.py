"""The conformance suite: holds any ``MemoryEngine`` to the contract (contract.md §9).

``run(engine)`` runs 20 checks in order against one engine and cleans up
after itself; ``run_isolation(a, b)`` checks that two users of one backing
store cannot reach each other. Both return None or raise
:class:`ConformanceError` naming the failed check: :class:`CheckFailure`
when the engine answered wrongly, :class:`CheckEngineFailure` when it raised
on a call it must serve. :class:`ReferenceEngine` is the in-memory engine the
suite is calibrated on. See ``docs/conformance.md``.
"""

from __future__ import annotations

from cortex_memory.contract.conformance.errors import (
    CheckEngineFailure,
    CheckFailure,
    ConformanceError,
)
from cortex_memory.contract.conformance.fixtures import Probe, probes, round_trip_items
from cortex_memory.contract.conformance.harness import CLEANUP, Run, Session
from cortex_memory.contract.conformance.isolation import ISOLATION, run_isolation
from cortex_memory.contract.conformance.reference import (
    REFERENCE_ENGINE_ID,
    ReferenceEngine,
    ReferenceStore,
)
from cortex_memory.contract.conformance.suite import CHECK_NAMES, CHECKS, run, run_checks

__all__ = [
    "CHECKS",
    "CHECK_NAMES",
    "CLEANUP",
    "CheckEngineFailure",
    "CheckFailure",
    "ConformanceError",
    "ISOLATION",
    "Probe",
    "REFERENCE_ENGINE_ID",
    "ReferenceEngine",
    "ReferenceStore",
    "Run",
    "Session",
    "probes",
    "round_trip_items",
    "run",
    "run_checks",
    "run_isolation",
]

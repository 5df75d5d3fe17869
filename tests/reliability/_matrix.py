"""The fault matrix's cells, and the run of one cell with every check the matrix makes.

A *cell* is one engine operation (``_ops.py``) on one wire under one knob case
(``_cases.py``) and, for a transport fault aimed at one route, that route.
:func:`cells` generates every cell from the two tables, so a new operation,
route or case is swept automatically.

Each cell: a fresh double seeded with the sample items (and a belief), an engine
with short timings and the canary token, the case's knobs, one call bounded by a
deadline. The call must return a correct result or raise the case's documented
error. Then the knobs are restored, the same call runs again and must succeed,
and the double's log must hold no duplicate event and no half-written item.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from cortex_memory import Error
from cortex_memory.testing import KNOB_DEFAULTS, DirectDouble, HostedDouble
from cortex_memory.testing._knobs import Fault

from ._cases import CASES, Case
from ._ops import OPS, PREFIXES, RETRIED_READS, WIRES, Op, prepare
from ._support import audit, check_requests, engine_on

DEADLINE = 8.0
"""The ``deadline=`` of every call: no cell may take longer (plus a small grace)."""

__all__ = [
    "DEADLINE",
    "Cell",
    "baseline",
    "cells",
    "invoke",
    "new_double",
    "representative",
    "run_cell",
]

# -- cells -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One operation, on one wire, under one case (aimed at one route for per-route cases)."""

    wire: str
    op: Op
    case: Case
    route: Optional[str] = None

    def must_succeed(self) -> bool:
        """True when the fault must not reach the caller at all."""
        case = self.case
        if case.transparent or self.op.kind == "health" or self.wire in case.succeeds:
            return True
        if self.route is None:
            return False
        if self.route == "whoami":
            return True  # a failed actor lookup only means "no actor header"
        if self.op.kind == "write" and self.route == "recall":
            return True  # the settle wait is best effort
        if not case.retried:
            return False
        # Reads are retried; hosted writes and forgets are retried too (with recovery).
        return self.route in RETRIED_READS or (
            self.wire == "hosted" and self.route in ("write", "forget")
        )

    @property
    def id(self) -> str:
        """A readable test id."""
        where = f"@{self.route}" if self.route else ""
        return f"{self.wire}-{self.op.name}-{self.case.label}{where}"


def cells() -> Iterator[Cell]:
    """Every cell: each case on each operation whose routes it can fire on, on each wire."""
    for case in CASES:
        for wire in WIRES:
            if wire not in case.wires:
                continue
            for op in OPS:
                met = sorted(case.routes & op.uses(wire))
                if not met:
                    continue
                if case.per_route:
                    for route in met:
                        yield Cell(wire, op, case, route)
                else:
                    yield Cell(wire, op, case)


def representative() -> List[Cell]:
    """One cell per case, rotating over the wires and operations it meets: the fast subset."""
    by_case: Dict[str, List[Cell]] = {}
    for cell in cells():
        by_case.setdefault(cell.case.label, []).append(cell)
    return [group[(7 * n) % len(group)] for n, group in enumerate(by_case.values())]


def new_double(wire: str) -> Any:
    """A fresh, started double of ``wire`` (hosted without the rate window)."""
    if wire == "direct":
        return DirectDouble().start()
    return HostedDouble(rate_limit_requests=None).start()


_BASELINES: Dict[Tuple[str, str], Any] = {}


def baseline(wire: str, op: Op) -> Any:
    """The operation's result with no knob, on a freshly prepared double (cached)."""
    key = (wire, op.name)
    if key not in _BASELINES:
        double = new_double(wire)
        try:
            prepare(double)
            _BASELINES[key] = op.normal(op.call(engine_on(double), DEADLINE))
        finally:
            double.close()
    return _BASELINES[key]


@dataclass
class Outcome:
    """What one call did."""

    value: Any = None
    error: Optional[Error] = None
    seconds: float = 0.0
    notes: List[str] = field(default_factory=list)


def invoke(op: Op, engine: Any) -> Outcome:
    """Run the operation once; anything but an ``Error`` is a failure of the engine."""
    started = time.monotonic()
    out = Outcome()
    try:
        out.value = op.call(engine, DEADLINE)
    except Error as err:
        out.error = err
    except Exception as exc:
        raise AssertionError(
            f"{op.name} raised {type(exc).__name__} (not a cortex_memory Error): {exc}"
        ) from exc
    out.seconds = time.monotonic() - started
    return out


def _snapshot(state: Any) -> Dict[str, Any]:
    with state.lock:
        return {name: getattr(state, name) for name in KNOB_DEFAULTS}


def run_cell(cell: Cell) -> Outcome:
    """Run one cell and assert everything the matrix promises; returns the faulted outcome."""
    wire, op, case = cell.wire, cell.op, cell.case
    base = baseline(wire, op)
    double = new_double(wire)
    try:
        prepare(double)
        state = double.state
        engine = engine_on(double)
        knobs_before = _snapshot(state)
        before = audit(state)
        prefix = PREFIXES[wire][cell.route] if cell.route else None
        settings = case.settings(state, prefix)
        state.set_knobs(**settings)

        first = invoke(op, engine)
        assert first.seconds < DEADLINE + 2.0, f"{cell.id} took {first.seconds:.1f} s"
        # An aimed fault must have fired: the cell's route really was used.
        unspent = [f for f in settings.values() if isinstance(f, Fault) and f.remaining != 0]
        assert unspent == [], f"{cell.id}: the fault never fired: {unspent}"
        _check_first(cell, first, base)
        _check_log(cell, audit(state), before, first, rerun=False)

        state.set_knobs(**knobs_before)
        again = invoke(op, engine)
        if again.error is not None:
            raise AssertionError(f"{cell.id}: the re-run failed: {again.error!r}")
        _check_rerun(cell, again, base)
        _check_log(cell, audit(state), before, again, rerun=True)
        problems = check_requests(state)
        assert problems == [], f"{cell.id}: {problems}"
        return first
    finally:
        double.close()


def _check_first(cell: Cell, out: Outcome, base: Any) -> None:
    op, case = cell.op, cell.case
    if out.error is not None:
        allowed = case.allowed(cell.wire)
        if cell.must_succeed():
            raise AssertionError(f"{cell.id}: must succeed, raised {out.error!r}")
        if not isinstance(out.error, allowed):
            names = ", ".join(t.__name__ for t in allowed) or "none"
            raise AssertionError(
                f"{cell.id}: raised {type(out.error).__name__} (allowed: {names}): {out.error}"
            )
        return
    result = op.normal(out.value)
    if op.kind == "write":
        assert result == base, f"{cell.id}: receipts {result} != {base}"
    elif op.kind == "health":
        if case.transparent:
            assert result == "ok", f"{cell.id}: health {result}"
    elif case.transparent or case.exact:
        assert result == base, f"{cell.id}: {result!r} != unfaulted {base!r}"
    else:
        assert op.partial(result, base), f"{cell.id}: {result!r} is not part of {base!r}"


def _check_rerun(cell: Cell, out: Outcome, base: Any) -> None:
    op = cell.op
    result = op.normal(out.value)
    if op.kind in ("read", "write"):
        assert result == base, f"{cell.id}: re-run gave {result!r}, unfaulted {base!r}"
    elif op.kind == "health":
        assert result == "ok", f"{cell.id}: health after the fault: {result}"
    elif op.kind == "consolidate":
        assert result[0] == base[0], f"{cell.id}: re-run receipt {result!r}"


def _check_log(cell: Cell, now: Any, before: Any, out: Outcome, *, rerun: bool) -> None:
    op = cell.op
    doubled = now.duplicates
    assert not doubled, f"{cell.id}: duplicate events {doubled}"
    assert now.foreign == 0, f"{cell.id}: {now.foreign} events that are not ours"
    if op.kind in ("read", "health", "consolidate"):
        assert now.event_ids == before.event_ids, f"{cell.id}: a read changed the log"
        return
    succeeded = out.error is None
    if op.kind == "write":
        for item in op.stores:
            if succeeded:
                assert now.complete(item.fingerprint()), f"{cell.id}: {item.item_kind} not whole"
        if rerun:
            held = set(now.parts)
            assert held == set(before.parts) | {i.fingerprint() for i in op.stores}, (
                f"{cell.id}: items held after the re-run: {sorted(held)}"
            )
            assert now.incomplete() == [], f"{cell.id}: half-written {now.incomplete()}"
        return
    # forget
    untouched = [i for i in before.parts if i not in op.forgets]
    for item_id in untouched:
        assert now.complete(item_id), f"{cell.id}: forget damaged {item_id}"
    if rerun or (succeeded and op.normal(out.value) == len(op.forgets)):
        left = [i for i in op.forgets if now.holds(i)]
        assert left == [], f"{cell.id}: still held after forget: {left}"

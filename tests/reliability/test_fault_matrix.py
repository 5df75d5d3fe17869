"""The fault matrix (quality.md, "Reliability and security"): every operation × every knob.

For each engine operation and each fault knob of the doubles (doubles.md §8.2,
§8.3, and the fidelity knobs of §3 at their legacy or stress values) that can
fire on a route the operation uses, on both wires: the call returns the
unfaulted result (or, for knobs that hide data, a part of it) or raises the
documented ``Error`` subclass within its deadline; with the knob cleared the
same call succeeds, and the log holds no duplicate event and no half-written item.

The tables live in ``_matrix.py``. The full sweep is ``slow``; one representative
cell per knob case runs in every test run.
"""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from cortex_memory import Error, ListRequest, MetaFilter, UnsupportedError
from cortex_memory.contract import EraseRequest
from cortex_memory.testing import KNOB_DEFAULTS, LEGACY_KNOBS
from cortex_memory.testing._knobs import TRANSPORT_KNOBS

from ._cases import CASES, UNREACHABLE, knobs_named
from ._matrix import DEADLINE, Cell, baseline, cells, invoke, new_double, representative, run_cell
from ._ops import OPS, ROOT, WIRES, prepare, route_of
from ._support import audit, check_requests, engine_on

ALL_CELLS: List[Cell] = list(cells())
FAST_CELLS: List[Cell] = representative()


# -- the tables stay complete and honest ----------------------------------------------------


def test_every_knob_of_the_doubles_is_in_the_matrix() -> None:
    named = knobs_named()
    knobs = set(KNOB_DEFAULTS)  # the doubles' own knob table
    assert sorted(knobs - named) == [], "a knob no case sets: add it to _cases.py"
    assert sorted(named - knobs) == [], "a case sets a knob the doubles do not have"


def test_every_transport_knob_has_a_case_aimed_at_each_route() -> None:
    aimed = {case.label.split("=")[0] for case in CASES if case.per_route}
    assert set(TRANSPORT_KNOBS) - {"retry_after_seconds", "ratelimit_reset_seconds"} <= aimed


def test_every_legacy_value_is_swept() -> None:
    # Each fidelity knob appears in some case (at its legacy or a stress value).
    assert set(LEGACY_KNOBS) <= knobs_named()


def test_every_reachable_case_meets_an_operation_on_each_of_its_wires() -> None:
    met: Dict[str, set] = {}
    for cell in ALL_CELLS:
        met.setdefault(cell.case.label, set()).add(cell.wire)
    for case in CASES:
        assert met.get(case.label) == set(case.wires), case.label


def test_the_fast_subset_covers_every_case() -> None:
    assert {cell.case.label for cell in FAST_CELLS} == {case.label for case in CASES}
    assert len({cell.id for cell in ALL_CELLS}) == len(ALL_CELLS)
    assert {cell.wire for cell in FAST_CELLS} == set(WIRES)


@pytest.mark.parametrize("wire", WIRES)
def test_operation_routes_are_what_the_engine_sends(wire: str) -> None:
    """The op → routes table matches the requests each operation really makes."""
    for op in OPS:
        double = new_double(wire)
        try:
            prepare(double)
            op.call(engine_on(double), DEADLINE)
            sent = {route_of(wire, line) for line in double.state.requests()}
            assert sent == set(op.routes.get(wire, frozenset())), (op.name, sorted(sent))
            whoami = double.state.counters["whoami_calls"]
            assert whoami == (1 if "whoami" in op.uses(wire) else 0), (op.name, whoami)
        finally:
            double.close()


@pytest.mark.parametrize("wire", WIRES)
def test_knobs_on_routes_no_operation_uses_change_nothing(wire: str) -> None:
    """Registration, version and erase knobs, all firing at once: every result unchanged."""
    for op in OPS:
        base = baseline(wire, op)
        double = new_double(wire)
        try:
            prepare(double)
            before = audit(double.state)
            double.state.set_knobs(**{name: value for name, (_, value) in UNREACHABLE.items()})
            engine = engine_on(double)
            out = invoke(op, engine)
            assert out.error is None, (op.name, out.error)
            result = op.normal(out.value)
            if op.kind == "write":
                assert result == base
            elif op.kind != "forget":
                assert result == base, op.name
            routes = {route_of(wire, line) for line in double.state.requests()}
            assert "?" not in routes, double.state.requests()
            assert audit(double.state).duplicates == {}
            if op.kind not in ("write", "forget"):
                assert audit(double.state).event_ids == before.event_ids
            with pytest.raises(UnsupportedError):
                engine.erase(EraseRequest.new(ROOT))
            with pytest.raises(UnsupportedError):
                engine.export(ListRequest(MetaFilter(), 5))
            assert check_requests(double.state) == []
        finally:
            double.close()


# -- the sweep ------------------------------------------------------------------------------


@pytest.mark.parametrize("cell", FAST_CELLS, ids=[cell.id for cell in FAST_CELLS])
def test_fault_cell(cell: Cell) -> None:
    run_cell(cell)


@pytest.mark.slow
@pytest.mark.parametrize("cell", ALL_CELLS, ids=[cell.id for cell in ALL_CELLS])
def test_fault_cell_full(cell: Cell) -> None:
    run_cell(cell)


def test_a_cell_that_raises_is_checked_against_its_documented_error() -> None:
    # The harness itself: a persistent 503 on a read is Unavailable, and the check
    # refuses a mismatch (so a wrong error class cannot pass unnoticed).
    fail = next(c for c in CASES if c.label == "fail_all=503:UNAVAILABLE")
    listing = next(op for op in OPS if op.name == "list")
    out = run_cell(Cell("direct", listing, fail))
    assert isinstance(out.error, Error)
    assert type(out.error).__name__ == "UnavailableError"
    wrong = type(fail)(fail.label, fail.settings, fail.routes, errors=(UnsupportedError,))
    with pytest.raises(AssertionError, match="allowed: UnsupportedError"):
        run_cell(Cell("direct", listing, wrong))


def _count(cells_: List[Cell]) -> Dict[str, Any]:
    return {"cells": len(cells_), "cases": len({c.case.label for c in cells_})}


def test_matrix_size_is_reported() -> None:
    # Not a speed assertion: the sweep is large enough to mean something.
    assert _count(ALL_CELLS)["cells"] > 500
    assert _count(FAST_CELLS)["cases"] == len(CASES)

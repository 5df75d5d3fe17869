"""The conformance suite over the CortexDB engine on both doubles (doubles.md §12.3).

The whole contract (contract.md §9) runs against a real engine on loopback
doubles: Direct and hosted, under the default profile, the legacy profile, and
with a realistic indexing delay, so reads only see what the engine's own
visibility waits make visible. Export and erase skip (the engine answers
``UnsupportedError`` for them in this release). Each run writes under its own
workspace and cleans up, so the double holds no item afterwards.
"""

from __future__ import annotations

from typing import Any, Dict

import pytest

from cortex_memory.contract.conformance import run
from cortex_memory.testing import DirectDouble, HostedDouble

PROFILES: Dict[str, Dict[str, Any]] = {
    "default": {},
    "legacy": {"legacy": True},
    "index-delay": {"index_delay_seconds": 0.05},
}


def _double(wire: str, knobs: Dict[str, Any]) -> Any:
    if wire == "direct":
        return DirectDouble(**knobs)
    # The suite sends more than 300 requests a minute through one token.
    return HostedDouble(rate_limit_requests=None, **knobs)


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("wire", ["direct", "hosted"])
def test_conformance(wire: str, profile: str) -> None:
    with _double(wire, PROFILES[profile]) as double:
        run(double.engine())
        # Cleanup forgot everything the run wrote.
        assert double.state.event_count() == 0


def test_conformance_keeps_a_foreign_item() -> None:
    """The suite leaves what it did not write alone, on a double shared with other data."""
    from cortex_memory.contract.items import StoreItem

    with DirectDouble() as double:
        engine = double.engine()
        receipt = engine.store(StoreItem.document("foreign note kept by the suite"))
        run(engine)
        assert double.state.event_count() == 1
        with double.state.lock:
            (event,) = double.state.log.events
        assert receipt.replayed is False
        assert "foreign note" in event["content"]["text"]

"""Fixtures for the query-side tests (fetch, recall, explore, beliefs, consolidate).

Events are seeded straight into a double's log, written by the envelope layer
exactly as the engine writes them, so each test controls what every scope holds
and in which order the double ranks it (newest first, then by query words).
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Tuple

import pytest

from cortex_memory.contract.items import StoreItem
from cortex_memory.cortex import EngineCredential, StaticBearer
from cortex_memory.cortex.engine.core import CortexEngine
from cortex_memory.cortex.envelope import encode_checked, envelopes, experience_request, scope_path
from cortex_memory.cortex.timing import Timing
from cortex_memory.testing import TEST_TOKEN, DirectDouble, HostedDouble

TEST_TIMING = Timing(
    request_timeout=10.0,
    connect_timeout=2.0,
    read_backoff=0.005,
    poll_interval=0.005,
    visibility=2.0,
    settle=2.0,
    recovery=2.0,
)

Double = Any  # DirectDouble or HostedDouble


def engine_for(url: str, hosted: bool = False) -> Any:
    """An engine with test timings on a one-off server at ``url`` (close it after use)."""
    if hosted:
        return CortexEngine.tinyhumans(url, StaticBearer(TEST_TOKEN), timing=TEST_TIMING)
    return CortexEngine.direct(url, EngineCredential.static(TEST_TOKEN), timing=TEST_TIMING)


def bodies_of(item: StoreItem) -> List[Dict[str, Any]]:
    """The experience bodies that store ``item``, in part order."""
    return [experience_request(env, encode_checked(env)).to_json() for env in envelopes(item)]


def seed_bodies(double: Double, bodies: List[Dict[str, Any]]) -> List[str]:
    """Append raw experience bodies to the double's log (indexed at once); their event ids."""
    state = double.state
    out = []
    with state.lock:
        for body in bodies:
            event_id, _ = state.log.append(
                body, indexed_at=0.0, allowed_scope_types=None, size_counts_role_prefix=True
            )
            out.append(event_id)
    return out


def seed(double: Double, *items: StoreItem) -> List[str]:
    """Store ``items`` in the double's log (oldest first); their fingerprints."""
    for item in items:
        seed_bodies(double, bodies_of(item))
    return [item.fingerprint() for item in items]


def recalls_by_scope(double: Double) -> Dict[str, List[Dict[str, Any]]]:
    """The recall bodies the double received, grouped by scope."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    with double.state.lock:
        for body in double.state.seen.recalls:
            out.setdefault(body.get("scope"), []).append(body)
    return out


@pytest.fixture(params=["direct", "hosted"])
def on_wire(request: pytest.FixtureRequest) -> Iterator[Tuple[Any, Double]]:
    """``(engine, double)`` on a fresh double of each wire (no hosted rate window).

    The engine is the harness's (``double.engine()``: 5 ms polls and backoff),
    closed with the double.
    """
    double = DirectDouble() if request.param == "direct" else HostedDouble(rate_limit_requests=None)
    with double:
        yield double.engine(), double


@pytest.fixture
def on_direct() -> Iterator[Tuple[Any, Double]]:
    """``(engine, double)`` on a fresh Direct double."""
    with DirectDouble() as double:
        yield double.engine(), double


@pytest.fixture
def on_hosted() -> Iterator[Tuple[Any, Double]]:
    """``(engine, double)`` on a fresh hosted double (no rate window)."""
    with HostedDouble(rate_limit_requests=None) as double:
        yield double.engine(), double


# Helpers are handed to tests through the `h` fixture: test modules cannot import
# the conftest under importlib mode.


class Helpers:
    """The module's helper functions, as attributes."""

    engine_for = staticmethod(engine_for)
    bodies_of = staticmethod(bodies_of)
    seed = staticmethod(seed)
    seed_bodies = staticmethod(seed_bodies)
    recalls_by_scope = staticmethod(recalls_by_scope)
    scope_path = staticmethod(scope_path)
    timing = TEST_TIMING


@pytest.fixture
def h() -> Any:
    """The helper functions (``h.seed(double, item)``, ``h.engine_for(double)``, ...)."""
    return Helpers

"""Helpers shared by the proxy and TLS tests: doubles of either wire, engines and clients."""

from __future__ import annotations

from typing import Optional

from cortex_memory.cortex import (
    CortexEngine,
    CortexWire,
    EngineCredential,
    Network,
    StaticBearer,
    Timing,
)
from cortex_memory.cortex.transport import HttpClient
from cortex_memory.testing import TEST_TOKEN, DirectDouble, HostedDouble
from cortex_memory.testing._server import BaseDouble

# Roomy timeouts (the relays add threads and hops), short polls.
TIMING = Timing(
    request_timeout=5.0,
    connect_timeout=5.0,
    read_backoff=0.005,
    poll_interval=0.005,
    visibility=2.0,
    settle=2.0,
    recovery=2.0,
)


def start_double(wire: str) -> BaseDouble:
    """A started double of ``wire`` ("direct" or "hosted"; no hosted rate window)."""
    double: BaseDouble = DirectDouble() if wire == "direct" else HostedDouble(
        rate_limit_requests=None
    )
    return double.start()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def engine(double: BaseDouble, url: str, network: Optional[Network] = None) -> CortexEngine:
    """An engine of ``double``'s wire at ``url`` (a front or a name only a proxy resolves)."""
    if double.hosted:
        source = StaticBearer(TEST_TOKEN)
        return CortexEngine.tinyhumans(url, source, timing=TIMING, network=network)
    credential = EngineCredential.static(TEST_TOKEN)
    return CortexEngine.direct(url, credential, timing=TIMING, network=network)


def hosted_client(url: str, network: Network, timing: Timing) -> HttpClient:
    """A bare hosted-wire client (no actor lookup, so one request is one attempt)."""
    credential = EngineCredential.static(TEST_TOKEN)
    return HttpClient(CortexWire.TINYHUMANS, url, credential, timing=timing, network=network)

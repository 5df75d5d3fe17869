"""Shared fixtures of the transport tests: short timings, a canary token, client factories."""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional

import pytest

from cortex_memory.cortex import CortexCredential, CortexWire, Timing
from cortex_memory.cortex.transport import HttpClient

# Every transport test uses this token so a leak of it anywhere is easy to spot.
CANARY = "ctx_canary_7f3a9e21d4b8"

# Short enough that no test waits long, long enough for a loaded 2-core box.
FAST = Timing(request_timeout=0.5, connect_timeout=0.5, read_backoff=0.005, max_pause=0.5)


@pytest.fixture
def canary() -> str:
    return CANARY


@pytest.fixture
def fast() -> Timing:
    return FAST


MakeClient = Callable[..., HttpClient]


@pytest.fixture
def make_client() -> Iterator[MakeClient]:
    """Build clients (Direct, the canary key, FAST timings by default) and close them after."""
    made: List[HttpClient] = []

    def make(
        url: str,
        *,
        wire: CortexWire = CortexWire.DIRECT,
        credential: Optional[CortexCredential] = None,
        timing: Timing = FAST,
        **kwargs: Any,
    ) -> HttpClient:
        client = HttpClient(
            wire, url, credential or CortexCredential.api_key(CANARY), timing=timing, **kwargs
        )
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()

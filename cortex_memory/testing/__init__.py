"""Loopback doubles of CortexDB Direct and the TinyHumans hosted API, for tests.

`DirectDouble` imitates CortexDB's own `/v1/*` API and `HostedDouble` the hosted
`/memory/*` API: real HTTP servers on `127.0.0.1` with the quirks of the real
services and one fault knob per failure mode. `HostileServer`, `CountingServer`,
`LoopbackServer` and `unused_url` (from `cortex_memory.testing.hostile`) are
raw-socket servers for transport tests. Host applications use them to test
their own integration:

    from cortex_memory.testing import DirectDouble, fault

    with DirectDouble(whoami_caller="user:local") as double:
        ...  # point a client at double.url
        double.state.fail_all = (503, "UNAVAILABLE")

Importing this package binds no socket and starts no thread.
"""

from __future__ import annotations

from cortex_memory.testing._direct import DirectDouble
from cortex_memory.testing._engines import TEST_TOKEN, TEST_VISIBILITY, both_doubles, sample_items
from cortex_memory.testing._hosted import HostedDouble
from cortex_memory.testing._knobs import (
    ALLOWED_SCOPE_TYPES,
    FOREVER,
    KNOB_DEFAULTS,
    LEGACY_KNOBS,
    fault,
)
from cortex_memory.testing._state import DoubleState
from cortex_memory.testing.hostile import CountingServer, HostileServer, LoopbackServer, unused_url

__all__ = [
    "ALLOWED_SCOPE_TYPES",
    "CountingServer",
    "DirectDouble",
    "DoubleState",
    "FOREVER",
    "HostedDouble",
    "HostileServer",
    "KNOB_DEFAULTS",
    "LEGACY_KNOBS",
    "LoopbackServer",
    "TEST_TOKEN",
    "TEST_VISIBILITY",
    "both_doubles",
    "fault",
    "sample_items",
    "unused_url",
]

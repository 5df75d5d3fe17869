"""Fixtures for the agent tools: engines, a hand-driven clock, schema validators."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import jsonschema
import pytest

from cortex_memory.contract import MemoryEngine
from cortex_memory.contract.conformance import ReferenceEngine
from cortex_memory.local import LocalEngine
from cortex_memory.testing import DirectDouble, HostedDouble
from cortex_memory.tools.mcp import write_output_schema
from cortex_memory.tools.memory import output_schema


class MsClock:
    """A millisecond clock a test advances by hand; thread-safe."""

    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            return self._now

    def advance(self, ms: int) -> None:
        with self._lock:
            self._now += ms


@pytest.fixture
def clock() -> MsClock:
    return MsClock()


@pytest.fixture(params=["local", "reference", "direct", "hosted"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryEngine]:
    """Each engine the remote backend and the writer must work over.

    ``direct`` and ``hosted`` are a ``CortexEngine`` on a fresh loopback double of
    that wire (closed with the double).
    """
    made: MemoryEngine
    if request.param in ("direct", "hosted"):
        double = (
            DirectDouble() if request.param == "direct" else HostedDouble(rate_limit_requests=None)
        )
        with double:
            yield double.engine()
        return
    if request.param == "local":
        made = LocalEngine(str(tmp_path / "engine.sqlite3"))
    else:
        made = ReferenceEngine()
    try:
        yield made
    finally:
        made.close()


def _validator(schema: Dict[str, Any]) -> Callable[[Any], None]:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    checker = cls(schema, format_checker=cls.FORMAT_CHECKER)

    def validate(instance: Any) -> None:
        checker.validate(instance)

    return validate


@pytest.fixture(scope="session")
def memory_output() -> Callable[[Any], None]:
    """Validates an output of the memory tool against its published schema."""
    return _validator(output_schema())


@pytest.fixture(scope="session")
def write_output() -> Callable[[Any], None]:
    """Validates a cortex_save / cortex_handoff payload against the published schema."""
    return _validator(write_output_schema())

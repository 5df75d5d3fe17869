"""Optional pytest fixtures for the doubles (never auto-registered).

Enable it in your top-level `conftest.py`:

    pytest_plugins = ["cortex_memory.testing.pytest_plugin"]

Fixtures: `direct_double` and `hosted_double`, each a fresh, started double per
test, closed afterwards. The plugin also registers the `live` marker used by
tests that need a real backend.
"""

from __future__ import annotations

import importlib
from typing import Any, Iterator

from cortex_memory.testing._direct import DirectDouble
from cortex_memory.testing._hosted import HostedDouble

__all__ = ["direct_double", "hosted_double", "pytest_configure"]

# pytest is a test-only dependency, imported only when this plugin is loaded. It is
# looked up at run time rather than imported statically so that type-checking the
# package (which targets Python 3.9) never parses the installed pytest, whose
# sources may use newer syntax.
_pytest: Any = importlib.import_module("pytest")


def pytest_configure(config: Any) -> None:
    """Register the `live` marker."""
    config.addinivalue_line(
        "markers", "live: needs a real CortexDB or hosted backend (skipped unless configured)"
    )


def _direct_double() -> Iterator[DirectDouble]:
    """A started Direct (`/v1/*`) double with default knobs, closed after the test."""
    with DirectDouble() as double:
        yield double


def _hosted_double() -> Iterator[HostedDouble]:
    """A started hosted (`/memory/*`) double with default knobs, closed after the test."""
    with HostedDouble() as double:
        yield double


direct_double = _pytest.fixture(name="direct_double")(_direct_double)
hosted_double = _pytest.fixture(name="hosted_double")(_hosted_double)

"""The public surface: a sorted __all__, no import-time side effects, typed package."""

from __future__ import annotations

import importlib
import pathlib
import subprocess
import sys

import pytest

import cortex_memory

PUBLIC_MODULES = [
    "cortex_memory",
    "cortex_memory.config",
    "cortex_memory.contract",
    "cortex_memory.contract.conformance",
    "cortex_memory.cortex",
    "cortex_memory.cortex.envelope",
    "cortex_memory.errors",
    "cortex_memory.local",
    "cortex_memory.registry",
    "cortex_memory.testing",
    "cortex_memory.tools",
    "cortex_memory.tools.mcp",
    "cortex_memory.tools.memory",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported)
    assert len(exported) == len(set(exported))
    for symbol in exported:
        assert hasattr(module, symbol), symbol


def test_package_ships_py_typed() -> None:
    assert (pathlib.Path(cortex_memory.__file__).parent / "py.typed").is_file()


def test_import_has_no_side_effects() -> None:
    code = (
        "import sys, threading, socket\n"
        "opened = []\n"
        "real = socket.socket.__init__\n"
        "def spy(self, *a, **k):\n"
        "    opened.append(1); return real(self, *a, **k)\n"
        "socket.socket.__init__ = spy\n"
        "import cortex_memory\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "assert not opened, 'a socket was opened at import'\n"
        "assert 'cortex_memory.testing' not in sys.modules\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "clean"

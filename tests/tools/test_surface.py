"""The tools' public surface: sorted ``__all__`` that resolve, and a quiet import."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

MODULES = [
    "cortex_memory.tools",
    "cortex_memory.tools.memory",
    "cortex_memory.tools.mcp",
    "cortex_memory.tools.mcp.contract",
    "cortex_memory.tools.mcp.server",
    "cortex_memory.tools.memory.secrets",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported)
    assert len(exported) == len(set(exported))
    for symbol in exported:
        assert hasattr(module, symbol), symbol


def test_importing_the_tools_opens_nothing() -> None:
    code = (
        "import socket, sys, threading\n"
        "opened = []\n"
        "real = socket.socket.__init__\n"
        "def spy(self, *a, **k):\n"
        "    opened.append(1); return real(self, *a, **k)\n"
        "socket.socket.__init__ = spy\n"
        "import cortex_memory.tools, cortex_memory.tools.mcp.cli\n"
        "assert threading.active_count() == 1\n"
        "assert not opened\n"
        "assert 'urllib3' not in sys.modules\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "clean"

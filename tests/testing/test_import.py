"""Importing the doubles has no side effects; the public surface is sorted and complete."""

from __future__ import annotations

import subprocess
import sys

import cortex_memory.testing as testing

EXPECTED_NOW = {
    "ALLOWED_SCOPE_TYPES",
    "FOREVER",
    "TEST_TOKEN",
    "TEST_VISIBILITY",
    "DirectDouble",
    "DoubleState",
    "HostedDouble",
    "fault",
    "CountingServer",
    "HostileServer",
    "LoopbackServer",
    "unused_url",
}


def test_all_is_sorted_and_resolves() -> None:
    exported = list(testing.__all__)
    assert exported == sorted(exported)
    assert len(exported) == len(set(exported))
    assert set(exported) >= EXPECTED_NOW
    for name in exported:
        assert hasattr(testing, name), name


def test_constants() -> None:
    assert testing.TEST_TOKEN == "tiny_live_test"
    assert testing.TEST_VISIBILITY == 2.0


def test_import_binds_nothing_and_starts_no_thread() -> None:
    code = (
        "import socket, sys, threading\n"
        "opened = []\n"
        "real = socket.socket.__init__\n"
        "def spy(self, *a, **k):\n"
        "    opened.append(1); return real(self, *a, **k)\n"
        "socket.socket.__init__ = spy\n"
        "import cortex_memory\n"
        "assert 'cortex_memory.testing' not in sys.modules\n"
        "import cortex_memory.testing\n"
        "from cortex_memory.testing import DirectDouble, HostedDouble\n"
        "DirectDouble(); HostedDouble(legacy=True)\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "assert not opened, 'a socket was opened'\n"
        "assert 'pytest' not in sys.modules\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "clean"

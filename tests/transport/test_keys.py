"""Hosted claims and URL encoding (engine.md §5.11)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from typing import List

import pytest

from cortex_memory.cortex.transport import fresh_claim, query_string, urlencode

CLAIM = re.compile(r"tm-([0-9a-f]{16})-([0-9]+)-([0-9]+)")


def test_claims_have_the_shape_and_are_unique() -> None:
    first, second = fresh_claim(), fresh_claim()
    a, b = CLAIM.fullmatch(first), CLAIM.fullmatch(second)
    assert a is not None
    assert b is not None
    assert a.group(1) == b.group(1)  # one salt per process
    assert int(b.group(3)) == int(a.group(3)) + 1
    assert int(b.group(2)) >= int(a.group(2))
    assert first != second


def test_claims_are_unique_across_threads() -> None:
    seen: List[str] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [fresh_claim() for _ in range(200)]
        with lock:
            seen.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen)) == 1600


def test_salt_is_drawn_lazily_not_at_import() -> None:
    code = (
        "import cortex_memory.cortex.transport.keys as k\n"
        "assert k._salt is None and k._seq == 0\n"
        "c = k.fresh_claim()\n"
        "assert k._salt is not None and c.endswith('-0')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("app:tinymemory/app:documents", "app%3Atinymemory%2Fapp%3Adocuments"),
        ("tmh:probe", "tmh%3Aprobe"),
        ("a b,c~d-e.f_g", "a%20b%2Cc~d-e.f_g"),
        ("caf\u00e9", "caf%C3%A9"),
        ("100%", "100%25"),
        ("a+b&c=d?e#f", "a%2Bb%26c%3Dd%3Fe%23f"),
        ("", ""),
    ],
)
def test_urlencode(value: str, encoded: str) -> None:
    assert urlencode(value) == encoded


def test_query_string_keeps_repeated_names() -> None:
    assert (
        query_string([("scope", "app:x"), ("labels", "tm:i:1"), ("labels", "tm:i:2")])
        == "scope=app%3Ax&labels=tm%3Ai%3A1&labels=tm%3Ai%3A2"
    )


# Forked in a fresh interpreter: forking this (threaded) test process would
# warn on Python 3.12+, and the child must start from a process that made claims.
_FORK_SCRIPT = """
import os, sys
from cortex_memory.cortex.transport import fresh_claim
print(fresh_claim(), flush=True)
pid = os.fork()
if pid == 0:
    print("child", fresh_claim(), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print(fresh_claim(), flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_a_forked_child_draws_its_own_salt_and_counter() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=60,
        check=True,
    ).stdout.split("\n")
    parent, child, after = (CLAIM.fullmatch(line.split()[-1]) for line in out[:3])
    assert out[1].startswith("child ")
    assert parent is not None
    assert child is not None
    assert after is not None
    assert child.group(1) != parent.group(1)  # a new salt, not the parent's
    assert child.group(3) == "0"  # its own counter, from 0
    assert after.group(1) == parent.group(1)  # the parent keeps its own
    assert after.group(3) == "1"

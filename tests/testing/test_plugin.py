"""The optional pytest plugin, used the way a host application would use it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HOST_TEST = """
import json

import pytest
import urllib3


def test_direct(direct_double):
    pool = urllib3.PoolManager()
    answer = pool.request("GET", direct_double.url + "/v1/admin/health")
    assert json.loads(answer.data)["status"] == "healthy"
    assert direct_double.wire == "direct"


def test_hosted(hosted_double):
    hosted_double.state.fail_all = (503, "UPSTREAM_UNAVAILABLE")
    pool = urllib3.PoolManager()
    answer = pool.request(
        "GET", hosted_double.url + "/memory/scopes", headers={"Authorization": "Bearer x"}
    )
    assert answer.status == 503
    assert hosted_double.state.count("GET /memory/scopes") == 1


@pytest.mark.live
def test_marked_live():
    pass
"""


def test_plugin_fixtures_and_marker(tmp_path: Path) -> None:
    (tmp_path / "test_host.py").write_text(textwrap.dedent(HOST_TEST))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        'pytest_plugins = ["cortex_memory.testing.pytest_plugin"]\n'
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--strict-markers",
            "-W",
            "error",
            "--rootdir",
            str(tmp_path),
            "-c",
            str(tmp_path / "pytest.ini"),
            str(tmp_path / "test_host.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout

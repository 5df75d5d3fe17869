"""`python -m cortex_memory.testing serve`: prints its URL, serves, exits cleanly."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from typing import List

import pytest
import urllib3

SERVE = [sys.executable, "-m", "cortex_memory.testing", "serve"]


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*SERVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    return process, line


def _stop(process: subprocess.Popen[str], sig: int = signal.SIGINT) -> tuple[int, str]:
    process.send_signal(sig)
    try:
        _, err = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return process.returncode, err


def _get(url: str, path: str, token: str = "t") -> urllib3.BaseHTTPResponse:
    pool = urllib3.PoolManager(retries=False)
    try:
        return pool.request("GET", url + path, headers={"Authorization": f"Bearer {token}"})
    finally:
        pool.clear()


def test_serve_prints_its_url_and_exits_0_on_sigint() -> None:
    process, line = _start("--wire", "direct", "--port", "0")
    try:
        prefix = "direct double on http://127.0.0.1:"
        assert line.startswith(prefix), line
        url = line.split(" on ", 1)[1]
        assert int(url.rsplit(":", 1)[1]) > 0
        answer = _get(url, "/v1/admin/health")
        assert answer.status == 200
        assert json.loads(answer.data)["status"] == "healthy"
    finally:
        code, err = _stop(process)
    assert code == 0
    assert err == ""  # the request log is silent


def test_serve_hosted_exits_0_on_sigterm_and_applies_options() -> None:
    process, line = _start(
        "--wire",
        "hosted",
        "--token",
        "secret-token-1",
        "--rate-limit",
        "off",
        "--knob",
        'fail_all=[503, "UPSTREAM_UNAVAILABLE"]',
        "--knob",
        'hide_listing_for="FOREVER"',
    )
    try:
        assert line.startswith("hosted double on http://127.0.0.1:")
        url = line.split(" on ", 1)[1]
        assert _get(url, "/memory/scopes", token="wrong").status == 401
        answer = _get(url, "/memory/scopes", token="secret-token-1")
        assert answer.status == 503
        assert json.loads(answer.data)["errorCode"] == "UPSTREAM_UNAVAILABLE"
    finally:
        code, _ = _stop(process, signal.SIGTERM)
    assert code == 0


def test_verbose_logs_status_and_request_line_only() -> None:
    process, line = _start("--wire", "direct", "--verbose", "--legacy", "--caller", "user:cli")
    url = line.split(" on ", 1)[1]
    try:
        _get(url, "/v1/events?scope=app%3Aa", token="canary-token-77")
        _get(url, "/v1/auth/whoami")
    finally:
        code, err = _stop(process)
    assert code == 0
    lines: List[str] = err.strip().splitlines()
    assert lines == ["200 GET /v1/events?scope=app%3Aa", "200 GET /v1/auth/whoami"]
    assert "canary" not in err


def test_unknown_knob_is_a_usage_error() -> None:
    result = subprocess.run(
        [*SERVE, "--wire", "direct", "--knob", "fail_everything=true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "unknown knob" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["--wire", "grpc"],
        ["--wire", "direct", "--knob", "fail_all"],
        ["--wire", "direct", "--knob", "fail_all=nope"],
        ["--wire", "direct", "--knob", "fail_all=503"],
        ["--wire", "direct", "--rate-limit", "lots"],
        ["--wire", "direct", "--port", "70000"],
        [],
    ],
)
def test_other_usage_errors_exit_2(args: List[str]) -> None:
    command = [*SERVE, *args] if args else [sys.executable, "-m", "cortex_memory.testing"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result.stderr


def test_port_in_use_exits_1() -> None:
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*SERVE, "--wire", "direct", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        taken.close()
    assert result.returncode == 1
    assert f"127.0.0.1:{port}" in result.stderr
    assert result.stdout == ""

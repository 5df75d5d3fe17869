"""Timeouts bound the whole exchange: slow headers, slow bodies, deadlines (engine.md §5.2).

The servers drip bytes more often than the socket read timeout, so only the
whole-exchange deadline (and its watchdog) can end these exchanges on time.
Timings are short (0.5 s) and the upper bounds generous for a shared machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from cortex_memory.cortex import CortexWire, Timing
from cortex_memory.cortex.transport import WATCHDOG
from cortex_memory.cortex.transport.watchdog import Watchdog
from cortex_memory.errors import UnavailableError
from cortex_memory.testing.hostile import CountingServer, HostileServer, unused_url

SLACK = 3.0  # seconds of scheduling noise tolerated on top of a timeout


def timed(call):  # type: ignore[no-untyped-def]
    started = time.monotonic()
    try:
        call()
    except UnavailableError as err:
        return err, time.monotonic() - started
    raise AssertionError("the call did not fail")


def test_slow_headers_end_at_the_request_timeout(make_client) -> None:
    with HostileServer("slow_headers", interval=0.05, spare_whoami=True) as server:
        client = make_client(server.url)
        err, elapsed = timed(lambda: client.once("POST", "v1/experience", {"a": 1}))
        assert server.hits == 2  # whoami, then the write
    assert err.message == "memory API request to 127.0.0.1: timed out"
    assert 0.4 <= elapsed < 0.5 + SLACK


def test_slow_headers_on_a_reused_connection(make_client) -> None:
    # The watchdog must also cover a keep-alive connection taken from the pool.
    with HostileServer("slow_headers", interval=0.05, spare_whoami=True) as server:
        client = make_client(server.url)
        err, elapsed = timed(lambda: client.retry_transient("GET", "v1/events"))
        assert server.hits == 4
        assert server.connections <= 4
    assert "timed out" in err.message
    assert elapsed < 3 * 0.5 + SLACK


def test_slow_body_ends_at_the_request_timeout(make_client) -> None:
    with HostileServer("slow_body", rate=200, size=5000, spare_whoami=True) as server:
        client = make_client(server.url)
        err, elapsed = timed(lambda: client.once("POST", "v1/experience", {"a": 1}))
    assert err.message == (
        "memory API v1/experience on 127.0.0.1: timed out while reading the response body"
    )
    assert 0.4 <= elapsed < 0.5 + SLACK


def test_slow_body_that_fits_succeeds(make_client) -> None:
    with HostileServer("slow_body", rate=20000, size=2000, spare_whoami=True) as server:
        client = make_client(server.url, timing=Timing(request_timeout=5))
        response = client.once("GET", "v1/events")
    assert isinstance(response.data, dict)
    assert len(response.data["pad"]) == 2000 - 10


def test_overstated_length_held_open_times_out(make_client) -> None:
    with HostileServer(
        "length_overstated", declared=100, body=b'{"a":', then="hold", spare_whoami=True
    ) as server:
        client = make_client(server.url)
        err, elapsed = timed(lambda: client.once("GET", "v1/events"))
    assert "timed out" in err.message
    assert elapsed < 0.5 + SLACK


def test_deadline_shorter_than_the_request_timeout(make_client) -> None:
    with HostileServer("slow_headers", interval=0.05, spare_whoami=True) as server:
        client = make_client(server.url, timing=Timing(request_timeout=30))
        err, elapsed = timed(lambda: client.retry_transient("GET", "v1/events", deadline=0.4))
    assert err.message == "memory API v1/events on 127.0.0.1: deadline exceeded (0.4 s)"
    assert elapsed < 0.4 + SLACK


def test_deadline_bounds_a_slow_body_too(make_client) -> None:
    with HostileServer("slow_body", rate=100, size=5000, spare_whoami=True) as server:
        client = make_client(server.url, timing=Timing(request_timeout=30))
        err, elapsed = timed(lambda: client.once("GET", "v1/events", deadline=0.4))
    assert "deadline exceeded" in err.message
    assert elapsed < 0.4 + SLACK


def test_an_expired_deadline_sends_nothing(make_client) -> None:
    with CountingServer(200, json={}) as server:
        client = make_client(server.url)
        from cortex_memory.cortex import Deadline

        deadline = Deadline(0.05)
        time.sleep(0.1)
        with pytest.raises(UnavailableError) as caught:
            client.once("GET", "v1/events", deadline=deadline)
        assert server.hits == 0
    assert "deadline exceeded" in caught.value.message


def test_nothing_listening_is_could_not_connect(make_client, canary: str) -> None:
    client = make_client(unused_url())
    with pytest.raises(UnavailableError) as caught:
        client.retry_transient("GET", "v1/events?scope=S3CRET")
    message = caught.value.message
    assert message.startswith(
        "memory API request to 127.0.0.1: could not connect; check the URL and that the service "
        "is reachable"
    )
    assert canary not in str(caught.value)
    assert "S3CRET" not in message


def test_unresolvable_host_is_named(make_client) -> None:
    client = make_client("https://cortex-memory-test.invalid", timing=Timing(request_timeout=5))
    with pytest.raises(UnavailableError) as caught:
        client.once("GET", "v1/events")
    assert caught.value.message.startswith(
        "memory API request to cortex-memory-test.invalid: the host could not be resolved; "
        "check the URL"
    )


def test_tls_is_required_by_an_https_endpoint(make_client) -> None:
    # A client that requires TLS fails before any request is read; plain http works.
    with CountingServer(200, json={}) as server:
        client = make_client(server.url.replace("http://", "https://"))
        with pytest.raises(UnavailableError) as caught:
            client.once("GET", "v1/events")
        assert server.hits == 0
        assert make_client(server.url).once("GET", "v1/events").status == 200
    assert "TLS failed" in caught.value.message


# -- the watchdog itself ------------------------------------------------------------------------


def test_watchdog_thread_is_a_daemon_and_stoppable(make_client) -> None:
    with CountingServer(200, json={}) as server:
        make_client(server.url).once("GET", "v1/events")
    assert WATCHDOG.running
    threads = [t for t in threading.enumerate() if t.name == "cortex-memory-watchdog"]
    assert threads
    assert all(t.daemon for t in threads)
    WATCHDOG.stop()
    assert not WATCHDOG.running
    assert not [t for t in threading.enumerate() if t.name == "cortex-memory-watchdog"]
    with CountingServer(200, json={}) as server:  # a later request starts it again
        make_client(server.url).once("GET", "v1/events")
    assert WATCHDOG.running


def test_watchdog_cuts_only_overdue_exchanges() -> None:
    dog = Watchdog()
    try:
        quick = dog.arm(0.05)
        dog.disarm(quick)
        slow = dog.arm(0.1)
        time.sleep(0.4)
        assert not quick.fired
        assert slow.fired
        assert slow.expired()
        dog.disarm(slow)
    finally:
        dog.stop()
    assert not dog.running


def test_watchdog_compacts_finished_watches() -> None:
    dog = Watchdog()
    try:
        for _ in range(1000):
            dog.disarm(dog.arm(60))
        assert len(dog._heap) < 200
    finally:
        dog.stop()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_gets_a_watchdog_of_its_own() -> None:
    """The parent's timer thread does not exist in a forked child: the child's first
    watch starts a new one, which cuts the child's overdue exchange. (Run in a fresh
    interpreter: forking the test process, which has threads, is unsafe.)"""
    code = (
        "import os, socket, time\n"
        "from cortex_memory.cortex.transport.watchdog import WATCHDOG\n"
        "WATCHDOG.disarm(WATCHDOG.arm(60))\n"  # the parent's thread is running
        "assert WATCHDOG.running\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    ours, theirs = socket.socketpair()\n"
        "    class Conn: sock = ours\n"
        "    watch = WATCHDOG.arm(0.05)\n"
        "    WATCHDOG.attach(Conn())\n"
        "    ours.settimeout(10)\n"  # no watchdog: the child ends anyway, failing
        "    try:\n"
        "        cut = ours.recv(1) == b''\n"  # returns once the watchdog shuts the socket
        "    except OSError:\n"
        "        cut = False\n"
        "    os._exit(0 if cut and watch.fired else 1)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "raise SystemExit(status >> 8)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], timeout=60, check=False)
    assert done.returncode == 0


def test_importing_starts_no_thread_and_opens_no_socket() -> None:
    code = (
        "import socket, threading\n"
        "opened = []\n"
        "real = socket.socket.__init__\n"
        "def spy(self, *a, **k):\n"
        "    opened.append(1); return real(self, *a, **k)\n"
        "socket.socket.__init__ = spy\n"
        "import sys\n"
        "import cortex_memory.cortex, cortex_memory.cortex.transport\n"
        "import cortex_memory.testing.hostile\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "assert not opened\n"
        "assert 'urllib3' not in sys.modules  # its import probes IPv6 with a socket\n"
        "print('clean')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "clean"


def test_hosted_wire_times_out_the_same_way(make_client) -> None:
    with HostileServer("slow_headers", interval=0.05) as server:
        client = make_client(server.url, wire=CortexWire.TINYHUMANS)
        err, elapsed = timed(lambda: client.once("POST", "memory/experience", {"a": 1}))
        assert server.hits == 1
    assert "timed out" in err.message
    assert elapsed < 0.5 + SLACK

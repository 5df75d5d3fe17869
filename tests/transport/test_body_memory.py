"""The memory a success read holds (body.py): the body once, never a byte past ``cap + 1``.

* A body of several pieces is gathered in one buffer reserved at its final size
  (a memory map, outside the Python heap): tracemalloc sees only a few pieces in
  flight, never a growing buffer or a list of pieces.
* The buffer never moves: in a fresh process whose allocator was first made to
  keep large blocks in its heap (a 24 MiB block handed out and freed), reading a
  48 MiB body raises the peak resident set by about the body, where a growing
  ``bytearray`` is copied by ``realloc`` and peaks far above it.
* No step takes more than is left before ``cap + 1``: over the cap, with and
  without gzip, the pieces kept and the piece that proves the body too large
  add up to at most ``cap + 1`` bytes.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any, List, Tuple

import pytest
import urllib3

from cortex_memory.cortex.timing import Deadline, Timing
from cortex_memory.cortex.transport import body as body_module
from cortex_memory.cortex.transport.body import BodyTooLarge, read_success_body
from cortex_memory.cortex.transport.request import Read, Request
from cortex_memory.cortex.transport.watchdog import WATCHDOG
from cortex_memory.testing.hostile import HostileServer, LoopbackServer, RawRequest

BIG = 8 * 1024 * 1024
MIB = 1024 * 1024


def big_json(request: RawRequest) -> Tuple[int, dict, object]:
    # A JSON list of short strings, BIG bytes or a little more.
    return 200, {}, ["x" * 1000] * (BIG // 1003 + 1)


def small_json(request: RawRequest) -> Tuple[int, dict, object]:
    return 200, {}, {"ok": True}


def read(url: str, cap: int = body_module.SUCCESS_CAP) -> Tuple[Any, int]:
    """The body read by read_success_body and the peak bytes traced during the read."""
    manager = urllib3.PoolManager(retries=False)
    try:
        response = manager.request("GET", url + "/x", preload_content=False)
        watch = WATCHDOG.arm(30.0)
        tracemalloc.start()
        try:
            body = read_success_body(response, watch, cap)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            WATCHDOG.disarm(watch)
        return body, peak
    finally:
        manager.clear()


def test_a_long_body_is_gathered_in_one_buffer_outside_the_heap() -> None:
    with LoopbackServer(big_json) as server:
        body, peak = read(server.url)
    assert isinstance(body, memoryview)
    assert len(body) >= BIG
    assert json.loads(bytes(body)) == ["x" * 1000] * (BIG // 1003 + 1)
    # The heap holds a few 64 KiB pieces in flight, not the body: a growing
    # bytearray or a list of pieces would be traced at the body's size or more.
    assert peak < MIB, (peak, len(body))


def test_without_a_memory_map_the_body_grows_in_a_bytearray(monkeypatch) -> None:
    def refuse(*args: object) -> None:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(body_module.mmap, "mmap", refuse)
    with LoopbackServer(big_json) as server:
        body, _ = read(server.url)
    assert type(body) is bytearray
    assert json.loads(body) == ["x" * 1000] * (BIG // 1003 + 1)


def test_a_one_piece_body_stays_bytes() -> None:
    with LoopbackServer(small_json) as server:
        body, _ = read(server.url)
    assert type(body) is bytes
    assert json.loads(body) == {"ok": True}


@pytest.mark.parametrize("parse", [True, False])
def test_long_bodies_through_the_client(make_client, parse: bool) -> None:
    with LoopbackServer(big_json) as server:
        # What is read is the point, not how fast: 8 MiB under coverage on a loaded
        # machine can take longer than the fixture's half-second budget.
        client = make_client(server.url, timing=Timing(request_timeout=30))
        read = Read.JSON if parse else Read.BYTES  # BYTES: the mode the actor lookup uses
        response = client._exchange.attempt(Request("GET", "v1/events", read=read), _unbounded())
    if parse:
        assert response.data == ["x" * 1000] * (BIG // 1003 + 1)
    else:
        assert type(response.data) is bytes
        assert json.loads(response.data) == ["x" * 1000] * (BIG // 1003 + 1)


def _unbounded() -> Deadline:
    return Deadline.of(None)


# -- never past cap + 1 ------------------------------------------------------------------


CAP = 200_000  # not a multiple of the 64 KiB piece, so the last step must be cut short


def _gzip_over_the_cap(request: RawRequest) -> Tuple[int, dict, bytes]:
    # A small compressed body (its declared length far under the cap) that
    # inflates to three times the cap.
    body = json.dumps({"pad": "x" * (3 * CAP)}).encode()
    return 200, {"Content-Encoding": "gzip"}, gzip.compress(body)


@pytest.mark.parametrize("route", ["/plain", "/gzip"])
def test_a_body_over_the_cap_is_refused_holding_at_most_cap_plus_one(
    monkeypatch, route: str
) -> None:
    kept: List[int] = []
    original = body_module._Gathered.add

    def add(self: Any, piece: bytes) -> None:
        kept.append(len(piece))
        original(self, piece)

    monkeypatch.setattr(body_module._Gathered, "add", add)
    pieces: List[int] = []
    feed = body_module._Inflater.feed

    def counted(self: Any, data: bytes) -> Any:
        for piece in feed(self, data):
            pieces.append(len(piece))
            yield piece

    monkeypatch.setattr(body_module._Inflater, "feed", counted)
    manager = urllib3.PoolManager(retries=False)
    server = (
        HostileServer("endless_chunked", chunk=65536)
        if route == "/plain"
        else LoopbackServer(_gzip_over_the_cap)
    )
    with server:
        response = manager.request("GET", server.url + route, preload_content=False)
        read_amounts: List[int] = []
        raw_read = response.read

        def read_piece(amount: int, **kwargs: Any) -> bytes:
            read_amounts.append(amount)
            data: bytes = raw_read(amount, **kwargs)
            return data

        response.read = read_piece  # type: ignore[method-assign]
        watch = WATCHDOG.arm(30.0)
        try:
            with pytest.raises(BodyTooLarge):
                read_success_body(response, watch, CAP)
        finally:
            WATCHDOG.disarm(watch)
            manager.clear()
    if route == "/plain":
        # Every piece asked of the socket fits in what is left before cap + 1.
        assert sum(read_amounts) == CAP + 1, read_amounts
        assert read_amounts[-1] < body_module.PIECE
    else:
        assert sum(pieces) == CAP + 1, pieces
    assert sum(kept) <= CAP


# -- the buffer never moves ----------------------------------------------------------------


_PROBE = textwrap.dedent(
    """
    import json, socket, sys, threading
    import urllib3
    from cortex_memory.cortex.transport.body import read_success_body
    from cortex_memory.cortex.transport.watchdog import WATCHDOG

    SIZE = int(sys.argv[1])
    listener = socket.create_server(("127.0.0.1", 0))
    piece = b"x" * 65536

    def serve():
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\\r\\n\\r\\n" not in data:
                data += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\\r\\nConnection: close\\r\\n\\r\\n")
            for _ in range(SIZE // len(piece)):
                conn.sendall(piece)

    def status(key):
        with open("/proc/self/status") as lines:
            for line in lines:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024

    threading.Thread(target=serve, daemon=True).start()
    manager = urllib3.PoolManager(retries=False)
    url = "http://127.0.0.1:%d/x" % listener.getsockname()[1]
    response = manager.request("GET", url, preload_content=False)
    # A large block handed out and freed: glibc raises its mmap threshold to its
    # size, so later blocks up to that size live in its heap (and move to grow).
    block = bytearray(24 * 1024 * 1024)
    del block
    with open("/proc/self/clear_refs", "w") as reset:
        reset.write("5")
    before = status("VmRSS:")
    watch = WATCHDOG.arm(60.0)
    body = read_success_body(response, watch)
    WATCHDOG.disarm(watch)
    print(json.dumps({"size": len(body), "grew": status("VmHWM:") - before}))
    """
)


@pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="needs Linux's resettable peak RSS"
)
def test_reading_a_long_body_grows_memory_by_about_the_body_alone() -> None:
    size = 48 * MIB
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(size)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0 and "clear_refs" in done.stderr:
        pytest.skip("the peak RSS cannot be reset here")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["size"] == size
    # The body, one piece in flight and the socket's buffers. A bytearray grown
    # to 48 MiB in that heap peaks about 24 MiB higher (copies left behind).
    assert found["grew"] < size + 4 * MIB, found["grew"] / MIB

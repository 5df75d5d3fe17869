"""A counting TCP relay for the benchmarks: what a client sent and what it received.

    python bench/_relay.py http://127.0.0.1:<upstream port>

Prints ``READY http://127.0.0.1:<port>`` (the line :func:`_common.serve` waits
for), then relays every connection to the upstream, byte for byte, in its own
process, so counting costs the measured client nothing. It counts:

* ``requests``: HTTP/1.1 requests the clients sent (each request head is parsed
  and its ``Content-Length`` body skipped; the clients measured here never send
  chunked bodies);
* ``bytes_received``: every byte the upstream sent back to the clients (status
  lines, headers and bodies), counted before it is forwarded, so a client that
  has read an answer always finds it counted.

A connection whose first bytes are ``COUNTS\\n`` is not relayed: it gets the
counts as one JSON line and is closed (see :func:`counts`). Loopback only.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from typing import Dict, Tuple
from urllib.parse import urlsplit

_CONTROL = b"COUNTS\n"
_PIECE = 65536


class Counts:
    """The relay's totals, behind a lock (every connection has two pump threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes_received = 0

    def add(self, *, requests: int = 0, received: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.bytes_received += received

    def snapshot(self) -> Dict[str, int]:
        with self._lock:
            return {"requests": self.requests, "bytes_received": self.bytes_received}


class RequestCounter:
    """Counts the request heads in one client's byte stream, skipping each body."""

    def __init__(self) -> None:
        self._buffer = b""
        self._body_left = 0

    def feed(self, data: bytes) -> int:
        """Take the next bytes the client sent; return how many request heads they completed."""
        found = 0
        buffer = self._buffer + data
        while buffer:
            if self._body_left:
                taken = min(self._body_left, len(buffer))
                self._body_left -= taken
                buffer = buffer[taken:]
                continue
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head, buffer = buffer[:end], buffer[end + 4 :]
            found += 1
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    self._body_left = int(value.strip() or b"0")
        self._buffer = buffer
        return found


def _pump_back(upstream: socket.socket, client: socket.socket, counts: Counts) -> None:
    try:
        while True:
            data = upstream.recv(_PIECE)
            if not data:
                break
            counts.add(received=len(data))
            client.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (client, upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _relay(client: socket.socket, target: Tuple[str, int], counts: Counts) -> None:
    try:
        first = client.recv(_PIECE)
        if first.startswith(_CONTROL):
            client.sendall(json.dumps(counts.snapshot()).encode() + b"\n")
            return
        upstream = socket.create_connection(target)
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        back = threading.Thread(target=_pump_back, args=(upstream, client, counts), daemon=True)
        back.start()
        heads = RequestCounter()
        data = first
        try:
            while data:
                counts.add(requests=heads.feed(data))
                upstream.sendall(data)
                data = client.recv(_PIECE)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                upstream.shutdown(socket.SHUT_WR)
            back.join()
            upstream.close()
    finally:
        client.close()


def counts(url: str) -> Dict[str, int]:
    """Ask the relay at ``url`` for its totals."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80)) as sock:
        sock.sendall(_CONTROL)
        answer = b""
        while not answer.endswith(b"\n"):
            piece = sock.recv(4096)
            if not piece:
                break
            answer += piece
    found = json.loads(answer)
    return {"requests": int(found["requests"]), "bytes_received": int(found["bytes_received"])}


def main(argv: list) -> int:
    parts = urlsplit(argv[0])
    target = (parts.hostname or "127.0.0.1", parts.port or 80)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    totals = Counts()
    print(f"READY http://127.0.0.1:{listener.getsockname()[1]}", flush=True)
    while True:
        client, _ = listener.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_relay, args=(client, target, totals), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

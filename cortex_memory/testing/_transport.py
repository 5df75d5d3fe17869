"""The response writer: one socket write per response, and the transport knobs of §8.3.

Order of application on one response: build the body → `malformed_json` →
`oversize_body_bytes` → `gzip_body` → `truncate_body` → rate-limit headers →
`reset_after="response"` (instead of sending) → send at
`slow_body_bytes_per_second` → stop after `drop_connection_after_bytes`.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, Optional

from cortex_memory.testing._padding import PIECE, gzip_pieces, pad_pieces

if TYPE_CHECKING:
    from cortex_memory.testing._state import DoubleState

__all__ = ["MALFORMED_JSON", "PIECE", "pad_pieces", "reset_connection", "write_response"]

MALFORMED_JSON = b'{"truncated": '
_SLOW_TICK = 0.05


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_rate(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _take(pieces: Iterable[bytes], limit: int) -> Iterator[bytes]:
    for piece in pieces:
        if limit <= 0:
            return
        chunk = piece[:limit]
        limit -= len(chunk)
        yield chunk


def reset_connection(connection: socket.socket, files: Iterable[Any]) -> None:
    """Abort the connection with a TCP reset (`SO_LINGER` 0, then close)."""
    with contextlib.suppress(OSError):
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    for stream in files:
        # The buffered reader holds a reference to the socket; close it so the
        # descriptor really closes now and the kernel sends the reset.
        with contextlib.suppress(OSError, ValueError):
            stream.close()
    connection.close()


def write_response(
    connection: socket.socket,
    state: DoubleState,
    stopping: threading.Event,
    *,
    request_line: str,
    status: int,
    body: bytes,
    content_type: Optional[str],
    headers: Dict[str, str],
    close: bool,
    files: Iterable[Any] = (),
) -> bool:
    """Send one response with the transport knobs applied; False when the connection is done."""
    line = request_line
    pieces: Iterable[bytes] = (body,)
    length = len(body)
    extra = dict(headers)
    if state.transport("malformed_json", line):
        pieces, length, content_type = (MALFORMED_JSON,), len(MALFORMED_JSON), "application/json"
    oversize = state.transport("oversize_body_bytes", line, _is_count)
    if oversize is not None:
        pieces, length = pad_pieces(oversize), oversize
    if state.transport("gzip_body", line):
        packed = gzip_pieces(pieces)
        pieces, length = (packed,), len(packed)
        extra["Content-Encoding"] = "gzip"
    cut = state.transport("truncate_body", line, _is_count)
    if cut is not None and cut < length:
        pieces, length = _take(pieces, cut), cut
    if status == 429:
        retry_after = state.transport("retry_after_seconds", line, lambda v: v is not None)
        if retry_after is not None:
            extra["Retry-After"] = str(retry_after)
        reset_at = state.transport("ratelimit_reset_seconds", line, lambda v: v is not None)
        if reset_at is not None:
            extra["RateLimit-Reset"] = str(reset_at)
    if state.transport("reset_after", line, lambda v: v == "response"):
        state.bump("resets")
        reset_connection(connection, files)
        return False
    rate = state.transport("slow_body_bytes_per_second", line, _is_rate)
    drop = state.transport("drop_connection_after_bytes", line, _is_count)
    head = _head(status, content_type, length, extra, close)
    if drop is not None:
        pieces = _take(pieces, drop)
    try:
        if rate is not None:
            connection.sendall(head)
            step = max(1, rate // 20)
            for piece in pieces:
                for start in range(0, len(piece), step):
                    connection.sendall(piece[start : start + step])
                    if stopping.wait(_SLOW_TICK):
                        return False
        else:
            # The head goes out with the first piece in one write: separate writes
            # stall keep-alive clients by ~40 ms (Nagle plus delayed ACK).
            pending = head
            for piece in pieces:
                connection.sendall(pending + piece)
                pending = b""
            if pending:
                connection.sendall(pending)
    except OSError:
        return False
    return drop is None and not close


def _head(
    status: int, content_type: Optional[str], length: int, extra: Dict[str, str], close: bool
) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    lines = [f"HTTP/1.1 {status} {reason}"]
    if content_type is not None:
        lines.append(f"Content-Type: {content_type}")
    lines.append(f"Content-Length: {length}")
    lines.extend(f"{name}: {value}" for name, value in extra.items())
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

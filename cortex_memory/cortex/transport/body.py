"""Capped body reading (engine.md §5.6).

The endpoint is operator-supplied, so no response may exhaust the host's
memory: a success body is refused from its ``Content-Length`` when that is over
the cap, then read in pieces with the cap checked before each piece is kept,
so a server that omits or understates the length cannot get past it. An error
body is read lossily up to 64 KiB and never fails.

The transport asks for ``Accept-Encoding: identity``; a server that compresses
anyway is decoded here, in bounded steps, and the caps count the **decoded**
bytes, so a small compressed body cannot inflate past them.

Memory: a success read never holds more than ``cap + 1`` bytes of body. Each
step asks the socket (or the inflater, as ``max_length``) for no more than is
left before ``cap + 1``, so the step that proves a body too large ends one byte
past the cap instead of a whole piece past it. A body of several pieces is
written into one buffer reserved at its final capacity (the declared length,
else ``cap + 1``), an anonymous memory map whose pages cost memory only once
written: it never grows, so it is never copied. (A ``bytearray`` grows by
``realloc``, which copies the body when the allocator keeps it in its heap: in a
process whose allocator had earlier handed out and freed a large block, a body
growing to the cap peaked 22 MiB over it.)

Between pieces the exchange's :class:`~.watchdog.Watch` is consulted; when it
has expired the read stops as a timeout. A connection whose body was read to
the end is released to the pool; one abandoned early is closed (never drained).

The reads raise the small exceptions below; the client turns them into
messages that name the route and host.
"""

from __future__ import annotations

import itertools
import mmap
import zlib
from typing import Any, Iterator, List, Optional, Tuple, Union

from cortex_memory.cortex.transport.failure import is_body_fault
from cortex_memory.cortex.transport.watchdog import Watch

__all__ = [
    "BodyCut",
    "BodyTimeout",
    "BodyTooLarge",
    "BodyUndecodable",
    "ERROR_CAP",
    "PIECE",
    "RawBody",
    "SUCCESS_CAP",
    "discard",
    "read_error_body",
    "read_success_body",
]

RawBody = Union[bytes, bytearray, memoryview]
"""A body as read: ``bytes`` when it came in one piece; else a ``memoryview`` of the
buffer it was gathered in (a ``bytearray`` where no memory map can be made)."""

SUCCESS_CAP = 64 * 1024 * 1024
"""Largest success body kept, in decoded bytes (64 MiB)."""

ERROR_CAP = 64 * 1024
"""Largest error body kept, in decoded bytes (64 KiB)."""

PIECE = 64 * 1024
"""Bytes asked of the socket (and produced by the inflater) per step."""

_COMPRESSED_PIECE = 8 * 1024
# Compressed bytes asked of the socket per step. Small: zlib keeps what it has not
# inflated yet (a copy, while a step's output is bounded) beside the piece itself,
# and a piece of a highly compressed body inflates to many output steps anyway.


class BodyTimeout(Exception):
    """The exchange's deadline passed while the body was being read."""


class BodyCut(Exception):
    """The connection broke before the body was complete."""


class BodyUndecodable(Exception):
    """The body's content encoding is unsupported or its compressed data is corrupt."""


class BodyTooLarge(Exception):
    """The body is over the cap; ``declared`` is the ``Content-Length`` when that said so."""

    def __init__(self, limit: int, declared: Optional[int] = None) -> None:
        super().__init__(limit, declared)
        self.limit = limit
        self.declared = declared


class _Inflater:
    """Bounded gzip / deflate decoding: no step yields more than ``limit`` bytes.

    ``limit`` is :data:`PIECE` unless the reader lowers it (to what is left
    before its cap) between steps; zlib then keeps the rest of its input for
    the next step instead of inflating it.
    """

    def __init__(self, coding: str) -> None:
        self._gzip = coding == "gzip"
        self._first = True
        self._obj = self._new()
        self.limit = PIECE

    def _new(self, raw: bool = False) -> Any:
        if self._gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if raw else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            if self._first and not self._gzip:
                self._first = False
                try:
                    out = self._obj.decompress(data, self.limit)
                except zlib.error:
                    # "deflate" is often sent raw, without the zlib wrapper.
                    self._obj = self._new(raw=True)
                    out = self._obj.decompress(data, self.limit)
            else:
                self._first = False
                out = self._obj.decompress(data, self.limit)
            yield out
            while True:
                while self._obj.unconsumed_tail:
                    yield self._obj.decompress(self._obj.unconsumed_tail, self.limit)
                if not (self._gzip and self._obj.eof and self._obj.unused_data):
                    break
                # A further gzip member follows.
                rest = self._obj.unused_data
                self._obj = self._new()
                yield self._obj.decompress(rest, self.limit)
        except zlib.error as exc:
            raise BodyUndecodable("the compressed body is corrupt") from exc

    def finish(self) -> None:
        if not self._obj.eof:
            raise BodyUndecodable("the compressed body ends early")


def _coding(headers: Any) -> Tuple[Optional[str], bool]:
    """The content coding to undo and whether it is supported."""
    raw = headers.get("Content-Encoding")
    if raw is None:
        return None, True
    codings = [c.strip().lower() for c in raw.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        return None, True
    if len(codings) == 1 and codings[0] in ("gzip", "x-gzip"):
        return "gzip", True
    if len(codings) == 1 and codings[0] == "deflate":
        return "deflate", True
    return None, False


def _declared_length(headers: Any) -> Optional[int]:
    raw = headers.get("Content-Length")
    if raw is None:
        return None
    value = raw.strip()
    if value.isascii() and value.isdigit() and len(value) <= 20:
        return int(value)
    return None


def discard(response: Any) -> None:
    """Close an abandoned response (never drain it) and hand the dead connection back."""
    try:
        response.close()
    finally:
        response.release_conn()


class _Room:
    """What a read may still take: ``left`` bytes (the reader lowers it as it keeps them)."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


def _piece(response: Any, watch: Watch, amount: int) -> bytes:
    """One read of at most ``amount`` raw bytes; raises BodyTimeout / BodyCut."""
    if watch.expired():
        raise BodyTimeout()
    try:
        raw: bytes = response.read(amount, decode_content=False)
    except Exception as exc:
        if not is_body_fault(exc):
            raise
        if watch.expired():
            raise BodyTimeout() from exc
        raise BodyCut(str(exc)) from exc
    return raw


def _pieces(
    response: Any, watch: Watch, room: Optional[_Room] = None, most: int = PIECE
) -> Iterator[bytes]:
    """Raw pieces of the body until it ends, none longer than ``most``, nor than
    ``room.left`` when given; raises BodyTimeout / BodyCut."""
    while True:
        # Ask for no more than the declared length still due (http.client
        # allocates the whole buffer it is asked for), nor than the room left.
        due = getattr(response, "length_remaining", None)
        amount = most if due is None or due <= 0 or due > most else due
        if room is not None and room.left < amount:
            amount = room.left
        raw = _piece(response, watch, amount)
        if not raw:
            # A socket cut by the watchdog looks like a clean end to a body that
            # runs until close; the watch tells the two apart.
            if watch.fired:
                raise BodyTimeout()
            return
        yield raw
        if due is not None and due == len(raw):
            return  # the declared length is complete: no need to ask for the end


class _Gathered:
    """The pieces of a body in one buffer reserved at ``capacity`` bytes, never moved.

    An anonymous memory map: its pages take memory only once written, so
    reserving the cap costs nothing, and the body is never copied to grow. Where
    no map can be made (a system refusing to reserve the address space), a
    ``bytearray`` that grows as pieces arrive.
    """

    __slots__ = ("_buffer", "_map", "size")

    def __init__(self, capacity: int, first: bytes) -> None:
        self._map: Optional[mmap.mmap] = None
        self._buffer: Optional[bytearray] = None
        try:
            self._map = mmap.mmap(-1, capacity)
        except OSError:
            self._buffer = bytearray()
        self.size = 0
        self.add(first)

    def add(self, piece: bytes) -> None:
        """Append ``piece`` (the caller keeps the total within the capacity)."""
        end = self.size + len(piece)
        if self._map is not None:
            self._map[self.size : end] = piece
        else:
            assert self._buffer is not None
            self._buffer += piece
        self.size = end

    def body(self) -> RawBody:
        """The bytes gathered (a view of the map: no copy)."""
        if self._map is not None:
            return memoryview(self._map)[: self.size]
        assert self._buffer is not None
        return self._buffer


def read_success_body(response: Any, watch: Watch, cap: int = SUCCESS_CAP) -> RawBody:
    """Read a 2xx body under ``cap`` decoded bytes.

    A body that came in one piece is that piece (``bytes``); a longer one is
    gathered in one buffer reserved at its final capacity (:class:`_Gathered`)
    and returned as a ``memoryview`` of it, so the memory held stays the body's
    size: no piece list joined at the end (twice the body), no buffer copied to
    grow. No step takes more than is left before ``cap + 1`` bytes, so a body
    over the cap is refused holding at most ``cap + 1`` bytes of it.

    Raises :class:`BodyTooLarge` (declared or actual size over the cap),
    :class:`BodyCut`, :class:`BodyTimeout` or :class:`BodyUndecodable`. The
    connection is released after a full read and closed otherwise.

    The common answer (no content coding, a declared length of one piece at
    most, within the cap) is one read of exactly that length: the same single
    socket read the general loop below would make, without its set-up. A read
    that comes back short goes on in the general loop.
    """
    first: bytes = b""
    if "Content-Encoding" not in response.headers:
        due = getattr(response, "length_remaining", None)
        if type(due) is int and 0 < due <= PIECE and due <= cap:
            try:
                first = _piece(response, watch, due)
            except BaseException:
                discard(response)
                raise
            if len(first) == due:
                response.release_conn()
                return first
    return _read_pieces(response, watch, cap, first)


def _read_pieces(response: Any, watch: Watch, cap: int, first: bytes) -> RawBody:
    """:func:`read_success_body`'s general loop; ``first`` is a piece already read (or empty)."""
    complete = False
    try:
        declared = _declared_length(response.headers)
        if declared is not None and declared > cap:
            raise BodyTooLarge(cap, declared)
        coding, supported = _coding(response.headers)
        if not supported:
            raise BodyUndecodable("unsupported content encoding")
        inflater = _Inflater(coding) if coding else None
        # Identity: the socket is asked for at most room.left; compressed: the
        # inflater is (its limit), and the socket for small compressed pieces.
        room = _Room(cap + 1)
        gathered: Optional[_Gathered] = None
        total = 0
        pieces = (
            _pieces(response, watch, room)
            if inflater is None
            else _pieces(response, watch, None, _COMPRESSED_PIECE)
        )
        if first:
            # Read by the one-piece path (identity only): counted like any other piece.
            pieces = itertools.chain((first,), pieces)
            first = b""
        for raw in pieces:
            for piece in inflater.feed(raw) if inflater else (raw,):
                total += len(piece)
                if total > cap:
                    raise BodyTooLarge(cap)
                if gathered is not None:
                    gathered.add(piece)
                elif not first:
                    first = piece
                elif piece:
                    # Without a coding the body ends at its declared length
                    # (http.client reads no further); else it ends by the cap.
                    capacity = declared if declared is not None and inflater is None else cap
                    gathered = _Gathered(capacity, first)
                    gathered.add(piece)
                    first = b""
                room.left = cap + 1 - total
                if inflater is not None:
                    inflater.limit = min(PIECE, room.left)
        complete = True
        if inflater is not None:
            inflater.finish()
        return gathered.body() if gathered is not None else first
    finally:
        if complete:
            response.release_conn()
        else:
            discard(response)


def read_error_body(response: Any, watch: Watch, cap: int = ERROR_CAP) -> bytes:
    """Read up to ``cap`` decoded bytes of an error body; never raises for the body's sake.

    A read that fails or times out keeps what arrived; an undecodable
    compressed body falls back to its raw bytes.
    """
    parts: List[bytes] = []
    total = 0
    complete = False
    try:
        coding, supported = _coding(response.headers)
        inflater = _Inflater(coding) if coding and supported else None
        try:
            for raw in _pieces(response, watch):
                pieces = inflater.feed(raw) if inflater else (raw,)
                try:
                    for piece in pieces:
                        room = cap - total
                        parts.append(piece[:room])
                        total += min(len(piece), room)
                        if total >= cap:
                            return b"".join(parts)
                except BodyUndecodable:
                    inflater = None
                    parts.append(raw[: cap - total])
                    total = min(cap, total + len(raw))
                    if total >= cap:
                        return b"".join(parts)
            complete = True
        except (BodyCut, BodyTimeout):
            pass
        return b"".join(parts)
    finally:
        if complete:
            response.release_conn()
        else:
            discard(response)

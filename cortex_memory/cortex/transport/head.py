"""A response's head read without the e-mail parser, for the pool's connections.

``http.client`` reads the header block of every response through the standard
library's e-mail parser (``http.client.parse_headers``, which hands the block to
``email.parser.Parser``). Built for MIME messages, that parser costs about 30 µs
for an ordinary head of four or five lines: as much client CPU as a third of
everything the transport itself does for a small request, on every request.

:class:`HeadResponse` is ``http.client.HTTPResponse`` with a :meth:`~HeadResponse.begin`
that reads the status line and the head itself and builds the very
``http.client.HTTPMessage`` the e-mail parser builds (the same header list, in
order, the same payload, no defect) when every line of the head is plain:
``name: value`` with a name of visible ASCII characters but ``:``, a value of
printable ASCII and tabs, no folded line, and no ``Content-Type`` that would make
the parser look further (``multipart/...``, ``message/...``). Any other head is
given to the e-mail parser, as ``http.client`` does. The limits stay
``http.client``'s (65 536 bytes a line, 100 lines); the rest of ``begin`` (the
``100 Continue`` loop, the version, chunked or sized body, whether the connection
closes) decides as ``http.client.HTTPResponse.begin`` does, from the same values.
"""

from __future__ import annotations

import email.parser
import http.client
import re
from typing import List, Optional

__all__ = ["HeadResponse", "parse_head"]

MAX_LINE = 65536
"""The longest header line read (``http.client``'s limit)."""

MAX_HEADERS = 100
"""The most header lines read (``http.client``'s limit)."""

# A plain header line as the e-mail parser reads it: a name of visible ASCII but
# ":" (what its header pattern admits, here at least one character), the colon,
# then printable ASCII or tabs, and the line end. No other "\r": the parser
# splits lines at a lone "\r" as well.
_PLAIN = re.compile(rb"[!-9;-~]+:[\t -~]*\r?\n")
_LAST = (b"\r\n", b"\n")
# A Content-Type the parser reads further (a multipart or an enclosed message).
_DEEPER = re.compile(r"\s*(multipart|message)\s*/", re.IGNORECASE)


def read_head_lines(fp: object) -> List[bytes]:
    """The lines of a head up to and including its empty line (or the end of the input).

    ``LineTooLong`` for a line over :data:`MAX_LINE` bytes, ``HTTPException`` past
    :data:`MAX_HEADERS` lines, as ``http.client`` raises them.
    """
    readline = fp.readline  # type: ignore[attr-defined]
    lines: List[bytes] = []
    while True:
        line: bytes = readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        if line in (b"\r\n", b"\n", b""):
            return lines


def parse_head(lines: List[bytes]) -> http.client.HTTPMessage:
    """The ``HTTPMessage`` that ``http.client.parse_headers`` builds from ``lines``.

    ``lines`` is what :func:`read_head_lines` returns. A plain head is read here;
    any other goes to the e-mail parser.
    """
    if lines and lines[-1] in _LAST:
        plain = _PLAIN.fullmatch
        pairs = []
        for line in lines[:-1]:
            if plain(line) is None:
                break
            # The parser's reading of one line: the name before the first colon,
            # the value after it without leading blanks nor the line end.
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-type" and _DEEPER.match(value) is not None:
                break
            pairs.append((name, value.lstrip(" \t").rstrip("\r\n")))
        else:
            message = http.client.HTTPMessage()
            for name, value in pairs:
                message.set_raw(name, value)
            # The parser sets the (empty) body it found after the head.
            message.set_payload("")
            return message
    text = b"".join(lines).decode("iso-8859-1")
    return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)


class HeadResponse(http.client.HTTPResponse):
    """``http.client.HTTPResponse`` reading its head with :func:`parse_head`."""

    def begin(self) -> None:
        """Read the status line and the head, then work out how the body is framed."""
        # (typeshed types headers as always set; it is None until begin() runs.)
        begun: Optional[http.client.HTTPMessage] = getattr(self, "headers", None)
        if begun is not None or self.debuglevel > 0:
            # Already begun (nothing to do), or printing what it reads: http.client's.
            super().begin()
            return
        while True:
            version, status, reason = self._read_status()  # type: ignore[attr-defined]
            if status != http.client.CONTINUE:
                break
            read_head_lines(self.fp)  # a 100 Continue's head, dropped
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10  # 0.9 is read as 1.0, as http.client does
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = parse_head(read_head_lines(self.fp))
        coding = self.headers.get("transfer-encoding")
        self.chunked = bool(coding and coding.lower() == "chunked")
        if self.chunked:
            self.chunk_left = None
        self.will_close = self._check_close()  # type: ignore[attr-defined]
        # A Content-Length counts unless the body is chunked; one that is not a
        # non-negative integer is ignored.
        self.length = None
        length = self.headers.get("content-length")
        if length and not self.chunked:
            try:
                size = int(length)
            except ValueError:
                size = -1
            if size >= 0:
                self.length = size
        if (
            status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED)
            or 100 <= status < 200
            or self._method == "HEAD"  # type: ignore[attr-defined]
        ):
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # the body runs until the connection closes

"""What the raw-socket servers read and write: :class:`RawRequest` and answer bytes.

Answers are built as bytes by hand (:func:`complete`, :func:`head`) so a server
can send exactly what a test asks for, well-formed or not. Standard library only.
"""

from __future__ import annotations

import json as _json
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit

from cortex_memory.testing._padding import gzip_pieces, pad_pieces

__all__ = [
    "CLOSE",
    "HandlerResult",
    "HeaderList",
    "RawRequest",
    "body_bytes",
    "complete",
    "gzip_json",
    "head",
    "json_bytes",
    "normalise_headers",
    "padded_json",
    "reason",
    "says_close",
]

CLOSE = ("Connection", "close")

HeaderList = Union[Mapping[str, str], Sequence[Tuple[str, str]]]
"""Headers as a mapping or as ``(name, value)`` pairs (pairs may repeat a name)."""


@dataclass(frozen=True)
class RawRequest:
    """One request as a raw server read it."""

    method: str
    target: str
    headers: Dict[str, str] = field(repr=False)
    body: bytes = field(repr=False)
    raw: bytes = field(repr=False)

    @property
    def path(self) -> str:
        """The target without its query."""
        return urlsplit(self.target).path

    @property
    def query(self) -> str:
        """The raw query string (without ``?``)."""
        return urlsplit(self.target).query

    def header(self, name: str) -> Optional[str]:
        """A header's value (names are case-insensitive), ``None`` when absent."""
        return self.headers.get(name.lower())

    def json(self) -> Any:
        """The body parsed as JSON."""
        return _json.loads(self.body)


HandlerResult = Tuple[int, HeaderList, Any]
"""What a :class:`LoopbackServer` handler returns: ``(status, headers, body)``."""


def reason(status: int) -> str:
    """The status's reason phrase, ``Unknown`` for a status HTTP does not name."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def head(status: int, headers: Iterable[Tuple[str, str]]) -> bytes:
    """A response head: the status line and ``headers`` exactly as given, then the blank line."""
    lines = [f"HTTP/1.1 {status} {reason(status)}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def json_bytes(value: Any) -> bytes:
    """``value`` as compact JSON, UTF-8."""
    return _json.dumps(value, separators=(",", ":")).encode("utf-8")


def padded_json(size: int) -> bytes:
    """A valid JSON document of exactly ``size`` bytes (``{"pad":"xxx…"}``)."""
    return b"".join(pad_pieces(size))


def gzip_json(size: int) -> bytes:
    """``padded_json(size)`` gzip-compressed, built in 64 KiB pieces (never held whole)."""
    return gzip_pieces(pad_pieces(size))


def normalise_headers(headers: Optional[HeaderList]) -> List[Tuple[str, str]]:
    """Headers as a list of ``(name, value)`` strings, in order (``None``: none)."""
    if headers is None:
        return []
    if isinstance(headers, Mapping):
        return [(str(k), str(v)) for k, v in headers.items()]
    return [(str(k), str(v)) for k, v in headers]


def says_close(headers: Iterable[Tuple[str, str]]) -> bool:
    """True when the headers include ``Connection: close``."""
    return any(n.lower() == "connection" and v.lower() == "close" for n, v in headers)


def body_bytes(body: Any) -> Tuple[bytes, Optional[str]]:
    """A handler's body as bytes and its content type: bytes as-is, str as text, else JSON."""
    if body is None:
        return b"", None
    if isinstance(body, bytes):
        return body, None
    if isinstance(body, str):
        return body.encode("utf-8"), "text/plain; charset=utf-8"
    return json_bytes(body), "application/json"


def complete(
    status: int, headers: Iterable[Tuple[str, str]], body: bytes, content_type: Optional[str]
) -> bytes:
    """A whole answer; ``Content-Type`` and ``Content-Length`` are added unless already set.

    No ``Content-Length`` is added when the headers set ``Transfer-Encoding``.
    """
    listed = list(headers)
    names = {name.lower() for name, _ in listed}
    if content_type and "content-type" not in names:
        listed.append(("Content-Type", content_type))
    if "content-length" not in names and "transfer-encoding" not in names:
        listed.append(("Content-Length", str(len(body))))
    return head(status, listed) + body

"""What a handler answers: a `Reply` on success, a raised `Refusal` on failure.

Handlers are shared by both wires; the wire decides how a reply is rendered
(bare JSON or the hosted envelope) and how a refusal becomes bytes (the Direct
failure body, the hosted envelope, the upstream mapping or the out-of-envelope
429). A refusal's `kind` tells the renderer which rule applies.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional
from urllib.parse import parse_qsl

__all__ = ["KNOB", "NO_BODY", "RATE_LIMIT", "RAW", "UPSTREAM", "Refusal", "Reply", "Request"]

KNOB = "knob"
"""A failure the wire answers with its own status and code (knob failures, gate refusals)."""
UPSTREAM = "upstream"
"""A failure produced by the log: the hosted wire relays it through the upstream mapping."""
RATE_LIMIT = "rate_limit"
"""A rate-limit refusal: Direct 429 `RATE_LIMITED`, hosted 429 outside the envelope."""
RAW = "raw"
"""A failure whose body is given as is, never wrapped (framework 404s, erasure passthrough)."""


NO_BODY: Any = object()
"""The body of a reply that sends no bytes (bare 404 and 405)."""


class Request:
    """One parsed request as the handlers see it."""

    __slots__ = (
        "body",
        "headers",
        "json",
        "line",
        "method",
        "number",
        "params",
        "path",
        "query",
        "raw_pairs",
        "target",
    )

    def __init__(
        self,
        *,
        method: str,
        target: str,
        headers: Dict[str, str],
        body: bytes,
        number: int,
    ) -> None:
        self.method = method
        self.target = target
        path, _, query = target.partition("?")
        self.path = path
        self.query = query
        self.line = f"{method} {target}"
        self.headers = headers
        self.body = body
        self.number = number
        self.json: Any = None
        # Map semantics: a repeated parameter keeps its last value.
        self.raw_pairs: List[str] = [pair for pair in query.split("&") if pair] if query else []
        self.params: Dict[str, str] = {}
        if query:
            for name, value in parse_qsl(query, keep_blank_values=True):
                self.params[name] = value

    def header(self, name: str) -> Optional[str]:
        """A request header by lower-case name, or None."""
        return self.headers.get(name)

    def __repr__(self) -> str:
        return f"Request({self.method} {self.path})"


class Refusal(Exception):
    """A failure answer raised from anywhere inside a handler."""

    def __init__(
        self,
        status: int,
        code: str = "",
        message: Optional[str] = None,
        *,
        kind: str = KNOB,
        body: Any = None,
    ) -> None:
        super().__init__(f"{status} {code}")
        self.status = status
        self.code = code
        self.message = message
        self.kind = kind
        self.body = body

    @classmethod
    def from_knob(cls, value: Any) -> Refusal:
        """Build a refusal from a `(status, code)` or `(status, code, message)` knob."""
        status, code = int(value[0]), str(value[1])
        message = str(value[2]) if len(value) > 2 else None
        return cls(status, code, message)


class Reply:
    """A successful answer: status and JSON body (`raw`: never wrapped in an envelope)."""

    __slots__ = ("body", "headers", "raw", "status")

    def __init__(
        self,
        status: int,
        body: Any,
        *,
        raw: bool = False,
        headers: Optional[Dict[str, str]] = None,
    ) -> None:
        self.status = status
        self.body = body
        self.raw = raw
        self.headers = headers or {}

    def __repr__(self) -> str:
        return f"Reply({self.status})"

"""What one attempt sends: a :class:`Request` and how to :class:`Read` its answer.

A call mode of :class:`~cortex_memory.cortex.transport.client.HttpClient`
builds one request and hands it to
:meth:`~cortex_memory.cortex.transport.exchange.Exchange.attempt`; a retried
read sends the same request on every attempt.
"""

from __future__ import annotations

import enum
from typing import NamedTuple, Optional

from cortex_memory.cortex.transport.failure import strip_query

__all__ = ["Read", "Request"]


class Read(enum.Enum):
    """How an attempt reads a 2xx answer into :attr:`Response.data`."""

    JSON = "json"
    """The parsed JSON value (hosted: the envelope's ``data``; an empty Direct body: ``None``)."""
    LISTING = "listing"
    """As ``JSON``, for an answer that lists events: a run of identical array elements is
    parsed once (the list holds that one value for each)."""
    BYTES = "bytes"
    """The body as ``bytes``, not parsed (the actor lookup reads its answer itself)."""
    NOTHING = "nothing"
    """The body is not read (the response is closed); ``data`` is ``None``."""


class Request(NamedTuple):
    """One request as an attempt sends it (immutable; built once per call, reused by its retries).

    ``route`` is relative to the endpoint (a leading ``/`` is dropped; checked
    per attempt); ``payload`` the encoded body; ``claim`` the
    ``Idempotency-Key`` to send, if any; ``read`` how to read a 2xx answer;
    ``actor=False`` sends no actor header even where the surface sends one
    (the actor lookup itself). A named tuple rather than a frozen dataclass:
    one is built per call, and it builds in half the time.
    """

    method: str
    route: str
    payload: Optional[bytes] = None
    claim: Optional[str] = None
    read: Read = Read.JSON
    actor: bool = True

    def __repr__(self) -> str:
        # Neither the body, the claim nor the query (it may name scopes and labels).
        return f"Request({self.method!r}, {strip_query(self.route)!r}, read={self.read.name})"

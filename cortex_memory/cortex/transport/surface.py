"""What the transport knows of an HTTP surface, supplied by the layer above (engine.md §5, §6.2).

The transport does not import the wires (:mod:`cortex_memory.cortex.wire`):
the dependency runs one way, wire → transport. A client is built with a
*wire*, any object that names itself (``id``) and describes its
:class:`Surface`: the few facts one attempt needs (send the actor header?
claim POSTs? which route looks the actor up? are answers in the hosted
envelope?). :class:`~cortex_memory.cortex.wire.CortexWire` is the wire the
engines use.

The hosted ``{"success", "data"}`` envelope is unwrapped here
(:func:`unwrap_hosted`), next to the hosted failure shapes in :mod:`.failure`:
both are how a hosted answer is framed, below any route or contract type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Protocol

from cortex_memory.errors import EngineError

__all__ = ["Surface", "Unwrapped", "Wire", "unwrap_hosted"]


@dataclass(frozen=True)
class Surface:
    """The facts of one HTTP surface that an attempt depends on.

    ``name`` is the surface's id as messages and reprs show it. ``hosted``:
    2xx bodies come in the ``{"success", "data"}`` envelope and failures in the
    hosted shapes. ``sends_actor``: requests carry ``X-Cortex-Actor`` (looked up
    once through ``whoami``, the route of that lookup, ``None`` when the surface
    has none). ``claims_posts``: a POST sent once carries a fresh
    ``Idempotency-Key``.
    """

    name: str
    hosted: bool
    sends_actor: bool
    claims_posts: bool
    whoami: Optional[str] = None


class Wire(Protocol):
    """What :class:`~cortex_memory.cortex.transport.client.HttpClient` is built with."""

    @property
    def id(self) -> str:
        """The surface's name (the engine id)."""

    @property
    def surface(self) -> Surface:
        """The facts the transport needs."""


class Unwrapped(NamedTuple):
    """A hosted 2xx body: ``ok`` with its ``data``, or a ``success: false`` refusal."""

    ok: bool
    data: object


def unwrap_hosted(body: object, where: str) -> Unwrapped:
    """Unwrap a parsed hosted 2xx body.

    ``{"success": true, "data": x}`` → ``Unwrapped(True, x)``; ``success: false``
    → ``Unwrapped(False, body)`` (the caller maps it as a hosted failure with
    the 2xx status); a missing ``data``, or a missing or non-boolean
    ``success``, is ``EngineError``. ``where`` names the route and host.
    """
    if not isinstance(body, dict) or not isinstance(body.get("success"), bool):
        raise EngineError(f"{where} answered without the success envelope")
    if body["success"] is False:
        return Unwrapped(False, body)
    if "data" not in body:
        raise EngineError(f"{where} answered success without a data field")
    return Unwrapped(True, body["data"])

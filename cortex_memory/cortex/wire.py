"""The two HTTP surfaces of CortexDB: Direct (``/v1/*``) and hosted (``/memory/*``).

:class:`CortexWire` names the surface (its ``id`` is the engine id,
``cortexdb`` or ``tinyhumans``) and holds what differs between them: the
route table (engine.md §6.1), the per-wire rules (§6.2: the actor header, the
hosted ``Idempotency-Key`` claims, bulk writes, how an unset answer instruction
is sent) and the hosted ``{"success", "data"}`` unwrap.

The transport never imports this module: a client is built with a wire and
asks it for its :class:`~cortex_memory.cortex.transport.surface.Surface`
(:attr:`CortexWire.surface`). The hosted unwrap lives with the transport and
is re-exported here.

Routes carry no leading ``/``; the transport joins them to the endpoint. The
engine descriptors (which need contract types) live with the engine.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Dict, Optional, Tuple

from cortex_memory.cortex.transport.surface import Surface, Unwrapped, unwrap_hosted
from cortex_memory.errors import UnsupportedError

if TYPE_CHECKING:  # pragma: no cover - descriptors need contract types
    from cortex_memory.contract.descriptor import EngineDescriptor

__all__ = [
    "CORTEXDB_ENGINE_ID",
    "CORTEX_API_ENDPOINT",
    "CortexWire",
    "HOSTED_HEALTH_PREFIX",
    "Route",
    "TINYHUMANS_API_ENDPOINT",
    "TINYHUMANS_ENGINE_ID",
    "Unwrapped",
    "unwrap_hosted",
]

#: The registry id of CortexDB over its Direct ``/v1`` API.
CORTEXDB_ENGINE_ID = "cortexdb"
#: The registry id of CortexDB behind the TinyHumans hosted ``/memory`` API.
TINYHUMANS_ENGINE_ID = "tinyhumans"
#: The Direct wire's default endpoint.
CORTEX_API_ENDPOINT = "https://api-v1.cortexdb.ai"
#: The hosted wire's default endpoint.
TINYHUMANS_API_ENDPOINT = "https://api.tinyhumans.ai"

HOSTED_HEALTH_PREFIX = "tmh:probe"
"""The hosted health probe lists scopes under this prefix (sent ``tmh%3Aprobe``)."""


class Route(enum.Enum):
    """Every call the engine can make; :meth:`CortexWire.route` gives its path."""

    EXPERIENCE = "experience"
    BULK = "bulk"
    EVENTS = "events"
    RECALL = "recall"
    FORGET = "forget"
    ANSWER = "answer"
    HEALTH = "health"
    SCOPES = "scopes"
    WHOAMI = "whoami"
    BELIEFS_BUILD = "beliefs_build"
    BELIEFS = "beliefs"
    # Later (engine.md §14): kept so the table is complete.
    REGISTER_SCOPE = "register_scope"
    SCOPE_MEMBERS = "scope_members"
    ERASURES = "erasures"
    ERASE_ALL = "erase_all"
    VERSION = "version"


# (Direct, hosted); None = never sent on that wire.
_ROUTES: Dict[Route, Tuple[Optional[str], Optional[str]]] = {
    Route.EXPERIENCE: ("v1/experience", "memory/experience"),
    Route.BULK: ("v1/experience/bulk", None),
    Route.EVENTS: ("v1/events", "memory/events"),
    Route.RECALL: ("v1/recall", "memory/recall"),
    Route.FORGET: ("v1/forget", "memory/forget"),
    Route.ANSWER: ("v1/answer", "memory/answer"),
    Route.HEALTH: ("v1/admin/health", "memory/scopes"),
    Route.SCOPES: ("v1/scopes/list", "memory/scopes"),
    Route.WHOAMI: ("v1/auth/whoami", None),
    Route.BELIEFS_BUILD: ("v1/beliefs/build", None),
    Route.BELIEFS: ("v1/beliefs", None),
    Route.REGISTER_SCOPE: ("v1/scopes", None),
    Route.SCOPE_MEMBERS: ("v1/scopes/members", None),
    Route.ERASURES: ("v1/erasures", "memory/v1/erasures"),
    Route.ERASE_ALL: (None, "memory"),
    Route.VERSION: ("v1/admin/version", None),
}


class CortexWire(enum.Enum):
    """Which HTTP surface an engine talks to: ``DIRECT`` (``cortexdb``) or ``TINYHUMANS``."""

    DIRECT = CORTEXDB_ENGINE_ID
    TINYHUMANS = TINYHUMANS_ENGINE_ID

    @property
    def id(self) -> str:
        """The engine id: ``cortexdb`` or ``tinyhumans``."""
        return str(self.value)

    @property
    def hosted(self) -> bool:
        """True for the TinyHumans hosted API."""
        return self is CortexWire.TINYHUMANS

    @property
    def default_endpoint(self) -> str:
        """The production endpoint of this wire."""
        return TINYHUMANS_API_ENDPOINT if self.hosted else CORTEX_API_ENDPOINT

    @property
    def sends_actor(self) -> bool:
        """Direct requests carry ``X-Cortex-Actor``; the hosted backend names the actor itself."""
        return not self.hosted

    @property
    def claims_posts(self) -> bool:
        """Hosted POSTs sent once carry a fresh ``Idempotency-Key``; Direct never sends one."""
        return self.hosted

    @property
    def writes_bulk(self) -> bool:
        """Direct accepts bulk writes; hosted writes one event per request."""
        return not self.hosted

    @property
    def sends_null_instructions(self) -> bool:
        """Direct sends an unset ``answer_instructions`` as ``null``; hosted omits it.

        (The hosted schema refuses ``null`` with 400 ``VALIDATION_ERROR``.)
        """
        return not self.hosted

    def descriptor(self) -> EngineDescriptor:
        """This wire's registration: ``cortexdb_descriptor()`` or ``tinyhumans_descriptor()``."""
        from cortex_memory.cortex.descriptors import cortexdb_descriptor, tinyhumans_descriptor

        return tinyhumans_descriptor() if self.hosted else cortexdb_descriptor()

    def has_route(self, route: Route) -> bool:
        """True when ``route`` is ever sent on this wire."""
        return _ROUTES[route][1 if self.hosted else 0] is not None

    def route(self, route: Route) -> str:
        """The path of ``route`` on this wire; ``UnsupportedError`` when the wire has none."""
        path = _ROUTES[route][1 if self.hosted else 0]
        if path is None:
            raise UnsupportedError(f"the {self.id} API has no {route.value} route")
        return path

    def health_route(self) -> str:
        """The authenticated health probe (with its query): one scope listed under ``tmh:probe``.

        Hosted health always sends it (the hosted API has no health route). Direct
        health proves the key with whoami and sends this only to a server from before
        the actor model (no whoami): its own ``v1/admin/health`` is public, so it
        cannot tell a wrong key.
        """
        return f"{self.route(Route.SCOPES)}?prefix=tmh%3Aprobe&limit=1"

    @property
    def surface(self) -> Surface:
        """What the transport needs of this wire (the actor, claims, the hosted envelope)."""
        return _SURFACES[self]

    def __repr__(self) -> str:
        return f"CortexWire.{self.name}"


_SURFACES: Dict[CortexWire, Surface] = {
    wire: Surface(
        name=wire.id,
        hosted=wire.hosted,
        sends_actor=wire.sends_actor,
        claims_posts=wire.claims_posts,
        whoami=_ROUTES[Route.WHOAMI][1 if wire.hosted else 0],
    )
    for wire in CortexWire
}

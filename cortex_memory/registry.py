"""The engine registry: turn an engine id, settings and a credential into an engine.

A host renders a picker from :func:`list_engines` (each
:class:`~cortex_memory.contract.EngineDescriptor` says whether the engine needs
an endpoint or a key) and builds the chosen one with :func:`build_engine`,
without naming any engine class::

    from cortex_memory.config import EngineSettings
    from cortex_memory.registry import EngineCredential, build_engine

    engine = build_engine("local", EngineSettings(path=":memory:"), EngineCredential.NONE)

Engines are registered in one ordered table (:data:`_REGISTRY`): an id, a
function giving the descriptor and a builder. The listing order is
``cortexdb``, ``tinyhumans``, then ``local`` (README decision 10), showing only
the engines this build contains. Builders import their engine lazily, so
importing the registry opens nothing and loads no engine code.

Credentials are never part of a message, a repr or a log line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, List, Optional, Tuple

from cortex_memory.config import EngineSettings
from cortex_memory.credential import CREDENTIAL_ENV, EngineCredential, required
from cortex_memory.errors import ConfigError
from cortex_memory.paths import default_database_path

if TYPE_CHECKING:
    from cortex_memory.contract.descriptor import EngineDescriptor
    from cortex_memory.contract.engine import MemoryEngine
    from cortex_memory.cortex.network import Network

__all__ = [
    "CREDENTIAL_ENV",
    "EngineCredential",
    "LOCAL_ENGINE_ID",
    "build_engine",
    "describe_engine",
    "engine_ids",
    "list_engines",
]

#: The id of the embedded SQLite engine.
LOCAL_ENGINE_ID = "local"

# ------------------------------------------------------------------- table


@dataclass(frozen=True)
class _Registration:
    """One engine: its id, its descriptor (built on demand) and its builder."""

    id: str
    describe: Callable[[], EngineDescriptor]
    build: Callable[[EngineSettings, EngineCredential], MemoryEngine]


def _local_descriptor() -> EngineDescriptor:
    from cortex_memory.local import local_descriptor

    return local_descriptor()


def _build_local(settings: EngineSettings, credential: EngineCredential) -> MemoryEngine:
    """The embedded SQLite engine. It has no account, so any credential is ignored;
    so is an endpoint (a host's form may keep one while the user switches engines)."""
    from cortex_memory.local import LocalEngine

    path = settings.path
    if path is None or not path.strip():
        database = str(default_database_path(create=True))
    elif path == ":memory:":
        database = path
    else:
        database = os.path.expanduser(path)
    return LocalEngine(database, embedder=settings.embedder)


def _cortexdb_descriptor() -> EngineDescriptor:
    from cortex_memory.cortex.descriptors import cortexdb_descriptor

    return cortexdb_descriptor()


def _tinyhumans_descriptor() -> EngineDescriptor:
    from cortex_memory.cortex.descriptors import tinyhumans_descriptor

    return tinyhumans_descriptor()


def _endpoint(settings: EngineSettings, default: str) -> str:
    """The setting, trimmed, when it is not blank; else the engine's default endpoint."""
    endpoint = settings.endpoint
    if endpoint is None or not endpoint.strip():
        return default
    return endpoint.strip()


def _network(settings: EngineSettings) -> Network:
    """The proxy and TLS options of ``settings``: an absent proxy is the environment's,
    ``""`` none; a blank path is unset."""
    from cortex_memory.cortex.network import FROM_ENVIRONMENT, Network

    def path(value: Optional[str]) -> Optional[str]:
        return value if value is not None and value.strip() else None

    return Network(
        proxy=FROM_ENVIRONMENT if settings.proxy is None else settings.proxy,
        ca_certs=path(settings.ca_certs),
        client_cert=path(settings.client_cert),
        client_key=path(settings.client_key),
    )


def _build_cortexdb(settings: EngineSettings, credential: EngineCredential) -> MemoryEngine:
    """CortexDB's own API (Direct): a static API key, or a bearer source asked per request."""
    from cortex_memory.cortex.engine.core import CortexEngine
    from cortex_memory.cortex.wire import CORTEX_API_ENDPOINT, CORTEXDB_ENGINE_ID

    return CortexEngine.direct(
        _endpoint(settings, CORTEX_API_ENDPOINT),
        required(credential, CORTEXDB_ENGINE_ID),
        network=_network(settings),
    )


def _build_tinyhumans(settings: EngineSettings, credential: EngineCredential) -> MemoryEngine:
    """CortexDB hosted by TinyHumans: the bearer (a session JWT or key) asked per request."""
    from cortex_memory.cortex.engine.core import CortexEngine
    from cortex_memory.cortex.wire import TINYHUMANS_API_ENDPOINT, TINYHUMANS_ENGINE_ID

    return CortexEngine.tinyhumans(
        _endpoint(settings, TINYHUMANS_API_ENDPOINT),
        required(credential, TINYHUMANS_ENGINE_ID),
        network=_network(settings),
    )


# Listing order is table order. A new engine is one entry here; keep the order
# cortexdb, tinyhumans, local (README decision 10).
_REGISTRY: Tuple[_Registration, ...] = (
    _Registration("cortexdb", _cortexdb_descriptor, _build_cortexdb),
    _Registration("tinyhumans", _tinyhumans_descriptor, _build_tinyhumans),
    _Registration(LOCAL_ENGINE_ID, _local_descriptor, _build_local),
)


def engine_ids() -> Tuple[str, ...]:
    """The ids of the engines this build can construct, in listing order."""
    return tuple(entry.id for entry in _REGISTRY)


def list_engines() -> List[EngineDescriptor]:
    """The descriptor of every engine this build can construct, in listing order.

    A host uses it to render a picker (``needs_endpoint``, ``needs_key``,
    ``default_endpoint``, ``fetch_modes``). No I/O.
    """
    return [entry.describe() for entry in _REGISTRY]


def _quote(engine_id: str) -> str:
    text = engine_id if len(engine_id) <= 64 else engine_id[:64] + "…"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        text = repr(text)[1:-1]
    return f"`{text}`"


def _find(engine_id: str) -> _Registration:
    for entry in _REGISTRY:
        if entry.id == engine_id:
            return entry
    offered = ", ".join(f"`{i}`" for i in engine_ids()) or "none"
    raise ConfigError(f"unknown engine {_quote(engine_id)}; this build offers {offered}")


def describe_engine(engine_id: str) -> EngineDescriptor:
    """The descriptor of one engine; ``ConfigError`` for an id this build does not offer."""
    if not isinstance(engine_id, str):
        raise TypeError(f"engine_id must be a str, not {type(engine_id).__name__}")
    return _find(engine_id).describe()


def build_engine(
    engine_id: str,
    settings: Optional[EngineSettings] = None,
    credential: Optional[EngineCredential] = None,
) -> MemoryEngine:
    """Build the engine ``engine_id`` with ``settings`` and ``credential``.

    ``settings`` defaults to ``EngineSettings()`` and ``credential`` to
    ``EngineCredential.NONE``. Raises :class:`~cortex_memory.errors.ConfigError`
    for an unknown id, a missing credential where one is needed, and anything
    the engine's constructor refuses; no message carries the credential.

    ``local``: the database is ``settings.path`` (``~`` expanded;
    ``":memory:"`` allowed), or the per-user database when unset
    (its folder is created); ``settings.embedder`` names its embedder
    (default ``ngram``). Any credential is ignored.

    ``cortexdb`` and ``tinyhumans``: ``settings.proxy`` (absent: the
    environment's; ``""``: none) and the TLS files ``ca_certs``,
    ``client_cert`` and ``client_key`` become the engine's
    :class:`~cortex_memory.cortex.Network`.
    """
    if not isinstance(engine_id, str):
        raise TypeError(f"engine_id must be a str, not {type(engine_id).__name__}")
    if settings is None:
        settings = EngineSettings()
    elif not isinstance(settings, EngineSettings):
        raise TypeError(f"settings must be an EngineSettings, not {type(settings).__name__}")
    if credential is None:
        credential = EngineCredential.NONE
    elif not isinstance(credential, EngineCredential):
        raise TypeError(
            f"credential must be an EngineCredential, not {type(credential).__name__}"
        )
    return _find(engine_id).build(settings, credential)

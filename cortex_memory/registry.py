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
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, List, Mapping, Optional, Tuple

from cortex_memory.config import EngineSettings
from cortex_memory.cortex.credential import BearerSource, CortexCredential, StaticBearer
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

#: The environment variable that holds each engine's credential (README decision
#: 12), in the order a credential picks an engine when nothing else does (the
#: CLI's rule). ``local`` needs none and has no entry.
CREDENTIAL_ENV: Mapping[str, str] = types.MappingProxyType({
    "cortexdb": "CORTEX_MEMORY_API_KEY",
    "tinyhumans": "CORTEX_MEMORY_TINYHUMANS_TOKEN",
})

_NONE = "none"
_STATIC = "static"
_DYNAMIC = "dynamic"


class EngineCredential:
    """The credential handed to :func:`build_engine`: none, a static key, or a bearer source.

    ``EngineCredential.NONE`` (what ``local`` takes), ``EngineCredential.static(key)``
    (a fixed API key or token) and ``EngineCredential.dynamic(source)`` (a
    :class:`~cortex_memory.cortex.BearerSource` asked on every request, for a
    session token that rotates). The repr and ``str`` are fixed texts:
    ``EngineCredential.NONE``, ``EngineCredential.Static(<redacted>)`` and
    ``EngineCredential.Dynamic(<source>)``; the source's own repr is never called.
    """

    __slots__ = ("_key", "_kind", "_source")

    NONE: ClassVar[EngineCredential]

    _kind: str
    _key: Optional[str]
    _source: Optional[BearerSource]

    def __init__(self) -> None:
        raise TypeError(
            "use EngineCredential.NONE, EngineCredential.static(key) or "
            "EngineCredential.dynamic(source)"
        )

    @classmethod
    def _make(
        cls, kind: str, key: Optional[str], source: Optional[BearerSource]
    ) -> EngineCredential:
        self = object.__new__(cls)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_source", source)
        return self

    @classmethod
    def static(cls, key: str) -> EngineCredential:
        """A fixed key or token. A blank one is refused when an engine that needs it is built."""
        if not isinstance(key, str):
            raise TypeError(f"the key must be a str, not {type(key).__name__}")
        return cls._make(_STATIC, key, None)

    @classmethod
    def dynamic(cls, source: BearerSource) -> EngineCredential:
        """A bearer source asked for the current token on every request attempt."""
        if not callable(getattr(source, "bearer", None)):
            raise TypeError("source must be a BearerSource: an object with a bearer() method")
        return cls._make(_DYNAMIC, None, source)

    @classmethod
    def from_env(
        cls, engine_id: str, env: Optional[Mapping[str, str]] = None
    ) -> EngineCredential:
        """The credential of ``engine_id`` from the environment (``env``, default ``os.environ``).

        ``cortexdb`` reads ``CORTEX_MEMORY_API_KEY`` and ``tinyhumans`` reads
        ``CORTEX_MEMORY_TINYHUMANS_TOKEN`` (:data:`CREDENTIAL_ENV`); the value
        becomes :meth:`static`. An unset or blank variable, and ``local``
        (which needs none), give :attr:`NONE` (building an engine that needs a
        key then fails with a ``ConfigError``). An id this build does not
        offer is a ``ConfigError``. The value is never part of a message.
        """
        if not isinstance(engine_id, str):
            raise TypeError(f"engine_id must be a str, not {type(engine_id).__name__}")
        _find(engine_id)  # ConfigError for an id this build does not offer
        name = CREDENTIAL_ENV.get(engine_id)
        if name is None:
            return cls.NONE
        value = (os.environ if env is None else env).get(name, "")
        return cls.static(value) if value.strip() else cls.NONE

    @property
    def kind(self) -> str:
        """``"none"``, ``"static"`` or ``"dynamic"``."""
        return self._kind

    @property
    def is_none(self) -> bool:
        """True for ``EngineCredential.NONE``."""
        return self._kind == _NONE

    @property
    def source(self) -> Optional[BearerSource]:
        """The bearer source of a dynamic credential, else ``None``."""
        return self._source

    def is_missing(self) -> bool:
        """True when there is nothing to authenticate with: none, or a blank static key."""
        if self._kind == _NONE:
            return True
        return self._kind == _STATIC and not (self._key or "").strip()

    def cortex_credential(self, engine_id: str) -> CortexCredential:
        """This credential as a :class:`~cortex_memory.cortex.CortexCredential`.

        Raises :class:`~cortex_memory.errors.ConfigError` naming ``engine_id``
        when the credential is missing (none, or a blank static key).
        """
        self._require(engine_id)
        if self._source is not None:
            return CortexCredential.dynamic(self._source)
        assert self._key is not None
        return CortexCredential.api_key(self._key)

    def bearer_source(self, engine_id: str) -> BearerSource:
        """This credential as a bearer source (a static key becomes a ``StaticBearer``).

        Raises :class:`~cortex_memory.errors.ConfigError` naming ``engine_id``
        when the credential is missing.
        """
        self._require(engine_id)
        if self._source is not None:
            return self._source
        assert self._key is not None
        return StaticBearer(self._key)

    def _require(self, engine_id: str) -> None:
        if self.is_missing():
            raise ConfigError(f"engine `{engine_id}` needs a credential (an API key or a token)")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("EngineCredential is immutable")

    def __repr__(self) -> str:
        if self._kind == _STATIC:
            return "EngineCredential.Static(<redacted>)"
        if self._kind == _DYNAMIC:
            return "EngineCredential.Dynamic(<source>)"
        return "EngineCredential.NONE"

    __str__ = __repr__

    def __reduce__(self) -> Tuple[object, ...]:
        # Keeps copy.copy working despite the blocked __init__ and __setattr__,
        # and keeps NONE a singleton through a copy.
        if self._kind == _NONE:
            return (_none, ())
        return (EngineCredential._make, (self._kind, self._key, self._source))


EngineCredential.NONE = EngineCredential._make(_NONE, None, None)


def _none() -> EngineCredential:
    return EngineCredential.NONE


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

    cortex_credential = credential.cortex_credential(CORTEXDB_ENGINE_ID)
    return CortexEngine.direct(
        _endpoint(settings, CORTEX_API_ENDPOINT), cortex_credential, network=_network(settings)
    )


def _build_tinyhumans(settings: EngineSettings, credential: EngineCredential) -> MemoryEngine:
    """CortexDB hosted by TinyHumans: the bearer (a session JWT or key) asked per request."""
    from cortex_memory.cortex.engine.core import CortexEngine
    from cortex_memory.cortex.wire import TINYHUMANS_API_ENDPOINT, TINYHUMANS_ENGINE_ID

    source = credential.bearer_source(TINYHUMANS_ENGINE_ID)
    return CortexEngine.tinyhumans(
        _endpoint(settings, TINYHUMANS_API_ENDPOINT), source, network=_network(settings)
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

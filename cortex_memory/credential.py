"""How an engine authenticates: one credential type, :class:`EngineCredential`.

There are two ways to authenticate, and one constructor for each: a fixed key
or token (:meth:`EngineCredential.static`), or a :class:`BearerSource` asked for
the current token on every request attempt, so a rotated session token is used
at once (:meth:`EngineCredential.dynamic`). :attr:`EngineCredential.NONE` is
what an engine without an account (``local``) takes. The same value goes to
:func:`~cortex_memory.registry.build_engine` and to the ``CortexEngine``
constructors; both wires send it as ``Authorization: Bearer <token>``.

Nothing here ever shows a token: the reprs (and ``str``) are fixed texts, a
source's own repr is never called, and no message is built from a credential.
Checking a token (trimmed, not blank, a valid header value) happens in the
transport, inside each attempt, before anything is sent.

This module sits below the engines and the registry: it imports neither.
"""

from __future__ import annotations

import os
import types
from typing import ClassVar, Mapping, Optional, Protocol, Tuple, runtime_checkable

from cortex_memory._deprecation import Moved, deprecated
from cortex_memory.errors import ConfigError

__all__ = ["CREDENTIAL_ENV", "BearerSource", "EngineCredential", "StaticBearer"]

#: The environment variable that holds each engine's credential (README decision
#: 12), in the order a credential picks an engine when nothing else does (the
#: CLI's rule). ``local`` needs none and has no entry.
CREDENTIAL_ENV: Mapping[str, str] = types.MappingProxyType({
    "cortexdb": "CORTEX_MEMORY_API_KEY",
    "tinyhumans": "CORTEX_MEMORY_TINYHUMANS_TOKEN",
})


@runtime_checkable
class BearerSource(Protocol):
    """Anything with a blocking ``bearer() -> str`` that returns the current token.

    The engine calls it from several threads at once (fan-out), so it must be
    thread-safe. It must never log the token, and it should raise (rather than
    return ``""``) when no credential exists, for example when the user is
    signed out. Whatever it raises becomes an
    :class:`~cortex_memory.errors.UnauthorizedError` and no request is sent.
    """

    def bearer(self) -> str:
        """Return the token to send now."""
        ...  # pragma: no cover


class StaticBearer:
    """A fixed token as a :class:`BearerSource`; its repr is ``StaticBearer(<redacted>)``."""

    __slots__ = ("_token",)

    def __init__(self, token: str) -> None:
        if not isinstance(token, str):
            raise TypeError(f"token must be a str, not {type(token).__name__}")
        self._token = token

    def bearer(self) -> str:
        """Return the fixed token."""
        return self._token

    def __repr__(self) -> str:
        return "StaticBearer(<redacted>)"

    __str__ = __repr__


_NONE = "none"
_STATIC = "static"
_DYNAMIC = "dynamic"


class EngineCredential:
    """How an engine authenticates: none, a static key, or a bearer source.

    ``EngineCredential.NONE`` (what ``local`` takes), ``EngineCredential.static(key)``
    (a fixed API key or token) and ``EngineCredential.dynamic(source)`` (a
    :class:`BearerSource` asked on every request, for a session token that
    rotates). :func:`~cortex_memory.registry.build_engine` and every
    ``CortexEngine`` constructor take it. The repr and ``str`` are fixed texts:
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

    # -- constructors ----------------------------------------------------------------------

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
        # The registry sits above this module, so it is imported here, on use.
        from cortex_memory.registry import describe_engine, engine_ids

        if engine_id not in engine_ids():
            describe_engine(engine_id)  # the registry's ConfigError naming what it offers
        name = CREDENTIAL_ENV.get(engine_id)
        if name is None:
            return cls.NONE
        value = (os.environ if env is None else env).get(name, "")
        return cls.static(value) if value.strip() else cls.NONE

    @classmethod
    def api_key(cls, key: str) -> EngineCredential:
        """A static credential (the old ``CortexCredential.api_key``).

        Deprecated since 0.2.0: use :meth:`static`.
        """
        deprecated("`CortexCredential.api_key(key)`", "use `EngineCredential.static(key)`")
        return cls.static(key)

    # -- what it holds ---------------------------------------------------------------------

    @property
    def kind(self) -> str:
        """``"none"``, ``"static"`` or ``"dynamic"``."""
        return self._kind

    @property
    def is_none(self) -> bool:
        """True for ``EngineCredential.NONE``."""
        return self._kind == _NONE

    @property
    def is_static(self) -> bool:
        """True for a :meth:`static` credential."""
        return self._kind == _STATIC

    @property
    def source(self) -> Optional[BearerSource]:
        """The bearer source of a dynamic credential, else ``None``."""
        return self._source

    def is_missing(self) -> bool:
        """True when there is nothing to authenticate with: none, or a blank static key."""
        if self._kind == _NONE:
            return True
        return self._kind == _STATIC and not (self._key or "").strip()

    def bearer(self) -> str:
        """Return the raw token to use now: the key, or whatever the source answers.

        This is the unchecked value; the transport trims and validates it. A
        dynamic source's exceptions propagate unchanged. ``NONE`` holds no
        token: it raises :class:`~cortex_memory.errors.ConfigError`.
        """
        if self._source is not None:
            return self._source.bearer()
        if self._key is None:
            raise ConfigError("EngineCredential.NONE holds no token")
        return self._key

    def bearer_source(self, engine_id: str) -> BearerSource:
        """This credential as a bearer source (a static key becomes a ``StaticBearer``).

        Raises :class:`~cortex_memory.errors.ConfigError` naming ``engine_id``
        when the credential is missing.
        """
        required(self, engine_id)
        if self._source is not None:
            return self._source
        assert self._key is not None
        return StaticBearer(self._key)

    def cortex_credential(self, engine_id: str) -> EngineCredential:
        """This credential, checked for ``engine_id`` (``ConfigError`` when it is missing).

        Deprecated since 0.2.0: the ``CortexEngine`` constructors take the
        ``EngineCredential`` itself.
        """
        deprecated(
            "`EngineCredential.cortex_credential()`",
            "pass the EngineCredential itself to CortexEngine",
        )
        return required(self, engine_id)

    # -- immutability, reprs, copies -------------------------------------------------------

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


def required(credential: EngineCredential, engine_id: str) -> EngineCredential:
    """``credential`` itself, or ``ConfigError`` naming ``engine_id`` when it is missing."""
    if credential.is_missing():
        raise ConfigError(f"engine `{engine_id}` needs a credential (an API key or a token)")
    return credential


#: Where the old ``CortexCredential`` went: every module that exported it serves
#: it, deprecated, as ``EngineCredential`` itself (same class, so ``isinstance``
#: holds both ways and every repr stays redacted).
CORTEX_CREDENTIAL_MOVED = Moved(
    "cortex_memory",
    "EngineCredential",
    "`CortexCredential.api_key(key)` is `EngineCredential.static(key)`",
)

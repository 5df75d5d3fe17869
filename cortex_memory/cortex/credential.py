"""Credentials of the CortexDB engine: a fixed API key or a per-request bearer source.

Both wires authenticate with ``Authorization: Bearer <token>``. A
:class:`CortexCredential` is either *static* (one fixed token, normally a
CortexDB API key, built with :meth:`CortexCredential.api_key`) or *dynamic* (a
:class:`BearerSource` the transport asks on every attempt, so a rotated session
token is used at once, built with :meth:`CortexCredential.dynamic`).

Nothing here ever shows a token: the reprs (and ``str``) are fixed texts, the
source's own repr is never called, and no error message is built from a
credential. Checking a token (trimmed, not blank, a valid header value) happens
in the transport, inside each attempt, before anything is sent.
"""

from __future__ import annotations

from typing import Optional, Protocol, runtime_checkable

__all__ = ["BearerSource", "CortexCredential", "StaticBearer"]


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


_STATIC = "static"
_DYNAMIC = "dynamic"


class CortexCredential:
    """How a CortexDB engine authenticates: a static API key or a dynamic bearer source.

    Build one with :meth:`api_key` or :meth:`dynamic`. Reprs are
    ``CortexCredential.Static(<redacted>)`` and ``CortexCredential.Dynamic(<source>)``
    (the literal text ``<source>``: the source's repr is never called).
    """

    __slots__ = ("_kind", "_source", "_token")

    _kind: str
    _token: Optional[str]
    _source: Optional[BearerSource]

    def __init__(self) -> None:
        raise TypeError(
            "build a credential with CortexCredential.api_key(key) or "
            "CortexCredential.dynamic(source)"
        )

    @classmethod
    def _make(
        cls, kind: str, token: Optional[str], source: Optional[BearerSource]
    ) -> CortexCredential:
        self = object.__new__(cls)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_token", token)
        object.__setattr__(self, "_source", source)
        return self

    @classmethod
    def api_key(cls, key: str) -> CortexCredential:
        """A static credential: one fixed token (a CortexDB API key on the Direct wire).

        A key that is blank after trimming is refused with
        :class:`~cortex_memory.errors.ConfigError` when the engine is built.
        """
        if not isinstance(key, str):
            raise TypeError(f"the API key must be a str, not {type(key).__name__}")
        return cls._make(_STATIC, key, None)

    @classmethod
    def dynamic(cls, source: BearerSource) -> CortexCredential:
        """A dynamic credential: ``source.bearer()`` is asked on every attempt."""
        if not callable(getattr(source, "bearer", None)):
            raise TypeError("source must be a BearerSource: an object with a bearer() method")
        return cls._make(_DYNAMIC, None, source)

    @property
    def is_static(self) -> bool:
        """True for an :meth:`api_key` credential."""
        return self._kind == _STATIC

    @property
    def source(self) -> Optional[BearerSource]:
        """The bearer source of a dynamic credential, ``None`` for a static one."""
        return self._source

    def bearer(self) -> str:
        """Return the raw token to use now: the key, or whatever the source answers.

        This is the unchecked value; the transport trims and validates it. A
        dynamic source's exceptions propagate unchanged.
        """
        if self._source is not None:
            return self._source.bearer()
        assert self._token is not None
        return self._token

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CortexCredential is immutable")

    def __repr__(self) -> str:
        if self._kind == _STATIC:
            return "CortexCredential.Static(<redacted>)"
        return "CortexCredential.Dynamic(<source>)"

    __str__ = __repr__

    def __reduce__(self) -> tuple[object, ...]:
        # Keeps copy.copy working despite the blocked __init__ and __setattr__.
        return (CortexCredential._make, (self._kind, self._token, self._source))

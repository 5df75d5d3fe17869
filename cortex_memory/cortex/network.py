"""``Network``: how a CortexDB engine reaches its endpoint: the proxy and the TLS options.

:class:`Network` is a frozen dataclass passed to an engine (or its
``HttpClient``) next to :class:`~cortex_memory.cortex.timing.Timing`::

    Network()                                   # the environment's proxy, the system trust store
    Network(proxy="http://proxy.corp:3128")     # this proxy, whatever the environment says
    Network(proxy=None)                         # no proxy, whatever the environment says
    Network(ca_certs="/etc/corp/ca.pem")        # trust this bundle (a company CA)
    Network(client_cert="me.pem", client_key="me.key")  # show a client certificate
    Network(ssl_context=context)                # a ready ssl.SSLContext

Unlike timings, these belong to the whole engine family: copies share one
connection pool, so a copy cannot change them. The rules they follow (which
environment variables, ``NO_PROXY``, what is sent to a proxy, what can never be
switched off) are in :mod:`cortex_memory.cortex.transport.proxy`,
:mod:`cortex_memory.cortex.transport.tls` and docs/transport.md.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Optional, Union

from cortex_memory.errors import ConfigError

__all__ = ["FROM_ENVIRONMENT", "Network", "redact_url"]


class _FromEnvironment:
    """The type of :data:`FROM_ENVIRONMENT` (one instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "FROM_ENVIRONMENT"

    def __reduce__(self) -> str:
        # Pickled and copied by name, so it stays the one instance.
        return "FROM_ENVIRONMENT"


FROM_ENVIRONMENT = _FromEnvironment()
"""``Network.proxy``'s default: take the proxy from the environment (``HTTPS_PROXY``, ...)."""

ProxySetting = Union[str, None, _FromEnvironment]
PathSetting = Union[str, "os.PathLike[str]", None]


def redact_url(text: str) -> str:
    """``text`` with any user information of its URL replaced by ``<redacted>``."""
    start = text.find("://")
    start = 0 if start < 0 else start + 3
    end = len(text)
    for mark in "/?#":
        found = text.find(mark, start)
        if 0 <= found < end:
            end = found
    at = text.rfind("@", start, end)
    if at < 0:
        return text
    return text[:start] + "<redacted>" + text[at:]


def _path(name: str, value: PathSetting) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(
            f"Network.{name} must be a str, a path-like object or None, "
            f"not {type(value).__name__}"
        )
    path = os.fspath(value)
    if not isinstance(path, str):
        raise TypeError(f"Network.{name} must be a text path, not bytes")
    if not path.strip():
        raise ConfigError(f"Network.{name} must not be blank")
    if "-----BEGIN" in path:
        # The value is not echoed: it may be a private key.
        raise ConfigError(f"Network.{name} must be the path of a PEM file, not its contents")
    if "\x00" in path:
        raise ConfigError(f"Network.{name} must not contain a NUL character")
    return os.path.expanduser(path)


@dataclass(frozen=True)
class Network:
    """The proxy and TLS options of a CortexDB engine (frozen; validated at construction).

    ``proxy``: :data:`FROM_ENVIRONMENT` (the default) takes it from
    ``https_proxy``/``http_proxy``/``all_proxy`` and ``no_proxy`` (either case)
    when the engine is built; a URL (``http://`` or ``https://``; a bare
    ``host:port`` means ``http://``) is used whatever the environment says, and
    may carry ``user:password@`` for the proxy; ``None`` or ``""`` means no proxy
    even when the environment names one.

    ``ca_certs``: a PEM bundle (or a folder of hashed certificates) that is the
    whole trust store. ``client_cert``/``client_key``: a client certificate and
    its key (``client_key`` may be omitted when ``client_cert`` holds both).
    ``ssl_context``: a ready :class:`ssl.SSLContext`, instead of the three.
    ``~`` in a path is expanded; the files are read when the engine is built.

    ``ConfigError`` (naming the field, never echoing a value) for a proxy URL
    that is not http(s), a path that is blank or holds PEM text instead of
    naming a file, ``client_key`` without ``client_cert``, and ``ssl_context``
    together with a path. The repr never shows proxy credentials.
    """

    proxy: ProxySetting = FROM_ENVIRONMENT
    ca_certs: PathSetting = None
    client_cert: PathSetting = None
    client_key: PathSetting = None
    ssl_context: Optional[ssl.SSLContext] = None

    def __post_init__(self) -> None:
        proxy = self.proxy
        if isinstance(proxy, str):
            proxy = proxy.strip() or None
            if proxy is not None:
                # Imported here: the transport imports urllib3 (see transport/pool.py).
                from cortex_memory.cortex.transport.proxy import parse_proxy

                parse_proxy(proxy, "Network.proxy")
            object.__setattr__(self, "proxy", proxy)
        elif proxy is not None and proxy is not FROM_ENVIRONMENT:
            raise TypeError(
                "Network.proxy must be a URL (str), None or FROM_ENVIRONMENT, "
                f"not {type(proxy).__name__}"
            )
        for name in ("ca_certs", "client_cert", "client_key"):
            object.__setattr__(self, name, _path(name, getattr(self, name)))
        if self.ssl_context is not None and not isinstance(self.ssl_context, ssl.SSLContext):
            raise TypeError(
                f"Network.ssl_context must be an ssl.SSLContext or None, "
                f"not {type(self.ssl_context).__name__}"
            )
        if self.ssl_context is not None and (
            self.ca_certs is not None or self.client_cert is not None or self.client_key is not None
        ):
            raise ConfigError(
                "Network.ssl_context cannot be combined with ca_certs, client_cert or "
                "client_key; load them into the context"
            )
        if self.client_key is not None and self.client_cert is None:
            raise ConfigError("Network.client_key needs client_cert")

    @property
    def proxy_from_environment(self) -> bool:
        """True when the proxy is taken from the environment (the default)."""
        return self.proxy is FROM_ENVIRONMENT

    def __repr__(self) -> str:
        proxy = self.proxy
        shown = repr(redact_url(proxy)) if isinstance(proxy, str) else repr(proxy)
        parts = [f"proxy={shown}"]
        for name in ("ca_certs", "client_cert", "client_key"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value!r}")
        if self.ssl_context is not None:
            parts.append("ssl_context=<SSLContext>")
        return f"Network({', '.join(parts)})"


DEFAULT_NETWORK = Network()
"""What an engine built without ``network=`` uses."""

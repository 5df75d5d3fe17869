"""Endpoint parsing and the cleartext rule (engine.md §5.1 steps 1, 2 and 4).

Every CortexDB engine is credentialed, so a cleartext endpoint would put the
bearer on the network. :func:`parse_endpoint` accepts ``https://`` anywhere and
``http://`` only to a loopback host: ``localhost`` (any case), or an IP address
that is loopback (``127.0.0.0/8``, ``[::1]``). Everything else (including
``localhost.example.com``, ``127.0.0.1.nip.io``, ``0.0.0.0`` and userinfo tricks
such as ``http://127.0.0.1@evil.com``) is refused with ``ConfigError``. The
check uses urllib3's own parser, so the host checked is the host connected to.

No message ever echoes the endpoint: it may carry user information.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from cortex_memory.errors import ConfigError

__all__ = ["CLEARTEXT_REFUSED", "Endpoint", "is_loopback_host", "parse_endpoint"]

CLEARTEXT_REFUSED = "credentialed memory endpoints must use https unless they are loopback"

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Endpoint:
    """A parsed, checked endpoint.

    ``base`` always ends in ``/`` and has no query or fragment, so a route
    joins as ``base + route``; ``path`` is its path alone (the request target
    of a route is ``path + route``). ``host`` is the bare host name used in
    messages (IPv6 in brackets); ``origin`` is scheme, host and non-default port.
    """

    scheme: str
    host: str
    port: int
    base: str
    origin: str
    path: str


def is_loopback_host(host: str) -> bool:
    """True for ``localhost`` (any case) or a loopback IP address (brackets allowed).

    An IPv4-mapped IPv6 address is not loopback here, whatever the Python
    version says, so the rule is the same everywhere.
    """
    if host.lower() == "localhost":
        return True
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return False
    return address.is_loopback


def parse_endpoint(endpoint: str) -> Endpoint:
    """Parse and check ``endpoint``; every refusal is its own ``ConfigError``."""
    if not isinstance(endpoint, str):
        raise TypeError(f"endpoint must be a str, not {type(endpoint).__name__}")
    # Imported here: importing urllib3 opens a probe socket (see pool.py).
    from urllib3.util import parse_url

    text = endpoint.strip()
    try:
        url = parse_url(text)
    except ValueError as exc:  # LocationParseError is a ValueError
        raise ConfigError("the memory endpoint is not a valid URL") from exc
    scheme = (url.scheme or "").lower()
    if scheme not in _DEFAULT_PORTS:
        raise ConfigError("the memory endpoint must be an http or https URL")
    host = url.host or ""
    if not host:
        raise ConfigError("the memory endpoint has no host")
    if scheme == "http" and not is_loopback_host(host):
        raise ConfigError(CLEARTEXT_REFUSED)
    if url.auth is not None:
        # The bearer is the credential; a password in the URL would be a second,
        # unredacted one.
        raise ConfigError("the memory endpoint must not contain user information")
    default_port = _DEFAULT_PORTS[scheme]
    port = url.port if url.port is not None else default_port
    netloc = host if port == default_port else f"{host}:{port}"
    path = url.path or "/"
    if not path.endswith("/"):
        path += "/"
    origin = f"{scheme}://{netloc}"
    return Endpoint(
        scheme=scheme, host=host, port=port, base=origin + path, origin=origin, path=path
    )

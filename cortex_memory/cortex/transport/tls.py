"""TLS options of a client: whom to trust, which certificate to show (see docs/security.md).

What the TLS connections of a client use, first match wins:

1. ``ssl_context``: the caller's :class:`ssl.SSLContext`, as given;
2. ``ca_certs`` and/or ``client_cert`` (+ ``client_key``): one context built
   when the client is built, with urllib3's settings (TLS 1.2 or later,
   verification and host-name checks on). ``ca_certs`` (a PEM file, or a folder
   of hashed certificates) is then the **whole** trust store, as curl's
   ``--cacert`` and requests' ``verify=<path>`` are; without it the system store
   is loaded. A client certificate is shown to the server when it asks;
3. ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` in the environment, read when the client
   is built (only when a connection will use TLS): the trust store, as in 2;
4. otherwise the system trust store, as urllib3 would load it for each new
   connection, in one context built on the client family's first request and
   shared by its connections (:func:`system_tls`, :mod:`.family`).

Every file is read when the client is built, so a missing or unreadable bundle
is a ``ConfigError`` naming the setting, not a failed request later. A client
key protected by a password cannot be read here (no password is ever taken
from a config): load it into an ``ssl.SSLContext`` and pass that.

**Verification cannot be switched off** for a connection that leaves the
machine. Unless the endpoint and any proxy are all loopback, a caller's context
must have ``verify_mode == CERT_REQUIRED`` and ``check_hostname`` on (else
``ConfigError``), and every connection is opened with ``cert_reqs`` forced to
``CERT_REQUIRED``, so changing the context afterwards cannot turn it off
either. When every hop is loopback (where plain ``http://`` is allowed anyway),
a caller's context is used exactly as given, a non-verifying one included:
that is how a local test server with a self-signed certificate is reached.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Mapping, NoReturn, Optional

from cortex_memory.errors import ConfigError

__all__ = ["Tls", "system_tls", "tls_settings"]


@dataclass(frozen=True)
class Tls:
    """The TLS settings a client's pool uses: a context, and whether verification is forced."""

    context: ssl.SSLContext
    enforce: bool


class _Encrypted(Exception):
    """Raised by the password callback: a key that needs a password is refused."""


def _no_password() -> NoReturn:
    # Without a callback OpenSSL would prompt on the terminal (and block a GUI).
    raise _Encrypted


def _reason(exc: OSError) -> str:
    return (exc.strerror or type(exc).__name__).lower()


def _trust(context: ssl.SSLContext, name: str, path: str) -> None:
    """Load ``path`` (a PEM file or a hashed folder) as the trust store, naming ``name``."""
    try:
        if os.path.isdir(path):
            context.load_verify_locations(capath=path)
        else:
            context.load_verify_locations(cafile=path)
    except ssl.SSLError:
        raise ConfigError(f"{name} holds no PEM certificate") from None
    except OSError as exc:
        raise ConfigError(f"{name} cannot be read: {_reason(exc)}") from None


def _identity(context: ssl.SSLContext, cert: str, key: Optional[str]) -> None:
    try:
        context.load_cert_chain(cert, key, password=_no_password)
    except _Encrypted:
        raise ConfigError(
            "client_key is protected by a password; load it into an ssl.SSLContext "
            "and pass ssl_context="
        ) from None
    except ssl.SSLError:
        raise ConfigError(
            "client_cert and client_key are not a PEM certificate and its private key"
        ) from None
    except OSError as exc:
        name = "client_key" if key is not None and not os.path.exists(key) else "client_cert"
        raise ConfigError(f"{name} cannot be read: {_reason(exc)}") from None


def _new_context() -> ssl.SSLContext:
    from urllib3.util.ssl_ import create_urllib3_context

    return create_urllib3_context()


def system_tls() -> Tls:
    """The settings urllib3 uses without TLS options, as one context to share.

    urllib3 builds this for every new connection when given no context:
    ``create_urllib3_context()`` (TLS 1.2 or later, ``CERT_REQUIRED``, host
    names checked), then ``load_default_certs()`` (the system's trust store).
    Built once, it serves every connection of an engine family.
    """
    context = _new_context()
    context.load_default_certs()
    return Tls(context, enforce=True)


def tls_settings(
    *,
    ca_certs: Optional[str],
    client_cert: Optional[str],
    client_key: Optional[str],
    ssl_context: Optional[ssl.SSLContext],
    uses_tls: bool,
    local_only: bool,
    env: Mapping[str, str],
) -> Optional[Tls]:
    """The TLS settings of a client (module docs), or ``None`` for urllib3's default.

    ``uses_tls``: some connection (to the endpoint or the proxy) will use TLS;
    ``local_only``: the endpoint and any proxy are loopback.
    """
    if ssl_context is not None:
        if not local_only and (
            ssl_context.verify_mode != ssl.CERT_REQUIRED or not ssl_context.check_hostname
        ):
            raise ConfigError(
                "ssl_context must verify certificates and host names (verify_mode "
                "CERT_REQUIRED, check_hostname on): verification cannot be switched off "
                "for an endpoint or proxy that is not loopback"
            )
        return Tls(ssl_context, enforce=not local_only)
    if ca_certs is not None or client_cert is not None:
        context = _new_context()
        if ca_certs is not None:
            _trust(context, "ca_certs", ca_certs)
        else:
            context.load_default_certs()
        if client_cert is not None:
            _identity(context, client_cert, client_key)
        return Tls(context, enforce=True)
    if not uses_tls:
        return None
    bundle = env.get("SSL_CERT_FILE") or None
    folder = env.get("SSL_CERT_DIR") or None
    if bundle is None and folder is None:
        return None
    context = _new_context()
    if bundle is not None:
        _trust(context, "SSL_CERT_FILE", bundle)
    if folder is not None:
        # OpenSSL reads a list of folders, separated like PATH.
        for part in filter(None, folder.split(os.pathsep)):
            if not os.path.isdir(part):
                raise ConfigError("SSL_CERT_DIR names something that is not a folder")
            _trust(context, "SSL_CERT_DIR", part)
    return Tls(context, enforce=True)

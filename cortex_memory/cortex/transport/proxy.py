"""Which proxy a request goes through, and the rules it must keep (see docs/transport.md).

A client is built with a proxy setting (:class:`~cortex_memory.cortex.network.Network`):

* an explicit proxy URL, used for the endpoint whatever the environment says;
* ``None``: no proxy, whatever the environment says;
* the environment (the default), read once when the client is built, the way
  ``requests``, ``pip`` and curl users expect: ``https_proxy``/``HTTPS_PROXY``
  for an ``https`` endpoint, ``http_proxy``/``HTTP_PROXY`` for an ``http`` one,
  then ``all_proxy``/``ALL_PROXY``; ``no_proxy``/``NO_PROXY`` exempts hosts.
  A lowercase variable that is set wins over its uppercase twin, even when it
  is empty (empty means "none for this scheme"); ``HTTP_PROXY`` is ignored when
  ``REQUEST_METHOD`` is set (a CGI process, where a client's ``Proxy:`` header
  arrives as ``HTTP_PROXY``: "httpoxy"). A loopback endpoint never takes a
  proxy from the environment: a proxy elsewhere would reach its own loopback.

``NO_PROXY`` is a list separated by commas (white space is ignored too); each
entry, compared without case:

* ``*`` exempts every host;
* a name (``example.com``, ``.example.com`` or ``*.example.com``) exempts that
  host and every host below it, on a dot boundary (never ``badexample.com``);
* an IP address (``10.1.2.3``, ``::1``, ``[::1]``) exempts that literal address,
  a CIDR block (``10.0.0.0/8``, ``fd00::/8``) every literal address inside it;
  names are not resolved, so an address entry never exempts a host name;
* any entry may end in ``:port`` (``[v6]:port`` for IPv6), and then exempts
  that port only.

A proxy URL is ``http://`` or ``https://`` (no scheme means ``http://``; SOCKS is
refused); its user name and password, percent-decoded, become a
``Proxy-Authorization: Basic`` header sent to the proxy only, and the URL urllib3
receives has none. An ``https`` endpoint is reached through a ``CONNECT`` tunnel:
the proxy sees the target host and port and nothing of the request, so the
bearer crosses it encrypted. An ``http`` endpoint (loopback only) goes through a
forwarding proxy that reads the whole request, the bearer included, so that
proxy must be loopback too (:data:`CLEARTEXT_PROXY_REFUSED`).

No message ever shows a proxy URL: only its host and port.
"""

from __future__ import annotations

import base64
import ipaddress
import re
import socket
import ssl
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Tuple, Type, Union
from urllib.parse import unquote

from cortex_memory.cortex.transport.endpoint import Endpoint, is_loopback_host
from cortex_memory.cortex.transport.failure import DASH, status_text, transport_failure
from cortex_memory.errors import ConfigError, EngineError, Error, UnavailableError

__all__ = [
    "CLEARTEXT_PROXY_REFUSED",
    "Proxy",
    "bypasses_proxy",
    "environment_proxy",
    "parse_proxy",
    "proxy_auth_failure",
    "proxy_failure",
    "proxy_from_environment",
    "proxy_route_check",
]

CLEARTEXT_PROXY_REFUSED = (
    "a plain-http endpoint can only go through a loopback proxy: "
    "a forwarding proxy reads the bearer in cleartext"
)

_DEFAULT_PORTS = {"http": 80, "https": 443}
_VARIABLES = {"https": "https_proxy", "http": "http_proxy"}
_SPLIT = re.compile(r"[,\s]+")


@dataclass(frozen=True)
class Proxy:
    """A parsed, checked proxy.

    ``url`` is ``scheme://host:port`` with no user information (what urllib3
    gets); ``headers`` holds ``Proxy-Authorization`` when the URL carried a user
    name, and is kept out of the repr. ``shown`` (``host:port``) is what
    messages name; ``source`` says where the proxy came from, for messages.
    """

    scheme: str
    host: str
    port: int
    url: str
    source: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def shown(self) -> str:
        """``host:port``, as messages name the proxy."""
        return f"{self.host}:{self.port}"

    @property
    def loopback(self) -> bool:
        """True when the proxy runs on this machine."""
        return is_loopback_host(self.host)

    @property
    def authenticates(self) -> bool:
        """True when a ``Proxy-Authorization`` header is sent to the proxy."""
        return bool(self.headers)


def _has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)


def parse_proxy(text: str, where: str = "the proxy", *, source: Optional[str] = None) -> Proxy:
    """Parse and check a proxy URL; ``where`` opens every ``ConfigError`` message.

    The URL itself never appears in a message: it may carry a password.
    """
    if not isinstance(text, str):
        raise TypeError(f"the proxy must be a str, not {type(text).__name__}")
    # Imported here: importing urllib3 opens a probe socket (see pool.py).
    from urllib3.util import parse_url

    raw = text.strip()
    if not raw:
        raise ConfigError(f"{where} is blank")
    if _has_control(raw):
        raise ConfigError(f"{where} must not contain control characters")
    if "://" not in raw:
        # curl, requests and pip read a bare "host:port" as an http:// proxy.
        raw = "http://" + raw
    try:
        url = parse_url(raw)
    except ValueError as exc:  # LocationParseError is a ValueError
        raise ConfigError(f"{where} is not a valid URL") from exc
    scheme = (url.scheme or "").lower()
    if scheme.startswith("socks"):
        raise ConfigError(
            f"{where} is a SOCKS proxy; only http:// and https:// proxies are supported"
        )
    if scheme not in _DEFAULT_PORTS:
        raise ConfigError(f"{where} must be an http:// or https:// URL")
    host = url.host or ""
    if not host:
        raise ConfigError(f"{where} has no host")
    port = url.port if url.port is not None else _DEFAULT_PORTS[scheme]
    headers = {}
    if url.auth is not None:
        user, _, password = url.auth.partition(":")
        pair = f"{unquote(user)}:{unquote(password)}".encode()
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    return Proxy(
        scheme=scheme,
        host=host,
        port=port,
        url=f"{scheme}://{host}:{port}",
        source=source if source is not None else "proxy=",
        headers=headers,
    )


def _variable(env: Mapping[str, str], name: str) -> Optional[Tuple[str, str]]:
    """``(name, value)`` of the lowercase variable when set (even empty), else the uppercase."""
    value = env.get(name)
    if value is not None:
        return (name, value)
    upper = name.upper()
    if upper == "HTTP_PROXY" and "REQUEST_METHOD" in env:
        return None  # httpoxy: in a CGI process this is a client's header
    value = env.get(upper)
    if value is not None:
        return (upper, value)
    return None


def environment_proxy(scheme: str, env: Mapping[str, str]) -> Optional[Tuple[str, str]]:
    """``(variable, value)`` of the proxy the environment names for ``scheme``, if any."""
    for name in (_VARIABLES[scheme], "all_proxy"):
        found = _variable(env, name)
        if found is not None and found[1].strip():
            return found
    return None


def _entry_port(entry: str) -> Tuple[str, Optional[int], bool]:
    """Split a ``NO_PROXY`` entry into (name, port or None, well-formed)."""
    if entry.startswith("["):
        close = entry.find("]")
        if close < 0:
            return (entry, None, False)
        name, rest = entry[1:close], entry[close + 1 :]
        if not rest:
            return (name, None, True)
        if rest.startswith(":") and rest[1:].isdigit():
            return (name, int(rest[1:]), True)
        if rest.startswith("/"):
            return (name + rest, None, True)
        return (entry, None, False)
    if entry.count(":") == 1:
        # One colon: a name or IPv4 address with a port (a bare IPv6 has several).
        name, _, port = entry.partition(":")
        return (name, int(port), True) if port.isdigit() else (entry, None, False)
    return (entry, None, True)


def _address(text: str) -> Union[ipaddress.IPv4Address, ipaddress.IPv6Address, None]:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def bypasses_proxy(no_proxy: str, host: str, port: int) -> bool:
    """True when the ``NO_PROXY`` list ``no_proxy`` exempts ``host`` on ``port`` (module docs)."""
    target = host.lower()
    if target.startswith("[") and target.endswith("]"):
        target = target[1:-1]
    target = target.rstrip(".")
    address = _address(target)
    for raw in _SPLIT.split(no_proxy):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        name, entry_port, ok = _entry_port(entry)
        if not ok or (entry_port is not None and entry_port != port):
            continue
        if "/" in name:
            try:
                network = ipaddress.ip_network(name, strict=False)
            except ValueError:
                continue
            if address is not None and address.version == network.version and address in network:
                return True
            continue
        entry_address = _address(name)
        if entry_address is not None:
            if address is not None and address == entry_address:
                return True
            continue
        suffix = name.lstrip("*").lstrip(".").rstrip(".")
        if suffix and address is None and (target == suffix or target.endswith("." + suffix)):
            return True
    return False


def proxy_from_environment(endpoint: Endpoint, env: Mapping[str, str]) -> Optional[Proxy]:
    """The proxy the environment gives ``endpoint`` (module docs), or ``None``."""
    if is_loopback_host(endpoint.host):
        return None
    found = environment_proxy(endpoint.scheme, env)
    if found is None:
        return None
    exempt = _variable(env, "no_proxy")
    if exempt is not None and bypasses_proxy(exempt[1], endpoint.host, endpoint.port):
        return None
    variable, value = found
    return parse_proxy(value, f"the proxy in {variable}", source=variable)


def proxy_route_check(proxy: Optional[Proxy], endpoint: Endpoint) -> None:
    """Refuse a route that would put the bearer in cleartext before a non-loopback proxy."""
    if proxy is not None and endpoint.scheme == "http" and not proxy.loopback:
        raise ConfigError(CLEARTEXT_PROXY_REFUSED)


# --- failures on the way through a proxy -------------------------------------------

_TUNNEL_STATUS = re.compile(r"tunnel connection failed: (\d{3})")
_TRANSIENT = frozenset({408, 429, 500, 502, 503, 504})


def _walk(exc: BaseException) -> Tuple[BaseException, ...]:
    """``exc`` and what lies below it (causes, contexts, urllib3's wrapped arguments)."""
    found = [exc]
    current: Optional[BaseException] = exc
    while current is not None and len(found) < 8:
        below = current.__cause__ or current.__context__
        if below is None:
            below = next((a for a in current.args if isinstance(a, BaseException)), None)
        if below is None or any(below is seen for seen in found):
            break
        found.append(below)
        current = below
    return tuple(found)


def proxy_auth_failure(proxy: Proxy, host: str) -> EngineError:
    """The proxy answered 407: it wants credentials, or refused the ones sent."""
    hint = (
        "check the user name and password in the proxy URL"
        if proxy.authenticates
        else "give them as user:password@ in the proxy URL"
    )
    return EngineError(
        f"memory API request to {host} through the proxy {proxy.shown}: the proxy asked for "
        f"credentials (HTTP 407 Proxy Authentication Required); {hint}",
        status=407,
    )


def proxy_failure(
    exc: BaseException, proxy: Proxy, *, host: str, hide: Iterable[str] = ()
) -> Error:
    """Map a failure to reach the endpoint through ``proxy`` (urllib3's ``ProxyError``).

    A ``CONNECT`` the proxy answered with a status keeps it: 407 is
    :func:`proxy_auth_failure`, a transient status is ``UnavailableError``, any
    other an ``EngineError`` (the proxy will not tunnel to this host). A proxy
    that could not be reached is ``UnavailableError`` named by cause. The
    underlying texts follow the dash, with any URL cut out.
    """
    import urllib3.exceptions as u3  # loaded by then: only a request can fail

    chain = _walk(exc)
    detail = transport_failure(exc, host=host, hide=hide).message.partition(DASH)[2]
    head = f"memory API request to {host} through the proxy {proxy.shown}"
    status: Optional[int] = None
    for err in chain:
        found = _TUNNEL_STATUS.search(str(err).lower())
        if found is not None:
            status = int(found.group(1))
            break
    if status == 407:
        return proxy_auth_failure(proxy, host)
    if status is not None:
        variant: Type[Error] = UnavailableError if status in _TRANSIENT else EngineError
        return variant(
            f"{head}: the proxy refused to open a tunnel (HTTP {status_text(status)})",
            status=status,
        )
    setting = f" ({proxy.source})" if proxy.source != "proxy=" else ""
    if any(
        isinstance(e, (u3.ConnectTimeoutError, socket.timeout))
        # urllib3's NewConnectionError subclasses ConnectTimeoutError (for old callers).
        and not isinstance(e, u3.NewConnectionError)
        for e in chain
    ):
        kind = "timed out connecting to the proxy"
    elif any(isinstance(e, (u3.NameResolutionError, socket.gaierror)) for e in chain):
        kind = f"the proxy host could not be resolved; check the proxy setting{setting}"
    elif any(isinstance(e, (ssl.SSLError, ssl.CertificateError, u3.SSLError)) for e in chain):
        kind = (
            "TLS with the proxy failed; check the proxy URL's scheme (most proxies are "
            "http://) and that its certificate is trusted"
        )
    elif any(isinstance(e, (u3.NewConnectionError, ConnectionRefusedError)) for e in chain):
        kind = f"could not connect to the proxy; check the proxy setting{setting} and that it runs"
    else:
        kind = "the proxy closed the connection or did not answer as an HTTP proxy"
    message = f"{head}: {kind}"
    return UnavailableError(f"{message}{DASH}{detail}" if detail else message)

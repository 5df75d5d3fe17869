"""The proxy rules without traffic: NO_PROXY matching, environment precedence, URL checks.

What a client decides is visible as ``client.proxy`` (``scheme://host:port``);
the loopback proxies of test_proxy.py prove the same decisions on the wire.
"""

from __future__ import annotations

import copy
import pickle
from typing import Dict

import pytest

from cortex_memory.cortex import FROM_ENVIRONMENT, CortexWire, EngineCredential, Network
from cortex_memory.cortex.transport import HttpClient
from cortex_memory.cortex.transport.endpoint import parse_endpoint
from cortex_memory.cortex.transport.proxy import (
    CLEARTEXT_PROXY_REFUSED,
    bypasses_proxy,
    environment_proxy,
    parse_proxy,
    proxy_from_environment,
)
from cortex_memory.errors import ConfigError

from .conftest import CANARY

pytestmark = pytest.mark.usefixtures("clean_network_env")


@pytest.mark.parametrize(
    ("entries", "host", "port", "exempt"),
    [
        ("*", "api.example.com", 443, True),
        ("example.com", "example.com", 443, True),
        ("example.com", "api.example.com", 443, True),
        ("example.com", "deep.api.example.com", 443, True),
        ("example.com", "badexample.com", 443, False),
        ("example.com", "example.com.evil.net", 443, False),
        (".example.com", "example.com", 443, True),
        (".example.com", "api.example.com", 443, True),
        ("*.example.com", "api.example.com", 443, True),
        ("*.example.com", "example.com", 443, True),
        ("EXAMPLE.COM", "Api.Example.Com", 443, True),
        ("example.com.", "api.example.com", 443, True),
        ("example.com", "api.example.com.", 443, True),
        ("other.org, example.com", "api.example.com", 443, True),
        ("other.org,,  example.com ", "api.example.com", 443, True),
        ("other.org example.com", "api.example.com", 443, True),
        ("other.org", "api.example.com", 443, False),
        ("", "api.example.com", 443, False),
        ("example.com:8443", "api.example.com", 8443, True),
        ("example.com:8443", "api.example.com", 443, False),
        ("10.1.2.3", "10.1.2.3", 443, True),
        ("10.1.2.3", "10.1.2.4", 443, False),
        ("10.1.2.3:8443", "10.1.2.3", 443, False),
        ("10.1.2.3:8443", "10.1.2.3", 8443, True),
        ("10.0.0.0/8", "10.200.3.4", 443, True),
        ("10.0.0.0/8", "11.0.0.1", 443, False),
        ("192.168.0.0/16", "192.168.7.7", 443, True),
        ("fd00::/8", "[fd12::1]", 443, True),
        ("fd00::/8", "[fe80::1]", 443, False),
        ("2001:db8::1", "[2001:db8::1]", 443, True),
        ("[2001:db8::1]", "[2001:db8::1]", 443, True),
        ("[2001:db8::1]:8443", "[2001:db8::1]", 443, False),
        ("[2001:db8::1]:8443", "[2001:db8::1]", 8443, True),
        # An address entry never exempts a name (no resolution), nor a name an address.
        ("10.1.2.3", "api.example.com", 443, False),
        ("example.com", "10.1.2.3", 443, False),
        ("0.2.3", "10.1.2.3", 443, False),
        # Malformed entries are skipped, not fatal.
        ("[::1, example.com", "api.example.com", 443, True),
        ("example.com:https", "example.com", 443, False),
        ("10.0.0.0/99", "10.1.2.3", 443, False),
    ],
)
def test_no_proxy_entries(entries: str, host: str, port: int, exempt: bool) -> None:
    assert bypasses_proxy(entries, host, port) is exempt


def _env(**values: str) -> Dict[str, str]:
    return dict(values)


@pytest.mark.parametrize(
    ("env", "scheme", "expected"),
    [
        (_env(HTTPS_PROXY="http://a:1"), "https", ("HTTPS_PROXY", "http://a:1")),
        (_env(https_proxy="http://b:1"), "https", ("https_proxy", "http://b:1")),
        (_env(HTTPS_PROXY="http://a:1", https_proxy="http://b:1"), "https",
         ("https_proxy", "http://b:1")),
        # A lowercase variable set to "" means none for this scheme, whatever the uppercase says.
        (_env(HTTPS_PROXY="http://a:1", https_proxy="", ALL_PROXY="http://c:1"), "https",
         ("ALL_PROXY", "http://c:1")),
        (_env(HTTPS_PROXY="http://a:1", https_proxy=""), "https", None),
        (_env(HTTP_PROXY="http://a:1"), "https", None),
        (_env(HTTP_PROXY="http://a:1"), "http", ("HTTP_PROXY", "http://a:1")),
        (_env(HTTPS_PROXY="http://a:1"), "http", None),
        (_env(ALL_PROXY="http://c:1"), "https", ("ALL_PROXY", "http://c:1")),
        (_env(all_proxy="http://d:1", ALL_PROXY="http://c:1"), "http", ("all_proxy", "http://d:1")),
        (_env(HTTPS_PROXY="http://a:1", ALL_PROXY="http://c:1"), "https",
         ("HTTPS_PROXY", "http://a:1")),
        (_env(HTTPS_PROXY="  "), "https", None),
        # httpoxy: in a CGI process HTTP_PROXY is a client's header, so it is ignored.
        (_env(HTTP_PROXY="http://a:1", REQUEST_METHOD="GET"), "http", None),
        (_env(http_proxy="http://b:1", REQUEST_METHOD="GET"), "http", ("http_proxy", "http://b:1")),
    ],
)  # fmt: skip
def test_environment_variables_and_their_precedence(
    env: Dict[str, str], scheme: str, expected: object
) -> None:
    assert environment_proxy(scheme, env) == expected


def test_the_environment_never_proxies_a_loopback_endpoint() -> None:
    env = {"HTTPS_PROXY": "http://proxy.corp:3128", "HTTP_PROXY": "http://proxy.corp:3128"}
    for url in ("http://127.0.0.1:8080", "https://localhost:8443", "http://[::1]:80"):
        assert proxy_from_environment(parse_endpoint(url), env) is None
    remote = proxy_from_environment(parse_endpoint("https://api.example.com"), env)
    assert remote is not None
    assert remote.url == "http://proxy.corp:3128"
    assert remote.source == "HTTPS_PROXY"


def test_no_proxy_from_the_environment_in_either_case() -> None:
    endpoint = parse_endpoint("https://api.example.com")
    base = {"HTTPS_PROXY": "http://proxy.corp:3128"}
    assert proxy_from_environment(endpoint, {**base, "NO_PROXY": "example.com"}) is None
    assert proxy_from_environment(endpoint, {**base, "no_proxy": ".example.com"}) is None
    # The lowercase one wins when set, even to "".
    kept = proxy_from_environment(endpoint, {**base, "no_proxy": "", "NO_PROXY": "*"})
    assert kept is not None


@pytest.mark.parametrize(
    ("text", "url", "auth"),
    [
        ("http://proxy.corp:3128", "http://proxy.corp:3128", None),
        ("proxy.corp:3128", "http://proxy.corp:3128", None),
        ("http://proxy.corp", "http://proxy.corp:80", None),
        ("https://proxy.corp", "https://proxy.corp:443", None),
        ("HTTP://Proxy.Corp:3128/", "http://proxy.corp:3128", None),
        ("http://[::1]:3128", "http://[::1]:3128", None),
        ("http://ada:s3cret@proxy.corp:3128", "http://proxy.corp:3128", "Basic YWRhOnMzY3JldA=="),
        # Percent-encoded user information is decoded before it is sent.
        ("http://ada%40corp:p%3Ass@proxy.corp:3128", "http://proxy.corp:3128",
         "Basic YWRhQGNvcnA6cDpzcw=="),
        ("http://ada@proxy.corp:3128", "http://proxy.corp:3128", "Basic YWRhOg=="),
    ],
)  # fmt: skip
def test_proxy_urls_parse_without_their_credentials(
    text: str, url: str, auth: object
) -> None:
    proxy = parse_proxy(text)
    assert proxy.url == url
    assert proxy.headers.get("Proxy-Authorization") == auth
    assert "s3cret" not in repr(proxy)
    assert "YWRh" not in repr(proxy)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("socks5://proxy.corp:1080", "SOCKS"),
        ("socks5h://ada:s3cret@proxy.corp:1080", "SOCKS"),
        ("ftp://proxy.corp", "http:// or https://"),
        ("http://", "no host"),
        ("   ", "blank"),
        ("http://proxy.corp:3128\r\nX: y", "control characters"),
        ("http://proxy.corp:99999", "not a valid URL"),
    ],
)
def test_bad_proxy_urls_are_config_errors_that_never_echo_them(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_proxy(text, "the proxy in HTTPS_PROXY")
    assert str(caught.value).startswith("configuration error: the proxy in HTTPS_PROXY")
    assert "s3cret" not in str(caught.value)
    assert "proxy.corp" not in str(caught.value)


# --- Network and the client's decision ----------------------------------------------


def client(url: str, network: object = None) -> HttpClient:
    return HttpClient(
        CortexWire.DIRECT, url, EngineCredential.static(CANARY), network=network  # type: ignore[arg-type]
    )


def test_network_defaults_to_the_environment_and_redacts_its_repr() -> None:
    assert Network().proxy is FROM_ENVIRONMENT
    assert Network().proxy_from_environment
    assert Network(proxy="").proxy is None
    assert Network(proxy=None).proxy is None
    secret = Network(proxy="http://ada:s3cret@proxy.corp:3128")
    assert secret.proxy == "http://ada:s3cret@proxy.corp:3128"
    assert "s3cret" not in repr(secret)
    assert "ada" not in repr(secret)
    assert "s3cret" not in str(secret)
    assert repr(secret) == "Network(proxy='http://<redacted>@proxy.corp:3128')"
    assert repr(Network()) == "Network(proxy=FROM_ENVIRONMENT)"
    assert copy.deepcopy(Network()).proxy is FROM_ENVIRONMENT
    assert pickle.loads(pickle.dumps(Network())).proxy is FROM_ENVIRONMENT
    assert pickle.loads(pickle.dumps(secret)) == secret


def test_network_refuses_bad_values_naming_the_field(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match=r"Network\.proxy is a SOCKS proxy"):
        Network(proxy="socks5://ada:s3cret@proxy.corp:1080")
    with pytest.raises(ConfigError, match=r"Network\.client_key must be the path of a PEM file"):
        Network(client_cert="me.pem", client_key="-----BEGIN PRIVATE KEY-----\nMIIE")
    with pytest.raises(ConfigError, match=r"Network\.ca_certs must not be blank"):
        Network(ca_certs=" ")
    with pytest.raises(ConfigError, match=r"Network\.client_key needs client_cert"):
        Network(client_key="me.key")
    import ssl

    with pytest.raises(ConfigError, match=r"cannot be combined"):
        Network(ssl_context=ssl.create_default_context(), ca_certs="ca.pem")
    with pytest.raises(TypeError):
        Network(proxy=3128)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Network(ssl_context="ctx")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Network(ca_certs=b"ca.pem")  # type: ignore[arg-type]


def test_explicit_proxy_beats_the_environment_and_none_ignores_it(
    clean_network_env: pytest.MonkeyPatch,
) -> None:
    clean_network_env.setenv("HTTPS_PROXY", "http://env-proxy.corp:3128")
    clean_network_env.setenv("NO_PROXY", "example.com")
    assert client("https://api.other.org").proxy == "http://env-proxy.corp:3128"
    assert client("https://api.example.com").proxy is None  # NO_PROXY
    explicit = Network(proxy="http://mine.corp:8080")
    assert client("https://api.other.org", explicit).proxy == "http://mine.corp:8080"
    # An explicit proxy is what the caller asked for this endpoint: NO_PROXY does not apply.
    assert client("https://api.example.com", explicit).proxy == "http://mine.corp:8080"
    assert client("https://api.other.org", Network(proxy=None)).proxy is None
    assert client("https://api.other.org", Network(proxy="")).proxy is None


def test_the_environment_is_read_when_the_client_is_built(
    clean_network_env: pytest.MonkeyPatch,
) -> None:
    built = client("https://api.other.org")
    clean_network_env.setenv("HTTPS_PROXY", "http://env-proxy.corp:3128")
    assert built.proxy is None
    assert copy.copy(built).proxy is None
    assert client("https://api.other.org").proxy == "http://env-proxy.corp:3128"


def test_a_bad_environment_proxy_fails_construction_naming_the_variable(
    clean_network_env: pytest.MonkeyPatch,
) -> None:
    clean_network_env.setenv("ALL_PROXY", "socks5h://ada:s3cret@proxy.corp:1080")
    with pytest.raises(ConfigError, match="the proxy in ALL_PROXY is a SOCKS proxy") as caught:
        client("https://api.other.org")
    assert "s3cret" not in str(caught.value)
    # Not needed for a loopback endpoint, so not read; and an explicit choice overrides it.
    assert client("http://127.0.0.1:9").proxy is None
    assert client("https://api.other.org", Network(proxy=None)).proxy is None


def test_cleartext_endpoints_only_go_through_loopback_proxies() -> None:
    for proxy in ("http://proxy.corp:3128", "https://proxy.corp:3128", "http://192.0.2.7:3128"):
        with pytest.raises(ConfigError, match=CLEARTEXT_PROXY_REFUSED):
            client("http://127.0.0.1:8080", Network(proxy=proxy))
    for proxy in ("http://127.0.0.1:3128", "https://localhost:3129", "http://[::1]:3128"):
        assert client("http://127.0.0.1:8080", Network(proxy=proxy)).proxy is not None
    # An https endpoint is tunnelled, so any proxy is fine.
    assert client("https://api.example.com", Network(proxy="http://proxy.corp:3128")).proxy


def test_reprs_show_the_proxy_without_credentials() -> None:
    proxied = client("https://api.example.com", Network(proxy="http://ada:s3cret@proxy.corp:3128"))
    assert repr(proxied) == (
        "HttpClient(wire='cortexdb', endpoint='https://api.example.com', "
        "proxy='http://proxy.corp:3128')"
    )
    assert repr(client("https://api.example.com", Network(proxy=None))) == (
        "HttpClient(wire='cortexdb', endpoint='https://api.example.com')"
    )

"""TLS options through real sockets: a loopback HTTPS front signed by a test CA (trustme).

The front serves a double of either wire over TLS. A client trusts it only when
told to: a CA bundle (``ca_certs``), ``SSL_CERT_FILE``, or a ready
``ssl.SSLContext``; a front that asks for a client certificate gets one from
``client_cert``/``client_key``. Verification cannot be switched off unless
every hop is loopback.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import pytest

from cortex_memory import ListRequest, MetaFilter, StoreItem
from cortex_memory.config import EngineSettings, MemoryConfig
from cortex_memory.cortex import CortexEngine, Network
from cortex_memory.errors import ConfigError, UnavailableError
from cortex_memory.registry import EngineCredential, build_engine
from cortex_memory.testing import TEST_TOKEN
from cortex_memory.testing._server import BaseDouble

from ._network import TIMING, engine, port_of, start_double
from ._relays import ProxyOptions, RecordingProxy, TlsFront
from .conftest import REMOTE_HOST

pytestmark = pytest.mark.usefixtures("clean_network_env")

trustme = pytest.importorskip("trustme")

TLS_FAILED = "TLS failed"


def works(eng: CortexEngine) -> None:
    """A write and a read over the TLS connection."""
    try:
        assert eng.store(StoreItem.document("over TLS")).id
        assert eng.list(ListRequest(MetaFilter(), 5)).items
    finally:
        eng.close()


def refused(eng: CortexEngine) -> UnavailableError:
    try:
        with pytest.raises(UnavailableError, match=TLS_FAILED) as caught:
            eng.list(ListRequest(MetaFilter(), 1))
    finally:
        eng.close()
    return caught.value


# --- trusting a server ---------------------------------------------------------------


def test_an_unknown_ca_is_refused_by_default(served: Tuple[BaseDouble, TlsFront]) -> None:
    double, front = served
    refused(engine(double, front.url()))
    assert front.handshakes == 0
    assert TEST_TOKEN.encode() not in front.decrypted


def test_without_options_one_context_serves_every_connection(
    served: Tuple[BaseDouble, TlsFront], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No TLS options: the system trust store is loaded once per engine family and its
    context used by every connection of the family and its copies (urllib3 alone
    would build a context and load the store for each new connection), and
    verification is as strict as before: the test CA is unknown, so every
    connection is refused before a byte of the request is sent."""
    double, front = served
    loaded: List[ssl.SSLContext] = []
    wrapped: List[ssl.SSLContext] = []
    load_default_certs = ssl.SSLContext.load_default_certs
    wrap_socket = ssl.SSLContext.wrap_socket

    def counting_load(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loaded.append(self)
        load_default_certs(self, *args, **kwargs)

    def counting_wrap(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        if not kwargs.get("server_side"):  # (the front is in this process too)
            wrapped.append(self)
        return wrap_socket(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_default_certs", counting_load)
    monkeypatch.setattr(ssl.SSLContext, "wrap_socket", counting_wrap)
    first = engine(double, front.url())
    assert not loaded  # nothing is loaded before a connection needs it
    copy = first.with_timing(TIMING)
    for eng in (first, copy, first):
        with pytest.raises(UnavailableError, match=TLS_FAILED):
            eng.list(ListRequest(MetaFilter(), 1))
    assert len(loaded) == 1
    assert len(wrapped) >= 3  # every refused attempt opened a new connection
    assert all(context is loaded[0] for context in wrapped)
    assert loaded[0].verify_mode == ssl.CERT_REQUIRED
    assert loaded[0].check_hostname
    assert loaded[0].minimum_version >= ssl.TLSVersion.TLSv1_2
    refused(engine(double, front.url()))  # another family: its own context
    assert len(loaded) == 2
    assert loaded[1] is not loaded[0]
    first.close()
    assert front.handshakes == 0
    assert TEST_TOKEN.encode() not in front.decrypted


def test_a_ca_bundle_is_trusted(served: Tuple[BaseDouble, TlsFront], ca_file: str) -> None:
    double, front = served
    works(engine(double, front.url(), Network(ca_certs=ca_file)))
    assert f"Bearer {TEST_TOKEN}".encode() in front.decrypted


def test_ssl_cert_file_is_honoured(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, clean_network_env: pytest.MonkeyPatch
) -> None:
    double, front = served
    clean_network_env.setenv("SSL_CERT_FILE", ca_file)
    works(engine(double, front.url()))
    # An explicit bundle wins over the variable.
    other = trustme.CA()
    other_file = str(Path(ca_file).with_name("other-ca.pem"))
    other.cert_pem.write_to_path(other_file)
    refused(engine(double, front.url(), Network(ca_certs=other_file)))


def test_ssl_cert_dir_is_honoured(
    served: Tuple[BaseDouble, TlsFront], test_ca: Any, tmp_path: Path,
    clean_network_env: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A folder of certificates named by their subject hash (what c_rehash makes)."""
    double, front = served
    folder = tmp_path / "certs"
    folder.mkdir()
    pem = test_ca.cert_pem.bytes()
    (folder / f"{_subject_hash(pem)}.0").write_bytes(pem)
    clean_network_env.setenv("SSL_CERT_DIR", str(folder))
    works(engine(double, front.url()))


def _subject_hash(pem: bytes) -> str:
    """OpenSSL's subject-name hash of a certificate (the c_rehash file name)."""
    import hashlib

    from cryptography import x509

    cert = x509.load_pem_x509_certificate(pem)
    # X509_NAME_hash: SHA-1 of the canonical DER of the name, first 4 bytes little-endian.
    canonical = _canonical_name(cert.subject)
    digest = hashlib.sha1(canonical).digest()
    return f"{int.from_bytes(digest[:4], 'little'):08x}"


def _canonical_name(name: Any) -> bytes:
    """The canonical encoding OpenSSL hashes (x509_name_canon): the RDN sets without the
    outer sequence, each value a UTF8String, trimmed, spaces folded and lowercased."""

    def der_len(n: int) -> bytes:
        if n < 0x80:
            return bytes([n])
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        return bytes([0x80 | len(raw)]) + raw

    def tlv(tag: int, body: bytes) -> bytes:
        return bytes([tag]) + der_len(len(body)) + body

    def oid(dotted: str) -> bytes:
        parts = [int(p) for p in dotted.split(".")]
        out = bytes([parts[0] * 40 + parts[1]])
        for value in parts[2:]:
            chunk = [value & 0x7F]
            value >>= 7
            while value:
                chunk.append(0x80 | (value & 0x7F))
                value >>= 7
            out += bytes(reversed(chunk))
        return tlv(0x06, out)

    encoded = b""
    for rdn in name.rdns:
        members = b""
        for attribute in rdn:
            text = " ".join(str(attribute.value).split()).lower()
            members += tlv(0x30, oid(attribute.oid.dotted_string) + tlv(0x0C, text.encode()))
        encoded += tlv(0x31, members)
    return encoded


def test_a_ready_ssl_context_is_used(served: Tuple[BaseDouble, TlsFront], ca_file: str) -> None:
    double, front = served
    context = ssl.create_default_context(cafile=ca_file)
    works(engine(double, front.url(), Network(ssl_context=context)))
    refused(engine(double, front.url(), Network(ssl_context=ssl.create_default_context())))


def test_the_host_name_is_checked(
    served: Tuple[BaseDouble, TlsFront], test_ca: Any, ca_file: str
) -> None:
    """A certificate from a trusted CA, for another name, is refused."""
    double, front = served
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    test_ca.issue_cert("other.test").configure_cert(context)
    with TlsFront(context, port_of(double.url)) as elsewhere:
        refused(engine(double, elsewhere.url("localhost"), Network(ca_certs=ca_file)))
    works(engine(double, front.url("localhost"), Network(ca_certs=ca_file)))


def test_config_and_registry_carry_the_tls_files(
    served: Tuple[BaseDouble, TlsFront], ca_file: str, tmp_path: Path
) -> None:
    double, front = served
    engine_id = "tinyhumans" if double.hosted else "cortexdb"
    folder = Path(ca_file).parent
    config_file = folder / "config.toml"
    # A relative path in a file is read from the file's folder.
    config_file.write_text(
        f'engine = "{engine_id}"\n[engines.{engine_id}]\n'
        f'endpoint = "{front.url()}"\nca_certs = "{Path(ca_file).name}"\n'
    )
    config = MemoryConfig.load(config_file)
    assert config.settings().ca_certs == ca_file
    built = config.build(EngineCredential.static(TEST_TOKEN))
    assert isinstance(built, CortexEngine)
    works(built.with_timing(TIMING))
    plain = build_engine(
        engine_id, EngineSettings(endpoint=front.url()), EngineCredential.static(TEST_TOKEN)
    )
    assert isinstance(plain, CortexEngine)
    refused(plain.with_timing(TIMING))


# --- client certificates -------------------------------------------------------------


@pytest.fixture
def client_ca() -> Any:
    return trustme.CA()


@pytest.fixture(params=["direct", "hosted"])
def mutual(
    request: pytest.FixtureRequest, server_cert: Any, client_ca: Any
) -> Iterator[Tuple[BaseDouble, TlsFront]]:
    """A front that requires a client certificate signed by ``client_ca``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_cert.configure_cert(context)
    client_ca.configure_trust(context)
    context.verify_mode = ssl.CERT_REQUIRED
    double = start_double(str(request.param))
    front = TlsFront(context, port_of(double.url))
    yield double, front
    front.close()
    double.close()


def test_a_required_client_certificate_is_shown(
    mutual: Tuple[BaseDouble, TlsFront], client_ca: Any, ca_file: str, tmp_path: Path
) -> None:
    double, front = served = mutual
    del served
    identity = client_ca.issue_cert("ada@example.com")
    cert = tmp_path / "client.pem"
    key = tmp_path / "client.key"
    both = tmp_path / "client-and-key.pem"
    identity.cert_chain_pems[0].write_to_path(str(cert))
    identity.private_key_pem.write_to_path(str(key))
    identity.private_key_and_cert_chain_pem.write_to_path(str(both))

    refused(engine(double, front.url(), Network(ca_certs=ca_file)))
    works(engine(double, front.url(), Network(ca_certs=ca_file, client_cert=str(cert),
                                              client_key=str(key))))  # fmt: skip
    works(engine(double, front.url(), Network(ca_certs=ca_file, client_cert=both)))
    shown = [c for c in front.client_certs if c]
    assert shown
    assert all("ada@example.com" in str(c.get("subjectAltName")) for c in shown)


def test_tls_files_are_checked_when_the_engine_is_built(
    tmp_path: Path, test_ca: Any, ca_file: str
) -> None:
    url = "https://memory.example.com"
    missing = str(tmp_path / "missing.pem")
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate")
    identity = test_ca.issue_cert("ada@example.com")
    cert = tmp_path / "client.pem"
    identity.cert_chain_pems[0].write_to_path(str(cert))
    other_key = tmp_path / "other.key"
    test_ca.issue_cert("bob@example.com").private_key_pem.write_to_path(str(other_key))
    encrypted = tmp_path / "encrypted.key"
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(identity.private_key_pem.bytes(), password=None)
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"a password"),
        )
    )
    cases = [
        (Network(ca_certs=missing), "ca_certs cannot be read: no such file"),
        (Network(ca_certs=str(not_pem)), "ca_certs holds no PEM certificate"),
        (Network(client_cert=missing), "client_cert cannot be read"),
        (Network(client_cert=str(cert), client_key=missing), "client_key cannot be read"),
        (Network(client_cert=str(cert), client_key=str(other_key)), "not a PEM certificate"),
        (Network(client_cert=str(cert), client_key=str(encrypted)), "protected by a password"),
    ]  # fmt: skip
    for network, message in cases:
        with pytest.raises(ConfigError, match=message) as caught:
            CortexEngine.direct(url, EngineCredential.static(TEST_TOKEN), network=network)
        assert str(tmp_path) not in str(caught.value)


def test_a_bad_ssl_cert_file_fails_construction_naming_it(
    clean_network_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clean_network_env.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(ConfigError, match="SSL_CERT_FILE cannot be read"):
        CortexEngine.direct("https://memory.example.com", EngineCredential.static(TEST_TOKEN))
    # Not read when no connection uses TLS (a loopback plain-http endpoint).
    CortexEngine.direct("http://127.0.0.1:9", EngineCredential.static(TEST_TOKEN)).close()
    clean_network_env.setenv("SSL_CERT_FILE", "")
    clean_network_env.setenv("SSL_CERT_DIR", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="SSL_CERT_DIR names something that is not a folder"):
        CortexEngine.direct("https://memory.example.com", EngineCredential.static(TEST_TOKEN))


# --- verification cannot be switched off off loopback ---------------------------------


def unverified() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@pytest.mark.parametrize(
    "change",
    [
        lambda c: setattr(c, "check_hostname", False),
        lambda c: (setattr(c, "check_hostname", False), setattr(c, "verify_mode", ssl.CERT_NONE)),
        lambda c: setattr(c, "verify_mode", ssl.CERT_OPTIONAL),
    ],
)
def test_a_context_that_does_not_verify_is_refused_off_loopback(change: Any) -> None:
    context = ssl.create_default_context()
    change(context)
    with pytest.raises(ConfigError, match="verification cannot be switched off"):
        CortexEngine.direct(
            "https://memory.example.com",
            EngineCredential.static(TEST_TOKEN),
            network=Network(ssl_context=context),
        )
    # Through a proxy that is not loopback, a loopback endpoint is not "loopback" either.
    with pytest.raises(ConfigError, match="verification cannot be switched off"):
        CortexEngine.direct(
            "https://localhost:8443",
            EngineCredential.static(TEST_TOKEN),
            network=Network(ssl_context=context, proxy="http://proxy.corp:3128"),
        )


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_on_loopback_a_non_verifying_context_is_used_as_given(
    served: Tuple[BaseDouble, TlsFront],
) -> None:
    """Plain http is allowed to a loopback endpoint, so unverified TLS is too, when asked
    for explicitly with a context (a local server with a self-signed certificate).
    urllib3 still warns (InsecureRequestWarning) on every such request."""
    double, front = served
    works(engine(double, front.url("127.0.0.1"), Network(ssl_context=unverified())))


def test_verification_stays_on_if_the_context_is_changed_afterwards(
    served: Tuple[BaseDouble, TlsFront], ca_file: str
) -> None:
    """Off loopback every connection forces CERT_REQUIRED, whatever the context says later."""
    double, front = served
    other = trustme.CA()  # the context trusts another CA: the front must be refused
    context = ssl.create_default_context(cadata=other.cert_pem.bytes().decode())
    with RecordingProxy(ProxyOptions(hosts={REMOTE_HOST: front.port})) as proxy:
        eng = engine(
            double,
            f"https://{REMOTE_HOST}:{front.port}",
            Network(ssl_context=context, proxy=proxy.url),
        )
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        refused(eng)
    assert front.handshakes == 0


def test_tls_through_the_connect_proxy(served: Tuple[BaseDouble, TlsFront], ca_file: str) -> None:
    double, front = served
    with RecordingProxy(ProxyOptions(hosts={REMOTE_HOST: front.port})) as proxy:
        url = f"https://{REMOTE_HOST}:{front.port}"
        refused(engine(double, url, Network(proxy=proxy.url)))
        works(engine(double, url, Network(proxy=proxy.url, ca_certs=ca_file)))
    assert set(proxy.methods) == {"CONNECT"}

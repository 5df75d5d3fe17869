"""Shared fixtures of the transport tests: short timings, a canary token, client factories."""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Optional, Tuple

import pytest

from cortex_memory.cortex import CortexWire, EngineCredential, Timing
from cortex_memory.cortex.transport import HttpClient

# Every transport test uses this token so a leak of it anywhere is easy to spot.
CANARY = "ctx_canary_7f3a9e21d4b8"

# Short enough that no test waits long, long enough for a loaded 2-core box.
FAST = Timing(request_timeout=0.5, connect_timeout=0.5, read_backoff=0.005, max_pause=0.5)


@pytest.fixture
def canary() -> str:
    return CANARY


@pytest.fixture
def fast() -> Timing:
    return FAST


MakeClient = Callable[..., HttpClient]


@pytest.fixture
def make_client() -> Iterator[MakeClient]:
    """Build clients (Direct, the canary key, FAST timings by default) and close them after."""
    made: List[HttpClient] = []

    def make(
        url: str,
        *,
        wire: CortexWire = CortexWire.DIRECT,
        credential: Optional[EngineCredential] = None,
        timing: Timing = FAST,
        **kwargs: Any,
    ) -> HttpClient:
        client = HttpClient(
            wire, url, credential or EngineCredential.static(CANARY), timing=timing, **kwargs
        )
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


# --- proxies and TLS ------------------------------------------------------------------

# Every variable the proxy and TLS settings read; the tests set what they need.
NETWORK_VARIABLES = (
    "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY",
    "no_proxy", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUEST_METHOD",
)  # fmt: skip

# A name only the test proxies can resolve (.test never resolves in public DNS).
REMOTE_HOST = "memory.test"


@pytest.fixture
def clean_network_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No proxy or CA variable from the machine leaks into a test."""
    for name in NETWORK_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture(scope="session")
def test_ca() -> Any:
    """A throwaway CA (trustme) that signs the loopback TLS servers' certificates."""
    trustme = pytest.importorskip("trustme")
    return trustme.CA()


@pytest.fixture(scope="session")
def server_cert(test_ca: Any) -> Any:
    """A certificate for localhost, 127.0.0.1 and memory.test, signed by ``test_ca``."""
    return test_ca.issue_cert("localhost", "127.0.0.1", REMOTE_HOST)


@pytest.fixture
def ca_file(test_ca: Any, tmp_path: Any) -> str:
    """``test_ca``'s certificate as a PEM file."""
    path = tmp_path / "test-ca.pem"
    test_ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def server_context(server_cert: Any) -> Any:
    """A server-side SSLContext presenting ``server_cert``."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_cert.configure_cert(context)
    return context


@pytest.fixture(params=["direct", "hosted"])
def served(request: pytest.FixtureRequest, server_context: Any) -> Iterator[Tuple[Any, Any]]:
    """A double of each wire behind a loopback TLS front (localhost, memory.test)."""
    from ._network import port_of, start_double
    from ._relays import TlsFront

    double = start_double(str(request.param))
    front = TlsFront(server_context, port_of(double.url))
    yield double, front
    front.close()
    double.close()

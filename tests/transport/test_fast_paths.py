"""The transport's shortcuts give what the straightforward calls give.

- ``Family.connections()`` is the pool ``connection_from_host`` gives (the
  ``ProxyManager``'s own through a proxy), also after the pool manager was cleared;
- the response parser equals ``json.loads(raw, parse_constant=...)`` on
  generated bodies: same value, or a ``ValueError`` both ways.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.cortex.transport.endpoint import parse_endpoint
from cortex_memory.cortex.transport.exchange import Family
from cortex_memory.cortex.transport.proxy import parse_proxy
from cortex_memory.cortex.transport.response import _parse_json, _reject_constant


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080", "http://localhost/", "https://api.example.com/v2/"]
)
def test_connections_are_the_pool_connection_from_host_gives(url: str) -> None:
    endpoint = parse_endpoint(url)
    family = Family(endpoint)
    pool = family.connections()
    expected = family.pool.connection_from_host(
        endpoint.host, port=endpoint.port, scheme=endpoint.scheme
    )
    assert pool is expected
    assert family.connections() is pool
    assert (pool.host, pool.port, pool.scheme) == (expected.host, expected.port, expected.scheme)
    assert family.prefix == endpoint.path
    family.pool.clear()
    again = family.connections()
    assert again is not pool
    assert again is family.pool.connection_from_host(
        endpoint.host, port=endpoint.port, scheme=endpoint.scheme
    )
    assert (again.host, again.port, again.scheme) == (pool.host, pool.port, pool.scheme)
    family.pool.clear()


@pytest.mark.parametrize(
    ("url", "proxy_url"),
    [
        ("https://api.example.com/v2/", "http://127.0.0.1:3128"),
        ("http://127.0.0.1:8080/base/", "http://127.0.0.1:3128"),
        ("http://localhost:8080/", "https://localhost:8443"),
    ],
)
def test_proxied_connections_are_the_proxy_managers_own(url: str, proxy_url: str) -> None:
    """Through a proxy: the pool ProxyManager.connection_from_host gives, and the
    target urllib3 would send (the path in a CONNECT tunnel, the whole URL to a
    forwarding proxy)."""
    endpoint = parse_endpoint(url)
    family = Family(endpoint, parse_proxy(proxy_url))
    pool = family.connections()
    assert pool is family.pool.connection_from_host(
        endpoint.host, port=endpoint.port, scheme=endpoint.scheme
    )
    forwarding = endpoint.scheme == "http"
    assert family.prefix == (endpoint.base if forwarding else endpoint.path)
    assert pool.proxy is not None
    assert pool.proxy.url == family.proxy.url
    family.pool.clear()


def reference(raw: bytes) -> Any:
    return json.loads(raw, parse_constant=_reject_constant)


def outcome(parse: Any, raw: bytes) -> Any:
    try:
        value = parse(raw)
    except ValueError:
        return "ValueError"
    except RecursionError:
        return "RecursionError"
    return ("value", json.dumps(value, sort_keys=True))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=15,
)
ENCODINGS = st.sampled_from(["utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])


@settings(max_examples=300, deadline=None)
@given(JSON, ENCODINGS)
def test_the_parser_matches_json_loads_on_json(value: Any, encoding: str) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode(encoding, "surrogatepass")
    assert outcome(_parse_json, raw) == outcome(reference, raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40) | st.sampled_from([b"NaN", b"[Infinity]", b'{"a":-Infinity}']))
def test_the_parser_matches_json_loads_on_any_bytes(raw: bytes) -> None:
    assert outcome(_parse_json, raw) == outcome(reference, raw)


def test_constants_and_deep_nesting_fail_as_before() -> None:
    for raw in (b"NaN", b"[1, Infinity]", b'{"x": -Infinity}'):
        with pytest.raises(ValueError, match="is not JSON"):
            _parse_json(raw)
    assert _parse_json(b"1e400") == math.inf  # an overflowing number is not a constant
    deep = b"[" * 100_000 + b"]" * 100_000
    assert outcome(_parse_json, deep) == outcome(reference, deep)

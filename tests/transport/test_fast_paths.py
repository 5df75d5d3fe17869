"""The transport's shortcuts give what the straightforward calls give.

- ``Family.connections()`` is the pool ``connection_from_host`` gives (the
  ``ProxyManager``'s own through a proxy), also after the family was closed;
- the response parser equals ``json.loads(raw, parse_constant=...)`` on
  generated bodies: same value, or a ``ValueError`` both ways;
- the listing parser (a run of identical array elements parsed once) equals it
  too, on listing-shaped bodies and on any bytes.
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
from cortex_memory.cortex.transport.response import _parse_json, _parse_listing, _reject_constant


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
    family.close()  # what client.close() does: the manager forgets its pools
    again = family.connections()
    assert again is not pool
    assert again is family.pool.connection_from_host(
        endpoint.host, port=endpoint.port, scheme=endpoint.scheme
    )
    assert (again.host, again.port, again.scheme) == (pool.host, pool.port, pool.scheme)
    assert family.connections() is again
    family.close()


def test_a_family_builds_its_pool_on_first_use() -> None:
    """No pool manager (nor urllib3's TLS context) until a request needs one."""
    family = Family(parse_endpoint("https://api.example.com/"))
    assert family._manager is None
    assert family.tls is None
    family.close()  # nothing to close yet
    assert family._manager is None
    family.connections()
    assert family._manager is not None
    assert family.tls is not None
    family.close()


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


# -- listings: a run of identical elements parsed once -------------------------------


@st.composite
def listings(draw: st.DrawFn) -> Any:
    """Listing-shaped values: arrays (at the top and in a "data" object) whose
    elements often repeat, as CortexDB's event pages do, among other members."""
    element = st.one_of(JSON, st.just(1), st.just(1.0), st.just(True), st.just("1"))
    runs = st.lists(st.tuples(element, st.integers(1, 3)), max_size=5)
    body: Any = {}
    for key in draw(st.lists(st.sampled_from(["items", "next", "x", "data"]), unique=True)):
        if key == "data":
            body[key] = {"items": [v for v, n in draw(runs) for _ in range(n)], "n": 2}
        elif key == "next":
            body[key] = draw(JSON)
        else:
            body[key] = [v for v, n in draw(runs) for _ in range(n)]
    return body


SEPARATORS = st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", " :\t")])


@settings(max_examples=300, deadline=None)
@given(listings(), SEPARATORS, ENCODINGS, st.booleans())
def test_the_listing_parser_matches_json_loads(
    value: Any, separators: Any, encoding: str, spaced: bool
) -> None:
    text = json.dumps(value, ensure_ascii=False, separators=separators)
    if spaced:
        text = f" \n{text}\t "
    raw = text.encode(encoding, "surrogatepass")
    assert outcome(_parse_listing, raw) == outcome(reference, raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40) | st.sampled_from([b'{"a":[1,1,12,1]}', b'{"a":[1,1.0,1e0]}']))
def test_the_listing_parser_matches_json_loads_on_any_bytes(raw: bytes) -> None:
    assert outcome(_parse_listing, raw) == outcome(reference, raw)


def test_a_repeated_element_is_parsed_once_and_shared() -> None:
    event = {"id": "evt_1", "content": {"text": "t"}, "context": {"labels": ["a", "b"]}}
    raw = json.dumps({"items": [event, event, {**event, "id": "evt_2"}], "next": None}).encode()
    items = _parse_listing(raw)["items"]  # type: ignore[index]
    assert items == [event, event, {**event, "id": "evt_2"}]
    assert items[0] is items[1]  # the same value, parsed once
    assert items[2] is not items[1]
    # Prefixes of the previous element's text that are not whole elements are parsed.
    assert _parse_listing(b'{"a": [1, 12, 1, 1.5, 1e1, "1", "1"]}') == {
        "a": [1, 12, 1, 1.5, 10.0, "1", "1"]
    }


def test_the_listing_parser_refuses_as_json_loads_does() -> None:
    for raw in (b'{"a": [NaN]}', b'{"a": [1, 1] x}', b'{"a": [1,]}', b'{"a": [1 1]}', b"[1, 1]"):
        assert outcome(_parse_listing, raw) == outcome(reference, raw)
    deep = b'{"a": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}"
    assert outcome(_parse_listing, deep) == outcome(reference, deep)

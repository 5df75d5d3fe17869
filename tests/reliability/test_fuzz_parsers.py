"""Property tests of the parsers that read untrusted text (quality.md "Fuzzing").

Page cursors (a caller hands back whatever it was given, or anything else), the
local engine's cursors, scope paths read back from a server, and the small
decoders of server answers (the hosted envelope, failure bodies, whoami, the
rate-limit headers): arbitrary input gives a value or the documented error,
never another exception. Covered elsewhere and not repeated here: the namespace
parser (tests/contract/test_namespace.py), the config loader (tests/test_config.py)
and the envelope decoder (tests/envelope/test_privacy_fuzz.py).

Example counts stay modest; ``slow`` runs ten times as many.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Optional, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex_memory import (
    EngineError,
    Error,
    FetchMode,
    FetchRequest,
    InvalidRequestError,
    ItemKind,
    ListRequest,
    LocalEngine,
    MetaFilter,
    Namespace,
    StoreItem,
)
from cortex_memory.cortex.engine.cursor import (
    FETCH_TAG,
    LIST_TAG,
    FetchCursor,
    ListCursor,
    decode_cursor,
)
from cortex_memory.cortex.envelope import parse_scope, scope_path
from cortex_memory.cortex.transport import status_failure
from cortex_memory.cortex.transport.actor import ActorState, actor_from_whoami
from cortex_memory.cortex.transport.pause import parse_pause_seconds
from cortex_memory.cortex.wire import unwrap_hosted
from cortex_memory.local.reads import keyset_after, offset_of
from cortex_memory.testing import DirectDouble

from ._support import engine_on, seed

QUICK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEAVY = settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NO_FIXTURE_CHECK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
CURSOR_FIELDS = st.dictionaries(
    st.sampled_from(["scope", "engine", "offset", "last", "scopes", "x"]), JSON, max_size=5
)


def attempt(parse: Any, *args: Any) -> Tuple[Any, Optional[Error]]:
    """``(value, None)``, or ``(None, error)`` for a documented refusal."""
    try:
        return parse(*args), None
    except (InvalidRequestError, EngineError) as err:
        return None, err


def hexed(tag: str, value: Any, upper: bool) -> str:
    digits = json.dumps(value).encode("utf-8").hex()
    return tag + (digits.upper() if upper else digits)


def crafted_cursors() -> st.SearchStrategy[str]:
    """Cursors that get past the hex and JSON layers, and plain junk."""
    return st.one_of(
        st.text(max_size=120),
        st.builds(
            hexed, st.sampled_from([LIST_TAG, FETCH_TAG, "x", ""]), CURSOR_FIELDS, st.booleans()
        ),
        st.builds(hexed, st.sampled_from([LIST_TAG, FETCH_TAG]), JSON, st.booleans()),
        st.builds(
            lambda t, b: t + b.hex(), st.sampled_from([LIST_TAG, FETCH_TAG]), st.binary(max_size=40)
        ),
    )


# -- page cursors ------------------------------------------------------------------------------


@QUICK
@given(crafted_cursors())
def test_cursor_decoders_give_a_cursor_or_invalid_request(text: str) -> None:
    for decode in (ListCursor.decode, FetchCursor.decode):
        value, err = attempt(decode, text)
        if err is not None:
            assert err.message == "the page cursor is malformed"
        else:
            assert decode(value.encode()) == value  # what decodes re-encodes to itself


@given(st.one_of(st.none(), st.integers(), st.binary(max_size=8), st.lists(st.text(), max_size=2)))
def test_cursor_decoders_refuse_non_text(value: Any) -> None:
    for tag in (LIST_TAG, FETCH_TAG):
        with pytest.raises(InvalidRequestError):
            decode_cursor(tag, value)


@given(
    st.builds(
        ListCursor,
        st.none() | st.text(max_size=30),
        st.none() | st.text(max_size=10),
        st.integers(0, 2**63),
        st.none() | st.text(max_size=10),
    )
)
def test_list_cursors_round_trip(cursor: ListCursor) -> None:
    assert ListCursor.decode(cursor.encode()) == cursor


@pytest.fixture(scope="module")
def seeded() -> Iterator[Tuple[Any, Any]]:
    with DirectDouble() as double:
        seed(double)
        yield double, engine_on(double, request_timeout=5.0, connect_timeout=5.0)


@settings(max_examples=60, deadline=None, suppress_health_check=NO_FIXTURE_CHECK)
@given(crafted_cursors(), st.integers(1, 5))
def test_cortex_list_and_fetch_take_any_cursor(
    seeded: Tuple[Any, Any], cursor: str, limit: int
) -> None:
    double, engine = seeded
    for call in (
        lambda: engine.list(ListRequest(MetaFilter(), limit, cursor)),
        lambda: engine.fetch(FetchRequest("helix", FetchMode.HYBRID, limit, cursor=cursor)),
    ):
        try:
            page = call()
        except InvalidRequestError:
            continue
        assert len(getattr(page, "items", getattr(page, "hits", ()))) <= limit
    assert double.state.event_count() == 5  # reads never write


# -- local cursors -----------------------------------------------------------------------------

LOCAL_CURSORS = st.one_of(
    st.text(max_size=40),
    st.from_regex(r"[ko][0-9]{0,25}", fullmatch=True),
    st.from_regex(r"[ko][0-9\u0660-\u0669\uff10-\uff19 +-]{1,6}", fullmatch=True),
)


@QUICK
@given(LOCAL_CURSORS)
def test_local_cursor_parsers_give_a_position_or_invalid_request(text: str) -> None:
    for parse in (keyset_after, offset_of):
        value, err = attempt(parse, text)
        if err is not None:
            assert err.message.startswith("unknown cursor `")
            assert len(err.message) < 120  # a long cursor is cut, not echoed whole
        else:
            assert isinstance(value, int)
            assert value >= 0


@pytest.fixture(scope="module")
def local() -> Iterator[LocalEngine]:
    with LocalEngine(":memory:") as engine:
        engine.store_many([StoreItem.document(f"local note {i} about kettles") for i in range(7)])
        yield engine


@settings(max_examples=100, deadline=None, suppress_health_check=NO_FIXTURE_CHECK)
@given(LOCAL_CURSORS, st.integers(1, 5))
def test_local_list_and_fetch_take_any_cursor(local: LocalEngine, cursor: str, limit: int) -> None:
    for mode in (FetchMode.KEYWORD, FetchMode.HYBRID):
        try:
            page = local.fetch(FetchRequest("kettles", mode, limit, cursor=cursor))
        except InvalidRequestError:
            pass
        else:
            assert len(page.hits) <= limit
    try:
        listed = local.list(ListRequest(MetaFilter(), limit, cursor))
    except InvalidRequestError:
        return
    assert len(listed.items) <= limit


# -- scope paths read back from a server -------------------------------------------------------

SEGMENT_KINDS = ["agent", "team", "user", "ws", "project", "source", "service"]
SEGMENT = st.tuples(
    st.sampled_from(SEGMENT_KINDS), st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)
)
LEAVES = ["app:documents", "app:conversations", "app:learnings"]


@QUICK
@given(
    st.one_of(
        st.text(max_size=120),
        st.lists(
            st.one_of(
                st.sampled_from(["app:tinymemory", *LEAVES, "", "org:x"]), st.text(max_size=12)
            ),
            max_size=10,
        ).map("/".join),
    )
)
def test_parse_scope_gives_a_place_or_none(path: str) -> None:
    parsed = parse_scope(path)
    if parsed is None:
        return
    ns, kind = parsed
    assert isinstance(ns, Namespace)
    assert isinstance(kind, ItemKind)
    # A path that parses names a scope we would write (after any tenant prefix).
    assert path.endswith(scope_path(ns, kind).split("app:tinymemory", 1)[1])


@QUICK
@given(
    st.lists(SEGMENT, max_size=8),
    st.sampled_from(list(ItemKind)),
    st.sampled_from(["", "org:acme/", "oc:u-7/"]),
)
def test_scope_paths_round_trip(segments: list, kind: ItemKind, tenant: str) -> None:
    try:
        ns = Namespace.parse("/".join(f"{k}:{i}" for k, i in segments))
    except InvalidRequestError:
        return  # not a namespace the contract allows (kinds out of order, repeats)
    assert parse_scope(tenant + scope_path(ns, kind)) == (ns, kind)


# -- decoders of server answers ----------------------------------------------------------------


@QUICK
@given(JSON)
def test_hosted_envelope_unwraps_or_is_an_engine_error(body: Any) -> None:
    unwrapped, err = attempt(unwrap_hosted, body, "memory API memory/events on example.com")
    if err is not None:
        assert isinstance(err, EngineError)
        assert "memory API memory/events on example.com" in err.message
        return
    assert unwrapped.ok is (body.get("success") is True)
    if unwrapped.ok:
        assert unwrapped.data == body["data"]


BODIES = st.one_of(
    st.binary(max_size=400),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"errorCode": JSON, "error": JSON, "error_code": JSON, "message": JSON}
    ).map(lambda v: json.dumps(v).encode()),
    st.sampled_from([b"[" * 5000, b'{"error":' * 3000, b"\xff\xfe" * 50]),
)


@QUICK
@given(st.integers(100, 599), BODIES, st.booleans())
def test_status_failures_always_map_to_an_error(status: int, body: bytes, hosted: bool) -> None:
    err = status_failure(status, body, route="v1/events?scope=x", host="example.com", hosted=hosted)
    assert isinstance(err, Error)
    assert err.status == status
    excerpt = err.message.partition(" — ")[2]
    assert len(excerpt) <= 300
    assert "scope=x" not in err.message
    assert err.code is None or (err.code.isascii() and len(err.code) <= 64)


@QUICK
@given(st.integers(100, 599), BODIES)
def test_whoami_answers_never_raise(status: int, body: bytes) -> None:
    state, value = actor_from_whoami(status, body)
    assert isinstance(state, ActorState)
    if value is not None:
        assert state is ActorState.KNOWN
        assert "\r" not in value
        assert "\n" not in value
        assert value == value.strip()


@QUICK
@given(st.dictionaries(st.sampled_from(["Retry-After", "RateLimit-Reset"]), st.text(max_size=30)))
def test_pause_headers_give_seconds_or_nothing(headers: dict) -> None:
    seconds = parse_pause_seconds(headers)
    assert seconds is None or (isinstance(seconds, int) and 0 <= seconds < 2**64)


# -- the same properties, heavier (slow) -------------------------------------------------------

_HEAVY = [
    (test_cursor_decoders_give_a_cursor_or_invalid_request, (crafted_cursors(),)),
    (test_local_cursor_parsers_give_a_position_or_invalid_request, (LOCAL_CURSORS,)),
    (test_hosted_envelope_unwraps_or_is_an_engine_error, (JSON,)),
    (test_status_failures_always_map_to_an_error, (st.integers(100, 599), BODIES, st.booleans())),
    (test_whoami_answers_never_raise, (st.integers(100, 599), BODIES)),
]


@pytest.mark.slow
@pytest.mark.parametrize(("prop", "strategies"), _HEAVY, ids=[p.__name__[5:] for p, _ in _HEAVY])
def test_heavy(prop: Any, strategies: Tuple[Any, ...]) -> None:
    HEAVY(given(*strategies)(prop.hypothesis.inner_test))()

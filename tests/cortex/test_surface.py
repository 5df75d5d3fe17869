"""The engine's public surface: constructors, descriptors, copies, reprs, lifecycle."""

from __future__ import annotations

import copy
import logging

import pytest

from cortex_memory.contract import (
    ConsolidateRequest,
    Consolidation,
    EraseRequest,
    FetchMode,
    FetchRequest,
    ListRequest,
    MemoryEngine,
    MetaFilter,
    Namespace,
    Reach,
    StoreItem,
    WaitFor,
)
from cortex_memory.cortex import (
    CORTEX_API_ENDPOINT,
    CORTEXDB_ENGINE_ID,
    TINYHUMANS_API_ENDPOINT,
    TINYHUMANS_ENGINE_ID,
    CortexEngine,
    CortexWire,
    EngineCredential,
    StaticBearer,
    Timing,
    cortexdb_descriptor,
    tinyhumans_descriptor,
)
from cortex_memory.errors import (
    ConfigError,
    InvalidRequestError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
)
from cortex_memory.testing import FOREVER, TEST_TOKEN, sample_items

KEY = "ctx_surface_canary_5c1e"


def test_descriptors_match_the_spec() -> None:
    d = cortexdb_descriptor()
    assert d.to_json() == {
        "id": "cortexdb",
        "label": "CortexDB",
        "description": "CortexDB's own API: an append-only memory log with ranked recall and "
        "grounded answers",
        "hosted": False,
        "needs_endpoint": False,
        "needs_key": True,
        "default_endpoint": "https://api-v1.cortexdb.ai",
        "fetch_modes": ["hybrid"],
        "consolidation": "automatic",
    }
    t = tinyhumans_descriptor()
    assert t.to_json() == {
        "id": "tinyhumans",
        "label": "TinyHumans",
        "description": "CortexDB hosted by the TinyHumans backend, billed to the signed-in account",
        "hosted": True,
        "needs_endpoint": False,
        "needs_key": True,
        "default_endpoint": "https://api.tinyhumans.ai",
        "fetch_modes": ["hybrid"],
        "consolidation": "scheduled",
    }
    assert CortexWire.DIRECT.descriptor() == d
    assert CortexWire.TINYHUMANS.descriptor() == t
    assert (CORTEXDB_ENGINE_ID, TINYHUMANS_ENGINE_ID) == ("cortexdb", "tinyhumans")
    assert CORTEX_API_ENDPOINT == "https://api-v1.cortexdb.ai"
    assert TINYHUMANS_API_ENDPOINT == "https://api.tinyhumans.ai"


@pytest.mark.parametrize(
    ("endpoint", "mode"),
    [
        ("https://api-v1.cortexdb.ai", Consolidation.AUTOMATIC),
        ("https://api-v1.cortexdb.ai/", Consolidation.AUTOMATIC),
        ("https://api-v1.cortexdb.ai:443", Consolidation.AUTOMATIC),
        ("https://api-v1.cortexdb.ai:8443", Consolidation.ON_DEMAND),
        ("https://cortex.example.com", Consolidation.ON_DEMAND),
        ("http://127.0.0.1:3141", Consolidation.ON_DEMAND),
    ],
)
def test_direct_consolidation_depends_on_the_origin(endpoint: str, mode: Consolidation) -> None:
    engine = CortexEngine.direct(endpoint, EngineCredential.static(KEY))
    assert engine.descriptor().consolidation is mode
    engine.close()


def test_constructors_and_wire_accessor() -> None:
    a = CortexEngine.direct("https://cortex.example.com", EngineCredential.static(KEY))
    b = CortexEngine.new(
        CortexWire.DIRECT, "https://cortex.example.com", EngineCredential.static(KEY)
    )
    c = CortexEngine(CortexWire.TINYHUMANS, TINYHUMANS_API_ENDPOINT, EngineCredential.static(KEY))
    h = CortexEngine.tinyhumans(TINYHUMANS_API_ENDPOINT, StaticBearer(KEY))
    assert isinstance(a, MemoryEngine)
    assert a.wire is CortexWire.DIRECT
    assert b.wire is CortexWire.DIRECT
    assert c.wire is CortexWire.TINYHUMANS
    assert h.wire is CortexWire.TINYHUMANS
    assert h.descriptor() == tinyhumans_descriptor()
    for engine in (a, b, c, h):
        engine.close()


@pytest.mark.parametrize(
    "endpoint",
    ["not a url", "ftp://cortex.example.com", "http://cortex.example.com", "http://10.0.0.1"],
)
def test_construction_faults_are_config_errors(endpoint: str) -> None:
    with pytest.raises(ConfigError) as info:
        CortexEngine.direct(endpoint, EngineCredential.static(KEY))
    assert KEY not in str(info.value)


def test_blank_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="must not be empty"):
        CortexEngine.direct("https://cortex.example.com", EngineCredential.static("  "))


@pytest.mark.parametrize("wire", list(CortexWire))
def test_no_credential_is_a_config_error_naming_the_engine(wire: CortexWire) -> None:
    with pytest.raises(ConfigError, match=f"engine `{wire.value}` needs a credential"):
        CortexEngine(wire, "https://cortex.example.com", EngineCredential.NONE)
    with pytest.raises(TypeError, match="credential must be an EngineCredential"):
        CortexEngine(wire, "https://cortex.example.com", StaticBearer(KEY))  # type: ignore[arg-type]


@pytest.mark.parametrize("hosted", [False, True])
def test_both_wires_take_the_one_credential_type(hosted: bool) -> None:
    from cortex_memory.testing import DirectDouble, HostedDouble

    double_type = HostedDouble if hosted else DirectDouble
    build = CortexEngine.tinyhumans if hosted else CortexEngine.direct
    credentials = [EngineCredential.static(KEY), EngineCredential.dynamic(StaticBearer(KEY))]
    with double_type(accept_token=KEY, rate_limit_requests=None) as double:
        for credential in credentials:
            with build(double.url, credential) as engine:
                item = StoreItem.document(f"kept by {credential.kind}")
                assert not engine.store(item, wait=WaitFor.ACCEPTED).replayed
        with build(double.url, EngineCredential.static("another key")) as engine:
            with pytest.raises(UnauthorizedError):
                engine.store(StoreItem.document("refused"), wait=WaitFor.ACCEPTED)


def test_tinyhumans_needs_a_bearer_source() -> None:
    with pytest.raises(TypeError):
        CortexEngine.tinyhumans(TINYHUMANS_API_ENDPOINT, "tiny_live_x")  # type: ignore[arg-type]


def test_repr_shows_wire_and_origin_only() -> None:
    engine = CortexEngine.direct(
        "https://api-v1.cortexdb.ai/some/prefix?q=1", EngineCredential.static(KEY)
    )
    assert repr(engine) == "CortexEngine(wire='cortexdb', endpoint='https://api-v1.cortexdb.ai')"
    hosted = CortexEngine.tinyhumans("http://localhost:8080/base", StaticBearer(KEY))
    assert repr(hosted) == "CortexEngine(wire='tinyhumans', endpoint='http://localhost:8080')"
    assert KEY not in repr(engine) + str(engine)
    engine.close()
    hosted.close()


def test_with_consolidation_accepts_only_the_wire_modes() -> None:
    engine = CortexEngine.direct("https://cortex.example.com", EngineCredential.static(KEY))
    assert engine.with_consolidation(Consolidation.AUTOMATIC).descriptor().consolidation is (
        Consolidation.AUTOMATIC
    )
    assert engine.descriptor().consolidation is Consolidation.ON_DEMAND
    for mode in (Consolidation.SCHEDULED, Consolidation.NONE):
        with pytest.raises(ConfigError, match="cortexdb") as info:
            engine.with_consolidation(mode)
        assert mode.value in str(info.value)
    hosted = CortexEngine.tinyhumans(TINYHUMANS_API_ENDPOINT, StaticBearer(KEY))
    assert hosted.with_consolidation(Consolidation.SCHEDULED).descriptor() == hosted.descriptor()
    for mode in (Consolidation.ON_DEMAND, Consolidation.AUTOMATIC, Consolidation.NONE):
        with pytest.raises(ConfigError, match="tinyhumans"):
            hosted.with_consolidation(mode)
    engine.close()
    hosted.close()


def test_with_default_headers_refuses_credential_headers() -> None:
    engine = CortexEngine.direct("https://cortex.example.com", EngineCredential.static(KEY))
    with pytest.raises(ConfigError):
        engine.with_default_headers({"Authorization": "Bearer other"})
    with pytest.raises(ConfigError):
        engine.with_default_headers({"X-Cortex-Actor": "user:x"})
    engine.close()


def test_default_headers_are_sent_and_replaced_on_the_copy(direct) -> None:
    engine = direct.engine()
    tagged = engine.with_default_headers({"x-sdk-name": "host-app", "x-other": "1"})
    tagged.list(ListRequest(MetaFilter(), 1))
    assert direct.state.seen.headers[-1]["x-sdk-name"] == "host-app"
    replaced = tagged.with_default_headers({"x-sdk-name": "second"})
    replaced.list(ListRequest(MetaFilter(), 1))
    headers = direct.state.seen.headers[-1]
    assert headers["x-sdk-name"] == "second"
    assert "x-other" not in headers
    engine.list(ListRequest(MetaFilter(), 1))
    assert "x-sdk-name" not in direct.state.seen.headers[-1]


def test_copies_share_pool_actor_cache_pause_and_recency(make_double) -> None:
    double = make_double("direct", whoami_caller="user:local")
    engine = double.engine()
    copies = [
        copy.copy(engine),
        copy.deepcopy(engine),
        engine.with_timing(Timing(poll_interval=0.005, read_backoff=0.005, visibility=2.0)),
        engine.with_default_headers({"x-sdk-name": "x"}),
        engine.with_consolidation(Consolidation.AUTOMATIC),
    ]
    for clone in copies:
        assert clone.context.recency is engine.context.recency
        assert clone.context.client._family is engine.context.client._family
    engine.store(sample_items()[2])
    for clone in copies:
        clone.list(ListRequest(MetaFilter(), 5))
    assert double.state.counters["whoami_calls"] == 1


def test_close_and_context_manager(direct) -> None:
    with direct.engine() as engine:
        engine.store(sample_items()[2])
    # After close the pool opens new connections on the next call.
    assert engine.list(ListRequest(MetaFilter(), 5)).items
    engine.close()
    engine.close()


def test_pickling_is_refused(direct) -> None:
    import pickle

    with pytest.raises(TypeError):
        pickle.dumps(direct.engine())


def test_keyword_and_vector_fetch_are_refused_before_any_request(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    for mode in (FetchMode.KEYWORD, FetchMode.VECTOR):
        with pytest.raises(UnsupportedError):
            engine.fetch(FetchRequest("helix", mode, 5))
        # Refused before validation too: an invalid request of that mode is still Unsupported.
        with pytest.raises(UnsupportedError):
            engine.fetch(FetchRequest("", mode, 0))
    assert double.state.requests() == []


def test_export_and_erase_validate_then_refuse(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    with pytest.raises(InvalidRequestError):
        engine.export(ListRequest(MetaFilter(), 0))
    with pytest.raises(UnsupportedError, match="does not export"):
        engine.export(ListRequest(MetaFilter(), 5))
    erase = EraseRequest(Reach.exact(Namespace.parse("agent:x")))
    with pytest.raises(UnsupportedError, match="does not erase"):
        engine.erase(erase, deadline=5)
    assert double.state.requests() == []


def test_deadline_bounds_a_call(wire, make_double) -> None:
    double = make_double(wire, hide_listing_for=FOREVER)
    engine = double.engine(visibility=30.0)
    with pytest.raises(UnavailableError, match="deadline exceeded"):
        engine.store(sample_items()[2], deadline=0.2)


def test_invalid_deadline_is_refused(direct) -> None:
    engine = direct.engine()
    with pytest.raises(InvalidRequestError):
        engine.list(ListRequest(MetaFilter(), 5), deadline=-1)
    with pytest.raises(TypeError):
        engine.list(ListRequest(MetaFilter(), 5), deadline="5")  # type: ignore[arg-type]
    assert direct.state.requests() == []


def test_consolidate_is_served_on_both_wires(wire, make_double) -> None:
    double = make_double(wire)
    engine = double.engine()
    receipt = engine.consolidate(ConsolidateRequest(Reach.default()))
    expected = "scheduled" if double.hosted else "completed"
    assert receipt.to_json()["status"] == expected


def test_harness_engine_uses_test_timings(wire, make_double, caplog) -> None:
    double = make_double(wire)
    engine = double.engine(visibility=0.1)
    timing = engine.timing
    assert (timing.poll_interval, timing.read_backoff) == (0.005, 0.005)
    assert (timing.visibility, timing.settle) == (0.1, 0.1)
    with caplog.at_level(logging.DEBUG):
        engine.store(sample_items()[0])
    assert TEST_TOKEN not in caplog.text

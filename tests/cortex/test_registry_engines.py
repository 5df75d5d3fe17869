"""The registry builds both CortexDB engines (engine.md §3.2)."""

from __future__ import annotations

import pytest

from cortex_memory.config import EngineSettings, MemoryConfig
from cortex_memory.contract import ListRequest, MetaFilter
from cortex_memory.cortex import (
    CortexEngine,
    CortexWire,
    cortexdb_descriptor,
    tinyhumans_descriptor,
)
from cortex_memory.errors import ConfigError
from cortex_memory.registry import EngineCredential, build_engine, describe_engine, list_engines

KEY = "ctx_registry_canary_0b6d"


class Source:
    def bearer(self) -> str:
        return KEY


def test_listing_order_and_descriptors() -> None:
    engines = list_engines()
    assert [d.id for d in engines][:2] == ["cortexdb", "tinyhumans"]
    assert engines[0] == cortexdb_descriptor()
    assert engines[1] == tinyhumans_descriptor()
    assert describe_engine("tinyhumans") == tinyhumans_descriptor()


@pytest.mark.parametrize(
    ("engine_id", "wire", "origin"),
    [
        ("cortexdb", CortexWire.DIRECT, "https://api-v1.cortexdb.ai"),
        ("tinyhumans", CortexWire.TINYHUMANS, "https://api.tinyhumans.ai"),
    ],
)
def test_default_endpoints(engine_id: str, wire: CortexWire, origin: str) -> None:
    for settings in (EngineSettings(), EngineSettings(endpoint="   ")):
        engine = build_engine(engine_id, settings, EngineCredential.static(KEY))
        assert isinstance(engine, CortexEngine)
        assert engine.wire is wire
        assert repr(engine) == f"CortexEngine(wire={engine_id!r}, endpoint={origin!r})"
        engine.close()


def test_endpoint_setting_is_trimmed_and_used(direct, hosted) -> None:
    for double, engine_id in ((direct, "cortexdb"), (hosted, "tinyhumans")):
        for credential in (EngineCredential.static(KEY), EngineCredential.dynamic(Source())):
            settings = EngineSettings(endpoint=f"  {double.url}  ")
            engine = build_engine(engine_id, settings, credential)
            engine.list(ListRequest(MetaFilter(), 1))
            engine.close()
        assert set(double.state.seen.auth) == {f"Bearer {KEY}"}


@pytest.mark.parametrize("engine_id", ["cortexdb", "tinyhumans"])
def test_missing_credential_and_refused_endpoint_are_config_errors(engine_id: str) -> None:
    for credential in (EngineCredential.NONE, EngineCredential.static("  ")):
        with pytest.raises(ConfigError, match=engine_id):
            build_engine(engine_id, EngineSettings(), credential)
    with pytest.raises(ConfigError, match="https") as info:
        build_engine(
            engine_id,
            EngineSettings(endpoint="http://cortex.example.com"),
            EngineCredential.static(KEY),
        )
    assert KEY not in str(info.value)


def test_default_config_builds_the_hosted_engine() -> None:
    engine = MemoryConfig().build(EngineCredential.dynamic(Source()))
    assert isinstance(engine, CortexEngine)
    assert engine.wire is CortexWire.TINYHUMANS
    engine.close()

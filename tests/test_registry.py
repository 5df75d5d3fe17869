"""The engine registry: listing, building by id, and redacted credentials."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Optional

import pytest

from cortex_memory import registry
from cortex_memory.config import EngineSettings, MemoryConfig
from cortex_memory.contract import FetchMode, ListRequest, MetaFilter, StoreItem
from cortex_memory.cortex import CortexEngine, StaticBearer
from cortex_memory.errors import ConfigError
from cortex_memory.local import LocalEngine, local_descriptor
from cortex_memory.registry import CREDENTIAL_ENV, EngineCredential, build_engine, list_engines

CANARY = "ctx_canary_5e4d3c2b1a09"


class _Source:
    """A bearer source whose repr would leak the token if anything called it."""

    def bearer(self) -> str:
        return CANARY

    def __repr__(self) -> str:
        return f"_Source({CANARY})"


# ----------------------------------------------------------------- listing


def test_list_engines_orders_cortexdb_tinyhumans_local_and_lists_only_this_build() -> None:
    ids = [d.id for d in list_engines()]
    assert ids == list(registry.engine_ids())
    assert ids[-1] == "local"
    # The CortexDB engines join when they exist, always in this order before local.
    expected_order = [i for i in ("cortexdb", "tinyhumans", "local") if i in ids]
    assert ids == expected_order
    assert len(ids) == len(set(ids))


def test_local_descriptor_matches_decision_10() -> None:
    (local,) = [d for d in list_engines() if d.id == "local"]
    assert local == local_descriptor()
    assert local.to_json() == {
        "id": "local",
        "label": "Local (SQLite)",
        "description": local.description,
        "hosted": False,
        "needs_endpoint": False,
        "needs_key": False,
        "default_endpoint": None,
        "fetch_modes": ["keyword", "vector", "hybrid"],
        "consolidation": "on_demand",
    }
    assert registry.describe_engine("local") == local
    assert registry.LOCAL_ENGINE_ID == "local"


def test_registry_import_loads_no_engine_code() -> None:
    import subprocess
    import sys

    # Whatever the package root imports, the registry adds no engine module:
    # builders import their engine when called.
    code = (
        "import sys\n"
        "import cortex_memory\n"
        "before = set(sys.modules)\n"
        "import cortex_memory.registry, cortex_memory.config\n"
        "added = set(sys.modules) - before\n"
        "assert not [m for m in added if m.startswith('cortex_memory.local')], added\n"
        "assert 'urllib3' not in sys.modules\n"
        "print('lazy')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "lazy"


# ---------------------------------------------------------------- building


def test_build_local_in_memory_serves_the_contract() -> None:
    with build_engine("local", EngineSettings(path=":memory:"), EngineCredential.NONE) as engine:
        assert isinstance(engine, LocalEngine)
        receipt = engine.store(StoreItem.document("registry built me"))
        page = engine.list(ListRequest(MetaFilter(), 10))
        assert [hit.id for hit in page.items] == [receipt.id]
        assert engine.descriptor().supports(FetchMode.VECTOR)


def test_build_local_at_a_file_path(tmp_path: Path) -> None:
    db = tmp_path / "sub" / "m.sqlite3"
    with build_engine("local", EngineSettings(path=str(db))) as engine:
        engine.store(StoreItem.document("on disk"))
    assert db.exists()


def test_build_local_expands_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    with build_engine("local", EngineSettings(path="~/tilde.sqlite3")) as engine:
        engine.store(StoreItem.document("home"))
    assert (tmp_path / "tilde.sqlite3").exists()


@pytest.mark.parametrize("path", [None, "", "   "])
def test_build_local_without_a_path_uses_the_per_user_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str | None
) -> None:
    home = tmp_path / "cm-home"
    monkeypatch.setenv("CORTEX_MEMORY_HOME", str(home))
    with build_engine("local", EngineSettings(path=path)) as engine:
        engine.store(StoreItem.document("per user"))
    assert (home / "memory.sqlite3").exists()


@pytest.mark.parametrize(
    "credential",
    [
        EngineCredential.NONE,
        EngineCredential.static(CANARY),
        EngineCredential.dynamic(_Source()),
        None,
    ],
)
def test_local_accepts_and_ignores_any_credential_and_an_endpoint(
    credential: EngineCredential | None,
) -> None:
    settings = EngineSettings(endpoint="https://ignored.example", path=":memory:")
    with build_engine("local", settings, credential) as engine:
        assert engine.health().is_serving()
        assert CANARY not in repr(engine)


def test_defaults_build_local_with_no_settings(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_MEMORY_HOME", str(tmp_path))
    with build_engine("local") as engine:
        assert engine.descriptor().id == "local"


@pytest.mark.parametrize("engine_id", ["nope", "LOCAL", " local", "", "x" * 500, "a\nb"])
def test_unknown_ids_are_config_errors_naming_the_id(engine_id: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_engine(engine_id, EngineSettings(), EngineCredential.static(CANARY))
    message = caught.value.message
    assert message.startswith("unknown engine `")
    assert "this build offers" in message
    assert "`local`" in message
    assert CANARY not in str(caught.value)
    assert len(message) < 300
    assert "\n" not in message
    with pytest.raises(ConfigError):
        registry.describe_engine(engine_id)


class _CountingSource:
    """A bearer source counting how often it is asked (a hosted request asks first)."""

    def __init__(self) -> None:
        self.asked = 0

    def bearer(self) -> str:
        self.asked += 1
        return CANARY


def test_memory_config_default_build_is_tinyhumans_and_sends_nothing() -> None:
    with MemoryConfig().build(EngineCredential.static(CANARY)) as engine:
        assert isinstance(engine, CortexEngine)
        assert engine.descriptor().id == "tinyhumans"
        endpoint = "https://api.tinyhumans.ai"
        assert repr(engine) == f"CortexEngine(wire='tinyhumans', endpoint={endpoint!r})"
        assert CANARY not in repr(engine)
    # The hosted wire asks its source for the bearer before every request: a source
    # never asked means construction sent nothing.
    source = _CountingSource()
    with MemoryConfig().build(EngineCredential.dynamic(source)) as engine:
        assert engine.descriptor().id == "tinyhumans"
    assert source.asked == 0


@pytest.mark.parametrize(
    "credential", [None, EngineCredential.NONE, EngineCredential.static("   ")]
)
def test_memory_config_default_build_without_a_credential_names_tinyhumans(
    credential: Optional[EngineCredential],
) -> None:
    with pytest.raises(ConfigError, match="`tinyhumans`") as caught:
        MemoryConfig().build(credential)
    assert "credential" in caught.value.message
    for text in (str(caught.value), repr(caught.value)):
        assert CANARY not in text


def test_memory_config_builds_local() -> None:
    config = MemoryConfig.from_toml('engine = "local"\n[engines.local]\npath = ":memory:"\n')
    with config.build() as engine:
        assert isinstance(engine, LocalEngine)


def test_build_engine_argument_types() -> None:
    with pytest.raises(TypeError, match="engine_id"):
        build_engine(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="settings"):
        build_engine("local", {"path": ":memory:"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="credential"):
        build_engine("local", EngineSettings(), CANARY)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        registry.describe_engine(None)  # type: ignore[arg-type]


# --------------------------------------------------------------- credential


def test_credential_reprs_are_redacted() -> None:
    static = EngineCredential.static(CANARY)
    dynamic = EngineCredential.dynamic(_Source())
    assert repr(EngineCredential.NONE) == str(EngineCredential.NONE) == "EngineCredential.NONE"
    assert repr(static) == str(static) == "EngineCredential.Static(<redacted>)"
    assert repr(dynamic) == str(dynamic) == "EngineCredential.Dynamic(<source>)"
    for value in (static, dynamic):
        assert CANARY not in repr(value)
        assert CANARY not in f"{value}"
        assert CANARY not in repr([value, {"c": value}])


def test_credential_kinds_and_conversions() -> None:
    source = _Source()
    none, static, dynamic = (
        EngineCredential.NONE, EngineCredential.static(CANARY), EngineCredential.dynamic(source),
    )
    assert (none.kind, static.kind, dynamic.kind) == ("none", "static", "dynamic")
    assert none.is_none
    assert not static.is_none
    assert none.is_missing()
    assert not static.is_missing()
    assert not dynamic.is_missing()
    assert EngineCredential.static("  ").is_missing()
    assert dynamic.source is source
    assert static.source is None

    assert static.is_static
    assert not dynamic.is_static
    assert not none.is_static
    assert static.bearer() == CANARY
    assert dynamic.bearer() == CANARY
    with pytest.raises(ConfigError, match="holds no token"):
        none.bearer()

    bearer = static.bearer_source("tinyhumans")
    assert isinstance(bearer, StaticBearer)
    assert bearer.bearer() == CANARY
    assert dynamic.bearer_source("tinyhumans") is source


@pytest.mark.parametrize("credential", [EngineCredential.NONE, EngineCredential.static(" \t")])
def test_missing_credentials_are_config_errors_naming_the_engine(
    credential: EngineCredential,
) -> None:
    with pytest.raises(ConfigError, match="engine `cortexdb` needs a credential"):
        credential.bearer_source("cortexdb")
    with pytest.raises(ConfigError, match="engine `tinyhumans` needs a credential"):
        credential.bearer_source("tinyhumans")


def test_credentials_are_immutable_and_copyable() -> None:
    static = EngineCredential.static(CANARY)
    with pytest.raises(AttributeError):
        static._key = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        EngineCredential()
    assert copy.copy(EngineCredential.NONE) is EngineCredential.NONE
    assert pickle.loads(pickle.dumps(EngineCredential.NONE)) is EngineCredential.NONE
    clone = copy.deepcopy(static)
    assert clone.kind == "static"
    assert clone.bearer() == CANARY


def test_credential_argument_types() -> None:
    with pytest.raises(TypeError, match="must be a str"):
        EngineCredential.static(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="BearerSource"):
        EngineCredential.dynamic(object())  # type: ignore[arg-type]


def test_the_local_engine_takes_its_embedder_from_the_settings() -> None:
    from cortex_memory.local import NgramEmbedder

    with build_engine("local", EngineSettings(path=":memory:", embedder="ngram")) as engine:
        assert isinstance(engine.embedder, NgramEmbedder)  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="unknown embedder `fancy`"):
        build_engine("local", EngineSettings(path=":memory:", embedder="fancy"))


# ------------------------------------------------------------ proxy and TLS


@pytest.mark.parametrize("engine_id", ["cortexdb", "tinyhumans"])
def test_network_settings_reach_the_cortexdb_engines(
    engine_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    credential = EngineCredential.static(CANARY)
    endpoint = "https://cortex.example.com"

    def proxy_of(settings: EngineSettings) -> Optional[str]:
        engine = build_engine(engine_id, settings, credential)
        assert isinstance(engine, CortexEngine)
        engine.close()
        return engine.proxy

    assert proxy_of(EngineSettings(endpoint=endpoint)) is None
    assert proxy_of(EngineSettings(endpoint=endpoint, proxy="proxy.corp:3128")) == (
        "http://proxy.corp:3128"
    )
    monkeypatch.setenv("HTTPS_PROXY", "http://env.corp:8080")
    assert proxy_of(EngineSettings(endpoint=endpoint)) == "http://env.corp:8080"
    assert proxy_of(EngineSettings(endpoint=endpoint, proxy="")) is None
    # Blank TLS paths are unset, like a blank endpoint.
    assert proxy_of(EngineSettings(endpoint=endpoint, ca_certs=" ", client_cert="")) == (
        "http://env.corp:8080"
    )
    with pytest.raises(ConfigError, match="SOCKS"):
        build_engine(engine_id, EngineSettings(proxy="socks5://proxy.corp:1080"), credential)
    with pytest.raises(ConfigError, match="ca_certs cannot be read"):
        build_engine(
            engine_id, EngineSettings(endpoint=endpoint, ca_certs="/nonexistent/ca.pem"), credential
        )


def test_local_ignores_the_network_settings() -> None:
    settings = EngineSettings(
        path=":memory:", proxy="socks5://ignored:1", ca_certs="/nonexistent/ca.pem"
    )
    with build_engine("local", settings) as engine:
        assert engine.health().is_serving()


# ------------------------------------------------------------ from_env


def test_credential_env_names_the_documented_variables() -> None:
    assert dict(CREDENTIAL_ENV) == {
        "cortexdb": "CORTEX_MEMORY_API_KEY",
        "tinyhumans": "CORTEX_MEMORY_TINYHUMANS_TOKEN",
    }
    assert list(CREDENTIAL_ENV) == ["cortexdb", "tinyhumans"]  # the CLI's picking order
    with pytest.raises(TypeError):
        CREDENTIAL_ENV["local"] = "X"  # type: ignore[index]


@pytest.mark.parametrize(
    ("engine_id", "variable"),
    [("cortexdb", "CORTEX_MEMORY_API_KEY"), ("tinyhumans", "CORTEX_MEMORY_TINYHUMANS_TOKEN")],
)
def test_from_env_reads_each_engines_variable(
    engine_id: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = "CORTEX_MEMORY_TINYHUMANS_TOKEN" if engine_id == "cortexdb" else "CORTEX_MEMORY_API_KEY"
    credential = EngineCredential.from_env(engine_id, {variable: CANARY, other: "wrong"})
    assert credential.kind == "static"
    assert credential.bearer_source(engine_id).bearer() == CANARY
    assert CANARY not in repr(credential)
    # Without env, the process environment is read.
    monkeypatch.setenv(variable, CANARY)
    assert EngineCredential.from_env(engine_id).bearer_source(engine_id).bearer() == CANARY
    monkeypatch.delenv(variable)
    assert EngineCredential.from_env(engine_id) is EngineCredential.NONE


@pytest.mark.parametrize("value", [None, "", "   ", "\t\n"])
def test_from_env_without_a_value_is_none_and_building_says_so(value: Optional[str]) -> None:
    env = {} if value is None else {"CORTEX_MEMORY_API_KEY": value}
    credential = EngineCredential.from_env("cortexdb", env)
    assert credential is EngineCredential.NONE
    with pytest.raises(ConfigError, match="engine `cortexdb` needs a credential"):
        build_engine("cortexdb", EngineSettings(), credential)


def test_from_env_for_local_is_none_and_for_an_unknown_id_a_config_error() -> None:
    env = {"CORTEX_MEMORY_API_KEY": CANARY, "CORTEX_MEMORY_TINYHUMANS_TOKEN": CANARY}
    assert EngineCredential.from_env("local", env) is EngineCredential.NONE
    with pytest.raises(ConfigError, match="unknown engine `cortex`") as caught:
        EngineCredential.from_env("cortex", env)
    assert CANARY not in str(caught.value)
    with pytest.raises(TypeError, match="engine_id must be a str"):
        EngineCredential.from_env(None)  # type: ignore[arg-type]


def test_from_env_builds_a_working_engine_on_the_double() -> None:
    from cortex_memory.testing import DirectDouble

    with DirectDouble(accept_token=CANARY) as double:
        credential = EngineCredential.from_env("cortexdb", {"CORTEX_MEMORY_API_KEY": CANARY})
        with build_engine("cortexdb", EngineSettings(endpoint=double.url), credential) as engine:
            assert engine.health().state.value == "ok"

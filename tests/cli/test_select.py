"""How the CLI picks its engine: flags > config file > credential > local fallback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest

from cortex_memory import paths, registry
from cortex_memory.config import EngineSettings
from cortex_memory.contract import Consolidation, EngineDescriptor, FetchMode, MemoryEngine
from cortex_memory.contract.conformance import ReferenceEngine
from cortex_memory.registry import EngineCredential
from cortex_memory.testing import HostedDouble

Runner = Callable[..., Any]  # the `cli` fixture of conftest.py

CANARY = "ctx_canary_00aa11bb22cc"
FALLBACK = "no config file and no credential in the environment; using the local engine at"


def _db(env: Dict[str, str]) -> Path:
    return Path(env["CORTEX_MEMORY_HOME"]) / "memory.sqlite3"


# ------------------------------------------------------------ local fallback


def test_no_config_and_no_credential_falls_back_to_local_with_one_note(
    cli: Runner, env: Dict[str, str]
) -> None:
    result = cli("store", "a note")
    assert result.status == 0
    assert result.out.startswith("created ")
    notes = result.err.strip().splitlines()
    assert notes == [f"cortex-memory: {FALLBACK} {_db(env)}"]
    assert _db(env).exists()
    # The note never reaches stdout, so --json output stays parseable.
    listed = cli("list", "--json")
    assert json.loads(listed.out)["items"][0]["text"] == "a note"
    assert FALLBACK in listed.err


def test_fallback_uses_the_xdg_data_folder_without_cortex_memory_home(
    cli: Runner, env: Dict[str, str]
) -> None:
    del env["CORTEX_MEMORY_HOME"]
    result = cli("store", "xdg")
    assert result.status == 0
    expected = paths.default_database_path(env)
    assert str(expected) in result.err
    assert expected.exists()


@pytest.mark.parametrize("flags", [["--engine", "local"], ["--path", "DB"]])
def test_explicit_local_says_nothing(
    cli: Runner, tmp_path: Path, flags: List[str]
) -> None:
    flags = [str(tmp_path / "x.sqlite3") if f == "DB" else f for f in flags]
    result = cli("store", "quiet", *flags)
    assert result.status == 0
    assert result.err == ""


def test_path_flag_opens_that_database(cli: Runner, tmp_path: Path, env: Dict[str, str]) -> None:
    db = tmp_path / "elsewhere.sqlite3"
    assert cli("--path", str(db), "store", "kept here").status == 0
    assert db.exists()
    assert not _db(env).exists()
    listed = cli("list", "--path", str(db), "--json")
    assert [i["text"] for i in json.loads(listed.out)["items"]] == ["kept here"]


# --------------------------------------------------------------- config file


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_config_from_the_environment_variable(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "from-config.sqlite3"
    config = _write(
        tmp_path / "cfg.toml", f'engine = "local"\n[engines.local]\npath = {json.dumps(str(db))}\n'
    )
    env["CORTEX_MEMORY_CONFIG"] = str(config)
    result = cli("store", "configured")
    assert result.status == 0
    assert result.err == ""
    assert db.exists()


def test_config_flag_beats_the_environment_variable(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    env["CORTEX_MEMORY_CONFIG"] = str(_write(tmp_path / "env.toml", 'engine = "nope"\n'))
    flag = _write(tmp_path / "flag.json", json.dumps(
        {"engine": "local", "engines": {"local": {"path": "flag.sqlite3"}}}
    ))
    result = cli("store", "via flag", "--config", str(flag))
    assert result.status == 0, result.err
    # A relative path in a file is read from the file's folder.
    assert (tmp_path / "flag.sqlite3").exists()


def test_default_config_file_is_read_when_it_exists(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    del env["CORTEX_MEMORY_HOME"]
    db = tmp_path / "default-config.sqlite3"
    _write(
        paths.default_config_path(env),
        f'engine = "local"\n[engines.local]\npath = {json.dumps(str(db))}\n',
    )
    result = cli("store", "default config")
    assert (result.status, result.err) == (0, "")
    assert db.exists()


def test_flags_beat_the_config_file(cli: Runner, env: Dict[str, str], tmp_path: Path) -> None:
    env["CORTEX_MEMORY_CONFIG"] = str(_write(tmp_path / "c.toml", 'engine = "nope"\n'))
    db = tmp_path / "flag.sqlite3"
    assert cli("store", "x", "--path", str(db)).status == 0
    assert cli("store", "y", "--engine", "local").status == 0


def test_a_config_selecting_the_default_engine_uses_tinyhumans(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    env["CORTEX_MEMORY_CONFIG"] = str(_write(tmp_path / "c.toml", "# defaults only\n"))
    missing = cli("list")
    assert missing.status == 3
    assert missing.err.startswith("cortex-memory: configuration error: engine `tinyhumans`")
    assert "set CORTEX_MEMORY_TINYHUMANS_TOKEN in the environment" in missing.err
    assert "Traceback" not in missing.err
    assert missing.out == ""
    env["CORTEX_MEMORY_TINYHUMANS_TOKEN"] = CANARY
    with HostedDouble(rate_limit_requests=None) as double:
        listed = cli("list", "--json", "--endpoint", double.url)
        assert listed.status == 0, listed.err
        assert json.loads(listed.out)["items"] == []
        assert double.state.requests()
        assert all(line.startswith("GET /memory/") for line in double.state.requests())
    assert CANARY not in listed.out + listed.err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("engine = 5\n", "engine must be a string"),
        ("engine = \n", "not valid TOML"),
    ],
)
def test_bad_config_files_exit_3_naming_the_file(
    cli: Runner, env: Dict[str, str], tmp_path: Path, text: str, message: str
) -> None:
    config = _write(tmp_path / "bad.toml", text)
    result = cli("list", "--config", str(config))
    assert result.status == 3
    assert message in result.err
    assert str(config) in result.err


def test_a_named_config_file_must_exist(cli: Runner, env: Dict[str, str], tmp_path: Path) -> None:
    env["CORTEX_MEMORY_CONFIG"] = str(tmp_path / "missing.toml")
    result = cli("list")
    assert result.status == 3
    assert "no such file" in result.err


def test_credential_looking_config_fields_warn_without_their_value(
    cli: Runner, env: Dict[str, str], tmp_path: Path
) -> None:
    config = _write(
        tmp_path / "c.toml",
        f'engine = "local"\napi_key = "{CANARY}"\n[engines.local]\ntoken = "{CANARY}"\n',
    )
    result = cli("store", "warned", "--config", str(config))
    assert result.status == 0
    assert "cortex-memory: warning:" in result.err
    assert "`api_key`" in result.err
    assert "`engines.local.token`" in result.err
    assert CANARY not in result.err + result.out


# ----------------------------------------------------------- usage mistakes


def test_endpoint_is_refused_for_the_local_engine(cli: Runner) -> None:
    result = cli("list", "--engine", "local", "--endpoint", "https://x.example")
    assert result.status == 2
    assert "--endpoint is for the CortexDB engines" in result.err


def test_path_is_refused_for_another_engine(cli: Runner) -> None:
    result = cli("list", "--engine", "cortexdb", "--path", "x.sqlite3")
    assert result.status == 2
    assert "--path is for the local engine" in result.err


def test_unknown_engine_exits_3(cli: Runner) -> None:
    result = cli("--engine", "nope", "list")
    assert result.status == 3
    assert "unknown engine `nope`" in result.err
    assert "Traceback" not in result.err


# ------------------------------------- CortexDB engines, through the registry


class _FakeCortex:
    """A stand-in registration for `cortexdb`: records what the CLI passed to the registry."""

    def __init__(self) -> None:
        self.calls: List[Tuple[EngineSettings, EngineCredential]] = []
        self.engine = ReferenceEngine(Consolidation.ON_DEMAND)

    def describe(self) -> EngineDescriptor:
        return EngineDescriptor(
            "cortexdb", "CortexDB", "a stand-in for the test", needs_key=True,
            default_endpoint="https://api-v1.cortexdb.ai", fetch_modes=(FetchMode.HYBRID,),
        )

    def build(self, settings: EngineSettings, credential: EngineCredential) -> MemoryEngine:
        self.calls.append((settings, credential))
        return self.engine


@pytest.fixture
def fake_cortex(monkeypatch: pytest.MonkeyPatch) -> _FakeCortex:
    fake = _FakeCortex()
    others = tuple(r for r in registry._REGISTRY if r.id != "cortexdb")
    entry = registry._Registration("cortexdb", fake.describe, fake.build)
    monkeypatch.setattr(registry, "_REGISTRY", (entry, *others))
    return fake


def test_api_key_in_the_environment_selects_cortexdb(
    cli: Runner, env: Dict[str, str], fake_cortex: _FakeCortex
) -> None:
    env["CORTEX_MEMORY_API_KEY"] = CANARY
    result = cli("store", "to cortex")
    assert result.status == 0, result.err
    assert result.err == ""
    ((settings, credential),) = fake_cortex.calls
    assert settings == EngineSettings()
    assert credential.kind == "static"
    assert credential.bearer() == CANARY
    assert CANARY not in result.out + result.err


def test_endpoint_flag_and_config_reach_the_builder(
    cli: Runner, env: Dict[str, str], tmp_path: Path, fake_cortex: _FakeCortex
) -> None:
    env["CORTEX_MEMORY_API_KEY"] = CANARY
    config = _write(
        tmp_path / "c.toml", 'engine = "cortexdb"\n[engines.cortexdb]\nendpoint = "https://a.example"\n'
    )
    assert cli("list", "--config", str(config)).status == 0
    assert cli("list", "--config", str(config), "--endpoint", "https://b.example").status == 0
    assert [s.endpoint for s, _ in fake_cortex.calls] == ["https://a.example", "https://b.example"]


def test_a_missing_key_names_the_variable_and_builds_nothing(
    cli: Runner, env: Dict[str, str], fake_cortex: _FakeCortex
) -> None:
    env["CORTEX_MEMORY_API_KEY"] = "   "
    result = cli("--engine", "cortexdb", "list")
    assert result.status == 3
    assert "set CORTEX_MEMORY_API_KEY in the environment" in result.err
    assert fake_cortex.calls == []


def test_a_tinyhumans_token_in_the_environment_selects_tinyhumans(
    cli: Runner, env: Dict[str, str]
) -> None:
    env["CORTEX_MEMORY_TINYHUMANS_TOKEN"] = CANARY
    with HostedDouble(rate_limit_requests=None) as double:
        health = cli("health", "--endpoint", double.url)
        assert health.status == 0, health.err
        stored = cli("store", "to the hosted engine", "--endpoint", double.url)
        assert stored.status == 0, stored.err
        listed = cli("list", "--json", "--endpoint", double.url)
        assert listed.status == 0, listed.err
        lines = double.state.requests()
        bearers = set(double.state.seen.auth)
    assert [item["text"] for item in json.loads(listed.out)["items"]] == ["to the hosted engine"]
    assert lines[0] == "GET /memory/scopes?prefix=tmh%3Aprobe&limit=1"  # the hosted health probe
    assert "POST /memory/experience" in lines
    assert not any("/v1/" in line for line in lines)
    assert bearers == {f"Bearer {CANARY}"}
    # No fallback note, no local database, no token in any output.
    assert FALLBACK not in health.err + stored.err + listed.err
    assert not _db(env).exists()
    assert CANARY not in health.out + health.err + stored.out + stored.err + listed.out + listed.err


def test_the_cortexdb_key_wins_over_the_tinyhumans_token(
    cli: Runner, env: Dict[str, str], fake_cortex: _FakeCortex
) -> None:
    env["CORTEX_MEMORY_TINYHUMANS_TOKEN"] = "tiny_" + CANARY
    env["CORTEX_MEMORY_API_KEY"] = CANARY
    assert cli("list").status == 0
    ((_, credential),) = fake_cortex.calls
    assert credential.bearer() == CANARY

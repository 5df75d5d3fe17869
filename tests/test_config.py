"""MemoryConfig and EngineSettings: TOML and JSON loading, validation, immutability."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory import _config_text as config_text
from cortex_memory.config import (
    DEFAULT_ENGINE,
    ConfigWarning,
    EngineSettings,
    MemoryConfig,
)
from cortex_memory.errors import ConfigError

SEED_TOML = """
engine = "cortexdb"

[engines.cortexdb]
endpoint = "https://cortex.example.com"

# An engine with no entry uses its defaults; an empty table is fine too.
[engines.tinyhumans]
"""

SEED_JSON = """
{ "engine": "cortexdb",
  "engines": { "cortexdb": { "endpoint": "https://cortex.example.com" } } }
"""

CANARY = "ctx_canary_9f8e7d6c5b4a"


class _BytesPath:
    """A path-like object whose path is bytes."""

    def __fspath__(self) -> bytes:
        return b"memory.sqlite3"


def test_default_config_selects_tinyhumans_with_no_settings() -> None:
    config = MemoryConfig()
    assert DEFAULT_ENGINE == "tinyhumans"
    assert config.engine == "tinyhumans"
    assert dict(config.engines) == {}
    assert config.settings() == EngineSettings()


def test_seed_toml_and_json_read_the_same() -> None:
    from_toml = MemoryConfig.from_toml(SEED_TOML)
    from_json = MemoryConfig.from_json(SEED_JSON)
    assert from_toml.engine == from_json.engine == "cortexdb"
    assert from_toml.settings() == EngineSettings(endpoint="https://cortex.example.com")
    assert from_toml.settings() == from_json.settings()
    # The empty table is kept as default settings.
    assert from_toml.engines["tinyhumans"] == EngineSettings()
    assert from_toml.settings("tinyhumans") == EngineSettings()
    assert from_toml.settings("local") == EngineSettings()


def test_empty_documents_are_the_default_config() -> None:
    assert MemoryConfig.from_toml("") == MemoryConfig()
    assert MemoryConfig.from_json("{}") == MemoryConfig()
    assert MemoryConfig.from_dict({"engines": None}) == MemoryConfig()


def test_local_path_setting() -> None:
    config = MemoryConfig.from_toml('engine = "local"\n[engines.local]\npath = ":memory:"\n')
    assert config.settings() == EngineSettings(path=":memory:")


def test_unknown_fields_are_read_past_at_every_level_with_a_warning() -> None:
    text = """
    engine = "local"
    theme = "dark"
    future = { nested = [1, 2, 3] }

    [engines.local]
    path = "/tmp/m.sqlite3"
    pool_size = 4

    [engines.someday]
    endpoint = "https://someday.example"
    colour = "blue"

    [ui]
    width = 80
    """
    with pytest.warns(ConfigWarning) as record:
        config = MemoryConfig.from_toml(text)
    assert config.engine == "local"
    assert config.settings() == EngineSettings(path="/tmp/m.sqlite3")
    assert config.settings("someday") == EngineSettings(endpoint="https://someday.example")
    messages = [str(w.message) for w in record]
    assert messages == [
        "field `theme` is unknown and ignored",
        "field `future` is unknown and ignored",
        "field `ui` is unknown and ignored",
        "field `engines.local.pool_size` is unknown and ignored",
        "table `engines.someday` names no engine this build offers "
        "(`cortexdb`, `tinyhumans`, `local`); no engine reads it",
        "field `engines.someday.colour` is unknown and ignored",
    ]
    with pytest.warns(ConfigWarning):
        same = MemoryConfig.from_json(
            json.dumps({"engine": "local", "x": 1,
                        "engines": {"local": {"path": "/tmp/m.sqlite3", "y": [1]}}})
        )
    assert same.settings() == config.settings()


def test_a_misspelt_table_or_key_is_named_with_a_suggestion_never_its_value(
    tmp_path: pathlib.Path,
) -> None:
    file = tmp_path / "config.toml"
    file.write_text(
        'engine = "local"\n'
        f'[engnes.local]\npath = "{CANARY}.sqlite3"\n'
        f'[engines.locl]\npath = "{CANARY}.sqlite3"\n'
        f'[engines.local]\npaht = "{CANARY}.sqlite3"\nembeder = "semantic"\n',
        encoding="utf-8",
    )
    with pytest.warns(ConfigWarning) as record:
        config = MemoryConfig.load(file)
    assert config.settings() == EngineSettings()
    messages = [str(w.message) for w in record]
    where = f"config file {file}: "
    assert messages == [
        where + "field `engnes` is unknown and ignored; did you mean `engines`?",
        where + "table `engines.locl` names no engine this build offers "
        "(`cortexdb`, `tinyhumans`, `local`); no engine reads it; did you mean `local`?",
        where + "field `engines.local.paht` is unknown and ignored; did you mean `path`?",
        where + "field `engines.local.embeder` is unknown and ignored; did you mean `embedder`?",
    ]
    assert all(CANARY not in m for m in messages)
    assert all(w.filename == __file__ for w in record)


def test_odd_field_names_are_shown_safely() -> None:
    long_name = "x" * 500
    with pytest.warns(ConfigWarning) as record:
        MemoryConfig.from_dict({"bell\x07": 1, long_name: 2, 7: 3, "lone\ud800": 4})
    messages = [str(w.message) for w in record]
    assert messages[0] == "field `bell\\x07` is unknown and ignored"
    assert messages[1] == f"field `{'x' * 64}…` is unknown and ignored"
    assert messages[2] == "field `7` is unknown and ignored"
    assert messages[3] == "field `lone\\ud800` is unknown and ignored"
    for message in messages:
        message.encode("utf-8")  # printable anywhere


def test_known_fields_of_another_engine_do_not_warn() -> None:
    # A host's form may keep an endpoint in the local table while the user switches.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = MemoryConfig.from_dict(
            {"engines": {"local": {"endpoint": "https://x.example", "path": ":memory:"},
                         "cortexdb": {"path": "p", "embedder": "ngram"}}}
        )
    assert config.settings("local").path == ":memory:"


WRONG_TYPES = [
    ({"engine": 3}, "engine must be a string, not an integer"),
    ({"engine": True}, "engine must be a string, not a boolean"),
    ({"engine": ["local"]}, "engine must be a string, not an array"),
    ({"engine": "  "}, "engine must not be blank"),
    ({"engines": 3}, "engines must be a table, not an integer"),
    ({"engines": ["local"]}, "engines must be a table, not an array"),
    ({"engines": {"local": "x"}}, "engines.local must be a table, not a string"),
    ({"engines": {"local": {"path": 5}}}, "engines.local.path must be a string, not an integer"),
    ({"engines": {"cortexdb": {"endpoint": 1.5}}},
     "engines.cortexdb.endpoint must be a string, not a number"),
    ({"engines": {"cortexdb": {"endpoint": {"a": 1}}}},
     "engines.cortexdb.endpoint must be a string, not a table"),
]


@pytest.mark.parametrize(("data", "message"), WRONG_TYPES)
def test_wrong_types_are_refused_naming_the_field(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        MemoryConfig.from_dict(data)
    assert caught.value.message == message
    # The same through the JSON text loader.
    with pytest.raises(ConfigError) as again:
        MemoryConfig.from_json(json.dumps(data))
    assert again.value.message == message


def test_wrong_types_in_toml_name_the_field() -> None:
    with pytest.raises(ConfigError, match=r"^configuration error: engine must be a string"):
        MemoryConfig.from_toml("engine = 2025-01-01")
    with pytest.raises(ConfigError, match=r"engines\.local\.path must be a string, not an array"):
        MemoryConfig.from_toml("[engines.local]\npath = [1]\n")


@pytest.mark.parametrize(
    ("text", "loader"),
    [("engine = ", "toml"), ("[engines", "toml"), ("{", "json"), ("[1, 2", "json")],
)
def test_syntax_errors_are_config_errors(text: str, loader: str) -> None:
    load = MemoryConfig.from_toml if loader == "toml" else MemoryConfig.from_json
    with pytest.raises(ConfigError, match=f"not valid {loader.upper()}"):
        load(text)


@pytest.mark.parametrize("value", ["[1]", "3", '"local"', "null"])
def test_a_json_document_must_be_a_table(value: str) -> None:
    with pytest.raises(ConfigError, match="the config must be a table"):
        MemoryConfig.from_json(value)


def test_deep_nesting_is_a_config_error_not_a_crash() -> None:
    with pytest.raises(ConfigError):
        MemoryConfig.from_json("[" * 100_000)


@pytest.mark.parametrize(
    ("field", "where"),
    [
        ("api_key", "top"), ("API-Key", "top"), ("token", "top"),
        ("tinyhumans_token", "top"), ("password", "top"), ("secret", "top"),
        ("key", "engine"), ("bearer", "engine"), ("access_token", "engine"),
        ("credentials", "engine"),
    ],
)
def test_credential_looking_fields_are_ignored_with_a_warning(field: str, where: str) -> None:
    data: dict[str, Any] = {"engine": "cortexdb", "engines": {"cortexdb": {}}}
    if where == "top":
        data[field] = CANARY
        expected = field
    else:
        data["engines"]["cortexdb"][field] = CANARY
        expected = f"engines.cortexdb.{field}"
    with pytest.warns(ConfigWarning) as record:
        config = MemoryConfig.from_dict(data)
    messages = [str(w.message) for w in record]
    assert any(f"`{expected}`" in m for m in messages)
    assert all(CANARY not in m for m in messages)
    # Nothing of it is kept anywhere in the config.
    assert CANARY not in repr(config)
    assert CANARY not in json.dumps(config.to_dict())


def test_look_alike_fields_are_unknown_not_credentials() -> None:
    with pytest.warns(ConfigWarning) as record:
        MemoryConfig.from_dict({"max_tokens": 5, "keyboard": "us", "engines": {"x": {"monkey": 1}}})
    messages = [str(w.message) for w in record]
    assert "field `max_tokens` is unknown and ignored" in messages
    assert "field `engines.x.monkey` is unknown and ignored" in messages
    assert not any("credential" in m for m in messages)


def test_warning_points_at_the_callers_line() -> None:
    with pytest.warns(ConfigWarning) as record:
        MemoryConfig.from_toml('token = "x"')
    assert record[0].filename == __file__


# ------------------------------------------------------------------ files


def test_load_picks_the_format_from_the_suffix(tmp_path: pathlib.Path) -> None:
    toml_file = tmp_path / "config.toml"
    toml_file.write_text(SEED_TOML, encoding="utf-8")
    json_file = tmp_path / "config.JSON"
    json_file.write_text(SEED_JSON, encoding="utf-8")
    other = tmp_path / "config.conf"
    other.write_text(SEED_JSON, encoding="utf-8")
    assert MemoryConfig.load(toml_file).settings() == MemoryConfig.load(json_file).settings()
    assert MemoryConfig.load(str(other), format="json").engine == "cortexdb"
    with pytest.raises(ConfigError, match="not valid TOML"):
        MemoryConfig.load(other)
    with pytest.raises(ConfigError, match="unknown config format `yaml`"):
        MemoryConfig.load(other, format="yaml")


def test_load_accepts_a_byte_order_mark(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "c.toml"
    file.write_bytes(b"\xef\xbb\xbfengine = 'local'\n")
    assert MemoryConfig.load(file).engine == "local"


def test_load_failures_name_the_file(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigError, match="no such file") as caught:
        MemoryConfig.load(missing)
    assert str(missing) in caught.value.message
    with pytest.raises(ConfigError, match="is a folder"):
        MemoryConfig.load(tmp_path)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"engine = '\xff\xfe'")
    with pytest.raises(ConfigError, match="not UTF-8"):
        MemoryConfig.load(binary)
    bad = tmp_path / "bad.toml"
    bad.write_text("engine = 5\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: engine must be a string"):
        MemoryConfig.load(bad)


def test_load_refuses_a_huge_file(tmp_path: pathlib.Path) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (1024 * 1024 + 10))
    with pytest.raises(ConfigError, match="larger than"):
        MemoryConfig.load(big)


def test_relative_paths_in_a_file_are_read_from_its_folder(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "sub" / "config.toml"
    file.parent.mkdir()
    file.write_text(
        '[engines.local]\npath = "data/memory.sqlite3"\n'
        '[engines.mem]\npath = ":memory:"\n'
        '[engines.home]\npath = "~/m.sqlite3"\n'
        f'[engines.abs]\npath = {json.dumps(str(tmp_path / "abs.sqlite3"))}\n'
    )
    with pytest.warns(ConfigWarning, match="names no engine this build offers"):
        config = MemoryConfig.load(file)
    assert config.settings("local").path == str(file.parent / "data" / "memory.sqlite3")
    assert config.settings("mem").path == ":memory:"
    assert config.settings("home").path == "~/m.sqlite3"
    assert config.settings("abs").path == str(tmp_path / "abs.sqlite3")
    # From a string there is no folder to resolve against: kept as written.
    text = MemoryConfig.from_toml('[engines.local]\npath = "data/memory.sqlite3"\n')
    assert text.settings("local").path == "data/memory.sqlite3"


def test_the_toml_parser_matches_the_python_version() -> None:
    # tomllib from 3.11; the tomli dependency below (exercised by the 3.9 run).
    expected = "tomllib" if sys.version_info >= (3, 11) else "tomli"
    assert config_text.toml.__name__ == expected
    assert MemoryConfig.from_toml('engine = "local"').engine == "local"


# --------------------------------------------------------- EngineSettings


def test_engine_settings_types() -> None:
    with pytest.raises(TypeError, match=r"EngineSettings\.endpoint"):
        EngineSettings(endpoint=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"EngineSettings\.path"):
        EngineSettings(path=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bytes"):
        EngineSettings(path=_BytesPath())  # type: ignore[arg-type]


def test_engine_settings_accepts_a_path_like_and_keeps_a_str(tmp_path: pathlib.Path) -> None:
    settings = EngineSettings(path=tmp_path / "m.sqlite3")  # type: ignore[arg-type]
    assert settings.path == str(tmp_path / "m.sqlite3")
    assert isinstance(settings.path, str)


@pytest.mark.parametrize(
    "endpoint",
    [
        f"https://user:{CANARY}@cortex.example.com",
        f"https://{CANARY}@cortex.example.com/",
        f"http://:{CANARY}@127.0.0.1:8080",
    ],
)
def test_an_endpoint_carrying_a_credential_is_refused_without_echoing_it(endpoint: str) -> None:
    with pytest.raises(ConfigError, match=r"EngineSettings\.endpoint must not carry") as caught:
        EngineSettings(endpoint=endpoint)
    assert CANARY not in str(caught.value)
    assert CANARY not in repr(caught.value)
    with pytest.raises(ConfigError) as from_file:
        MemoryConfig.from_dict({"engines": {"cortexdb": {"endpoint": endpoint}}})
    assert from_file.value.message.startswith("engines.cortexdb.endpoint must not carry")
    assert CANARY not in str(from_file.value)


def test_endpoint_and_path_value_rules() -> None:
    with pytest.raises(ConfigError, match=r"endpoint must not contain control characters"):
        EngineSettings(endpoint="https://x.example\r\nHost: evil")
    with pytest.raises(ConfigError, match=r"path must not contain a NUL"):
        EngineSettings(path="a\x00b")
    # Not a URL at all is the engine's business, not the settings'.
    assert EngineSettings(endpoint="not a url").endpoint == "not a url"
    assert EngineSettings(endpoint="http://[::1").endpoint == "http://[::1"
    # An "@" after the host is part of the path, not a credential.
    assert EngineSettings(endpoint="https://x.example/a@b").endpoint == "https://x.example/a@b"


# ------------------------------------------------------------- MemoryConfig


def test_memory_config_is_frozen_and_its_engines_read_only() -> None:
    source = {"local": EngineSettings(path=":memory:")}
    config = MemoryConfig("local", source)
    source["local"] = EngineSettings(path="/elsewhere")
    assert config.settings().path == ":memory:"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.engine = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.engines["local"] = EngineSettings()  # type: ignore[index]


def test_memory_config_equality_hash_and_repr() -> None:
    a = MemoryConfig("local", {"local": EngineSettings(path=":memory:")})
    b = MemoryConfig.from_toml('engine = "local"\n[engines.local]\npath = ":memory:"\n')
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, MemoryConfig()}) == 2
    assert repr(a) == (
        "MemoryConfig(engine='local', engines={'local': "
        "EngineSettings(endpoint=None, path=':memory:', embedder=None, proxy=None, "
        "ca_certs=None, client_cert=None, client_key=None)})"
    )


def test_memory_config_construction_checks() -> None:
    with pytest.raises(TypeError, match=r"MemoryConfig\.engine"):
        MemoryConfig(5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="engine must not be blank"):
        MemoryConfig("")
    with pytest.raises(TypeError, match=r"MemoryConfig\.engines must be a mapping"):
        MemoryConfig("local", [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="EngineSettings"):
        MemoryConfig("local", {"local": {"path": "x"}})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="keys"):
        MemoryConfig("local", {1: EngineSettings()})  # type: ignore[dict-item]


def test_builders_and_round_trip() -> None:
    config = MemoryConfig().with_engine("local").with_settings(
        "local", EngineSettings(path=":memory:")
    )
    assert config.engine == "local"
    assert config.settings() == EngineSettings(path=":memory:")
    assert MemoryConfig().engines == {}
    data = config.to_dict()
    assert data == {"engine": "local", "engines": {"local": {"path": ":memory:"}}}
    assert MemoryConfig.from_dict(data) == config
    assert MemoryConfig.from_json(json.dumps(data)) == config


# ---------------------------------------------------------------- fuzzing

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
_config_like = st.fixed_dictionaries(
    {},
    optional={
        "engine": _json | st.sampled_from(["local", "cortexdb", ""]),
        "engines": _json | st.dictionaries(
            st.sampled_from(["local", "cortexdb", "x"]),
            _json | st.fixed_dictionaries(
                {}, optional={"endpoint": _json | st.text(), "path": _json | st.text()}
            ),
            max_size=3,
        ),
        "api_key": st.text(),
    },
)


@settings(max_examples=300, deadline=None)
@given(_config_like | _json)
def test_any_json_value_gives_a_config_or_a_config_error(data: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        try:
            config = MemoryConfig.from_json(json.dumps(data))
        except ConfigError:
            return
        assert isinstance(config, MemoryConfig)
        assert MemoryConfig.from_dict(config.to_dict()) == config


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_toml_text_gives_a_config_or_a_config_error(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        try:
            config = MemoryConfig.from_toml(text)
        except ConfigError:
            return
    assert isinstance(config, MemoryConfig)


def test_loaders_take_text() -> None:
    with pytest.raises(TypeError, match="TOML text must be a str"):
        MemoryConfig.from_toml(b'engine = "local"')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="JSON text must be a str"):
        MemoryConfig.from_json(b"{}")  # type: ignore[arg-type]


def test_the_local_embedder_setting() -> None:
    config = MemoryConfig.from_toml(
        'engine = "local"\n[engines.local]\npath = ":memory:"\nembedder = "ngram"\n'
    )
    assert config.engines["local"].embedder == "ngram"
    assert config.engines["local"].to_dict() == {"path": ":memory:", "embedder": "ngram"}
    with pytest.raises(ConfigError, match=r"engines\.local\.embedder must be a string"):
        MemoryConfig.from_toml("[engines.local]\nembedder = 3\n")
    with pytest.raises(ConfigError, match="embedder must be a name"):
        MemoryConfig.from_toml('[engines.local]\nembedder = " "\n')
    with pytest.raises(TypeError):
        EngineSettings(embedder=3)  # type: ignore[arg-type]


# ------------------------------------------------------- proxy and TLS files


def test_network_settings_load_and_round_trip(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "conf" / "config.toml"
    file.parent.mkdir()
    file.write_text(
        'engine = "cortexdb"\n[engines.cortexdb]\n'
        'endpoint = "https://cortex.example.com"\nproxy = "http://proxy.corp:3128"\n'
        'ca_certs = "certs/ca.pem"\nclient_cert = "~/me.pem"\n'
        f"client_key = {json.dumps(str(tmp_path / 'me.key'))}\n"
        '[engines.tinyhumans]\nproxy = ""\n'
    )
    config = MemoryConfig.load(file)
    direct = config.settings("cortexdb")
    assert direct.proxy == "http://proxy.corp:3128"
    # Relative file paths are read from the file's folder, like a database path.
    assert direct.ca_certs == str(file.parent / "certs" / "ca.pem")
    assert direct.client_cert == "~/me.pem"
    assert direct.client_key == str(tmp_path / "me.key")
    assert config.settings("tinyhumans").proxy == ""
    again = MemoryConfig.from_dict(config.to_dict())
    assert again == config
    assert config.to_dict()["engines"]["tinyhumans"] == {"proxy": ""}
    assert MemoryConfig.from_json(json.dumps(config.to_dict())) == config


@pytest.mark.parametrize(
    "proxy",
    [
        f"http://ada:{CANARY}@proxy.corp:3128",
        f"http://{CANARY}@proxy.corp:3128",
        f"ada:{CANARY}@proxy.corp:3128",
        f"https://:{CANARY}@127.0.0.1:3129/",
    ],
)
def test_a_proxy_carrying_credentials_is_refused_naming_the_field(proxy: str) -> None:
    with pytest.raises(ConfigError) as from_file:
        MemoryConfig.from_toml(f'[engines.cortexdb]\nproxy = "{proxy}"\n')
    message = from_file.value.message
    assert message.startswith("engines.cortexdb.proxy must not carry a user name or password")
    assert "HTTPS_PROXY" in message
    assert CANARY not in str(from_file.value)
    assert CANARY not in repr(from_file.value)
    with pytest.raises(ConfigError, match=r"EngineSettings\.proxy must not carry") as caught:
        EngineSettings(proxy=proxy)
    assert CANARY not in str(caught.value)


def test_network_setting_value_rules() -> None:
    with pytest.raises(ConfigError, match=r"engines\.x\.proxy must not contain control"):
        MemoryConfig.from_dict({"engines": {"x": {"proxy": "http://p:1\r\nX: y"}}})
    with pytest.raises(ConfigError, match=r"engines\.x\.ca_certs must not contain a NUL"):
        MemoryConfig.from_dict({"engines": {"x": {"ca_certs": "a\x00b"}}})
    key = f"-----BEGIN PRIVATE KEY-----\n{CANARY}\n-----END PRIVATE KEY-----"
    with pytest.raises(ConfigError, match=r"engines\.x\.client_key must be the path") as caught:
        MemoryConfig.from_dict({"engines": {"x": {"client_key": key}}})
    assert CANARY not in str(caught.value)
    with pytest.raises(ConfigError, match=r"engines\.x\.client_cert must be a string, not an"):
        MemoryConfig.from_dict({"engines": {"x": {"client_cert": 5}}})
    with pytest.raises(TypeError, match=r"EngineSettings\.proxy"):
        EngineSettings(proxy=3128)  # type: ignore[arg-type]
    # Checked by the engine when it is built, not by the settings.
    assert EngineSettings(proxy="socks5://proxy.corp:1080").proxy == "socks5://proxy.corp:1080"

"""Every way a config file or text can fail ends as a ConfigError naming the file.

Huge numbers, deep nesting, dotted keys deep enough to stall the TOML parser,
odd encodings, folders, unreadable files and paths that cannot name a file;
with a fuzzer of those hostile shapes (see also tests/test_config.py).
"""

from __future__ import annotations

import os
import pathlib
import re
import sys
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory._config_text import MAX_DIGITS, MAX_KEY_PARTS
from cortex_memory.config import ConfigWarning, MemoryConfig
from cortex_memory.errors import ConfigError

HUGE = "9" * 100_000


def test_the_bounds_are_what_the_docs_say() -> None:
    assert (MAX_DIGITS, MAX_KEY_PARTS) == (100, 32)


def test_deep_nesting_is_a_config_error_not_a_crash() -> None:
    for text in ("[" * 100_000, '{"a":' * 100_000):
        with pytest.raises(ConfigError, match="not valid JSON: nested too deeply"):
            MemoryConfig.from_json(text)
    for text in ("x = " + "[" * 100_000, "x = " + "{a = " * 100_000):
        with pytest.raises(ConfigError, match="not valid TOML: nested too deeply"):
            MemoryConfig.from_toml(text)


@pytest.mark.parametrize(
    ("loader", "text"),
    [
        ("json", '{"engine": ' + HUGE + "}"),
        ("json", '{"engines": {"local": {"path": -' + HUGE + "}}}"),
        ("json", "[" + HUGE + "]"),
        ("toml", "engine = " + HUGE),
        ("toml", "[engines.local]\npath = " + HUGE),
        ("toml", "x = [1, " + HUGE + "]"),
        ("toml", "x = " + HUGE + ".5"),
    ],
)
def test_a_huge_number_is_a_config_error_not_a_value_error(loader: str, text: str) -> None:
    load = MemoryConfig.from_json if loader == "json" else MemoryConfig.from_toml
    with pytest.raises(ConfigError, match="a number longer than 100 digits"):
        load(text)


def test_long_numbers_within_the_bound_are_only_wrong_types() -> None:
    with pytest.raises(ConfigError, match="engine must be a string, not an integer"):
        MemoryConfig.from_json('{"engine": ' + "9" * 100 + "}")
    with pytest.raises(ConfigError, match="engine must be a string, not an integer"):
        MemoryConfig.from_toml("engine = " + "9" * 19)
    with pytest.raises(ConfigError, match="engine must be a string, not a number"):
        MemoryConfig.from_json('{"engine": ' + "9" * 5000 + ".5}")  # floats convert in linear time


@pytest.mark.parametrize(
    "text",
    [
        "a." * 40 + "b = 1",
        "[" + "a." * 40 + "b]",
        "[[" + "a." * 40 + "b]]",
        "x = {" + "a . " * 40 + "b = 1}",
        '"a".' * 40 + "b = 1",
        "a." * 100_000 + "b = 1",  # about half an hour in the parser; refused at once
    ],
)
def test_a_key_of_too_many_parts_never_reaches_the_parser(text: str) -> None:
    with pytest.raises(ConfigError, match="a dotted key of more than 32 parts"):
        MemoryConfig.from_toml(text)


def test_a_key_within_the_bound_is_read() -> None:
    with pytest.warns(ConfigWarning, match="field `a` is unknown"):
        MemoryConfig.from_toml("a." * 30 + "b = 1")


def test_dots_and_digits_inside_strings_and_comments_do_not_count() -> None:
    lines = [
        'engine = "local"  # ' + "a." * 100 + "9" * 300,
        "[engines.local]",
        'path = "' + "d." * 200 + "1" * 300 + '.sqlite3"',
        "embedder = 'a" + "." * 200 + "'",
        'notes = """' + "x." * 100 + "\n" + "2" * 300 + '"""',
        "proxy = '''" + "y." * 100 + "'''",
        'ca_certs = "escaped \\" quote ' + "z." * 100 + '"',
        "dates = [1979-05-27T07:32:00.999, " + "1.5, " * 60 + "0.1]",
    ]
    with pytest.warns(ConfigWarning) as record:
        config = MemoryConfig.from_toml("\n".join(lines) + "\n")
    assert [str(w.message) for w in record] == [
        "field `engines.local.notes` is unknown and ignored",
        "field `engines.local.dates` is unknown and ignored",
    ]
    assert config.settings().path == "d." * 200 + "1" * 300 + ".sqlite3"
    assert config.settings().ca_certs == 'escaped " quote ' + "z." * 100


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ('{"engine": "lo\\ud800cal"}', "engine"),
        ('{"engines": {"local": {"path": "m\\udc80.sqlite3"}}}', "engines.local.path"),
        ('{"engines": {"cortexdb": {"endpoint": "https://\\ud800"}}}',
         "engines.cortexdb.endpoint"),
        ('{"engines": {"cortexdb": {"ca_certs": "\\udfff"}}}', "engines.cortexdb.ca_certs"),
    ],
)
def test_a_lone_surrogate_in_a_value_is_a_config_error(data: str, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"^configuration error: {field} must be valid Unicode"):
        MemoryConfig.from_json(data)


# ------------------------------------------------------------------ files


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('engine = "local"\n'.encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
        ('engine = "local"\n'.encode("utf-32"), "is UTF-32 text; save it as UTF-8"),
        ('engine = "caf\u00e9"\n'.encode("latin-1"), r"not UTF-8 text \(byte 13 cannot be read\)"),
        (b'engine = "local"\x00\n', "not valid TOML"),
        (b"\xff" * 10, r"not UTF-8 text \(byte 0 cannot be read\)"),
    ],
)
def test_odd_encodings_are_config_errors_naming_the_file(
    tmp_path: pathlib.Path, raw: bytes, message: str
) -> None:
    file = tmp_path / "odd.toml"
    file.write_bytes(raw)
    with pytest.raises(ConfigError, match=message) as caught:
        MemoryConfig.load(file)
    assert caught.value.message.startswith(f"config file {file}: ")


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_huge_number_in_a_file_names_the_file(tmp_path: pathlib.Path, suffix: str) -> None:
    file = tmp_path / f"config{suffix}"
    body = '{"engine": ' + HUGE + "}" if suffix == ".json" else "engine = " + HUGE
    file.write_text(body, encoding="utf-8")
    with pytest.raises(ConfigError, match="a number longer than 100 digits") as caught:
        MemoryConfig.load(file)
    assert caught.value.message.startswith(f"config file {file}: not valid ")


def test_paths_that_cannot_name_a_file_are_config_errors(tmp_path: pathlib.Path) -> None:
    for path in (str(tmp_path / "nul\x00.toml"), str(tmp_path / "lone\ud800.toml")):
        with pytest.raises(ConfigError, match="the path cannot name a file"):
            MemoryConfig.load(path)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_an_unreadable_file_is_a_config_error(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "locked.toml"
    file.write_text('engine = "local"\n')
    file.chmod(0)
    try:
        if os.access(file, os.R_OK):
            pytest.skip("running with privileges that ignore file permissions")
        with pytest.raises(ConfigError, match="cannot be read: Permission denied") as caught:
            MemoryConfig.load(file)
        assert str(file) in caught.value.message
    finally:
        file.chmod(0o600)


def test_a_path_through_a_file_is_a_config_error(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "plain.toml"
    file.write_text('engine = "local"\n')
    with pytest.raises(ConfigError, match="cannot be read: Not a directory"):
        MemoryConfig.load(file / "config.toml")


def test_a_folder_is_a_config_error_whatever_its_suffix(tmp_path: pathlib.Path) -> None:
    folder = tmp_path / "config.json"
    folder.mkdir()
    with pytest.raises(ConfigError, match=r"config\.json: is a folder, not a file"):
        MemoryConfig.load(folder)


# ---------------------------------------------------------------- fuzzing

# Hostile shapes: numbers of up to 120 000 digits (with a sign, a fraction or an
# exponent) in every position, and nesting up to 120 000 levels of every kind.
_digits = st.integers(min_value=1, max_value=120_000).map(lambda n: "7" * n)
_number = st.builds(
    lambda sign, digits, tail: sign + digits + tail,
    st.sampled_from(["", "-", "+"]),
    _digits,
    st.sampled_from(["", ".5", "e3", ".25e-2"]),
)
_depth = st.integers(min_value=1, max_value=120_000)
_json_hostile = st.one_of(
    st.builds(lambda n: '{"engine": ' + n + "}", _number),
    st.builds(lambda n: '{"engines": {"local": {"path": ' + n + "}}}", _number),
    st.builds(lambda n: '{"engines": {"x": [' + n + ", 1]}}", _number),
    st.builds(lambda d, o: o * d, _depth, st.sampled_from(["[", '{"a":', '{"engines":'])),
    st.builds(lambda d: "[" * d + "]" * d, _depth),
    st.builds(lambda d: '{"a":' * d + "1" + "}" * d, _depth),
)
_toml_hostile = st.one_of(
    st.builds(lambda n: "engine = " + n, _number),
    st.builds(lambda n: "[engines.local]\npath = " + n, _number),
    st.builds(lambda n: "x = [" + n + "]", _number),
    st.builds(lambda n: n + " = 1", _digits),
    st.builds(lambda d: "x = " + "[" * d + "]" * d, _depth),
    st.builds(lambda d: "x = " + "{a = " * d + "1" + "}" * d, _depth),
    st.builds(lambda d: "a." * d + "b = 1", _depth),
    st.builds(lambda d: "[" + "a." * d + "b]", _depth),
    st.builds(lambda d: "[[" + "a." * d + "b]]", _depth),
    st.builds(lambda d: "x = {" + "a." * d + "b = 1}", _depth),
)


def _outcome(load: object, text: str) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        try:
            return load(text)  # type: ignore[operator]
        except ConfigError as exc:
            return exc


@settings(max_examples=150, deadline=None)
@given(_json_hostile)
def test_hostile_json_gives_a_config_or_a_config_error(text: str) -> None:
    assert isinstance(_outcome(MemoryConfig.from_json, text), (MemoryConfig, ConfigError))


@settings(max_examples=150, deadline=None)
@given(_toml_hostile)
def test_hostile_toml_gives_a_config_or_a_config_error(text: str) -> None:
    outcome = _outcome(MemoryConfig.from_toml, text)
    assert isinstance(outcome, (MemoryConfig, ConfigError))
    # Past either bound, the text is refused before the parser sees it.
    if text.count(".") >= MAX_KEY_PARTS:
        assert isinstance(outcome, ConfigError)
        assert "a dotted key of more than 32 parts" in outcome.message
    elif re.search(r"\d{101}", text):
        assert isinstance(outcome, ConfigError)
        assert "a number longer than 100 digits" in outcome.message


@settings(max_examples=150, deadline=None)
@given(_json_hostile)
def test_hostile_json_numbers_past_the_bound_are_refused_by_name(text: str) -> None:
    outcome = _outcome(MemoryConfig.from_json, text)
    if re.search(r"\d{101}", text) and not re.search(r"[+.e]", text):
        assert isinstance(outcome, ConfigError)
        assert "a number longer than 100 digits" in outcome.message

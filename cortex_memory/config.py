"""``MemoryConfig``: which engine a host uses and how each engine is reached.

A config names the selected engine (``engine``, default ``"tinyhumans"``) and
holds optional per-engine settings (``engines``: id → :class:`EngineSettings`).
It never holds a credential, so a config file can be shared, committed or
logged: the host keeps keys in its own secret store (or the environment) and
passes one to :meth:`MemoryConfig.build`.

TOML::

    engine = "cortexdb"

    [engines.cortexdb]
    endpoint = "https://cortex.example.com"

    proxy = "http://proxy.corp.example:3128"   # "" for none; absent: the environment's
    ca_certs = "/etc/ssl/corp-ca.pem"

    [engines.local]
    path = "~/notes/memory.sqlite3"

JSON has the same shape. Unknown fields, and tables for engine ids this build
does not offer, are read past (so newer files load in older versions) with a
:class:`ConfigWarning` that names the file and the field, never its value, and
suggests the nearest known name (a misspelt ``[engnes.local]`` must not send
data elsewhere in silence); a field that looks like a credential (``api_key``,
``token``, ...) is ignored with a warning saying credentials never live in a
config. A field of the wrong type is a
:class:`~cortex_memory.errors.ConfigError` naming it, and so is every other
failure of a file or a text (see :mod:`cortex_memory._config_text`).
"""

from __future__ import annotations

import difflib
import os
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from cortex_memory._config_rules import (
    NETWORK_FIELDS,
    NOT_UNICODE,
    TLS_FILES,
    check_settings,
    encodable,
    has_control,
    kind_of,
    looks_secret,
)
from cortex_memory._config_text import parse_json, parse_toml, read_text
from cortex_memory.errors import ConfigError

if TYPE_CHECKING:
    from cortex_memory.contract.engine import MemoryEngine
    from cortex_memory.registry import EngineCredential

__all__ = ["ConfigWarning", "DEFAULT_ENGINE", "EngineSettings", "MemoryConfig"]

#: The engine ``MemoryConfig()`` selects (README decision 9).
DEFAULT_ENGINE = "tinyhumans"

StrPath = Union[str, "os.PathLike[str]"]


class ConfigWarning(UserWarning):
    """A config held something that is ignored: an unknown (perhaps misspelt) field or
    engine table, or a credential-looking field."""


@dataclass(frozen=True)
class EngineSettings:
    """How one engine is reached: ``endpoint``, ``proxy`` and the TLS files (CortexDB
    engines), ``path`` and ``embedder`` (local).

    All are optional: an absent or blank ``endpoint`` uses the engine's
    default; an absent ``path`` uses the per-user database
    (:func:`cortex_memory.paths.default_database_path`). ``path`` may be any
    path-like value and is kept as a ``str``; ``":memory:"`` is allowed.
    ``embedder`` names the local engine's embedder (``"ngram"``, the default,
    ``"semantic"`` with the ``[semantic]`` extra, or ``"module:factory"``);
    the CortexDB engines ignore it.

    ``proxy``: absent takes the proxy from the environment (``HTTPS_PROXY``,
    ...), a URL is used whatever the environment says, and ``""`` means no
    proxy at all. ``ca_certs``, ``client_cert`` and ``client_key`` are paths
    of PEM files (a CA bundle, a client certificate and its key); the local
    engine ignores all four. See :class:`~cortex_memory.cortex.Network`.

    Construction refuses a value of the wrong type (``TypeError``) and, with
    :class:`~cortex_memory.errors.ConfigError` naming the field, control
    characters in ``endpoint`` or ``proxy``, either carrying a user name or
    password, a NUL character in a path, and PEM text where a path belongs.
    """

    endpoint: Optional[str] = None
    path: Optional[str] = None
    embedder: Optional[str] = None
    proxy: Optional[str] = None
    ca_certs: Optional[str] = None
    client_cert: Optional[str] = None
    client_key: Optional[str] = None

    def __post_init__(self) -> None:
        for name in NETWORK_FIELDS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(
                    f"EngineSettings.{name} must be a str or None, not {type(value).__name__}"
                )
        if self.embedder is not None and not isinstance(self.embedder, str):
            raise TypeError(
                f"EngineSettings.embedder must be a str or None, not {type(self.embedder).__name__}"
            )
        if self.endpoint is not None and not isinstance(self.endpoint, str):
            raise TypeError(
                f"EngineSettings.endpoint must be a str or None, not {type(self.endpoint).__name__}"
            )
        if self.path is not None:
            if not isinstance(self.path, (str, os.PathLike)):
                raise TypeError(
                    "EngineSettings.path must be a str, a path-like object or None, "
                    f"not {type(self.path).__name__}"
                )
            path = os.fspath(self.path)
            if not isinstance(path, str):
                raise TypeError("EngineSettings.path must be a text path, not bytes")
            object.__setattr__(self, "path", path)
        check_settings(
            "EngineSettings", self.endpoint, self.path, self.embedder, self.network_fields()
        )

    def network_fields(self) -> Dict[str, Optional[str]]:
        """``proxy``, ``ca_certs``, ``client_cert`` and ``client_key``, by name."""
        return {name: getattr(self, name) for name in NETWORK_FIELDS}

    def to_dict(self) -> Dict[str, str]:
        """The settings as a JSON/TOML table (unset fields omitted)."""
        out: Dict[str, str] = {}
        for name in ("endpoint", "path", "embedder", *NETWORK_FIELDS):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


_NO_SETTINGS = EngineSettings()


@dataclass(frozen=True)
class MemoryConfig:
    """Which engine a host uses (``engine``) and per-engine settings (``engines``).

    ``MemoryConfig()`` selects ``"tinyhumans"`` with no settings. ``engines``
    accepts any mapping and is kept as a read-only copy. A config never holds a
    credential: pass one to :meth:`build`.
    """

    engine: str = DEFAULT_ENGINE
    engines: Mapping[str, EngineSettings] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.engine, str):
            raise TypeError(f"MemoryConfig.engine must be a str, not {type(self.engine).__name__}")
        if not self.engine.strip():
            raise ConfigError("engine must not be blank")
        if not isinstance(self.engines, Mapping):
            raise TypeError(
                f"MemoryConfig.engines must be a mapping, not {type(self.engines).__name__}"
            )
        copied: Dict[str, EngineSettings] = {}
        for engine_id, settings in self.engines.items():
            if not isinstance(engine_id, str):
                raise TypeError("MemoryConfig.engines keys must be engine ids (str)")
            if not isinstance(settings, EngineSettings):
                raise TypeError(
                    f"MemoryConfig.engines[{engine_id!r}] must be an EngineSettings, "
                    f"not {type(settings).__name__}"
                )
            copied[engine_id] = settings
        # A private copy behind a read-only view keeps the frozen promise.
        object.__setattr__(self, "engines", types.MappingProxyType(copied))

    def __hash__(self) -> int:
        return hash((self.engine, tuple(self.engines.items())))

    def __repr__(self) -> str:
        return f"MemoryConfig(engine={self.engine!r}, engines={dict(self.engines)!r})"

    # -- reading ------------------------------------------------------------

    def settings(self, engine_id: Optional[str] = None) -> EngineSettings:
        """The settings of ``engine_id`` (default: the selected engine), or the defaults."""
        return self.engines.get(self.engine if engine_id is None else engine_id, _NO_SETTINGS)

    def build(self, credential: Optional[EngineCredential] = None) -> MemoryEngine:
        """Build the selected engine: ``build_engine(engine, settings(), credential)``.

        ``credential`` defaults to ``EngineCredential.NONE`` (enough for ``local``).
        Raises :class:`~cortex_memory.errors.ConfigError` for an engine this build
        does not offer and for everything ``build_engine`` refuses (the default,
        ``tinyhumans``, needs a credential: ``MemoryConfig().build()`` names it).
        """
        # Imported here: the registry imports EngineSettings from this module.
        from cortex_memory.registry import EngineCredential, build_engine

        return build_engine(
            self.engine,
            self.settings(),
            EngineCredential.NONE if credential is None else credential,
        )

    # -- builders -----------------------------------------------------------

    def with_engine(self, engine_id: str) -> MemoryConfig:
        """A copy selecting ``engine_id``."""
        return MemoryConfig(engine_id, self.engines)

    def with_settings(self, engine_id: str, settings: EngineSettings) -> MemoryConfig:
        """A copy whose settings for ``engine_id`` are ``settings``."""
        engines = dict(self.engines)
        engines[engine_id] = settings
        return MemoryConfig(self.engine, engines)

    def to_dict(self) -> Dict[str, Any]:
        """The config as a JSON/TOML table: ``{"engine": ..., "engines": {...}}``."""
        return {
            "engine": self.engine,
            "engines": {engine_id: s.to_dict() for engine_id, s in self.engines.items()},
        }

    # -- loading ------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryConfig:
        """Read a parsed TOML/JSON table. Unknown fields are ignored with a
        :class:`ConfigWarning` naming each."""
        return _load(data, "", None)

    @classmethod
    def from_toml(cls, text: str) -> MemoryConfig:
        """Read a TOML document."""
        return _load(parse_toml(text, ""), "", None)

    @classmethod
    def from_json(cls, text: str) -> MemoryConfig:
        """Read a JSON document (the same shape as the TOML one)."""
        return _load(parse_json(text, ""), "", None)

    @classmethod
    def load(cls, path: StrPath, *, format: Optional[str] = None) -> MemoryConfig:
        """Read a config file: JSON when it ends in ``.json`` (or ``format="json"``), else TOML.

        A relative ``path`` inside ``[engines.<id>]`` is taken relative to the
        file's folder, so a config can sit next to its database. Every failure
        (missing file, a folder, unreadable, not UTF-8, invalid syntax, nesting
        too deep, a number longer than 100 digits, a dotted key of more than 32
        parts, wrong types) is a :class:`~cortex_memory.errors.ConfigError`
        naming the file; unknown fields warn (:class:`ConfigWarning`).
        """
        file = Path(os.fspath(path))
        fmt = format
        if fmt is None:
            fmt = "json" if file.suffix.lower() == ".json" else "toml"
        if fmt not in ("toml", "json"):
            raise ConfigError(f"unknown config format `{fmt}`; use `toml` or `json`")
        where = f"config file {file}: "
        text = read_text(file, where)
        data = parse_json(text, where) if fmt == "json" else parse_toml(text, where)
        return _load(data, where, file.parent)


# ------------------------------------------------------------------ loading


def _load(data: Any, where: str, base: Optional[Path]) -> MemoryConfig:
    """Read ``data``, then warn about every field that is ignored.

    The warnings are raised here, two frames below the caller of the public
    loader, so ``stacklevel=3`` points at the caller's line.
    """
    notes: List[str] = []
    config = _read(data, where, base, notes)
    for note in notes:
        warnings.warn(where + note, ConfigWarning, stacklevel=3)
    return config


_TOP_FIELDS = ("engine", "engines")
_SETTING_FIELDS = ("endpoint", "path", "embedder", *NETWORK_FIELDS)


def _shown(name: object) -> str:
    """A field name as a message shows it: cut to 64 characters, controls escaped."""
    text = name if isinstance(name, str) else str(name)
    if len(text) > 64:
        text = text[:64] + "…"
    if has_control(text) or not encodable(text):
        text = repr(text)[1:-1]
    return text


def _guess(name: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(name.lower(), choices, n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def _note_unknown(path: str, name: object, choices: Sequence[str], notes: List[str]) -> None:
    """Say that field ``name`` (under ``path``) is ignored, and why; never its value."""
    shown = path + _shown(name)
    if isinstance(name, str) and looks_secret(name):
        notes.append(
            f"field `{shown}` is ignored: a config never holds a credential; "
            "credentials come from the environment or the host's secret store"
        )
    else:
        guess = _guess(name, choices) if isinstance(name, str) else ""
        notes.append(f"field `{shown}` is unknown and ignored{guess}")


def _read(data: Any, where: str, base: Optional[Path], notes: List[str]) -> MemoryConfig:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}the config must be a table, not {kind_of(data)}")
    for name in data:
        if name not in _TOP_FIELDS:
            _note_unknown("", name, _TOP_FIELDS, notes)
    engine = data.get("engine", DEFAULT_ENGINE)
    if not isinstance(engine, str):
        raise ConfigError(f"{where}engine must be a string, not {kind_of(engine)}")
    if not engine.strip():
        raise ConfigError(f"{where}engine must not be blank")
    if not encodable(engine):
        raise ConfigError(f"{where}engine {NOT_UNICODE}")
    tables = data.get("engines")
    if tables is None:
        tables = {}
    if not isinstance(tables, Mapping):
        raise ConfigError(f"{where}engines must be a table, not {kind_of(tables)}")
    # Imported here: the registry imports this module.
    from cortex_memory.registry import engine_ids

    offered = engine_ids()
    engines: Dict[str, EngineSettings] = {}
    for engine_id, table in tables.items():
        engine_id = str(engine_id)
        if engine_id not in offered:
            # Kept (a newer version may offer it), but a misspelt id would
            # otherwise send the data elsewhere without a word.
            listed = ", ".join(f"`{i}`" for i in offered)
            notes.append(
                f"table `engines.{_shown(engine_id)}` names no engine this build offers "
                f"({listed}); no engine reads it{_guess(engine_id, offered)}"
            )
        engines[engine_id] = _read_settings(where, engine_id, table, base, notes)
    return MemoryConfig(engine, engines)


def _read_settings(
    where: str, engine_id: str, table: Any, base: Optional[Path], notes: List[str]
) -> EngineSettings:
    name = f"engines.{engine_id}"
    if table is None:
        return _NO_SETTINGS
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}{name} must be a table, not {kind_of(table)}")
    for key in table:
        if key not in _SETTING_FIELDS:
            _note_unknown(f"{_shown(name)}.", key, _SETTING_FIELDS, notes)
    values: Dict[str, Optional[str]] = {}
    for key in _SETTING_FIELDS:
        value = table.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{where}{name}.{key} must be a string, not {kind_of(value)}")
        values[key] = value
    endpoint, path, embedder = values["endpoint"], values["path"], values["embedder"]
    network = {key: values[key] for key in NETWORK_FIELDS}
    try:
        check_settings(name, endpoint, path, embedder, network)
    except ConfigError as exc:
        raise ConfigError(where + exc.message) from None
    if base is not None:
        if path is not None:
            path = _relative_to(base, path)
        for key in TLS_FILES:
            file = network[key]
            if file is not None:
                network[key] = _relative_to(base, file)
    return EngineSettings(endpoint, path, embedder, **network)


def _relative_to(base: Path, path: str) -> str:
    """A relative path in a file (a database, a certificate) is read from the file's folder."""
    if path == ":memory:" or not path.strip() or path.startswith("~"):
        return path
    if os.path.isabs(path):
        return path
    return str(base / path)

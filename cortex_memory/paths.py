"""Per-user locations: where the local database and the CLI's config file live.

The rules (README decision 12):

- ``CORTEX_MEMORY_HOME``, when set, overrides everything: data *and* config
  live directly in that folder.
- Otherwise data lives in ``$XDG_DATA_HOME/cortex-memory`` (default
  ``~/.local/share/cortex-memory``) on Linux and other Unix systems,
  ``~/Library/Application Support/cortex-memory`` on macOS and
  ``%LOCALAPPDATA%\\cortex-memory`` on Windows; the local database is
  ``memory.sqlite3`` there.
- The config folder is ``$XDG_CONFIG_HOME/cortex-memory`` (default
  ``~/.config/cortex-memory``) on Linux, the data folder on macOS and Windows.
- The CLI reads its config from ``--config PATH``, else
  ``$CORTEX_MEMORY_CONFIG``, else ``<config folder>/config.toml`` when that
  file exists.

Every function takes the environment mapping and the platform (``sys.platform``
strings) so tests can ask for any machine's answer. Nothing is created except
by :func:`ensure_data_dir` (and :func:`default_database_path` with
``create=True``), which creates the data folder when asked; :func:`config_path`
only checks whether the default config file exists. Nothing happens at import.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import Mapping, Optional, Union

from cortex_memory.errors import ConfigError

__all__ = [
    "APP_DIR_NAME",
    "CONFIG_ENV",
    "CONFIG_FILE_NAME",
    "DATABASE_FILE_NAME",
    "HOME_ENV",
    "config_dir",
    "config_path",
    "data_dir",
    "default_config_path",
    "default_database_path",
    "ensure_data_dir",
    "make_private_folders",
]

#: The folder name used under every platform's data and config roots.
APP_DIR_NAME = "cortex-memory"
#: The local engine's database file inside the data folder.
DATABASE_FILE_NAME = "memory.sqlite3"
#: The CLI's config file inside the config folder.
CONFIG_FILE_NAME = "config.toml"
#: Environment variable naming one folder for data and config (overrides everything).
HOME_ENV = "CORTEX_MEMORY_HOME"
#: Environment variable naming the config file the CLI reads.
CONFIG_ENV = "CORTEX_MEMORY_CONFIG"

StrPath = Union[str, "os.PathLike[str]"]


def _env(env: Optional[Mapping[str, str]]) -> Mapping[str, str]:
    return os.environ if env is None else env


def _platform(platform: Optional[str]) -> str:
    return sys.platform if platform is None else platform


def _is_windows(platform: str) -> bool:
    return platform.startswith("win")


def _pure(platform: str, *parts: str) -> PurePath:
    # The pure flavour follows the platform asked for, not the one running, so a
    # test on Linux can compute a Windows answer.
    if _is_windows(platform):
        return PureWindowsPath(*parts)
    return PurePosixPath(*parts)


def _get(env: Mapping[str, str], name: str) -> Optional[str]:
    """An environment value, with an empty string read as unset (as shells use it)."""
    value = env.get(name)
    return value if value else None


def _account_home() -> Optional[str]:
    """The home folder of the running account from the password database (POSIX)."""
    try:
        import pwd
    except ImportError:  # pragma: no cover - Windows has no pwd module
        return None
    try:
        return pwd.getpwuid(os.getuid()).pw_dir or None
    except (KeyError, OSError):  # pragma: no cover - no entry for this uid
        return None


def _home(env: Mapping[str, str], platform: str) -> PurePath:
    """The user's home folder: from the environment, else the account (same platform only)."""
    if _is_windows(platform):
        profile = _get(env, "USERPROFILE")
        if profile is not None:
            return _pure(platform, profile)
        drive, rest = _get(env, "HOMEDRIVE"), _get(env, "HOMEPATH")
        if drive is not None and rest is not None:
            return _pure(platform, drive + rest)
    else:
        home = _get(env, "HOME")
        if home is not None:
            return _pure(platform, home)
        if platform == sys.platform:
            found = _account_home()
            if found is not None:
                return _pure(platform, found)
    raise ConfigError(
        f"cannot find the home folder: set {HOME_ENV} to the folder cortex-memory should use"
    )


def _xdg(env: Mapping[str, str], name: str) -> Optional[str]:
    """An XDG base-directory variable; the XDG spec says relative values are ignored."""
    value = _get(env, name)
    if value is not None and value.startswith("/"):
        return value
    return None


def _expand(value: str, env: Mapping[str, str], platform: str) -> PurePath:
    """A path from the environment or a flag, with a leading ``~`` read as the home folder."""
    seps = ("/", "\\") if _is_windows(platform) else ("/",)
    if value == "~" or (value[:1] == "~" and value[1:2] in seps):
        return _home(env, platform) / value[2:]
    return _pure(platform, value)


def _override(env: Mapping[str, str], platform: str) -> Optional[PurePath]:
    home = _get(env, HOME_ENV)
    return None if home is None else _expand(home, env, platform)


def _data_dir(env: Mapping[str, str], platform: str) -> PurePath:
    override = _override(env, platform)
    if override is not None:
        return override
    if _is_windows(platform):
        local = _get(env, "LOCALAPPDATA")
        if local is not None:
            return _pure(platform, local, APP_DIR_NAME)
        return _home(env, platform) / "AppData" / "Local" / APP_DIR_NAME
    if platform == "darwin":
        return _home(env, platform) / "Library" / "Application Support" / APP_DIR_NAME
    xdg = _xdg(env, "XDG_DATA_HOME")
    base = _pure(platform, xdg) if xdg is not None else _home(env, platform) / ".local" / "share"
    return base / APP_DIR_NAME


def _config_dir(env: Mapping[str, str], platform: str) -> PurePath:
    if _override(env, platform) is not None or _is_windows(platform) or platform == "darwin":
        return _data_dir(env, platform)
    xdg = _xdg(env, "XDG_CONFIG_HOME")
    base = _pure(platform, xdg) if xdg is not None else _home(env, platform) / ".config"
    return base / APP_DIR_NAME


def data_dir(
    env: Optional[Mapping[str, str]] = None, platform: Optional[str] = None
) -> Path:
    """The per-user data folder (not created).

    ``env`` defaults to ``os.environ`` and ``platform`` to ``sys.platform``
    (asking for another platform gives a path in that platform's spelling).
    Raises :class:`~cortex_memory.errors.ConfigError` when no home folder can be
    found and ``CORTEX_MEMORY_HOME`` is not set.
    """
    return Path(str(_data_dir(_env(env), _platform(platform))))


def config_dir(
    env: Optional[Mapping[str, str]] = None, platform: Optional[str] = None
) -> Path:
    """The per-user config folder (never created).

    Linux and other Unix systems: ``$XDG_CONFIG_HOME/cortex-memory`` (default
    ``~/.config/cortex-memory``). macOS and Windows keep config in the data
    folder, as their conventions do. ``CORTEX_MEMORY_HOME`` overrides all of it.
    """
    return Path(str(_config_dir(_env(env), _platform(platform))))


def default_database_path(
    env: Optional[Mapping[str, str]] = None,
    platform: Optional[str] = None,
    *,
    create: bool = False,
) -> Path:
    """``<data folder>/memory.sqlite3``; with ``create=True`` the folder is created first."""
    if create:
        return ensure_data_dir(env, platform) / DATABASE_FILE_NAME
    return Path(str(_data_dir(_env(env), _platform(platform)) / DATABASE_FILE_NAME))


def default_config_path(
    env: Optional[Mapping[str, str]] = None, platform: Optional[str] = None
) -> Path:
    """``<config folder>/config.toml``, whether or not it exists."""
    return Path(str(_config_dir(_env(env), _platform(platform)) / CONFIG_FILE_NAME))


def config_path(
    explicit: Optional[StrPath] = None,
    env: Optional[Mapping[str, str]] = None,
    platform: Optional[str] = None,
) -> Optional[Path]:
    """The config file to read, or ``None`` when there is none.

    Precedence: ``explicit`` (the CLI's ``--config``), else
    ``$CORTEX_MEMORY_CONFIG``, else the default path *when that file exists*.
    An explicit or environment path is returned even when it does not exist,
    so loading it reports the mistake instead of silently using defaults.
    A leading ``~`` is read as the home folder.
    """
    values, plat = _env(env), _platform(platform)
    if explicit is not None:
        return Path(str(_expand(os.fspath(explicit), values, plat)))
    named = _get(values, CONFIG_ENV)
    if named is not None:
        return Path(str(_expand(named, values, plat)))
    default = default_config_path(values, plat)
    # A foreign platform's path means nothing on this disk, so it never "exists".
    if plat == sys.platform and default.is_file():
        return default
    return None


def make_private_folders(folder: str) -> None:
    """Create ``folder`` and every missing parent ``0o700`` (``os.makedirs`` gives the
    parents the umask's default); folders already there are left as they are."""
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for each in reversed(missing):
        try:
            os.mkdir(each, 0o700)
        except FileExistsError:
            if not os.path.isdir(each):
                raise  # a file where a folder should be
            # another process made it first


def ensure_data_dir(
    env: Optional[Mapping[str, str]] = None, platform: Optional[str] = None
) -> Path:
    """Create the data folder if needed and return it.

    On POSIX every folder created here, the missing parents included, is
    private to the user (mode ``0o700``); memory content is personal. Raises
    :class:`~cortex_memory.errors.ConfigError` when it cannot be created, or
    when ``platform`` is not the running one.
    """
    plat = _platform(platform)
    if plat != sys.platform:
        raise ConfigError(f"cannot create a data folder for platform `{plat}` on `{sys.platform}`")
    folder = data_dir(env, plat)
    try:
        make_private_folders(str(folder))
    except OSError as exc:
        raise ConfigError(
            f"cannot create the data folder {folder}: {exc.strerror or exc}"
        ) from exc
    return folder

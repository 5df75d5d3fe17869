"""Per-user paths (README decision 12), computed from injected environments and platforms."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from cortex_memory import paths
from cortex_memory.errors import ConfigError

LINUX = {"HOME": "/home/ada"}
MAC = {"HOME": "/Users/ada"}
WINDOWS = {"USERPROFILE": "C:\\Users\\ada", "LOCALAPPDATA": "C:\\Users\\ada\\AppData\\Local"}


@pytest.mark.parametrize(
    ("env", "platform", "data", "config"),
    [
        (LINUX, "linux", "/home/ada/.local/share/cortex-memory", "/home/ada/.config/cortex-memory"),
        (
            {**LINUX, "XDG_DATA_HOME": "/xdg/data", "XDG_CONFIG_HOME": "/xdg/config"},
            "linux",
            "/xdg/data/cortex-memory",
            "/xdg/config/cortex-memory",
        ),
        # The XDG spec says a relative value is invalid and must be ignored.
        (
            {**LINUX, "XDG_DATA_HOME": "data", "XDG_CONFIG_HOME": "cfg"},
            "linux",
            "/home/ada/.local/share/cortex-memory",
            "/home/ada/.config/cortex-memory",
        ),
        # An empty variable counts as unset, as shells use it.
        ({**LINUX, "XDG_DATA_HOME": ""}, "linux", "/home/ada/.local/share/cortex-memory",
         "/home/ada/.config/cortex-memory"),
        (LINUX, "freebsd13", "/home/ada/.local/share/cortex-memory",
         "/home/ada/.config/cortex-memory"),
        (
            MAC,
            "darwin",
            "/Users/ada/Library/Application Support/cortex-memory",
            "/Users/ada/Library/Application Support/cortex-memory",
        ),
        (
            WINDOWS,
            "win32",
            "C:\\Users\\ada\\AppData\\Local\\cortex-memory",
            "C:\\Users\\ada\\AppData\\Local\\cortex-memory",
        ),
        (
            {"USERPROFILE": "D:\\home\\ada"},
            "win32",
            "D:\\home\\ada\\AppData\\Local\\cortex-memory",
            "D:\\home\\ada\\AppData\\Local\\cortex-memory",
        ),
        (
            {"HOMEDRIVE": "E:", "HOMEPATH": "\\Users\\ada"},
            "win32",
            "E:\\Users\\ada\\AppData\\Local\\cortex-memory",
            "E:\\Users\\ada\\AppData\\Local\\cortex-memory",
        ),
    ],
)
def test_data_and_config_dirs_per_platform(
    env: dict[str, str], platform: str, data: str, config: str
) -> None:
    assert str(paths.data_dir(env, platform)) == data
    assert str(paths.config_dir(env, platform)) == config
    # A foreign platform's answer is right as a string (its own separators).
    sep = "\\" if platform == "win32" else "/"
    assert str(paths.default_database_path(env, platform)) == data + sep + "memory.sqlite3"
    assert str(paths.default_config_path(env, platform)) == config + sep + "config.toml"


@pytest.mark.parametrize(
    ("env", "platform"), [(LINUX, "linux"), (MAC, "darwin"), (WINDOWS, "win32")]
)
def test_cortex_memory_home_overrides_everything(env: dict[str, str], platform: str) -> None:
    home = "C:\\cm" if platform == "win32" else "/srv/cm"
    env = {**env, "CORTEX_MEMORY_HOME": home, "XDG_DATA_HOME": "/x", "XDG_CONFIG_HOME": "/y"}
    assert str(paths.data_dir(env, platform)) == home
    assert str(paths.config_dir(env, platform)) == home
    sep = "\\" if platform == "win32" else "/"
    assert str(paths.default_database_path(env, platform)) == f"{home}{sep}memory.sqlite3"
    assert str(paths.default_config_path(env, platform)) == f"{home}{sep}config.toml"


def test_tilde_in_cortex_memory_home_is_the_home_folder() -> None:
    env = {**LINUX, "CORTEX_MEMORY_HOME": "~/memory"}
    assert str(paths.data_dir(env, "linux")) == "/home/ada/memory"


def test_no_home_folder_is_a_config_error_naming_the_override() -> None:
    with pytest.raises(ConfigError, match="CORTEX_MEMORY_HOME"):
        paths.data_dir({}, "win32")
    # A foreign platform never falls back to this machine's account database.
    other = "linux" if sys.platform == "darwin" else "darwin"
    with pytest.raises(ConfigError):
        paths.data_dir({}, other)


@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX account database")
def test_missing_home_on_this_platform_uses_the_account_home() -> None:
    found = paths.data_dir({}, sys.platform)
    assert found.name == "cortex-memory"
    assert found.is_absolute()


def test_config_path_precedence(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    default = tmp_path / "cfg" / "cortex-memory" / "config.toml"
    # Nothing exists: no config at all.
    assert paths.config_path(None, env, sys.platform) is None
    default.parent.mkdir(parents=True)
    default.write_text('engine = "local"\n')
    if not sys.platform.startswith("win"):
        assert paths.config_path(None, env, sys.platform) == default
    named = tmp_path / "named.toml"
    env_named = {**env, "CORTEX_MEMORY_CONFIG": str(named)}
    # The environment variable wins over the default, even when its file is missing,
    # so loading reports the mistake instead of silently using the default.
    assert paths.config_path(None, env_named, sys.platform) == named
    explicit = tmp_path / "explicit.toml"
    assert paths.config_path(explicit, env_named, sys.platform) == explicit
    assert paths.config_path(str(explicit), env_named, sys.platform) == explicit


def test_config_path_expands_tilde() -> None:
    env = {"HOME": "/home/ada", "CORTEX_MEMORY_CONFIG": "~/conf/cm.toml"}
    assert paths.config_path(None, env, "linux") == Path("/home/ada/conf/cm.toml")
    assert paths.config_path("~/x.toml", env, "linux") == Path("/home/ada/x.toml")


def test_default_config_on_a_foreign_platform_never_exists() -> None:
    other = "win32" if not sys.platform.startswith("win") else "linux"
    assert paths.config_path(None, {"USERPROFILE": "C:\\u", "HOME": "/u"}, other) is None


def test_nothing_is_created_unless_asked(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "CORTEX_MEMORY_HOME": str(tmp_path / "cm")}
    paths.data_dir(env)
    paths.default_database_path(env)
    paths.config_path(None, env)
    assert not (tmp_path / "cm").exists()
    db = paths.default_database_path(env, create=True)
    assert db.parent.is_dir()
    assert not db.exists()


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
def test_created_data_folder_is_private(tmp_path: Path) -> None:
    env = {"CORTEX_MEMORY_HOME": str(tmp_path / "deep" / "cm")}
    before = stat.S_IMODE(tmp_path.stat().st_mode)
    folder = paths.ensure_data_dir(env)
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0
    # The missing parent made on the way is private too; one already there is untouched.
    assert stat.S_IMODE((tmp_path / "deep").stat().st_mode) & 0o077 == 0
    assert stat.S_IMODE(tmp_path.stat().st_mode) == before
    # Calling again is fine.
    assert paths.ensure_data_dir(env) == folder


def test_ensure_data_dir_reports_failure_as_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot create the data folder"):
        paths.ensure_data_dir({"CORTEX_MEMORY_HOME": str(blocker / "cm")})


def test_ensure_data_dir_refuses_a_foreign_platform(tmp_path: Path) -> None:
    other = "win32" if not sys.platform.startswith("win") else "linux"
    with pytest.raises(ConfigError, match="platform"):
        paths.ensure_data_dir({"CORTEX_MEMORY_HOME": str(tmp_path)}, other)


def test_defaults_read_the_process_environment(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setenv("CORTEX_MEMORY_HOME", str(tmp_path))
    assert paths.data_dir() == tmp_path

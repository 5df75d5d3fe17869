"""Which engine a CLI command talks to, and with which settings and credential.

Precedence (README decisions 9 and 12):

1. explicit flags: ``--engine ID``; ``--path DB`` alone selects ``local``;
   ``--endpoint`` and ``--path`` override the selected engine's settings;
2. the config file: ``--config PATH``, else ``$CORTEX_MEMORY_CONFIG``, else
   ``<config folder>/cortex-memory/config.toml`` when it exists;
3. a credential in the environment picks its engine when this build has it
   (``CORTEX_MEMORY_API_KEY`` → ``cortexdb``, else
   ``CORTEX_MEMORY_TINYHUMANS_TOKEN`` → ``tinyhumans``: the registry's
   ``CREDENTIAL_ENV``, read by ``EngineCredential.from_env``);
4. otherwise the local engine at the per-user database, with a one-line note
   on stderr saying so.

Credentials come only from the environment, never from a flag or a file.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Tuple

from cortex_memory import paths, registry
from cortex_memory.config import ConfigWarning, EngineSettings, MemoryConfig
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.errors import ConfigError
from cortex_memory.registry import LOCAL_ENGINE_ID, EngineCredential

__all__ = [
    "Selection",
    "check_path",
    "UsageError",
    "load_config",
    "select_engine",
]


class UsageError(Exception):
    """A mistake in the command line itself (exit status 2)."""


@dataclass(frozen=True)
class Selection:
    """The outcome of engine selection; ``note`` is what to say on stderr, if anything."""

    engine_id: str
    settings: EngineSettings
    credential: EngineCredential
    note: Optional[str] = None
    config_warnings: Tuple[str, ...] = ()

    def build(self) -> MemoryEngine:
        """Build the engine through the registry."""
        return registry.build_engine(self.engine_id, self.settings, self.credential)


def load_config(
    explicit: Optional[str], env: Mapping[str, str]
) -> Tuple[Optional[MemoryConfig], Tuple[str, ...]]:
    """The config the CLI uses (or ``None``) and any warnings loading it raised."""
    file = paths.config_path(explicit, env)
    if file is None:
        return None, ()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConfigWarning)
        config = MemoryConfig.load(file)
    found = tuple(
        str(w.message) for w in caught if issubclass(w.category, ConfigWarning)
    )
    return config, found


def _needs_key_hint(engine_id: str) -> str:
    name = registry.CREDENTIAL_ENV.get(engine_id)
    if name is not None:
        return f"engine `{engine_id}` needs a credential: set {name} in the environment"
    return f"engine `{engine_id}` needs a credential, which this command cannot supply"


def check_path(path: str, *, create: bool) -> None:
    """Refuse an explicit ``--path`` whose folder does not exist, unless ``create``.

    A typo in a folder name would otherwise create a new, empty database in
    a new folder without a word. With ``create`` the folder is made here
    (private to the user on POSIX). ``:memory:`` and a bare file name (the
    working folder) always pass.
    """
    if path == ":memory:":
        return
    try:
        folder = os.path.dirname(os.path.abspath(os.path.expanduser(path)))
        exists = os.path.isdir(folder)
    except (ValueError, OSError):  # a NUL character: the engine names the problem
        return
    if exists:
        return
    if not create:
        raise UsageError(
            f"the folder of --path does not exist: {folder}; check the path, "
            "or add --create to create it"
        )
    missing = []
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        missing.append(folder)
        folder = os.path.dirname(folder)
    # One level at a time: os.makedirs applies the mode to the last one only.
    for level in reversed(missing):
        try:
            os.mkdir(level, 0o700)
        except OSError as exc:
            if isinstance(exc, FileExistsError) and os.path.isdir(level):
                continue  # made meanwhile by another process
            raise ConfigError(
                f"cannot create the folder {level}: {exc.strerror or exc}"
            ) from exc


def select_engine(
    *,
    engine: Optional[str],
    endpoint: Optional[str],
    path: Optional[str],
    config_file: Optional[str],
    env: Mapping[str, str],
    create: bool = False,
) -> Selection:
    """Resolve the engine id, settings and credential for a command (see the module doc).

    An explicit ``path`` must be in an existing folder unless ``create``
    (:func:`check_path`); the per-user default is always created.
    """
    config, found = load_config(config_file, env)
    fallback = False
    if engine is not None:
        engine_id = engine
    elif path is not None:
        engine_id = LOCAL_ENGINE_ID
    elif config is not None:
        engine_id = config.engine
    else:
        offered = registry.engine_ids()
        picked = [
            known for known, name in registry.CREDENTIAL_ENV.items()
            if env.get(name, "").strip() and known in offered
        ]
        engine_id = picked[0] if picked else LOCAL_ENGINE_ID
        fallback = not picked

    settings = config.settings(engine_id) if config is not None else EngineSettings()
    if engine_id == LOCAL_ENGINE_ID and endpoint is not None:
        raise UsageError("--endpoint is for the CortexDB engines; the local engine takes --path")
    if engine_id != LOCAL_ENGINE_ID and path is not None:
        raise UsageError(f"--path is for the local engine, not `{engine_id}`")
    if endpoint is not None:
        settings = replace(settings, endpoint=endpoint)
    if path is not None:
        check_path(path, create=create)
        settings = replace(settings, path=path)

    descriptor = registry.describe_engine(engine_id)  # ConfigError for an unknown id
    credential = EngineCredential.from_env(engine_id, env)
    if descriptor.needs_key and credential.is_missing():
        raise ConfigError(_needs_key_hint(engine_id))

    note = None
    if engine_id == LOCAL_ENGINE_ID and not (settings.path or "").strip():
        # Resolved here from the CLI's own environment (not os.environ inside
        # the registry), so the note names exactly the file that is opened.
        database = paths.default_database_path(env, create=True)
        settings = replace(settings, path=str(database))
        if fallback:
            note = (
                "no config file and no credential in the environment; "
                f"using the local engine at {database}"
            )
    return Selection(engine_id, settings, credential, note, found)

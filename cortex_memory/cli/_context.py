"""What a CLI command receives (``Context``) and how a command is declared (``Command``)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from cortex_memory.cli._console import Console
from cortex_memory.cli._select import select_engine
from cortex_memory.config import EngineSettings
from cortex_memory.contract.engine import MemoryEngine

__all__ = ["Command", "Context"]


class Context:
    """One command run: the parsed arguments, the environment and the console.

    :meth:`open_engine` selects and builds the engine the global options and
    the config ask for (see ``cortex_memory.cli._select``), saying on stderr
    when it falls back to the local engine.
    """

    def __init__(
        self, args: argparse.Namespace, env: Mapping[str, str], console: Console
    ) -> None:
        self.args = args
        self.env = env
        self.console = console
        self.engine_id: Optional[str] = None
        self.settings: Optional[EngineSettings] = None

    def open_engine(self) -> MemoryEngine:
        """Select and build the engine for this command; the caller closes it."""
        selection = select_engine(
            engine=self.args.engine,
            endpoint=self.args.endpoint,
            path=self.args.path,
            config_file=self.args.config,
            env=self.env,
            create=bool(getattr(self.args, "create", False)),
        )
        for warning in selection.config_warnings:
            self.console.warn(warning)
        if selection.note is not None:
            self.console.note(selection.note)
        self.engine_id = selection.engine_id
        self.settings = selection.settings
        return selection.build()


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, one-line summary, option set-up and runner.

    ``run`` returns the exit status. Library errors it raises are reported by
    ``main`` (``cortex-memory: <error>`` on stderr and the status of the error
    class), so commands never print tracebacks or format errors themselves.
    """

    name: str
    summary: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Context], int]
    description: Optional[str] = None

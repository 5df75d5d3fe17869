"""The ``cortex-memory`` command (also ``python -m cortex_memory``).

::

    cortex-memory demo                        # a short session on a temporary local database
    cortex-memory store "The team ships on Tuesdays" --tag release
    cortex-memory list --tag release
    cortex-memory fetch release day --mode keyword
    cortex-memory recall "When do we ship?"
    cortex-memory get <id>
    cortex-memory forget <id>
    cortex-memory health
    cortex-memory engines
    cortex-memory import notes/               # text files, folders, or an export (.jsonl)
    cortex-memory export backup.jsonl         # every item, one JSON line each (`-`: stdout)
    cortex-memory copy --to cortexdb          # into another engine; a re-run resumes

Global options (before or after the command): ``--json``, ``--config PATH``,
``--engine ID``, ``--endpoint URL``, ``--path DB`` (its folder must exist unless
``--create`` is given). ``get`` and ``forget`` take whole ids or unambiguous
prefixes of at least 8 hex digits. Without any of them and
without a config file or a credential in the environment, commands use the
local engine at the per-user database and say so on stderr. Credentials come
only from the environment: ``CORTEX_MEMORY_API_KEY`` (cortexdb) and
``CORTEX_MEMORY_TINYHUMANS_TOKEN`` (tinyhumans).

Results go to stdout; notes and errors go to stderr as ``cortex-memory:
<message>``. Exit status: see :data:`EXIT_CODES` (0 success, 1 failure or
engine down, 2 usage (an ambiguous or too short id prefix, a ``--path`` in a
missing folder), 3 configuration, 4 invalid request, 5 unauthorized, 6 not
found (also ``get`` of an id not held and ``forget`` of an id that matched
nothing), 7 conflict, 8 unavailable, 9 unsupported, 10 engine error, 130
interrupted); ``health`` exits 0 only when ok: 5 for a rejected credential, 8
when unreachable or degraded, 1 when down otherwise. ``import`` and ``copy``
exit with the status of the engine error that stopped them, else with the
status their failed inputs share (1 when they differ). docs/cli.md has the table.

Subcommands are declared in one table (:data:`COMMANDS`); adding one (such
as an ``mcp`` server command) is one :class:`Command` entry.
"""

from __future__ import annotations

import os
import sys
from typing import Dict, Mapping, Optional, Sequence, TextIO, Tuple

from cortex_memory import __version__
from cortex_memory.cli._commands import COMMANDS as _EVERYDAY
from cortex_memory.cli._console import PROG, Console
from cortex_memory.cli._context import Command, Context
from cortex_memory.cli._demo import DEMO
from cortex_memory.cli._exits import (
    EXIT_CODES,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    exit_code,
)
from cortex_memory.cli._export import COPY, EXPORT
from cortex_memory.cli._import import IMPORT
from cortex_memory.cli._mcp import MCP
from cortex_memory.cli._options import Parser, ParserExit, add_global_options
from cortex_memory.cli._select import UsageError
from cortex_memory.errors import Error

__all__ = ["COMMANDS", "Command", "Context", "EXIT_CODES", "exit_code", "main"]

#: Every subcommand, in help order. The lead wires ``mcp`` here.
COMMANDS: Tuple[Command, ...] = (DEMO, *_EVERYDAY, IMPORT, EXPORT, COPY, MCP)


_EPILOG = (
    "Without --engine, --path or a config file, commands use the local engine at the "
    "per-user database (a note on stderr says where). Credentials come only from the "
    "environment: CORTEX_MEMORY_API_KEY (cortexdb), CORTEX_MEMORY_TINYHUMANS_TOKEN "
    "(tinyhumans). get and forget take whole ids or prefixes of 8+ hex digits. "
    "Exit status: 0 ok, 1 failure, 2 usage (also an ambiguous id prefix, --path in a "
    "missing folder without --create), 3 config, 4 invalid request, 5 unauthorized, "
    "6 not found (also get or forget of an id that matches nothing), 7 conflict, "
    "8 unavailable (retry later), 9 unsupported, 10 engine error, 130 interrupted; "
    "health: 0 only when ok (5 key rejected, 8 unreachable). import and copy: the status of "
    "the error that stopped them, else of their failed inputs; a re-run resumes."
)


def _parser(streams: Dict[str, TextIO], commands: Sequence[Command]) -> Parser:
    parser = Parser(
        prog=PROG,
        description="Durable memory for applications and agents: store, list, fetch, "
        "recall and forget, on CortexDB or the embedded local engine.",
        epilog=_EPILOG,
        streams=streams,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    add_global_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in commands:
        child = sub.add_parser(
            command.name,
            help=command.summary,
            description=command.description or command.summary,
            streams=streams,
        )
        command.configure(child)
        add_global_options(child, suppress=True)
    return parser


def main(
    argv: Optional[Sequence[str]] = None,
    *,
    env: Optional[Mapping[str, str]] = None,
    stdin: Optional[TextIO] = None,
    stdout: Optional[TextIO] = None,
    stderr: Optional[TextIO] = None,
) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit status.

    ``env`` and the streams default to the process's own; tests pass their own
    to run commands in-process. Library errors are printed as
    ``cortex-memory: <error>`` on stderr, never as a traceback.
    """
    console = Console(
        sys.stdin if stdin is None else stdin,
        sys.stdout if stdout is None else stdout,
        sys.stderr if stderr is None else stderr,
    )
    streams = {"out": console.stdout, "err": console.stderr}
    parser = _parser(streams, COMMANDS)
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    except ParserExit as exc:
        return exc.status
    if args.command is None:
        console.stderr.write(parser.format_help())
        return EXIT_USAGE
    console.json_mode = bool(args.json)
    command = next(c for c in COMMANDS if c.name == args.command)
    ctx = Context(args, os.environ if env is None else env, console)
    try:
        status = command.run(ctx)
        console.flush()
        return status
    except UsageError as exc:
        console.error(str(exc))
        return EXIT_USAGE
    except Error as exc:
        console.error(str(exc))
        return exit_code(exc)
    except KeyboardInterrupt:
        console.error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`cortex-memory list | head`): not an error worth
        # a message. Point stdout at devnull so the interpreter's final flush
        # does not raise again.
        _silence_stdout(console)
        return EXIT_FAILURE


def _silence_stdout(console: Console) -> None:
    if console.stdout is sys.stdout:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover - stdout without a descriptor
            pass
        finally:
            os.close(devnull)

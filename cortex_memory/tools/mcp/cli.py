"""Running the MCP server as a program: arguments, engine, ledger, stdio.

``python -m cortex_memory.tools.mcp --engine local --path DB [--session ID]``
serves stdin/stdout until end of input (:func:`main`). A host command line
that selects engines by its own rules (config file, environment) adds only
the server's options with :func:`add_server_arguments` and calls
:func:`serve_stdio` with the engine it built; :func:`default_ledger_path`
gives the ledger's default place.

While serving, ``sys.stdout`` is pointed at stderr so that nothing but the
protocol (written to the real stdout's buffer) can reach the client, even a
stray ``print`` in a host plugin. Logs go to stderr and never carry payloads.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import IO, List, Optional, Sequence

from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.errors import Error
from cortex_memory.tools.mcp.ledger import Ledger
from cortex_memory.tools.mcp.server import McpServer
from cortex_memory.tools.mcp.writes import MemoryWriter

__all__ = [
    "ENGINES",
    "add_arguments",
    "add_server_arguments",
    "build_parser",
    "default_ledger_path",
    "ledger_path_for",
    "main",
    "run",
    "serve_stdio",
]

logger = logging.getLogger(__name__)

#: Engines the server can run over.
ENGINES = ("local", "cortexdb", "tinyhumans")
_MEMORY = ":memory:"
_LEDGER_SUFFIX = ".mcp-ledger.sqlite3"
_KEY_ENV = {"cortexdb": "CORTEX_MEMORY_API_KEY", "tinyhumans": "CORTEX_MEMORY_TINYHUMANS_TOKEN"}


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the server's own options: ``--ledger``, ``--session``, ``--log-level``."""
    parser.add_argument(
        "--ledger",
        help="write ledger file (default: next to the local database, or in the data folder)",
    )
    parser.add_argument(
        "--session",
        action="append",
        default=[],
        metavar="ID",
        help="start a session observations may name (repeatable)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="stderr log level (WARNING)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every option of ``python -m cortex_memory.tools.mcp``: engine and server."""
    parser.add_argument(
        "--engine", choices=ENGINES, default="local", help="the engine to store into (local)"
    )
    parser.add_argument(
        "--path", help="local engine database (default: the per-user data path; :memory: ok)"
    )
    parser.add_argument("--endpoint", help="CortexDB endpoint (cortexdb and tinyhumans engines)")
    parser.add_argument("--namespace", help="namespace observations are stored at (root)")
    add_server_arguments(parser)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m cortex_memory.tools.mcp``."""
    parser = argparse.ArgumentParser(
        prog="python -m cortex_memory.tools.mcp",
        description="Serve cortex_save and cortex_handoff over MCP (stdio, JSON-RPC 2.0).",
    )
    add_arguments(parser)
    return parser


def ledger_path_for(database: str) -> str:
    """The default ledger next to a local database (``:memory:`` stays in memory)."""
    if database == _MEMORY:
        return _MEMORY
    path = Path(database)
    return str(path.with_name(path.name + _LEDGER_SUFFIX))


def _local_path(args: argparse.Namespace) -> str:
    if args.path:
        return str(args.path)
    from cortex_memory.paths import default_database_path

    path = str(default_database_path(create=True))
    # Say where memory goes when nobody chose (stderr: stdout is the protocol's).
    sys.stderr.write(f"cortex-memory mcp: using the local engine at {path}\n")
    return path


def _open_engine(args: argparse.Namespace, local_path: Optional[str]) -> MemoryEngine:
    if local_path is not None:
        from cortex_memory.local import LocalEngine

        return LocalEngine(local_path)
    # Credentials come from the environment only, never from a flag or a file.
    key = os.environ.get(_KEY_ENV[args.engine], "")
    if not key:
        raise _UsageError(f"set {_KEY_ENV[args.engine]} to use the {args.engine} engine")
    from cortex_memory.config import EngineSettings
    from cortex_memory.registry import EngineCredential, build_engine

    settings = EngineSettings(endpoint=args.endpoint)
    return build_engine(args.engine, settings, EngineCredential.static(key))


def default_ledger_path(local_path: Optional[str]) -> str:
    """Where the ledger lives by default: next to a local database, else in the data folder."""
    if local_path is not None:
        return ledger_path_for(local_path)
    from cortex_memory.paths import ensure_data_dir

    return str(ensure_data_dir() / "mcp-ledger.sqlite3")


class _UsageError(Exception):
    """A setup problem to report on stderr (exit status 2)."""


def serve_stdio(
    engine: MemoryEngine,
    *,
    ledger_path: str,
    sessions: Sequence[str] = (),
    namespace: Optional[str] = None,
    stdin: Optional[IO[bytes]] = None,
    stdout: Optional[IO[bytes]] = None,
) -> int:
    """Serve MCP over ``engine`` until end of input; return the exit status (0).

    Opens (and closes) the ledger at ``ledger_path``, starts ``sessions``, and
    reads and writes the process's binary stdin/stdout unless streams are
    given. While serving, ``sys.stdout`` points at stderr, so only protocol
    reaches the client. The engine stays open: it belongs to the caller.
    """
    protocol_in = sys.stdin.buffer if stdin is None else stdin
    protocol_out = sys.stdout.buffer if stdout is None else stdout
    ledger = Ledger(ledger_path)
    try:
        for session in sessions:
            ledger.start_session(session)
        writer = MemoryWriter(engine, ledger, namespace=namespace)
        from cortex_memory import __version__

        server = McpServer(writer, version=__version__)
        logger.info("serving MCP on stdio with engine `%s`", engine.descriptor().id)
        with contextlib.redirect_stdout(sys.stderr):
            server.serve(protocol_in, protocol_out)
        return 0
    finally:
        ledger.close()


def run(args: argparse.Namespace) -> int:
    """Serve stdin/stdout with the options :func:`add_arguments` defined; return the status."""
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, args.log_level, logging.WARNING))
    try:
        local_path = _local_path(args) if args.engine == "local" else None
        engine = _open_engine(args, local_path)
    except (Error, _UsageError, ImportError) as exc:
        sys.stderr.write(f"cortex-memory mcp: {exc}\n")
        return 2
    try:
        ledger_path = args.ledger or default_ledger_path(local_path)
        return serve_stdio(
            engine, ledger_path=ledger_path, sessions=args.session, namespace=args.namespace
        )
    except Error as exc:
        sys.stderr.write(f"cortex-memory mcp: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        engine.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and serve; return the exit status."""
    arguments: List[str] = list(sys.argv[1:] if argv is None else argv)
    return run(build_parser().parse_args(arguments))

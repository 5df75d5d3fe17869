"""Running the MCP server as a program: arguments, engine, ledger, stdio.

``python -m cortex_memory.tools.mcp --engine local --path DB [--session ID]``
serves stdin/stdout until end of input. The top-level ``cortex-memory mcp``
command reuses :func:`add_arguments` and :func:`run` (or :func:`main`).

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
from typing import List, Optional, Sequence

from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.errors import Error
from cortex_memory.tools.mcp.ledger import Ledger
from cortex_memory.tools.mcp.server import McpServer
from cortex_memory.tools.mcp.writes import MemoryWriter

__all__ = ["ENGINES", "add_arguments", "build_parser", "ledger_path_for", "main", "run"]

logger = logging.getLogger(__name__)

#: Engines the server can run over.
ENGINES = ("local", "cortexdb", "tinyhumans")
_MEMORY = ":memory:"
_LEDGER_SUFFIX = ".mcp-ledger.sqlite3"
_KEY_ENV = {"cortexdb": "CORTEX_MEMORY_API_KEY", "tinyhumans": "CORTEX_MEMORY_TINYHUMANS_TOKEN"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the server's options to ``parser`` (for ``cortex-memory mcp``)."""
    parser.add_argument(
        "--engine", choices=ENGINES, default="local", help="the engine to store into (local)"
    )
    parser.add_argument(
        "--path", help="local engine database (default: the per-user data path; :memory: ok)"
    )
    parser.add_argument("--endpoint", help="CortexDB endpoint (cortexdb and tinyhumans engines)")
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
    parser.add_argument("--namespace", help="namespace observations are stored at (root)")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="stderr log level (WARNING)",
    )


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


def _ledger_path(args: argparse.Namespace, local_path: Optional[str]) -> str:
    if args.ledger:
        return str(args.ledger)
    if local_path is not None:
        return ledger_path_for(local_path)
    from cortex_memory.paths import ensure_data_dir

    return str(ensure_data_dir() / "mcp-ledger.sqlite3")


class _UsageError(Exception):
    """A setup problem to report on stderr (exit status 2)."""


def run(args: argparse.Namespace) -> int:
    """Serve stdin/stdout with the options in ``args``; return the exit status."""
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, args.log_level, logging.WARNING))
    protocol_out = sys.stdout.buffer
    protocol_in = sys.stdin.buffer
    try:
        local_path = _local_path(args) if args.engine == "local" else None
        engine = _open_engine(args, local_path)
    except (Error, _UsageError, ImportError) as exc:
        sys.stderr.write(f"cortex-memory mcp: {exc}\n")
        return 2
    ledger: Optional[Ledger] = None
    try:
        ledger = Ledger(_ledger_path(args, local_path))
        for session in args.session:
            ledger.start_session(session)
        writer = MemoryWriter(engine, ledger, namespace=args.namespace)
        from cortex_memory import __version__

        server = McpServer(writer, version=__version__)
        logger.info("serving MCP on stdio with the %s engine", args.engine)
        with contextlib.redirect_stdout(sys.stderr):
            server.serve(protocol_in, protocol_out)
        return 0
    except (Error, _UsageError) as exc:
        sys.stderr.write(f"cortex-memory mcp: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        if ledger is not None:
            ledger.close()
        engine.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``) and serve; return the exit status."""
    arguments: List[str] = list(sys.argv[1:] if argv is None else argv)
    return run(build_parser().parse_args(arguments))

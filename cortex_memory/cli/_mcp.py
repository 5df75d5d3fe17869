"""``cortex-memory mcp``: serve ``cortex_save`` and ``cortex_handoff`` over MCP on stdio.

The engine is chosen exactly as for every other command (flags, then the config
file, then a credential in the environment, else the local engine at the
per-user path, said on stderr). stdout then carries only the protocol.
"""

from __future__ import annotations

import argparse

from cortex_memory.cli._context import Command, Context
from cortex_memory.registry import LOCAL_ENGINE_ID

__all__ = ["MCP"]


def _configure(parser: argparse.ArgumentParser) -> None:
    from cortex_memory.tools.mcp import cli as mcp_cli

    mcp_cli.add_server_arguments(parser)
    parser.add_argument(
        "--store-namespace",
        metavar="NS",
        help="namespace observations are stored at (default: the root)",
    )


def _run(ctx: Context) -> int:
    from cortex_memory.tools.mcp import cli as mcp_cli

    engine = ctx.open_engine()
    try:
        local_path = None
        if ctx.engine_id == LOCAL_ENGINE_ID and ctx.settings is not None:
            local_path = ctx.settings.path
        ledger = ctx.args.ledger or mcp_cli.default_ledger_path(
            None if local_path is None else str(local_path)
        )
        return mcp_cli.serve_stdio(
            engine,
            ledger_path=ledger,
            sessions=ctx.args.session,
            namespace=ctx.args.store_namespace,
        )
    finally:
        engine.close()


MCP = Command(
    "mcp",
    "serve cortex_save and cortex_handoff to an MCP client over stdio",
    _configure,
    _run,
    description=(
        "Serve the MCP write tools (cortex_save, cortex_handoff) over stdin/stdout "
        "(JSON-RPC 2.0, newline-delimited). The engine is selected like every other "
        "command; notes and logs go to stderr, never to stdout."
    ),
)

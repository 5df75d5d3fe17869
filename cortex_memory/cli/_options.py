"""Command-line options shared by several commands, and their conversion to contract values.

Filter flags (``list``, ``fetch``, ``recall``, ``forget``) become a
:class:`~cortex_memory.contract.MetaFilter`; metadata flags (``store``) become a
:class:`~cortex_memory.contract.MemoryMeta`. Values are checked by the contract
itself (namespaces, kinds, timestamps), so the CLI refuses exactly what the
library refuses, with the same messages.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, NoReturn, Optional, TextIO, TypeVar

from cortex_memory.cli._console import PROG
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.jsonfmt import parse_timestamp
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind, ToolCallRef
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.errors import Error

__all__ = [
    "Parser",
    "ParserExit",
    "add_filter_options",
    "add_global_options",
    "add_home_options",
    "add_meta_options",
    "add_reach_options",
    "filter_from",
    "meta_from",
    "namespace_value",
    "reach_from",
    "split_values",
]

_T = TypeVar("_T")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_REACH_MODES = ("of", "exact", "subtree")


class ParserExit(Exception):
    """argparse wanted to exit (``--help``, a usage error): carries the status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that writes to the CLI's streams and never calls ``sys.exit``.

    ``main(argv)`` can then be called in-process (tests, hosts) and returns the
    status instead of raising ``SystemExit``.
    """

    def __init__(self, *args: Any, streams: Dict[str, TextIO], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._streams = streams

    def _print_message(self, message: str, file: Optional[Any] = None) -> None:
        if not message:
            return
        # argparse passes sys.stderr for errors and sys.stdout (or None) for help.
        target = self._streams["err"] if file is sys.stderr else self._streams["out"]
        target.write(message)

    def exit(self, status: int = 0, message: Optional[str] = None) -> NoReturn:
        if message:
            self._streams["err"].write(message)
        raise ParserExit(status)

    def error(self, message: str) -> NoReturn:
        self._streams["err"].write(self.format_usage())
        self._streams["err"].write(f"{PROG}: error: {message}\n")
        raise ParserExit(2)


# ----------------------------------------------------------- global options


#: The global options in help order: flag, metavar (``None`` for a switch), help.
_GLOBAL_OPTIONS = (
    ("--json", None, "print machine-readable JSON (the contract's shapes) instead of text"),
    (
        "--config", "PATH",
        "config file (default: $CORTEX_MEMORY_CONFIG, else the per-user config.toml)",
    ),
    (
        "--engine", "ID",
        "engine id: cortexdb, tinyhumans or local (see `cortex-memory engines`)",
    ),
    ("--endpoint", "URL", "endpoint of a CortexDB engine (overrides the config)"),
    (
        "--path", "DB",
        "database file of the local engine (implies --engine local); its folder "
        "must exist unless --create is given",
    ),
    ("--create", None, "with --path: create the database's folder when it does not exist"),
)


def add_global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The options every command takes, before or after the command name.

    On subcommands the defaults are suppressed, so a flag given before the
    command is not reset by the subcommand's own parser.
    """
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options")
    for flag, metavar, text in _GLOBAL_OPTIONS:
        if metavar is None:  # a switch
            group.add_argument(flag, action="store_true", default=default(False), help=text)
        else:
            group.add_argument(flag, metavar=metavar, default=default(None), help=text)


# ----------------------------------------------------------- filter options


def _argument_type(name: str, parse: Callable[[str], _T]) -> Callable[[str], _T]:
    """An argparse ``type`` named ``name``: ``parse``, with a library ``Error`` as its message."""

    def convert(text: str) -> _T:
        try:
            return parse(text)
        except Error as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = convert.__qualname__ = name  # argparse names the type in some messages
    return convert


def _parse_instant(text: str) -> datetime:
    """An RFC 3339 instant, ``now``, or a bare date (midnight UTC)."""
    if text == "now":
        return datetime.now(timezone.utc)
    if _DATE.fullmatch(text):
        text += "T00:00:00Z"
    return parse_timestamp(text)


_kind = _argument_type("_kind", lambda text: ItemKind.parse(text, "item type"))
_source_kind = _argument_type("_source_kind", lambda text: SourceKind.parse(text, "source kind"))
_namespace = _argument_type("_namespace", Namespace.parse)
_instant = _argument_type("_instant", _parse_instant)


def namespace_value(text: str) -> Namespace:
    """An argparse ``type`` for a namespace (``team:acme/agent:writer``)."""
    return _namespace(text)


_STRING_FIELDS = (
    ("workspace", "workspace (exact)"),
    ("folder", "folder (path prefix: /a/b matches /a/b/c)"),
    ("file-path", "file path (path prefix)"),
    ("language", "language (exact)"),
    ("repo", "repository (exact)"),
    ("commit", "commit (exact)"),
    ("url", "URL (exact)"),
    ("thread-id", "conversation thread"),
    ("agent-id", "producing agent"),
)


#: The attributes the string flags set: keywords of both ``MetaFilter`` and ``MemoryMeta``.
_STRING_NAMES = tuple(flag.replace("-", "_") for flag, _ in _STRING_FIELDS)


def _string_fields(args: argparse.Namespace) -> Dict[str, Any]:
    # The plain string fields a filter and an item's meta share, as keywords.
    return {name: getattr(args, name) for name in _STRING_NAMES}


def add_reach_options(group: Any) -> None:
    """``--namespace`` and ``--reach``: which part of the namespace tree a read covers."""
    group.add_argument(
        "--namespace", metavar="NS", type=_namespace,
        help="namespace to read, e.g. team:acme/agent:writer (see --reach)",
    )
    group.add_argument(
        "--reach", choices=_REACH_MODES,
        help="with --namespace: `of` (the node and its ancestors, default), "
        "`exact` (the node only) or `subtree` (the node and below)",
    )


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """Flags that build a :class:`MetaFilter`; every flag given must hold."""
    group = parser.add_argument_group("filter (every option given must hold)")
    group.add_argument(
        "--type", dest="types", metavar="TYPE", action="append", type=_kind, default=[],
        help="item type: document, conversation or learning (repeatable: any of them)",
    )
    group.add_argument(
        "--tag", dest="tags", metavar="TAG", action="append", default=[],
        help="carries this tag (repeatable: any of them)",
    )
    add_reach_options(group)
    for flag, text in _STRING_FIELDS:
        group.add_argument(f"--{flag}", metavar="VALUE", help=text)
    group.add_argument("--tool-call", metavar="NAME", help="producing tool's name")
    group.add_argument("--source-id", metavar="ID", help="source id")
    group.add_argument(
        "--source", dest="sources", metavar="KIND", action="append", type=_source_kind,
        default=[], help="source kind: folder, file, conversation, agent, import (repeatable)",
    )
    group.add_argument(
        "--after", metavar="TIME", type=_instant,
        help="observed at or after TIME (RFC 3339, a date, or `now`)",
    )
    group.add_argument(
        "--before", metavar="TIME", type=_instant, help="observed before TIME"
    )


def reach_from(args: argparse.Namespace) -> Optional[Reach]:
    """The reach the flags ask for: none unless ``--namespace`` or ``--reach`` is given."""
    namespace: Optional[Namespace] = args.namespace
    mode: Optional[str] = args.reach
    if namespace is None and mode is None:
        return None
    at = namespace if namespace is not None else Namespace.root()
    if mode == "exact":
        return Reach.exact(at)
    if mode == "subtree":
        return Reach.subtree(at)
    return Reach.of(at)


def filter_from(args: argparse.Namespace) -> MetaFilter:
    """The :class:`MetaFilter` the filter flags describe (empty when none is given)."""
    return MetaFilter(
        reach=reach_from(args),
        **_string_fields(args),
        tool_call=args.tool_call,
        source_id=args.source_id,
        kinds=tuple(dict.fromkeys(args.types)),
        sources=tuple(dict.fromkeys(args.sources)),
        tags_any=tuple(dict.fromkeys(args.tags)),
        observed_after=args.after,
        observed_before=args.before,
    )


# ------------------------------------------------------------- meta options


def add_home_options(group: Any, *, lives: str, tags: str) -> None:
    """``--namespace`` (where stored items live) and repeatable ``--tag``, with their helps."""
    group.add_argument("--namespace", metavar="NS", type=_namespace, help=lives)
    group.add_argument(
        "--tag", dest="tags", metavar="TAG", action="append", default=[], help=tags
    )


def add_meta_options(parser: argparse.ArgumentParser) -> None:
    """Flags that build the stored item's :class:`MemoryMeta`."""
    group = parser.add_argument_group("metadata")
    add_home_options(
        group,
        lives="where the item lives, e.g. user:alice (default: the root)",
        tags="a free-form tag (repeatable)",
    )
    for flag, text in _STRING_FIELDS:
        group.add_argument(f"--{flag}", metavar="VALUE", help=text.split(" (")[0])
    group.add_argument("--tool-call", metavar="NAME", help="producing tool's name")
    group.add_argument(
        "--source", metavar="KIND", type=_source_kind,
        help="source kind: folder, file, conversation, agent (default), import",
    )
    group.add_argument("--source-id", metavar="ID", help="source id")
    group.add_argument(
        "--observed-at", metavar="TIME", type=_instant,
        help="when it was observed (RFC 3339, a date, or `now`); not part of the id",
    )
    group.add_argument(
        "--no-derive", action="store_true",
        help="index the item but derive no facts or beliefs from it",
    )


def meta_from(args: argparse.Namespace) -> MemoryMeta:
    """The :class:`MemoryMeta` the metadata flags describe."""
    source = Source(
        args.source if args.source is not None else SourceKind.AGENT, args.source_id
    )
    return MemoryMeta(
        namespace=args.namespace if args.namespace is not None else Namespace.root(),
        **_string_fields(args),
        tool_call=None if args.tool_call is None else ToolCallRef(args.tool_call),
        source=source,
        tags=tuple(dict.fromkeys(args.tags)),
        observed_at=args.observed_at,
        derive=False if args.no_derive else None,
    )


def split_values(values: List[str]) -> List[str]:
    """Ids given as separate words or comma-separated, blanks dropped."""
    out: List[str] = []
    for value in values:
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return out

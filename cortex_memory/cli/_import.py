"""``cortex-memory import PATH...``: files, folders and exports into the selected engine.

A PATH is a text file (one document), a folder (every text file below it,
see :mod:`cortex_memory.cli._files`), a ``.jsonl`` export written by
``cortex-memory export``, or ``-`` for an export piped on stdin. Every PATH
is checked before anything is stored: one that does not exist is a usage
error (exit 2) and nothing is imported.

Files replace their older versions by default (``--no-replace`` keeps them):
re-importing an edited file leaves only its new text. Export lines are stored
as they are (``--replace`` makes those with a source identity replace too).
"""

from __future__ import annotations

import argparse
import os
import re
import stat
from typing import Callable, Dict, Iterator, List, Optional, Tuple

from cortex_memory.cli._context import Command, Context
from cortex_memory.cli._files import FileOptions, count_entries, file_entries
from cortex_memory.cli._jsonl import jsonl_entries
from cortex_memory.cli._options import add_home_options
from cortex_memory.cli._progress import Progress
from cortex_memory.cli._select import UsageError
from cortex_memory.cli._transfer import Entry, Tally, Transfer
from cortex_memory.contract.namespace import Namespace

__all__ = ["IMPORT", "finish_transfer"]

_ABSOLUTE = re.compile(r"^([/\\~]|[A-Za-z]:)")
_STDIN = "-"
# Kinds of PATH.
_FILE, _FOLDER, _JSONL = "file", "folder", "jsonl"


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", metavar="PATH",
        help="a text file, a folder (every text file below it), an export (.jsonl) or "
        "`-` (an export on stdin)",
    )
    replacing = p.add_mutually_exclusive_group()
    replacing.add_argument(
        "--replace", dest="replace", action="store_true", default=None,
        help="an item replaces the older versions of its source (default for files; "
        "for export lines, those with a source id or file path)",
    )
    replacing.add_argument(
        "--no-replace", dest="replace", action="store_false",
        help="keep older versions: an edited file becomes a second item",
    )
    files = p.add_argument_group("files and folders")
    add_home_options(
        files,
        lives="where the documents live, e.g. user:alice (default: the root)",
        tags="a tag for every document (repeatable)",
    )
    files.add_argument(
        "--prefix", metavar="PATH",
        help="a relative path put before each document's file path (e.g. `handbook`); "
        "tells apart folders whose files share names",
    )
    files.add_argument(
        "--include", metavar="PATTERN", action="append", default=[],
        help="in folders, take only file names matching PATTERN, e.g. '*.md' (repeatable)",
    )
    files.add_argument(
        "--no-derive", action="store_true",
        help="index the documents but derive no facts or beliefs from them",
    )


def _classify(paths: List[str]) -> List[Tuple[str, str]]:
    """Each PATH with its kind; every problem is named before anything is imported."""
    kinds: List[Tuple[str, str]] = []
    problems: List[str] = []
    if paths.count(_STDIN) > 1:
        problems.append("`-` (stdin) may be given once")
    for path in dict.fromkeys(paths):
        if path == _STDIN:
            kinds.append((path, _JSONL))
            continue
        try:
            info = os.stat(path)
        except FileNotFoundError:
            problems.append(f"no such file or folder: {path}")
            continue
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            problems.append(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}")
            continue
        if stat.S_ISDIR(info.st_mode):
            kinds.append((path, _FOLDER))
        elif not stat.S_ISREG(info.st_mode):
            problems.append(f"not a file or a folder: {path}")
        elif path.lower().endswith(".jsonl"):
            kinds.append((path, _JSONL))
        else:
            kinds.append((path, _FILE))
    if problems:
        raise UsageError("; ".join(problems) + "; nothing was imported")
    return kinds


def _prefix(text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    cleaned = text.strip().strip("/")
    if not cleaned:
        raise UsageError("--prefix must not be blank")
    if _ABSOLUTE.match(text.strip()) or ".." in cleaned.split("/"):
        raise UsageError(
            f"--prefix must be a relative path such as `handbook`, not {text!r}: a file "
            "path never holds a local folder"
        )
    return cleaned


def _options(ctx: Context, kinds: List[Tuple[str, str]]) -> FileOptions:
    args = ctx.args
    has_files = any(kind != _JSONL for _, kind in kinds)
    given = [flag for flag, on in (
        ("--namespace", args.namespace is not None), ("--tag", bool(args.tags)),
        ("--prefix", args.prefix is not None), ("--include", bool(args.include)),
        ("--no-derive", args.no_derive),
    ) if on]
    if given and not has_files:
        raise UsageError(
            f"{', '.join(given)} apply to files and folders; export lines keep their own "
            "metadata"
        )
    return FileOptions(
        namespace=args.namespace if args.namespace is not None else Namespace.root(),
        tags=tuple(dict.fromkeys(args.tags)),
        prefix=_prefix(args.prefix),
        include=tuple(args.include),
        replace=args.replace is not False,
        derive=False if args.no_derive else None,
    )


def _entries(ctx: Context, kinds: List[Tuple[str, str]], options: FileOptions) -> Iterator[Entry]:
    replace_lines = ctx.args.replace is True
    for path, kind in kinds:
        if kind == _JSONL:
            if path == _STDIN:
                yield from jsonl_entries("stdin", ctx.console.stdin, replace=replace_lines)
                continue
            try:
                with open(path, "rb") as handle:
                    yield from jsonl_entries(path, handle, replace=replace_lines)
            except OSError as exc:
                yield Entry.fail(path, f"cannot read: {exc.strerror or exc}")
        else:
            yield from file_entries(path, options, folder=kind == _FOLDER)


def _unclashed(entries: Iterator[Entry], watch: bool) -> Iterator[Entry]:
    """Refuse a second file with the file path of an earlier one in this import.

    With replace on, the second would replace the first. Only needed when
    several files or folders are given (inside one folder, paths are unique),
    so only then are the paths remembered.
    """
    if not watch:
        yield from entries
        return
    seen: Dict[Tuple[str, str], str] = {}
    for entry in entries:
        item = entry.item
        if item is not None and entry.replace and item.meta.file_path is not None:
            key = (str(item.meta.namespace), item.meta.file_path)
            first = seen.setdefault(key, entry.label)
            if first != entry.label:
                yield Entry.fail(
                    entry.label,
                    f"has the file path `{item.meta.file_path}` of {first}, imported just "
                    "before: it would replace it; import it on its own with --prefix",
                )
                continue
        yield entry


def _total(kinds: List[Tuple[str, str]], options: FileOptions) -> Optional[int]:
    total = 0
    for path, kind in kinds:
        if kind == _JSONL:
            if path == _STDIN:
                return None
            total += _count_lines(path)
        else:
            total += count_entries([(path, kind == _FOLDER)], options)
    return total


def _count_lines(path: str) -> int:
    """Lines holding something (runs of newlines count once), reading 1 MiB at a time."""
    count, last = 0, b"\n"
    try:
        with open(path, "rb") as handle:
            while True:
                chunk = handle.read(1 << 20)
                if not chunk:
                    break
                runs = len(re.findall(rb"\n+", chunk))
                if chunk[:1] == b"\n" and last == b"\n":
                    runs -= 1  # a run begun before this chunk (or at the file's start)
                count += runs
                last = chunk[-1:]
    except OSError:
        return 0  # the import itself reports the file
    return count + (last != b"\n")


def finish_transfer(
    ctx: Context, progress: Progress, tally: Tally, verb: str, run: Callable[[], object]
) -> int:
    """Run ``run()`` (a transfer into ``tally``), then report: the summary on stdout
    (or the JSON one), a stop on stderr; the exit status."""
    try:
        run()
    except KeyboardInterrupt:
        progress.finish()
        ctx.console.out(tally.summary(verb) + " before the interruption")
        raise
    progress.finish()
    if tally.stopped is not None:
        progress.note(
            f"stopped: {tally.stopped}; run the same command again to go on "
            "(what was stored is replayed, not stored twice)"
        )
    if ctx.console.json_mode:
        ctx.console.json(tally.to_json(verb))
    else:
        ctx.console.out(tally.summary(verb))
    return tally.status()


def _run(ctx: Context) -> int:
    kinds = _classify(list(ctx.args.paths))
    options = _options(ctx, kinds)
    tally = Tally()
    progress = Progress(ctx.console, "importing", "inputs")
    with ctx.open_engine() as engine:
        progress.start(None if progress.mode == "off" else _total(kinds, options))
        several = sum(1 for _, kind in kinds if kind != _JSONL) > 1
        entries = _unclashed(_entries(ctx, kinds, options), several)
        transfer = Transfer(engine, progress, tally)
        return finish_transfer(ctx, progress, tally, "imported", lambda: transfer.run(entries))


IMPORT = Command(
    "import",
    "store text files, folders (recursively) or an export (.jsonl), with progress",
    _configure,
    _run,
    description="Store text and Markdown files (one document per file, its path relative "
    "to the folder given as file_path; an edited file replaces its older version) or "
    "the lines of an export written by `cortex-memory export`. Hidden files, binary "
    "files and files that are not UTF-8 are skipped and named.",
)

"""``cortex-memory export FILE`` and ``cortex-memory copy --to ENGINE``.

``export`` writes every item the filter admits, one JSON line each (the
format is in :mod:`cortex_memory.cli._jsonl`), streaming: one page of items
is held at a time. A FILE is written whole or not at all: the lines go to a
temporary file beside it (created private to the user, ``0600``), which is
flushed to disk and then renamed over FILE; a failure part-way removes it and
leaves any earlier FILE as it was. ``-`` writes to stdout instead.

``copy`` reads the same way and stores into another engine through the same
bounded batches as ``import`` (:class:`~cortex_memory.cli._transfer.Transfer`).
It is resumable and idempotent because ids are fingerprints: the same item
stored again is a replay, so running a stopped copy again stores only what is
missing, and running a finished one again stores nothing new. The source is
left as it is.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from typing import Callable, Iterator, List, Optional

from cortex_memory.cli._context import Command, Context
from cortex_memory.cli._exits import EXIT_FAILURE
from cortex_memory.cli._import import finish_transfer
from cortex_memory.cli._jsonl import export_line
from cortex_memory.cli._options import add_filter_options, filter_from
from cortex_memory.cli._progress import Progress
from cortex_memory.cli._render import plural
from cortex_memory.cli._select import Selection, UsageError, check_path, select_engine
from cortex_memory.cli._source import Read, approximate_note, read_items
from cortex_memory.cli._transfer import SHOWN, Entry, Tally, Transfer
from cortex_memory.config import EngineSettings
from cortex_memory.contract.replacing import source_identity
from cortex_memory.contract.text import is_blank
from cortex_memory.registry import LOCAL_ENGINE_ID

__all__ = ["COPY", "EXPORT", "AtomicFile"]

_INCOMPLETE = "the engine lists it but cannot hand it back whole"


class AtomicFile:
    """A file written beside its final path and renamed over it on :meth:`commit`."""

    def __init__(self, path: str) -> None:
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise UsageError(f"{path} is a folder; give a file name")
        if not os.path.isdir(folder):
            raise UsageError(f"the folder of {path} does not exist: {folder}")
        try:
            # mkstemp creates the file 0600, with O_EXCL: never someone else's file.
            fd, self.temp = tempfile.mkstemp(
                prefix=f".{os.path.basename(path)}.", suffix=".part", dir=folder
            )
        except OSError as exc:
            raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.handle = os.fdopen(fd, "wb")

    def write(self, text: str) -> None:
        """Add ``text`` (raises ``UnicodeEncodeError`` before writing any of it)."""
        self.handle.write(text.encode("utf-8"))

    def commit(self) -> None:
        """Flush to disk and put the file in place."""
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        os.replace(self.temp, self.path)
        _sync_folder(os.path.dirname(os.path.abspath(self.path)))

    def abort(self) -> None:
        """Drop the temporary file; the final path is untouched."""
        self.handle.close()
        with contextlib.suppress(OSError):  # already gone
            os.unlink(self.temp)


def _sync_folder(folder: str) -> None:
    """Make the rename durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - file systems that refuse it
        pass
    finally:
        os.close(fd)


# ------------------------------------------------------------------ export


def _configure_export(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the JSONL file to write (`-`: stdout)")
    add_filter_options(p)


class _Counts:
    def __init__(self) -> None:
        self.exported = 0
        self.approximate = 0
        self.failed: List[str] = []
        self.failures = 0


def _run_export(ctx: Context) -> int:
    target: str = ctx.args.file
    if target == "-" and ctx.console.json_mode:
        raise UsageError("`export -` writes the items to stdout; --json has no room there")
    flt = filter_from(ctx.args)
    counts = _Counts()
    progress = Progress(ctx.console, "exporting", "items")
    with ctx.open_engine() as engine:
        engine_id = engine.descriptor().id
        out = None if target == "-" else AtomicFile(target)
        try:
            progress.start(None)
            for read in read_items(engine, flt):
                _export_one(ctx, progress, out, read, counts, engine_id)
            if out is not None:
                out.commit()
        except BaseException:
            if out is not None:
                out.abort()
            raise
        finally:
            progress.finish()
    where = "stdout" if out is None else target
    if ctx.console.json_mode:
        ctx.console.json({
            "exported": counts.exported, "approximate": counts.approximate,
            "failed": counts.failures, "failed_items": counts.failed, "file": target,
        })
    else:
        line = f"exported {plural(counts.exported, 'item')} to {where}"
        if counts.approximate:
            line += f" ({counts.approximate} rebuilt from the listing: approximate)"
        if counts.failures:
            line += f", failed {counts.failures}"
        (ctx.console.out if out is not None else progress.note)(line)
    return EXIT_FAILURE if counts.failures else 0


def _export_one(
    ctx: Context, progress: Progress, out: Optional[AtomicFile], read: Read,
    counts: _Counts, engine_id: str,
) -> None:
    problem = _INCOMPLETE
    if read.item is not None:
        line = export_line(read.id, read.item, approximate=read.approximate)
        try:
            if out is None:
                ctx.console.stdout.write(line)
            else:
                out.write(line)
            problem = ""
        except UnicodeEncodeError:
            problem = "its text cannot be written as UTF-8"
    if problem:
        counts.failures += 1
        if len(counts.failed) < SHOWN:
            counts.failed.append(read.id)
            progress.note(f"failed: {read.id}: {problem}")
    else:
        counts.exported += 1
        if read.approximate:
            if not counts.approximate:
                progress.note(approximate_note(engine_id))
            counts.approximate += 1
    progress.advance()


# -------------------------------------------------------------------- copy


def _configure_copy(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--to", required=True, metavar="ENGINE",
        help="the engine to copy into: cortexdb, tinyhumans or local (its settings come "
        "from the config file and the environment, as for --engine)",
    )
    p.add_argument("--to-path", metavar="DB", help="with --to local: the database file")
    p.add_argument("--to-endpoint", metavar="URL", help="with --to cortexdb: the endpoint")
    p.add_argument(
        "--replace", action="store_true",
        help="items with a source id or file path replace the target's older versions",
    )
    add_filter_options(p)


def _same_place(a_id: Optional[str], a: Optional[EngineSettings], b: Selection) -> bool:
    if a_id != b.engine_id or a is None:
        return False
    if a_id == LOCAL_ENGINE_ID:
        if not a.path or a.path == ":memory:":
            return False
        return os.path.realpath(a.path) == os.path.realpath(b.settings.path or "")
    return (a.endpoint or "") == (b.settings.endpoint or "")


def _target(ctx: Context) -> Selection:
    """The engine ``--to`` names, with ``--to-path``/``--to-endpoint`` (said as such)."""
    args = ctx.args
    create = bool(getattr(args, "create", False))
    local = args.to == LOCAL_ENGINE_ID
    if local and args.to_endpoint is not None:
        raise UsageError("--to-endpoint is for the CortexDB engines; --to local takes --to-path")
    if not local and args.to_path is not None:
        raise UsageError(f"--to-path is for --to local, not `{args.to}`")
    if args.to_path is not None:
        try:
            check_path(args.to_path, create=create)
        except UsageError as exc:
            raise UsageError(str(exc).replace("--path", "--to-path")) from None
    return select_engine(
        engine=args.to, endpoint=args.to_endpoint, path=args.to_path,
        config_file=args.config, env=ctx.env, create=create,
    )


def _copy_entries(
    reads: Iterator[Read], replace: bool, note: Callable[[], None]
) -> Iterator[Entry]:
    noted = False
    for read in reads:
        if read.item is None:
            yield Entry.fail(read.id, _INCOMPLETE)
            continue
        if read.approximate and not noted:
            note()
            noted = True
        identity = source_identity(read.item.meta)
        replacing = replace and identity is not None and not is_blank(identity.value)
        yield Entry(read.id, read.item, replace=replacing)


def _run_copy(ctx: Context) -> int:
    args = ctx.args
    flt = filter_from(args)
    target = _target(ctx)
    tally = Tally()
    progress = Progress(ctx.console, "copying", "items")
    with ctx.open_engine() as source:
        if _same_place(ctx.engine_id, ctx.settings, target):
            raise UsageError(
                "the source and the target are the same engine and database; "
                "give --to another engine, or --to-path another file"
            )
        with target.build() as into:
            progress.start(None)
            transfer = Transfer(into, progress, tally)
            source_id = source.descriptor().id
            entries = _copy_entries(
                read_items(source, flt), bool(args.replace),
                lambda: progress.note(approximate_note(source_id)),
            )
            return finish_transfer(ctx, progress, tally, "copied", lambda: transfer.run(entries))


EXPORT = Command(
    "export",
    "write every item (or those a filter selects) to a JSONL file, streaming",
    _configure_export,
    _run_export,
    description="Write the items the filter selects (default: all but service sandboxes) "
    "to FILE, one JSON object per line: {\"version\": 1, \"id\": ..., \"item\": ...}. "
    "FILE appears whole or not at all (written beside it, then renamed; private to "
    "you). `cortex-memory import FILE` reads it back.",
)

COPY = Command(
    "copy",
    "copy items from the selected engine into another (resumable: a re-run stores "
    "only what is missing)",
    _configure_copy,
    _run_copy,
    description="Copy the items the filter selects from the selected engine (--engine, "
    "--path, ...) into the engine --to names. Ids are fingerprints, so running it again "
    "stores nothing twice: a stopped copy is resumed by running the same command.",
)

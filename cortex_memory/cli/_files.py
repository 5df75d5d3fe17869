"""Files and folders as documents, for ``cortex-memory import``.

Each text file becomes one :class:`~cortex_memory.contract.Document`:

- ``meta.file_path`` is the file's path **relative to the folder given** (its
  bare name for a file given directly), with ``/`` separators on every system,
  behind ``--prefix`` when one is given. It is the document's source identity
  (what ``replace`` matches) and it never holds a local folder: an absolute
  path would name the person's home folder to a server;
- ``meta.source`` is ``file``, ``meta.observed_at`` the file's modification
  time (not part of the id);
- the title: a Markdown file (``.md``, ``.markdown``) whose first line with
  text is a ``# Heading`` gets that heading as its title and the rest as its
  body, so the stored item renders as the file does; any other file gets its
  name without the extension as its title and its whole text as its body;
- the media type: ``text/markdown``, ``text/x-rst`` or ``text/plain`` by
  extension (a fixed table, so the id does not depend on the machine).

A folder is walked recursively in name order. Left out, and said so: hidden
files and folders (a name starting with ``.``: ``.git`` is never entered),
symbolic links (not followed, so a walk never leaves the folder or loops),
anything that is not a regular file, files holding a NUL byte in their first
8 KiB (binary), files that are not UTF-8, empty files, and ``.jsonl`` files
(an export is imported by naming it as a PATH). A file above the 16 MiB an
item may hold is a failure, as is one that cannot be read.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterator, List, NamedTuple, Optional, Sequence, Tuple

from cortex_memory.cli._exits import EXIT_FAILURE
from cortex_memory.cli._transfer import Entry
from cortex_memory.contract.content import TextBody
from cortex_memory.contract.items import Document
from cortex_memory.contract.limits import MAX_ITEM_BYTES
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind
from cortex_memory.contract.namespace import Namespace
from cortex_memory.contract.text import is_blank

__all__ = ["FileOptions", "Found", "count_entries", "file_entries", "walk"]

# Bytes read to tell a binary file from a text one.
_SNIFF = 8192
_BOM = b"\xef\xbb\xbf"
_MARKDOWN = (".md", ".markdown", ".mdown", ".mkd")
_MIME = {**dict.fromkeys(_MARKDOWN, "text/markdown"), ".rst": "text/x-rst"}
_HEADING = re.compile(r"#[ \t]+(.*?)[ \t#]*")
_JSONL_FOUND = "a JSONL file (name it as a PATH to import an export)"
_INVALID_STATUS = 4  # InvalidRequestError's: the file breaks an item rule


@dataclass(frozen=True)
class FileOptions:
    """How files become documents: where they live, their tags, which names to take."""

    namespace: Namespace
    tags: Tuple[str, ...] = ()
    prefix: Optional[str] = None
    include: Tuple[str, ...] = ()
    replace: bool = True
    derive: Optional[bool] = None


class Found(NamedTuple):
    """One thing a walk finds; ``reason`` says why it is left out (None: a file to read)."""

    label: str
    path: str
    rel: str
    reason: Optional[str] = None
    failed: bool = False


def walk(given: str, options: FileOptions) -> Iterator[Found]:
    """Everything under the folder ``given``, files before subfolders, in name order.

    Reads no file: ``import`` walks once to count (for the progress total) and
    once to store.
    """
    stack: List[Tuple[str, str]] = [(given, "")]
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            shown = os.path.join(given, rel) if rel else given
            yield Found(shown, folder, rel, f"cannot read the folder: {exc.strerror or exc}", True)
            continue
        subfolders: List[Tuple[str, str]] = []
        for entry in entries:
            name = entry.name
            inner = f"{rel}/{name}" if rel else name
            label = os.path.join(given, inner)
            folder_here = _is_dir(entry)
            if not folder_here and options.include and not any(
                fnmatch.fnmatchcase(name, pattern) for pattern in options.include
            ):
                continue  # left out by --include: asked for, so not reported
            if name.startswith("."):
                yield Found(label + (os.sep if folder_here else ""), entry.path, inner, "hidden")
            elif entry.is_symlink():
                yield Found(label, entry.path, inner, "a symbolic link (not followed)")
            elif folder_here:
                subfolders.append((entry.path, inner))
            elif not _is_file(entry):
                yield Found(label, entry.path, inner, "not a regular file")
            elif name.lower().endswith(".jsonl"):
                yield Found(label, entry.path, inner, _JSONL_FOUND)
            else:
                yield Found(label, entry.path, inner)
        stack.extend(reversed(subfolders))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def file_entries(given: str, options: FileOptions, *, folder: bool) -> Iterator[Entry]:
    """The entries for the file or folder ``given`` (already known to exist)."""
    if not folder:
        name = os.path.basename(os.path.normpath(given))
        yield _entry(given, given, name, options)
        return
    for found in walk(given, options):
        if found.reason is None:
            yield _entry(found.label, found.path, found.rel, options)
        elif found.failed:
            yield Entry.fail(found.label, found.reason, EXIT_FAILURE)
        else:
            yield Entry.skip(found.label, found.reason)


def _entry(label: str, path: str, rel: str, options: FileOptions) -> Entry:
    text, mtime, problem = _read(path)
    if problem is not None:
        return problem.relabel(label)
    assert text is not None
    if is_blank(text):
        return Entry.skip(label, "empty")
    name = rel.rsplit("/", 1)[-1]
    stem, dot, suffix = name.rpartition(".")
    ext = f".{suffix.lower()}" if dot and stem else ""
    title, body = _title_and_body(text, ext, stem if dot and stem else name)
    file_path = f"{options.prefix}/{rel}" if options.prefix else rel
    meta = MemoryMeta(
        namespace=options.namespace,
        file_path=file_path,
        source=Source(SourceKind.FILE),
        tags=options.tags,
        observed_at=mtime,
        derive=options.derive,
    )
    document = Document(TextBody(body), title, _MIME.get(ext, "text/plain"), meta)
    return Entry(label, document, replace=options.replace)


def _title_and_body(text: str, ext: str, fallback: str) -> Tuple[str, str]:
    if ext in _MARKDOWN:
        head, newline, rest = text.lstrip("\r\n").partition("\n")
        match = _HEADING.fullmatch(head.rstrip("\r"))
        if match and match.group(1).strip() and newline and not is_blank(rest):
            return match.group(1).strip(), rest.lstrip("\r\n")
    return fallback, text


@dataclass(frozen=True)
class _Problem:
    """Why a file is not read: a skip reason, or a failure message and status."""

    message: str
    failure: bool = False
    status: int = EXIT_FAILURE

    def relabel(self, label: str) -> Entry:
        if self.failure:
            return Entry.fail(label, self.message, self.status)
        return Entry.skip(label, self.message)


def _read(path: str) -> Tuple[Optional[str], Optional[datetime], Optional[_Problem]]:
    """The file's text and modification time, or why there is none."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None, None, _Problem("not a regular file")
            head = handle.read(_SNIFF)
            if b"\x00" in head:
                return None, None, _Problem("binary (not text)")
            # A BOM is not text: the limit counts what would be stored.
            allowed = MAX_ITEM_BYTES + (len(_BOM) if head.startswith(_BOM) else 0)
            rest = handle.read(max(allowed - len(head), 0) + 1)
    except OSError as exc:
        return None, None, _Problem(f"cannot read: {exc.strerror or exc}", failure=True)
    raw = head + rest
    if len(raw) > allowed:
        return None, None, _Problem(
            f"larger than {MAX_ITEM_BYTES} bytes (16 MiB), the most one item may hold; "
            "split it into several files",
            failure=True,
            status=_INVALID_STATUS,
        )
    if b"\x00" in rest:
        return None, None, _Problem("binary (not text)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None, None, _Problem("not UTF-8 text")
    return text, datetime.fromtimestamp(info.st_mtime, timezone.utc), None


def count_entries(paths: Sequence[Tuple[str, bool]], options: FileOptions) -> int:
    """How many entries :func:`file_entries` will yield for ``paths`` (reads no file)."""
    total = 0
    for given, folder in paths:
        total += sum(1 for _ in walk(given, options)) if folder else 1
    return total

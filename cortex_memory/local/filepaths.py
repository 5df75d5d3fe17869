"""Files that hold memory: checked paths and private creation.

**Paths.** :func:`check_path` refuses, with a ``ConfigError`` naming the path,
a path holding a NUL character or one the file system cannot encode (a lone
surrogate outside the ``surrogateescape`` range), before anything is opened.

**Creation** (:func:`prepare_file`). A missing folder is created ``0o700`` and
a missing file ``0o600`` with ``O_CREAT | O_EXCL | O_NOFOLLOW``, so nothing is
ever created *through* a symbolic link. The rules for what is already there:

- a symbolic link to an existing regular file is opened (whoever made the link
  chose the target; SQLite puts ``-wal`` and ``-shm`` next to the target);
- a symbolic link to nothing (dangling) is refused: following it would create
  a file wherever the link points;
- a folder, a device or a pipe is refused;
- a ``-wal``, ``-shm`` or ``-journal`` companion that is a symbolic link is
  refused (SQLite would write through it);
- an existing file that other accounts may read or write gets an
  :class:`InsecureFileWarning` once it is claimed (POSIX only) and is used as
  it is.

SQLite creates the ``-wal``, ``-shm`` and ``-journal`` companions with the
database file's own permissions, so a private database has private companions.
"""

from __future__ import annotations

import os
import stat
import warnings

from cortex_memory.errors import ConfigError
from cortex_memory.paths import make_private_folders

__all__ = [
    "InsecureFileWarning",
    "MEMORY",
    "check_path",
    "prepare_file",
    "shown",
    "warn_if_shared",
]

#: The path of a private in-memory database (never a file).
MEMORY = ":memory:"

_COMPANIONS = ("-wal", "-shm", "-journal")
# Permission bits that let other accounts read or write a file.
_SHARED_BITS = stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class InsecureFileWarning(UserWarning):
    """A file holding memory can be read or written by other accounts (POSIX permissions).

    The file is used as it is; ``chmod 600 PATH`` makes it private again.
    """


def shown(path: str) -> str:
    """``path`` as messages quote it: in backticks, or escaped when it is not printable."""
    if path.isprintable() and _encodable(path):
        return f"`{path}`"
    return ascii(path)


def _encodable(path: str) -> bool:
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        return False
    return True


def check_path(path: object, what: str) -> str:
    """The text path of ``path`` (a ``str`` or path-like), refused when unusable.

    ``TypeError`` for another type or a bytes path (a programming error);
    ``ConfigError`` naming the path for one holding a NUL character or one the
    file system cannot encode. An empty path is left to the caller.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} path must be a str or a path, not {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{what} path must be a text path, not bytes")
    if "\0" in text:
        raise ConfigError(f"{what} path {shown(text)} holds a NUL character")
    if text != MEMORY and not _encodable(text):
        raise ConfigError(
            f"{what} path {shown(text)} cannot be encoded for the file system "
            "(it holds a lone surrogate)"
        )
    return text


def prepare_file(path: str, what: str) -> None:
    """Create the file (and its folder) owner-only, or check the one already there.

    Raises ``ConfigError`` naming the path for what this module
    refuses (a dangling link, a folder, a linked companion), and lets ``OSError``
    through for what the system refuses (permissions, a file where a folder
    should be). Who may read an existing file is checked later, once it is
    claimed (:func:`warn_if_shared`).
    """
    make_private_folders(os.path.dirname(os.path.abspath(path)))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    except FileExistsError:
        _check_existing(path, what)
    else:
        os.close(fd)
    _check_companions(path, what)


def _check_existing(path: str, what: str) -> None:
    found = os.lstat(path)
    if stat.S_ISLNK(found.st_mode):
        try:
            found = os.stat(path)
        except FileNotFoundError:
            raise ConfigError(
                f"{what} {shown(path)} is a symbolic link to a missing file; cortex_memory "
                "never creates a file through a link (create the target first, or use "
                "its path)"
            ) from None
    if stat.S_ISDIR(found.st_mode):
        raise ConfigError(f"{what} {shown(path)} is a folder, not a database file")
    if not stat.S_ISREG(found.st_mode):
        raise ConfigError(f"{what} {shown(path)} is not a regular file")


def warn_if_shared(path: str, what: str) -> None:
    """Emit :class:`InsecureFileWarning` when other accounts may read or write the file.

    Checked once a file is claimed (a refused file gets no warning). POSIX only:
    on Windows, access is decided by ACLs that a mode does not show.
    """
    if os.name != "posix" or path == MEMORY:
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # it was there a moment ago; the next use reports what changed
    if mode & _SHARED_BITS:
        warnings.warn(
            f"{what} {shown(path)} can be read or written by other accounts (mode "
            f"{stat.S_IMODE(mode):04o}); `chmod 600` makes it private",
            InsecureFileWarning,
            stacklevel=2,
        )


def _check_companions(path: str, what: str) -> None:
    # SQLite names its companions after the real file when the path is a link.
    real = os.path.realpath(path)
    for suffix in _COMPANIONS:
        companion = real + suffix
        if os.path.islink(companion):
            raise ConfigError(
                f"{what} companion {shown(companion)} is a symbolic link; SQLite would "
                "write through it (remove the link)"
            )

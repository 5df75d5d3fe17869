"""Names that moved, kept working for one minor release (docs/versioning.md).

A module lists its moved names in a table of :class:`Moved` entries and hands
it to :func:`moved_names`, which returns the module's ``__getattr__`` (PEP 562).
Looking an old name up then warns with a ``DeprecationWarning`` that names the
new import path, and returns the very object the new path gives. The old names
are not module globals, so they are in neither ``__all__`` nor ``dir()``, and
importing the package never warns. The new module is imported on first use of
an old name only, so the table costs nothing at import time.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Mapping, NamedTuple, Optional

__all__ = ["REMOVED_IN", "SINCE", "Moved", "deprecated", "moved_names"]

#: The release that deprecated the names moved in this cycle.
SINCE = "0.2.0"

#: The first release allowed to remove them (one minor release later).
REMOVED_IN = "0.3.0"


class Moved(NamedTuple):
    """Where an old module-level name lives now.

    ``module`` is the new import path; ``name`` the new name when it was
    renamed (else the same name); ``note`` an extra hint for the message.
    """

    module: str
    name: Optional[str] = None
    note: str = ""


def deprecated(old: str, use: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated since :data:`SINCE` and that ``use`` replaces it.

    ``stacklevel`` is counted from the caller of this function: the default
    points at the line that called the deprecated function or method.
    """
    warnings.warn(
        f"{old} is deprecated since {SINCE} and will be removed in {REMOVED_IN}; {use}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def moved_names(owner: str, table: Mapping[str, Moved]) -> Callable[[str], Any]:
    """The ``__getattr__`` of module ``owner``, serving the old names in ``table``."""

    def __getattr__(name: str) -> Any:
        entry = table.get(name)
        if entry is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        new_name = entry.name or name
        if new_name == name:
            use = f"import it from `{entry.module}` (`from {entry.module} import {name}`)"
        else:
            use = f"use `{entry.module}.{new_name}`"
        if entry.note:
            use = f"{use}; {entry.note}"
        # Python calls this straight from the line that looked the name up (an
        # attribute access or a `from ... import`): that line is two frames up.
        deprecated(f"`{owner}.{name}`", use, stacklevel=3)
        return getattr(importlib.import_module(entry.module), new_name)

    return __getattr__

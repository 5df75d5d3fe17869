"""Local-path privacy: no local path leaves the machine (engine.md §7.3, seed 003).

A desktop host fills ``file_path``, ``folder`` and often ``workspace`` with local
paths, which name the person (their home folder) and what they keep. Every envelope
is built from :func:`wire_meta` and :func:`path_digests`, so the rule holds for the
v3 parts, the v2 text and the readable labels on both wires:

- ``file_path`` is sent as the file's name only;
- ``folder`` and an absolute ``workspace`` are not sent at all;
- ids holding a phone number are sent redacted.

The digests keep every path filter matching (see ``items.keeps``). They are unkeyed:
anyone holding the events can test candidate values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Dict, Optional, Tuple

from cortex_memory.contract.meta import MemoryMeta, holds_phone_number, redacted_id
from cortex_memory.cortex.envelope.digests import path_digest, prefixes

__all__ = ["PathDigests", "file_name", "is_absolute", "path_digests", "wire_id", "wire_meta"]

_ABSOLUTE = re.compile(r"[/~\\]|[A-Za-z]:")
_SEPARATORS = re.compile(r"[/\\]")


def is_absolute(value: str) -> bool:
    """True for a path: starts with ``/``, ``~`` or ``\\``, or an ASCII letter and ``:``.

    Anything else (``team-handbook``, ``org/repo``) is a logical workspace id.
    """
    return _ABSOLUTE.match(value) is not None


def file_name(path: str) -> Optional[str]:
    """The last component of ``path`` split on ``/`` or ``\\``; None when it is empty."""
    name = _SEPARATORS.split(path)[-1]
    return name or None


def wire_id(value: Optional[str]) -> Optional[str]:
    """``value`` redacted when it holds a phone number, else unchanged."""
    if value is not None and holds_phone_number(value):
        return redacted_id(value)
    return value


@dataclass(frozen=True)
class PathDigests:
    """The 160-bit digests an envelope carries in place of the paths it does not send.

    ``ws``: the absolute workspace (None for a logical one); ``fp`` / ``fd``: every
    ``/``-ending prefix of ``file_path`` / ``folder``, then the whole value.
    """

    ws: Optional[str] = None
    fp: Tuple[str, ...] = ()
    fd: Tuple[str, ...] = ()


def path_digests(meta: MemoryMeta) -> PathDigests:
    """The digests of the *original* meta's paths."""
    workspace = meta.workspace
    return PathDigests(
        ws=path_digest(workspace) if workspace is not None and is_absolute(workspace) else None,
        fp=prefixes(meta.file_path) if meta.file_path is not None else (),
        fd=prefixes(meta.folder) if meta.folder is not None else (),
    )


def wire_meta(meta: MemoryMeta) -> MemoryMeta:
    """The meta as it may leave the machine.

    The file's name instead of its path, no folder, no absolute workspace, ids holding
    a phone number redacted, and no ``observed_actor`` (attribution is not sent in
    this release).
    """
    changes: Dict[str, Any] = {}
    if meta.file_path is not None:
        name = file_name(meta.file_path)
        if name != meta.file_path:
            changes["file_path"] = name
    if meta.folder is not None:
        changes["folder"] = None
    if meta.workspace is not None and is_absolute(meta.workspace):
        changes["workspace"] = None
    for field in ("thread_id", "agent_id"):
        held = getattr(meta, field)
        sent = wire_id(held)
        if sent != held:
            changes[field] = sent
    source_id = wire_id(meta.source.id)
    if source_id != meta.source.id:
        changes["source"] = replace(meta.source, id=source_id)
    if meta.observed_actor is not None:
        changes["observed_actor"] = None
    return replace(meta, **changes) if changes else meta

"""Namespace segments: the kinds of a path step and their validated ids.

A :class:`Segment` is one step of a namespace path (``agent:writer``): a
:class:`SegmentKind` and an id of 1 to 128 characters of ``[A-Za-z0-9_-]``.
:meth:`Segment.sanitized` turns any text into a valid id. Paths, the tree
they make and reach over it are :mod:`cortex_memory.contract.namespace`.
See contract.md §6.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional

from cortex_memory.contract._coerce import enum_member, req_str, set_attr
from cortex_memory.contract._enum import WireEnum, quote
from cortex_memory.contract.limits import MAX_SEGMENT_ID_LEN
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "KIND_OF_PREFIX",
    "ORDER_OF",
    "PREFIX_OF",
    "Segment",
    "SegmentKind",
    "check_segment_id",
    "make_segment",
]

_SEGMENT_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_NOT_ID_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_SANITIZED_KEEP = 119  # characters kept before "-" + 8 hex digits (128 in all)


class SegmentKind(WireEnum):
    """The type of a namespace segment; the value is the wire string.

    ``prefix`` is what the path uses (``ws`` for a workspace). Open to additions.
    """

    AGENT = "agent"
    TEAM = "team"
    USER = "user"
    WORKSPACE = "workspace"
    PROJECT = "project"
    SOURCE = "source"
    SERVICE = "service"

    @property
    def prefix(self) -> str:
        """The path prefix: the wire string, except ``ws`` for a workspace."""
        return PREFIX_OF[self]

    @property
    def order(self) -> int:
        """Declaration position, used to order namespaces."""
        return ORDER_OF[self]

    @classmethod
    def from_prefix(cls, prefix: str) -> Optional[SegmentKind]:
        """The kind written with ``prefix`` in a path (case-sensitive), or ``None``."""
        return KIND_OF_PREFIX.get(prefix)


#: Each kind's path prefix, the kind of each prefix, and each kind's position (for ordering).
PREFIX_OF: Dict[SegmentKind, str] = {kind: kind.value for kind in SegmentKind}
PREFIX_OF[SegmentKind.WORKSPACE] = "ws"
KIND_OF_PREFIX: Dict[str, SegmentKind] = {p: k for k, p in PREFIX_OF.items()}
ORDER_OF: Dict[SegmentKind, int] = {kind: i for i, kind in enumerate(SegmentKind)}


def _fnv1a32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def check_segment_id(segment_id: str) -> None:
    """Refuse (``InvalidRequestError``) an id that is not 1 to 128 characters of the charset."""
    if _SEGMENT_ID.fullmatch(segment_id) is None:
        raise InvalidRequestError(
            f"invalid namespace id {quote(segment_id)}: use 1 to {MAX_SEGMENT_ID_LEN} "
            "characters of A-Z, a-z, 0-9, _ and -"
        )


@dataclass(frozen=True)
class Segment:
    """One step of a namespace path: a kind and an id (``agent:writer``).

    The id must be 1..=128 characters of ``[A-Za-z0-9_-]``; a bad id is
    ``InvalidRequestError``. :meth:`sanitized` turns any text into a valid id.
    """

    kind: SegmentKind
    id: str

    def __post_init__(self) -> None:
        set_attr(self, "kind", enum_member(self, "kind", SegmentKind, self.kind))
        req_str(self, "id", self.id)
        check_segment_id(self.id)

    def __str__(self) -> str:
        return f"{PREFIX_OF[self.kind]}:{self.id}"

    @classmethod
    def sanitized(cls, kind: SegmentKind, raw: str) -> Segment:
        """A segment whose id is ``raw`` made valid; never fails.

        A valid ``raw`` is kept; ``""`` becomes ``_``; otherwise every character
        outside the charset becomes ``-``, the first 119 are kept, and ``-`` plus
        the 32-bit FNV-1a of the raw UTF-8 bytes (8 hex digits) is appended, so
        distinct inputs stay distinct.
        """
        req_str(cls, "raw", raw)
        if not raw:
            return make_segment(enum_member(cls, "kind", SegmentKind, kind), "_")
        if _SEGMENT_ID.fullmatch(raw) is not None:
            return make_segment(enum_member(cls, "kind", SegmentKind, kind), raw)
        mapped = _NOT_ID_CHAR.sub("-", raw)[:_SANITIZED_KEEP]
        digest = _fnv1a32(raw.encode("utf-8", "surrogatepass"))
        return make_segment(
            enum_member(cls, "kind", SegmentKind, kind), f"{mapped}-{digest:08x}"
        )


def make_segment(kind: SegmentKind, segment_id: str) -> Segment:
    """A segment of a kind and an id both already checked (no validation runs)."""
    # The id is known valid: skip __post_init__'s checks.
    segment = object.__new__(Segment)
    set_attr(segment, "kind", kind)
    set_attr(segment, "id", segment_id)
    return segment

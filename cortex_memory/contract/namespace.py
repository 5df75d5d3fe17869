"""Namespaces (where an item lives) and reach (which nodes a read sees).

A namespace is a path of typed segments from the root, written
``team:acme/agent:writer``; the root is written ``root``. A :class:`Reach`
selects nodes of that tree: the node itself, optionally its ancestors
(``inherit``) and optionally its descendants, never entering a ``service``
sandbox below it. See contract.md §6.

The segments themselves (their kinds, ids and sanitising) are
:mod:`cortex_memory.contract.segment`; both are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache, total_ordering
from typing import Any, Dict, Optional, Tuple

from cortex_memory.contract._coerce import (
    req_bool,
    req_type,
    set_attr,
    tuple_of,
)
from cortex_memory.contract._enum import quote
from cortex_memory.contract._read import get_bool, obj
from cortex_memory.contract.limits import MAX_DEPTH
from cortex_memory.contract.segment import (
    KIND_OF_PREFIX,
    ORDER_OF,
    PREFIX_OF,
    Segment,
    SegmentKind,
    check_segment_id,
    make_segment,
)
from cortex_memory.contract.text import trim
from cortex_memory.errors import InvalidRequestError

__all__ = ["Namespace", "Reach", "Segment", "SegmentKind", "admitted_by"]


@total_ordering
@dataclass(frozen=True, eq=False)
class Namespace:
    """A node of the namespace tree: the segments from the root (root = ``()``).

    ``str(ns)`` is the canonical path (``root`` for the root). Namespaces
    compare, hash and sort by path (segment by segment: kind in declaration
    order, then id; a shorter prefix first). At most 8 segments.
    """

    segments: Tuple[Segment, ...] = ()
    _path: str = field(default="", init=False, repr=False, compare=False)
    _last_service: int = field(default=-1, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        segments = tuple_of(self, "segments", Segment, self.segments)
        if len(segments) > MAX_DEPTH:
            raise InvalidRequestError(f"a namespace holds at most {MAX_DEPTH} segments")
        set_attr(self, "segments", segments)
        _finish(self)

    # -- construction -------------------------------------------------------

    @classmethod
    def root(cls) -> Namespace:
        """The root node (no segments)."""
        return _ROOT

    @classmethod
    def parse(cls, text: str) -> Namespace:
        """Parse a path such as ``team:acme/agent:writer``; ``""`` and ``root`` are the root.

        Raises ``InvalidRequestError`` for a part without ``:``, an unknown kind
        prefix (case-sensitive), a bad id, or more than 8 segments.
        """
        if not isinstance(text, str):
            raise InvalidRequestError("a namespace must be a string")
        return _parse(text)

    @classmethod
    def agent(cls, agent_id: str) -> Namespace:
        """One sanitized ``agent`` segment under the root."""
        return _from_segments((Segment.sanitized(SegmentKind.AGENT, agent_id),))

    @classmethod
    def source(cls, source_id: str) -> Namespace:
        """One sanitized ``source`` segment under the root."""
        return _from_segments((Segment.sanitized(SegmentKind.SOURCE, source_id),))

    def child(self, segment: Segment) -> Namespace:
        """This node's child at ``segment``; refused past 8 segments."""
        req_type(self, "child", Segment, segment)
        if len(self.segments) >= MAX_DEPTH:
            raise InvalidRequestError(f"a namespace holds at most {MAX_DEPTH} segments")
        return _from_segments((*self.segments, segment))

    # -- inspection ---------------------------------------------------------

    def parent(self) -> Optional[Namespace]:
        """The node above, or ``None`` for the root."""
        if not self.segments:
            return None
        return _from_segments(self.segments[:-1])

    def depth(self) -> int:
        """Number of segments (the root is 0)."""
        return len(self.segments)

    def is_root(self) -> bool:
        """True for the root."""
        return not self.segments

    def ancestors_and_self(self) -> Tuple[Namespace, ...]:
        """Every node from the root down to this one, root first."""
        segments = self.segments
        return (*(_from_segments(segments[:i]) for i in range(len(segments))), self)

    def is_within(self, other: Namespace) -> bool:
        """True when ``other`` is this node or one of its ancestors.

        Whole segments compare: ``agent:researchers`` is not within ``agent:researcher``.
        """
        outer = other._path
        if not outer:
            return True
        path = self._path
        return path.startswith(outer) and (len(path) == len(outer) or path[len(outer)] == "/")

    def shared_ancestor(self) -> Namespace:
        """The nearest node at or above this one whose last segment is not an agent.

        ``team:acme/agent:writer`` gives ``team:acme``; ``agent:a/agent:b`` gives the root.
        """
        segments = self.segments
        end = len(segments)
        while end and segments[end - 1].kind is SegmentKind.AGENT:
            end -= 1
        return self if end == len(segments) else _from_segments(segments[:end])

    def has_service_below(self, depth: int) -> bool:
        """True when a ``service`` segment sits at index ``depth`` or deeper."""
        return self._last_service >= depth

    def sort_key(self) -> Tuple[Tuple[int, str], ...]:
        """Key ordering namespaces: per segment the kind's position, then the id."""
        return tuple((ORDER_OF[s.kind], s.id) for s in self.segments)

    # -- dunder -------------------------------------------------------------

    def __str__(self) -> str:
        return self._path or "root"

    def __repr__(self) -> str:
        return f"Namespace({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Namespace):
            return self._path == other._path
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._path)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Namespace):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    def to_json(self) -> str:
        """The wire form: the path string (``root`` for the root)."""
        return str(self)

    @classmethod
    def from_json(cls, value: object) -> Namespace:
        """Parse the wire form (a path string)."""
        if not isinstance(value, str):
            raise InvalidRequestError("a namespace must be a string")
        return _parse(value)


def _finish(ns: Namespace) -> None:
    """Set the cached path and the deepest service index."""
    segments = ns.segments
    set_attr(ns, "_path", "/".join(f"{PREFIX_OF[s.kind]}:{s.id}" for s in segments))
    last = -1
    for i, segment in enumerate(segments):
        if segment.kind is SegmentKind.SERVICE:
            last = i
    set_attr(ns, "_last_service", last)


def _from_segments(segments: Tuple[Segment, ...]) -> Namespace:
    # Segments already checked and depth known to be within bounds.
    if not segments:
        return _ROOT
    ns = object.__new__(Namespace)
    set_attr(ns, "segments", segments)
    _finish(ns)
    return ns


@lru_cache(maxsize=1024)
def _parse(text: str) -> Namespace:
    # Listing paths parse the same few namespaces over and over: memoise them.
    # Refusals raise and are not cached.
    body = trim(text)
    if not body or body == "root":
        return _ROOT
    parts = body.split("/")
    if len(parts) > MAX_DEPTH:
        raise InvalidRequestError(f"a namespace holds at most {MAX_DEPTH} segments")
    segments = []
    for part in parts:
        prefix, colon, segment_id = part.partition(":")
        if not colon:
            raise InvalidRequestError(
                f"invalid namespace segment {quote(part)}: expected kind:id"
            )
        kind = KIND_OF_PREFIX.get(prefix)
        if kind is None:
            raise InvalidRequestError(f"unknown namespace segment kind {quote(prefix)}")
        check_segment_id(segment_id)
        segments.append(make_segment(kind, segment_id))
    return _from_segments(tuple(segments))


_ROOT = object.__new__(Namespace)
set_attr(_ROOT, "segments", ())
_finish(_ROOT)


@dataclass(frozen=True)
class Reach:
    """Which nodes a read sees: ``at``, plus ancestors and/or descendants.

    ``admits(ns)``: ``ns == at``; or ``inherit`` and ``ns`` is an ancestor of
    ``at``; or ``descendants`` and ``ns`` is below ``at`` with no ``service``
    segment below ``at``'s depth (a subtree read never enters a sandbox).
    Siblings are never admitted.
    """

    at: Namespace = _ROOT
    inherit: bool = True
    descendants: bool = False

    def __post_init__(self) -> None:
        req_type(self, "at", Namespace, self.at)
        req_bool(self, "inherit", self.inherit)
        req_bool(self, "descendants", self.descendants)

    @classmethod
    def of(cls, at: Namespace) -> Reach:
        """``at`` and its ancestors (inherit, no descendants)."""
        return cls(at, True, False)

    @classmethod
    def default(cls) -> Reach:
        """``Reach.of(root)``: the root only (not "everything")."""
        return _DEFAULT

    @classmethod
    def exact(cls, at: Namespace) -> Reach:
        """``at`` alone."""
        return cls(at, False, False)

    @classmethod
    def subtree(cls, at: Namespace) -> Reach:
        """``at`` and every node below it outside service sandboxes."""
        return cls(at, False, True)

    def admits(self, ns: Namespace) -> bool:
        """True when a read with this reach sees items at ``ns``."""
        at = self.at
        path, at_path = ns._path, at._path
        if path == at_path:
            return True
        if self.inherit and at.is_within(ns):
            return True
        if self.descendants and ns.is_within(at):
            return ns._last_service < len(at.segments)
        return False

    def nodes(self) -> Tuple[Namespace, ...]:
        """The nodes read: ``at``'s ancestors and ``at`` when inheriting, else ``(at,)``.

        Descendants are not enumerated.
        """
        return self.at.ancestors_and_self() if self.inherit else (self.at,)

    def within(self, outer: Reach) -> bool:
        """True when every namespace this reach admits, ``outer`` admits too.

        A reach at depth 8 has no descendants, so its ``descendants`` counts as exact.
        """
        at = self.at
        if not outer.admits(at):
            return False
        if self.inherit and not all(outer.admits(node) for node in at.ancestors_and_self()):
            return False
        if self.descendants and at.depth() < MAX_DEPTH:
            return outer.descendants and at.is_within(outer.at)
        return True

    def to_json(self) -> Dict[str, Any]:
        """``{at, inherit, descendants}``, all three always written."""
        return {"at": str(self.at), "inherit": self.inherit, "descendants": self.descendants}

    @classmethod
    def from_json(cls, value: object) -> Reach:
        """Read ``{at?, inherit?, descendants?}`` (defaults: root, true, false)."""
        o = obj(value, "reach")
        at = o.get("at")
        return cls(
            _ROOT if at is None else Namespace.parse(at),
            get_bool(o, "inherit", "reach", True),
            get_bool(o, "descendants", "reach", False),
        )


_DEFAULT = Reach(_ROOT, True, False)


def admitted_by(reach: Optional[Reach], ns: Namespace) -> bool:
    """``reach.admits(ns)``; with no reach, every node outside service sandboxes.

    No reach means ``Reach.subtree(root)`` (the whole tree minus sandboxes),
    while ``Reach.default()`` is the root only.
    """
    if reach is None:
        return ns._last_service < 0
    return reach.admits(ns)

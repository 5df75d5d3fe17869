"""Scope paths of the legacy layout rooted at ``app:tinymemory`` (engine.md §7.1).

Every item of one kind at one namespace node lives in one CortexDB scope:
``app:tinymemory`` + ``/<kind:id>`` per namespace segment + ``/`` + the kind leaf.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.namespace import Namespace
from cortex_memory.errors import Error

__all__ = [
    "KIND_LEAVES",
    "ROOT_SEGMENT",
    "node_prefixes",
    "parse_scope",
    "scope_path",
]

ROOT_SEGMENT = "app:tinymemory"
"""The first segment of every scope this library writes."""

KIND_LEAVES: Dict[ItemKind, str] = {
    ItemKind.DOCUMENT: "app:documents",
    ItemKind.CONVERSATION: "app:conversations",
    ItemKind.LEARNING: "app:learnings",
}
"""The last segment of a scope, per item kind."""

_LEAF_KINDS = {leaf: kind for kind, leaf in KIND_LEAVES.items()}


def scope_path(ns: Namespace, kind: ItemKind) -> str:
    """The scope holding items of ``kind`` at ``ns``.

    Root documents: ``app:tinymemory/app:documents``; learnings at
    ``team:acme/agent:writer``: ``app:tinymemory/team:acme/agent:writer/app:learnings``.
    """
    leaf = KIND_LEAVES[kind]
    if ns.is_root():
        return f"{ROOT_SEGMENT}/{leaf}"
    return f"{ROOT_SEGMENT}/{ns}/{leaf}"


def parse_scope(path: str) -> Optional[Tuple[Namespace, ItemKind]]:
    """The namespace and kind of a scope path read back from the server, or None.

    Parts up to and including the first ``app:tinymemory`` are skipped, so a path
    re-rooted under a tenant prefix (``org:x/app:tinymemory/...``) parses too. The last
    remaining part must be a kind leaf; the parts before it must form a namespace.
    """
    parts = path.split("/")
    try:
        at = parts.index(ROOT_SEGMENT)
    except ValueError:
        return None
    rest = parts[at + 1 :]
    if not rest:
        return None
    kind = _LEAF_KINDS.get(rest[-1])
    if kind is None:
        return None
    try:
        ns = Namespace.parse("/".join(rest[:-1]))
    except Error:
        return None
    return ns, kind


def node_prefixes(ns: Namespace) -> List[str]:
    """The prefixes a scopes listing uses to discover the scopes at and below ``ns``.

    The root gives ``[app:tinymemory]``; any other node its scope path without the
    leaf (``app:tinymemory/team:acme``).
    """
    if ns.is_root():
        return [ROOT_SEGMENT]
    return [f"{ROOT_SEGMENT}/{ns}"]

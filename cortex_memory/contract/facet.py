"""``Facet``: the metadata field an explore groups items by (contract.md §8.2)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Dict, Optional, Tuple

from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.meta import MemoryMeta, SourceKind
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.text import is_blank
from cortex_memory.errors import InvalidRequestError

__all__ = ["Facet"]


class Facet(WireEnum):
    """A field to count items by; ``tag`` is multi-valued (an item counts once per tag)."""

    KIND = "kind"
    SOURCE = "source"
    SOURCE_ID = "source_id"
    WORKSPACE = "workspace"
    FOLDER = "folder"
    FILE_PATH = "file_path"
    LANGUAGE = "language"
    REPO = "repo"
    URL = "url"
    THREAD = "thread"
    AGENT = "agent"
    TOOL_CALL = "tool_call"
    TAG = "tag"
    NAMESPACE = "namespace"

    def values(self, kind: ItemKind, meta: MemoryMeta) -> Tuple[str, ...]:
        """The facet's values for one item; ``()`` when the field is unset."""
        if self is Facet.TAG:
            return meta.tags
        value = _VALUE_OF[self](kind, meta)
        return () if value is None else (value,)

    def narrow(self, flt: MetaFilter, value: str) -> MetaFilter:
        """``flt`` with exactly the field of this facet set to ``value``.

        ``kind``, ``source`` and ``tag`` set a one-element tuple; ``folder`` and
        ``file_path`` use the prefix match; ``namespace`` sets
        ``reach = Reach.exact(node)``. A blank value, an unknown kind or source,
        or an unparsable namespace is ``InvalidRequestError``.
        """
        if not isinstance(value, str) or is_blank(value):
            raise InvalidRequestError("a facet value must not be blank")
        if self is Facet.KIND:
            return replace(flt, kinds=(ItemKind.parse(value, "item kind"),))
        if self is Facet.SOURCE:
            return replace(flt, sources=(SourceKind.parse(value, "source kind"),))
        if self is Facet.TAG:
            return replace(flt, tags_any=(value,))
        if self is Facet.NAMESPACE:
            return replace(flt, reach=Reach.exact(Namespace.parse(value)))
        changes: Dict[str, Any] = {_FILTER_FIELD[self]: value}
        return replace(flt, **changes)


_VALUE_OF: Dict[Facet, Callable[[ItemKind, MemoryMeta], Optional[str]]] = {
    Facet.KIND: lambda kind, meta: kind.value,
    Facet.SOURCE: lambda kind, meta: meta.source.kind.value,
    Facet.SOURCE_ID: lambda kind, meta: meta.source.id,
    Facet.WORKSPACE: lambda kind, meta: meta.workspace,
    Facet.FOLDER: lambda kind, meta: meta.folder,
    Facet.FILE_PATH: lambda kind, meta: meta.file_path,
    Facet.LANGUAGE: lambda kind, meta: meta.language,
    Facet.REPO: lambda kind, meta: meta.repo,
    Facet.URL: lambda kind, meta: meta.url,
    Facet.THREAD: lambda kind, meta: meta.thread_id,
    Facet.AGENT: lambda kind, meta: meta.agent_id,
    Facet.TOOL_CALL: lambda kind, meta: None if meta.tool_call is None else meta.tool_call.name,
    Facet.NAMESPACE: lambda kind, meta: str(meta.namespace),
}

# The MetaFilter field each single-valued string facet narrows.
_FILTER_FIELD: Dict[Facet, str] = {
    Facet.SOURCE_ID: "source_id",
    Facet.WORKSPACE: "workspace",
    Facet.FOLDER: "folder",
    Facet.FILE_PATH: "file_path",
    Facet.LANGUAGE: "language",
    Facet.REPO: "repo",
    Facet.URL: "url",
    Facet.THREAD: "thread_id",
    Facet.AGENT: "agent_id",
    Facet.TOOL_CALL: "tool_call",
}

"""Lookup labels, narrowing and readable labels (engine.md §7.7, §7.8).

*Lookup* labels (``tm:<tag>:`` + 16 hex) let a listing narrow server-side: the item
label ``tm:i:`` finds an item's events, the others follow a filter's first field. A
64-bit digest only narrows; every hit is re-checked against its decoded envelope.

*Readable* labels (``kind:document``, ``file:notes.md``, ...) are for people browsing
events in CortexDB directly; they are written on v3 events only and never read back.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from cortex_memory.contract.content import ItemKind
from cortex_memory.contract.meta import MemoryMeta, SourceKind, holds_phone_number, redacted_id
from cortex_memory.contract.text import is_blank
from cortex_memory.cortex.envelope.digests import digest
from cortex_memory.cortex.envelope.envelope import Envelope

if TYPE_CHECKING:  # pragma: no cover - a type only; narrowing reads its fields
    from cortex_memory.contract.filter import MetaFilter

__all__ = [
    "AGENT_TAG",
    "ITEM_TAG",
    "LANGUAGE_TAG",
    "MAX_READABLE_BYTES",
    "REPO_TAG",
    "SOURCE_ID_TAG",
    "SOURCE_KIND_TAG",
    "THREAD_TAG",
    "WORKSPACE_TAG",
    "item_label",
    "lookup_labels",
    "narrowing",
    "readable_labels",
    "readable_labels_of",
    "source_kind_label",
]

ITEM_TAG = "tm:i:"
THREAD_TAG = "tm:t:"
SOURCE_ID_TAG = "tm:s:"
REPO_TAG = "tm:r:"
WORKSPACE_TAG = "tm:w:"
AGENT_TAG = "tm:a:"
LANGUAGE_TAG = "tm:l:"
SOURCE_KIND_TAG = "tm:k:"

MAX_READABLE_BYTES = 256
"""A readable label longer than this (UTF-8 bytes) is left out."""

_SURELY_SHORT = MAX_READABLE_BYTES // 4

# One per source kind, computed once rather than hashed again for every event.
_SOURCE_KIND_LABELS = {kind: SOURCE_KIND_TAG + digest(kind.value) for kind in SourceKind}

# thread- + a lowercase canonical UUID: the threads an app mints itself.
_APP_THREAD = re.compile(r"thread-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def source_kind_label(kind: SourceKind) -> str:
    """``tm:k:`` + the digest of the source kind (the last lookup label)."""
    return _SOURCE_KIND_LABELS[kind]


def item_label(item_id: str) -> str:
    """``tm:i:`` + the digest of the item id: the label every event of the item carries first."""
    return ITEM_TAG + digest(item_id)


def _fields(meta: MemoryMeta) -> Tuple[Tuple[str, Optional[str]], ...]:
    """The looked-up meta fields in label order."""
    return (
        (THREAD_TAG, meta.thread_id),
        (SOURCE_ID_TAG, meta.source.id),
        (REPO_TAG, meta.repo),
        (WORKSPACE_TAG, meta.workspace),
        (AGENT_TAG, meta.agent_id),
        (LANGUAGE_TAG, meta.language),
    )


def lookup_labels(item_id: str, meta: MemoryMeta) -> List[str]:
    """``tm:i:``, one label per set field (thread, source id, repo, workspace, agent,
    language), then ``tm:k:`` for the source kind.

    ``meta`` is the wire meta, so values are hashed as sent: redacted ids and a
    logical workspace only (an absolute workspace's ``tm:w:`` is added by the codec).
    """
    labels = [item_label(item_id)]
    for tag, value in _fields(meta):
        if value is not None:
            labels.append(tag + digest(value))
    labels.append(_SOURCE_KIND_LABELS[meta.source.kind])
    return labels


def narrowing(flt: MetaFilter) -> List[str]:
    """The labels a listing may pass to narrow by ``flt``, or ``[]``.

    One field only, because the server keeps events matching **any** label: the
    first set field of thread, source id, repo, workspace, agent and language (plus
    the redacted form when the value holds a phone number); else one ``tm:k:`` per
    source kind the filter names.
    """
    for tag, value in (
        (THREAD_TAG, flt.thread_id),
        (SOURCE_ID_TAG, flt.source_id),
        (REPO_TAG, flt.repo),
        (WORKSPACE_TAG, flt.workspace),
        (AGENT_TAG, flt.agent_id),
        (LANGUAGE_TAG, flt.language),
    ):
        if value is not None:
            labels = [tag + digest(value)]
            if holds_phone_number(value):
                labels.append(tag + digest(redacted_id(value)))
            return labels
    out: List[str] = []
    for kind in flt.sources:
        label = SOURCE_KIND_TAG + digest(kind.value)
        if label not in out:
            out.append(label)
    return out


def readable_labels(env: Envelope) -> List[str]:
    """The readable labels of a v3 event, in order; any over 256 bytes left out.

    ``kind:``; ``agent:`` (non-blank, no phone number); ``thread:`` for an app thread
    (``thread-`` + a lowercase UUID); ``file:`` (the file's name); for a document piece
    ``page:N`` or ``page:A-B``, then ``section:``. Never ``lang:``.
    """
    return readable_labels_of(env.kind, env.meta, () if env.chunk is None else env.chunk.location())


def readable_labels_of(kind: ItemKind, meta: MemoryMeta, location: Sequence[str] = ()) -> List[str]:
    """:func:`readable_labels` of an event of ``kind`` with the wire ``meta``; ``location``
    is a document piece's (``page:``, ``section:``)."""
    labels = ["kind:" + kind.value]
    agent = meta.agent_id
    if agent is not None and not is_blank(agent) and not holds_phone_number(agent):
        labels.append("agent:" + agent)
    thread = meta.thread_id
    if thread is not None and _APP_THREAD.fullmatch(thread):
        labels.append("thread:" + thread)
    if meta.file_path is not None:
        labels.append("file:" + meta.file_path)
    if location:
        labels.extend(location)
    # A label of at most 64 characters cannot pass 256 bytes: skip the encoding.
    return [
        label
        for label in labels
        if len(label) <= _SURELY_SHORT
        or len(label.encode("utf-8", "surrogatepass")) <= MAX_READABLE_BYTES
    ]

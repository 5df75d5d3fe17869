"""Building the envelopes of one item (engine.md §7.4).

Every write goes through :func:`envelopes`, which is the one place the wire meta and
the path digests are made (§7.3), so no local path reaches any event. A document
whose envelope would pass 256 KiB is split into pieces (§7.5); a conversation gets one
envelope per turn; a learning one envelope.
"""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional

from cortex_memory.contract.items import (
    Conversation,
    Document,
    Learning,
    StoreItem,
    TextBody,
)
from cortex_memory.cortex.envelope.chunks import PAGE_BREAK, SECTION_TITLE_CHARS, split
from cortex_memory.cortex.envelope.codec import MAX_EVENT_BYTES, encode, encode_checked
from cortex_memory.cortex.envelope.envelope import U32_MAX, ChunkInfo, Envelope, TurnInfo
from cortex_memory.cortex.envelope.paths import path_digests, wire_meta
from cortex_memory.errors import InvalidRequestError

__all__ = ["CHUNK_TARGET", "SECTION_RESERVE", "document_overhead", "envelopes"]

CHUNK_TARGET = 262_144
"""The size (256 KiB of v2 JSON) a document piece aims at."""

SECTION_RESERVE = SECTION_TITLE_CHARS * 6 + 32
"""Bytes kept for a piece's section title: 120 characters of up to 6 escaped bytes, plus 32."""


def envelopes(item: StoreItem, item_id: Optional[str] = None) -> List[Envelope]:
    """The envelopes that store ``item``, in part order.

    ``item_id`` defaults to the item's fingerprint. Raises ``InvalidRequestError`` for
    a ``uri`` document body, an event too large to send, or more than 4294967295
    pieces or turns. The item's rules (blank text, confidence) are checked by the
    caller with ``validate``.
    """
    if not isinstance(item, (Document, Learning, Conversation)):
        raise TypeError(f"cannot store a {type(item).__name__}")
    if item_id is None:
        item_id = item.fingerprint()
    meta = item.meta
    digests = path_digests(meta)
    sent = wire_meta(meta)
    kind = item.item_kind
    # Learnings and turns are built whole rather than by replace() on a base
    # envelope: this runs on every write, and replace() re-reads every field.
    if isinstance(item, Document):
        whole = Envelope(item_id, kind, "", sent, digests.ws, digests.fp, digests.fd)
        return _document(item, whole)
    if isinstance(item, Learning):
        return [
            Envelope(
                item_id, kind, item.text, sent, digests.ws, digests.fp, digests.fd,
                learning_kind=item.kind, confidence=item.confidence, evidence=item.evidence,
            )
        ]  # fmt: skip
    count = len(item.turns)
    if count > U32_MAX:
        raise InvalidRequestError(f"a conversation holds at most {U32_MAX} turns")
    return [
        Envelope(
            item_id, kind, turn.text, sent, digests.ws, digests.fp, digests.fd,
            turn=TurnInfo(index, count, turn.role, turn.at, turn.tool_calls),
        )
        for index, turn in enumerate(item.turns)
    ]  # fmt: skip


def document_overhead(whole: Envelope, paged: bool) -> int:
    """The v2 size of ``whole`` with a maximum-width chunk, plus the section reserve."""
    dummy = ChunkInfo(U32_MAX, U32_MAX, (U32_MAX, U32_MAX) if paged else None)
    return len(encode(replace(whole, chunk=dummy)).encode("utf-8", "surrogatepass")) + (
        SECTION_RESERVE
    )


def _document(item: Document, base: Envelope) -> List[Envelope]:
    body = item.body
    if not isinstance(body, TextBody):
        raise InvalidRequestError("unresolved uri; resolve it through a source first")
    text = body.text
    whole = replace(base, title=item.title, mime=item.mime)
    paged = PAGE_BREAK in text
    pieces = split(text, document_overhead(whole, paged), CHUNK_TARGET, MAX_EVENT_BYTES)
    if pieces is None:
        # No room for even the smallest piece (a huge title or meta): the document
        # goes whole when it fits, else the size error says why.
        env = replace(whole, text=text)
        encode_checked(env)
        return [env]
    if len(pieces) <= 1:
        return [replace(whole, text=text)]
    count = len(pieces)
    if count > U32_MAX:
        raise InvalidRequestError(f"a document splits into too many pieces ({count})")
    return [
        replace(
            whole,
            text=text[piece.start : piece.end],
            chunk=ChunkInfo(index, count, piece.pages, piece.section),
        )
        for index, piece in enumerate(pieces)
    ]

"""Items rebuilt from the envelopes of their events (engine.md §7.11).

The item id is the envelopes' ``id`` (never recomputed). Kind, meta, title and mime
come from the first envelope; a document's pieces and a conversation's turns are
put back in index order, the first envelope of each index winning.
"""

from __future__ import annotations

import logging
from typing import Dict, Optional, Sequence, Tuple

from cortex_memory.contract.items import (
    Conversation,
    Document,
    ItemKind,
    Learning,
    LearningKind,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.cortex.envelope.envelope import Envelope, TurnInfo

__all__ = ["is_complete", "rebuild", "rebuild_whole"]

_log = logging.getLogger(__name__)


def rebuild(envs: Sequence[Envelope]) -> StoreItem:
    """The item the envelopes of one id describe (``envs`` must not be empty).

    A document takes the text of its first envelope without ``chunk``, else its pieces
    by index (stable), the first of each index, joined. A learning takes its kind
    (default ``other``), confidence (default 0.0) and evidence. A conversation takes
    the turns of envelopes with ``turn``, by index (stable), the first of each index.
    A set with a missing piece or turn rebuilds without it: see :func:`rebuild_whole`.
    """
    if not envs:
        raise ValueError("rebuild needs at least one envelope")
    first = envs[0]
    meta = first.meta
    if first.kind is ItemKind.DOCUMENT:
        return Document(TextBody(_document_text(envs)), first.title, first.mime, meta)
    if first.kind is ItemKind.LEARNING:
        return Learning(
            first.text,
            first.learning_kind if first.learning_kind is not None else LearningKind.OTHER,
            first.confidence if first.confidence is not None else 0.0,
            first.evidence,
            meta,
        )
    turns: Dict[int, Tuple[TurnInfo, str]] = {}
    for env in envs:
        if env.turn is not None and env.turn.index not in turns:
            turns[env.turn.index] = (env.turn, env.text)
    return Conversation(tuple(_turn(*turns[index]) for index in sorted(turns)), meta)


def _document_text(envs: Sequence[Envelope]) -> str:
    pieces: Dict[int, str] = {}
    for env in envs:
        if env.chunk is None:
            return env.text
        pieces.setdefault(env.chunk.index, env.text)
    return "".join(pieces[index] for index in sorted(pieces))


def _turn(info: TurnInfo, text: str) -> Turn:
    return Turn(info.role, text, info.at, info.tool_calls)


def is_complete(envs: Sequence[Envelope]) -> bool:
    """True when the envelopes hold a whole item.

    Complete: some envelope has no ``chunk``; or every chunk shares the first chunk's
    ``count`` (> 0), every index is below it, and the distinct indexes number exactly
    ``count``. (Conversations are whole as listed: a turn carries no chunk.)
    """
    count: Optional[int] = None
    indexes = set()
    for env in envs:
        chunk = env.chunk
        if chunk is None:
            return True
        if count is None:
            count = chunk.count
        if chunk.count != count or chunk.index >= count:
            return False
        indexes.add(chunk.index)
    return count is not None and count > 0 and len(indexes) == count


def rebuild_whole(envs: Sequence[Envelope]) -> Optional[StoreItem]:
    """:func:`rebuild` when the set is complete, else None (logged at debug).

    Used where a whole item is promised (get, list, assembly): a document with a
    missing piece is refused rather than returned short.
    """
    if not envs:
        return None
    if not is_complete(envs):
        _log.debug(
            "skipping item %s: %d of its chunked events were found, the set is incomplete",
            envs[0].id,
            len(envs),
        )
        return None
    return rebuild(envs)

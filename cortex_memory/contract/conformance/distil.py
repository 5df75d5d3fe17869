"""How the reference engine consolidates: one learning per item, from its first sentence.

The rules (contract.md §9.6): take the document body, or the first user
turn of a conversation; prefer prose lines, ignoring ``#`` headings unless
they are all there is; collapse whitespace; cut after the first ``.``, ``!``
or ``?``; keep at most 240 characters. The sentence becomes a ``fact``
learning (confidence 0.5) whose evidence is the source item's id, with the
source's meta plus the tag ``consolidated``.
"""

from __future__ import annotations

import re
from typing import Optional

from cortex_memory.contract.consolidation import CONSOLIDATED_TAG
from cortex_memory.contract.items import (
    Conversation,
    Document,
    Learning,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
)
from cortex_memory.contract.text import WHITE_SPACE, is_blank, trim

__all__ = ["DISTILLED_CONFIDENCE", "MAX_SENTENCE", "distil", "first_sentence"]

#: Longest sentence a distilled learning keeps, in characters.
MAX_SENTENCE = 240
#: Confidence of every distilled learning.
DISTILLED_CONFIDENCE = 0.5

_SPACES = re.compile(f"[{re.escape(WHITE_SPACE)}]+")
_END = re.compile(r"[.!?]")


def _is_heading(line: str) -> bool:
    return trim(line).startswith("#")


def first_sentence(text: str) -> Optional[str]:
    """The first sentence of ``text`` by the rules above, or ``None`` when there is none.

    ``"# Title\\n\\nBody one. Body two"`` gives ``"Body one."``; a text of
    headings only uses them without their ``#`` markers.
    """
    lines = [line for line in text.splitlines() if not is_blank(line)]
    prose = [line for line in lines if not _is_heading(line)]
    if not prose:
        prose = [trim(line).lstrip("#") for line in lines]
    collapsed = trim(_SPACES.sub(" ", " ".join(prose)))
    end = _END.search(collapsed)
    if end is not None:
        collapsed = collapsed[: end.end()]
    sentence = trim(collapsed[:MAX_SENTENCE])
    return None if is_blank(sentence) else sentence


def _source_text(item: StoreItem) -> Optional[str]:
    if isinstance(item, Document):
        return item.body.text if isinstance(item.body, TextBody) else None
    if isinstance(item, Conversation):
        for turn in item.turns:
            if turn.role is Role.USER:
                return turn.text
    return None


def distil(item: StoreItem) -> Optional[Learning]:
    """The learning consolidation builds from ``item``, or ``None`` (learnings, no text)."""
    source = _source_text(item)
    if source is None:
        return None
    sentence = first_sentence(source)
    if sentence is None:
        return None
    meta = item.meta
    if CONSOLIDATED_TAG not in meta.tags:
        meta = meta.with_tags((*meta.tags, CONSOLIDATED_TAG))
    return Learning(
        sentence,
        LearningKind.FACT,
        DISTILLED_CONFIDENCE,
        evidence=item.fingerprint(),
        meta=meta,
    )

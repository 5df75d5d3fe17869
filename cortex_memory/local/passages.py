"""The pieces of a stored item that recall may quote (:class:`Passage`).

A document's body lines, each turn of a conversation (a turn right after a
question marked as answering it), a learning's text; a line too long to quote
whole is split into its sentences. Kept apart from the scoring in
:mod:`cortex_memory.local.recall`, which also re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

from cortex_memory.contract import Conversation, Document, Learning, StoreItem, TextBody
from cortex_memory.local.text import cjk_count, prose_lines, split_sentences

__all__ = [
    "CJK_WEIGHT",
    "LINE_UNIT",
    "QUESTION_MARKS",
    "Passage",
    "asks_last",
    "passages",
]

#: A passage ending with one of these asks: the Latin and the full-width (CJK) mark.
QUESTION_MARKS = ("?", "\uff1f")


@dataclass(frozen=True)
class Passage:
    """One piece of an item recall may quote, and what role it plays."""

    text: str
    asks: bool  # every sentence of it is a question
    answers: bool  # it belongs to the turn right after a question


#: A line at most this long is quoted whole; a longer one sentence by sentence.
#: A CJK character counts :data:`CJK_WEIGHT` times: it carries about as much as
#: a short Latin word with its space, so a CJK line of more than 70 characters
#: is quoted by its sentences.
LINE_UNIT = 280
CJK_WEIGHT = 4


def _asks(sentences_: Sequence[str]) -> bool:
    return bool(sentences_) and all(s.rstrip().endswith(QUESTION_MARKS) for s in sentences_)


def _pieces(text: str, answers: bool = False) -> List[Passage]:
    out: List[Passage] = []
    for line in prose_lines(text):
        said = split_sentences(line)
        if len(line) + (CJK_WEIGHT - 1) * cjk_count(line) <= LINE_UNIT:
            out.append(Passage(line, _asks(said), answers))
        else:
            out.extend(Passage(s, _asks([s]), answers) for s in said)
    return out


def passages(item: StoreItem) -> List[Passage]:
    """The pieces of an item recall may quote: its lines, and the sentences of long lines.

    Documents: the body (the title when the body has none); conversations:
    every turn, a turn that follows a question marked as answering it;
    learnings: their text. A short line (a chat message, a note) is quoted
    whole, since its sentences often only make sense together.
    """
    if isinstance(item, Document):
        body = item.body.text if isinstance(item.body, TextBody) else ""
        return _pieces(body) or (_pieces(item.title) if item.title else [])
    if isinstance(item, Conversation):
        out: List[Passage] = []
        previous_asked = False
        for turn in item.turns:
            said = _pieces(turn.text, previous_asked)
            out.extend(said)
            previous_asked = bool(said) and said[-1].text.rstrip().endswith(QUESTION_MARKS)
        return out
    if isinstance(item, Learning):
        return _pieces(item.text)
    return []  # pragma: no cover - the three kinds above are all there is


def asks_last(item: StoreItem) -> bool:
    """True when the last piece recall would quote of ``item`` ends with a question mark."""
    said = passages(item)
    return bool(said) and said[-1].text.rstrip().endswith(QUESTION_MARKS)

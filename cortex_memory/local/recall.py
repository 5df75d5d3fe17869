"""Extractive recall: answer a question with the best sentences of the best items.

No model is involved. The engine ranks the items the filter admits (hybrid
ranking, with the question's stopwords left out when it has other words),
keeps the top ``limit`` as citations, and scores every sentence of those
items against the question the same way (mean of word coverage and trigram
cosine). The answer is the best few sentences, best first; each citation's
snippet is its item's best sentence. When nothing ranks, the answer says so
and cites nothing.

``instructions`` cannot steer an extractive answer and are ignored.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

from cortex_memory.contract import (
    Citation,
    Conversation,
    Document,
    Hit,
    Learning,
    RecallAnswer,
    StoreItem,
    TextBody,
)
from cortex_memory.local.analysis import content_words, cosine, query_words, sentences, vector_of
from cortex_memory.local.analysis import words_of as _words_of
from cortex_memory.local.search import Query

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_ANSWER_SENTENCES",
    "MODEL",
    "NOTHING_FOUND",
    "SNIPPET_CHARS",
    "answer",
    "passages",
    "recall_query",
]

#: The answer when nothing stored matches the question.
NOTHING_FOUND = "Nothing stored answers this question."
#: ``RecallAnswer.model`` of every local answer.
MODEL = "local-extractive"
#: Sentences an answer is made of, at most.
MAX_ANSWER_SENTENCES = 3
#: Longest answer, in characters.
MAX_ANSWER_CHARS = 1000
#: Longest citation snippet, in characters.
SNIPPET_CHARS = 300


def recall_query(question: str) -> Query:
    """The question made ready to rank: without stopwords when anything is left."""
    words = query_words(question)
    kept = content_words(words)
    return Query.of(question, kept) if kept else Query.of(question)


def passages(item: StoreItem) -> List[str]:
    """The sentences of an item recall may quote.

    Documents: the body's sentences (the title when the body has none);
    conversations: every turn's sentences; learnings: their text.
    """
    if isinstance(item, Document):
        body = item.body.text if isinstance(item.body, TextBody) else ""
        found = sentences(body)
        if not found and item.title:
            found = sentences(item.title)
        return found
    if isinstance(item, Conversation):
        out: List[str] = []
        for turn in item.turns:
            out.extend(sentences(turn.text))
        return out
    if isinstance(item, Learning):
        return sentences(item.text)
    return []  # pragma: no cover - the three kinds above are all there is


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] or text[: limit - 1]
    return cut + "…"


def _sentence_score(sentence: str, query: Query) -> float:
    words = set(_words_of(sentence))
    coverage = sum(1 for w in query.words if w in words) / len(query.words) if query.words else 0.0
    return (coverage + cosine(query.vector, vector_of(_words_of(sentence)))) / 2.0


def _best(item: StoreItem, fallback: str, query: Query) -> Tuple[str, float]:
    best, best_score = "", -1.0
    for sentence in passages(item):
        score = _sentence_score(sentence, query)
        if score > best_score:
            best, best_score = sentence, score
    if not best:
        return _cut(" ".join(fallback.split()), SNIPPET_CHARS), 0.0
    return best, best_score


def _ending(sentence: str) -> str:
    return sentence if sentence[-1:] in ".!?…" else sentence + "."


def answer(query: Query, ranked: Sequence[Tuple[Hit, StoreItem]]) -> RecallAnswer:
    """The recall answer for ranked ``(hit, item)`` pairs, best first."""
    if not ranked:
        return RecallAnswer(NOTHING_FOUND, (), MODEL)
    citations: List[Citation] = []
    picked: List[Tuple[float, int, str]] = []
    for rank, (hit, item) in enumerate(ranked):
        sentence, score = _best(item, hit.text, query)
        citations.append(
            Citation(hit.id, hit.kind, _cut(sentence, SNIPPET_CHARS), hit.meta, hit.score)
        )
        picked.append((score, rank, sentence))
    picked.sort(key=lambda entry: (-entry[0], entry[1]))
    chosen: List[str] = []
    seen = set()
    for _score, _rank, sentence in picked:
        key = " ".join(sentence.lower().split())
        if not key or key in seen:
            continue
        seen.add(key)
        chosen.append(_ending(_cut(sentence, MAX_ANSWER_CHARS // MAX_ANSWER_SENTENCES)))
        if len(chosen) == MAX_ANSWER_SENTENCES:
            break
    text = " ".join(chosen).strip() or NOTHING_FOUND
    return RecallAnswer(text, tuple(citations), MODEL)

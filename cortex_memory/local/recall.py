"""Extractive recall: answer a question with the sentences that answer it, and cite them.

No language model is involved. The engine ranks the items the filter admits
(hybrid), keeps the best ``limit`` as citations, and composes the answer
from their sentences:

1. Every line of those items (a sentence of a long line) is a candidate: a
   document's body, each turn of a conversation, a learning's text; and the
   lines of the stored reply to a ranked item that asks, in a chat stored
   turn by turn (:mod:`cortex_memory.local.replies`), as that question's
   answer. A quoted reply is cited after its question, within ``limit``.
2. Each is scored against the question: the query terms it holds, speaker
   labels aside (stems, each weighted by how rare it is in the whole corpus,
   exact forms counting more), its vector's cosine with the question's
   (when the question has one), and the rank of the item it comes from.
3. A sentence whose content words are all the question's own (it adds
   nothing) is never the answer; one that asks (ends with ``?``) counts
   half, and joins the answer only when no statement answers at all; in a
   conversation the turn that follows a question (the other speaker's
   answer) counts more than the question itself, and is at least as
   relevant as that question (a reply rarely repeats the question's words).
4. The best sentences are taken, best first, leaving out near-duplicates
   (most of their words already chosen), sentences that add next to nothing
   (few content words that are neither the question's nor already chosen)
   and sentences far weaker than the best, up to :data:`MAX_ANSWER_SENTENCES`.
   Every one of them comes from a cited item, and that item's snippet is the
   sentence.

When nothing ranks, the answer is :data:`NOTHING_FOUND` with no citations.
``instructions`` cannot steer an extractive answer and are ignored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from cortex_memory.contract import Citation, Hit, RecallAnswer, StoreItem
from cortex_memory.local.embedders import Embedder, cosines
from cortex_memory.local.passages import (
    CJK_WEIGHT,
    LINE_UNIT,
    QUESTION_MARKS,
    Passage,
    asks_last,
    passages,
)
from cortex_memory.local.search import Query
from cortex_memory.local.text import content_words, jaccard, stems_of, strip_labels, words_of

__all__ = [
    "CJK_WEIGHT",
    "LINE_UNIT",
    "MAX_ANSWER_CHARS",
    "MAX_ANSWER_SENTENCES",
    "MODEL",
    "NOTHING_FOUND",
    "SNIPPET_CHARS",
    "Passage",
    "answer",
    "asks_last",
    "passages",
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
#: A sentence joins the answer only when it scores at least this share of the best.
KEEP_SHARE = 0.5
#: Sentences whose content words overlap a chosen one's this much are repeats.
DUPLICATE_OVERLAP = 0.7
#: A sentence after the first joins the answer only when at least this share of
#: its content words is new (neither in the question nor in a chosen sentence).
NEW_SHARE = 0.34

# How the parts of a sentence's score add up (they sum to 1).
_TERMS, _VECTOR, _RANK = 0.55, 0.30, 0.15
_ASKS = 0.5  # factor for a sentence that asks
# Sentence ends an answer keeps as they are; a CJK sentence without one gets
# the ideographic full stop, any other the Latin one.
_ENDS = ".!?…\u3002\uff01\uff1f"
_CJK_END = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]$")
_ANSWERS = 1.2  # factor for a sentence of the turn right after a question


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] or text[: limit - 1]
    return cut + "…"


def _ending(sentence: str) -> str:
    if sentence[-1:] in _ENDS:
        return sentence
    return sentence + ("\u3002" if _CJK_END.search(sentence) else ".")


def _content(words: Sequence[str]) -> FrozenSet[str]:
    """The stems of the content words (of every word, when all are stop words)."""
    return frozenset(stems_of(content_words(words)))


@dataclass
class _Candidate:
    rank: int  # the item's place in the ranking (a reply: its question's)
    source: int  # the cited item it comes from (an index into answer()'s sources)
    passage: Passage
    words: Sequence[str]
    content: FrozenSet[str]
    # In a conversation: the question this passage answers (the last passage of
    # the turn before it, when that ends with a question mark).
    question: Optional[_Candidate] = None
    lexical: float = 0.0
    similar: float = 0.0
    score: float = 0.0


def _cosines(query: Query, texts: Sequence[str], embedder: Optional[Embedder]) -> List[float]:
    if query.vector is None or embedder is None or not texts:
        return [0.0] * len(texts)
    return [max(0.0, value) for value in cosines(embedder, query.vector, texts)]


def _weights(
    candidates: Sequence[_Candidate], query: Query, rarity: Optional[Mapping[str, float]]
) -> Dict[str, float]:
    if rarity is not None:
        return {t: rarity.get(t, 0.0) for t in query.terms.stems}
    # Without the corpus's counts, how rare a term is among the candidates.
    holding: Dict[str, int] = {}
    for cand in candidates:
        stems = set(stems_of(cand.words))
        for term in query.terms.stems:
            if term in stems:
                holding[term] = holding.get(term, 0) + 1
    total = len(candidates)
    return {t: math.log(1.0 + total / (1.0 + holding.get(t, 0))) for t in query.terms.stems}


def _score(
    candidates: List[_Candidate],
    query: Query,
    embedder: Optional[Embedder],
    items: int,
    floor: float,
    rarity: Optional[Mapping[str, float]],
) -> None:
    terms = query.terms
    weight = _weights(candidates, query, rarity)
    ideal = sum(weight.values()) or 1.0
    cosines = _cosines(query, [c.passage.text for c in candidates], embedder)
    asked = _content(words_of(query.text))
    for cand, similar in zip(candidates, cosines):
        stems = set(stems_of(cand.words))
        forms = set(cand.words)
        found = 0.0
        for term in terms.stems:
            if term in stems:
                exact = not forms.isdisjoint(terms.forms[term])
                found += weight[term] * (1.0 if exact else 0.85)
        cand.lexical, cand.similar = found / ideal, similar
    for cand in candidates:
        lexical, similar = cand.lexical, cand.similar
        if cand.question is not None:
            # The reply to a stored question that matches is what answers it, even
            # in other words ("Where did I park?" / "Level 3, spot B12.").
            lexical = max(lexical, cand.question.lexical)
            similar = max(similar, cand.question.similar)
        prior = 1.0 - cand.rank / max(items, 1)
        score = _TERMS * lexical + _VECTOR * similar + _RANK * prior
        if cand.passage.asks:
            score *= _ASKS
        if cand.passage.answers:
            score *= _ANSWERS
        # A sentence made of the question's own words (nothing more) answers nothing.
        if cand.content and cand.content <= asked:
            score = 0.0
        # Only a sentence that holds a term or is close in meaning may answer.
        cand.score = score if (lexical > 0.0 or similar >= floor) else 0.0


def _repeats(cand: _Candidate, picked: Sequence[_Candidate], asked: FrozenSet[str]) -> bool:
    """True when ``cand`` adds next to nothing to the sentences already ``picked``.

    It is a near-copy of one of them (most words shared, or the same text), or
    almost all its content words are already in the answer or the question.
    """
    if not picked:
        return False
    said = set(asked)
    for p in picked:
        if p.passage.text.lower() == cand.passage.text.lower():
            return True
        if cand.content and jaccard(cand.content, p.content) >= DUPLICATE_OVERLAP:
            return True
        said |= p.content
    if not cand.content:
        return False
    return len(cand.content - said) < NEW_SHARE * len(cand.content)


def _chosen(candidates: List[_Candidate], asked: FrozenSet[str]) -> List[_Candidate]:
    ordered = sorted(candidates, key=lambda c: (-c.score, c.rank))
    if not ordered or ordered[0].score <= 0.0:
        return []
    # A question is no answer: once any statement answers, the questions step aside
    # (a stored "When do we usually ship?" would otherwise echo the user's question).
    if any(c.score > 0.0 and not c.passage.asks for c in ordered):
        ordered = [c for c in ordered if not c.passage.asks]
    best = ordered[0].score
    picked: List[_Candidate] = []
    used = 0
    for cand in ordered:
        if cand.score < best * KEEP_SHARE or len(picked) == MAX_ANSWER_SENTENCES:
            break
        if _repeats(cand, picked, asked):
            continue
        size = min(len(cand.passage.text), MAX_ANSWER_CHARS // MAX_ANSWER_SENTENCES) + 1
        if used + size > MAX_ANSWER_CHARS:
            break
        used += size
        picked.append(cand)
    return picked


def _candidates(
    ranked: Sequence[Tuple[Hit, StoreItem]], replies: Mapping[int, Tuple[Hit, StoreItem]]
) -> Tuple[List[_Candidate], List[Tuple[Hit, StoreItem]], Dict[int, int]]:
    """Every passage of the ranked items and of the replies to their questions; the
    sources (ranked items, then replies not ranked) and, per reply's source, the
    rank of the question it answers."""
    sources = list(ranked)
    source_of = {hit.id: rank for rank, (hit, _item) in enumerate(ranked)}
    asked: Dict[int, int] = {}
    for rank, (hit, item) in replies.items():
        source = source_of.get(hit.id)
        if source is None:  # a reply not ranked itself: cited after its question
            source = source_of[hit.id] = len(sources)
            sources.append((hit, item))
        asked.setdefault(source, rank)
    candidates: List[_Candidate] = []
    last_question: Dict[int, _Candidate] = {}
    for source, (_hit, item) in enumerate(sources):
        question: Optional[_Candidate] = None
        rank = asked[source] if source >= len(ranked) else source
        for passage in passages(item):
            # Who said a line is not what it says: a speaker label does not count.
            words = words_of(strip_labels(passage.text))
            cand = _Candidate(rank, source, passage, words, _content(words))
            if passage.answers:
                cand.question = question
            if passage.text.rstrip().endswith(QUESTION_MARKS):
                question = cand
            candidates.append(cand)
        if question is not None and source < len(ranked):
            last_question[source] = question
    # A reply answers its question: every passage of it, whether ranked or read after.
    for cand in candidates:
        asked_at = asked.get(cand.source)
        if asked_at is not None and asked_at in last_question:
            cand.passage = replace(cand.passage, answers=True)
            cand.question = last_question[asked_at]
    return candidates, sources, asked


def _cited(
    picked: List[_Candidate], ranked: int, asked: Mapping[int, int]
) -> Tuple[List[_Candidate], List[int]]:
    """The answer's sentences whose items fit in the citations, and the cited sources:
    no more than the ``ranked`` items, those the answer quotes first, each reply
    read after the ranking right after its question."""
    kept: List[_Candidate] = []
    quoted: Set[int] = set()
    for cand in picked:  # best first: a weaker sentence gives way
        if cand.source in quoted or len(quoted) < ranked:
            quoted.add(cand.source)
            kept.append(cand)
    room = ranked - len(quoted)
    order: List[int] = []
    for rank in range(ranked):
        if rank in quoted or room > 0:
            room -= rank not in quoted
            order.append(rank)
        order.extend(
            s for s, asked_at in asked.items() if s >= ranked and asked_at == rank and s in quoted
        )
    return kept, order


def answer(
    query: Query,
    ranked: Sequence[Tuple[Hit, StoreItem]],
    embedder: Optional[Embedder] = None,
    floor: float = 1.0,
    rarity: Optional[Mapping[str, float]] = None,
    replies: Optional[Mapping[int, Tuple[Hit, StoreItem]]] = None,
) -> RecallAnswer:
    """The recall answer for ranked ``(hit, item)`` pairs, best first.

    ``floor`` is the cosine a sentence needs to answer on meaning alone
    (the embedder's ``min_similarity``); ``rarity`` weighs each query term by
    how rare it is in the whole corpus (its BM25 idf; without it, how rare
    among the candidates); ``replies`` maps the rank of an item that asks to
    the stored reply to it (see :mod:`cortex_memory.local.replies`), quoted as
    that question's answer and cited when quoted. There are never more
    citations than ranked items. When the items match but none of their
    sentences answers (they only repeat the question), the answer says so and
    still cites them.
    """
    if not ranked:
        return RecallAnswer(NOTHING_FOUND, (), MODEL)
    candidates, sources, asked = _candidates(ranked, replies or {})
    _score(candidates, query, embedder, len(ranked), floor, rarity)
    picked, cited = _cited(
        _chosen(candidates, _content(words_of(query.text))), len(ranked), asked
    )
    best_of: Dict[int, str] = {}
    for cand in sorted(candidates, key=lambda c: -c.score):
        best_of.setdefault(cand.source, cand.passage.text)
    for cand in reversed(picked):  # the answer's own sentence wins the snippet
        best_of[cand.source] = cand.passage.text
    citations = tuple(
        Citation(
            hit.id,
            hit.kind,
            _cut(best_of.get(source) or " ".join(hit.text.split()), SNIPPET_CHARS),
            hit.meta,
            hit.score,
        )
        for source, (hit, _item) in ((s, sources[s]) for s in cited)
    )
    if not picked:
        return RecallAnswer(NOTHING_FOUND, citations, MODEL)
    text = " ".join(
        _ending(_cut(c.passage.text, MAX_ANSWER_CHARS // MAX_ANSWER_SENTENCES)) for c in picked
    )
    return RecallAnswer(text, citations, MODEL)

"""CJK text for the local engine: which characters are words of their own, and how
the keyword index reads them.

Han ideographs, kana, hangul and the CJK symbol, punctuation and
compatibility blocks (:data:`CJK_RANGES`) are written without spaces between
words, so the index cannot find word boundaries in them: every such
character is a word of its own. The keyword index reads CJK text with a
space around each of those characters (:func:`index_text`,
:func:`index_chunks`), and a query's run of them becomes a phrase of its
characters (:func:`cortex_memory.local.text.query_phrases`), so ``公园``
finds ``我们去公园玩``. They are kept as written (no case, no diacritics
removed: the index keeps ``が``). Splitting text into words, CJK or not, is
:mod:`cortex_memory.local.text`, which re-exports the names here.
"""

from __future__ import annotations

import re
import sys
from typing import FrozenSet, Iterator, List, Optional, Tuple

__all__ = [
    "CJK_RANGES",
    "CJK_RUN",
    "cjk_count",
    "cjk_pairs",
    "cjk_pieces",
    "cjk_words",
    "has_cjk",
    "index_chunks",
    "index_size",
    "index_text",
]

#: The code point blocks whose characters are words of their own (first, last),
#: from the Unicode character database's Blocks.txt.
CJK_RANGES: Tuple[Tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK Radicals Supplement, Kangxi Radicals
    (0x2FF0, 0x2FFF),  # Ideographic Description Characters
    (0x3000, 0x303F),  # CJK Symbols and Punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x31FF),  # Bopomofo, Hangul Compatibility Jamo, Kanbun, CJK Strokes, ...
    (0x3200, 0x33FF),  # Enclosed CJK Letters and Months, CJK Compatibility
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA960, 0xA97F),  # Hangul Jamo Extended-A
    (0xAC00, 0xD7FF),  # Hangul Syllables, Hangul Jamo Extended-B
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFE30, 0xFE4F),  # CJK Compatibility Forms
    (0xFF65, 0xFFDC),  # Halfwidth Katakana and Hangul (not the fullwidth Latin forms)
    (0x1B000, 0x1B16F),  # Kana Supplement, Kana Extended-A, Small Kana Extension
    (0x20000, 0x323AF),  # CJK Unified Ideographs Extensions B-H, Compatibility Supplement
)
#: A run of characters of :data:`CJK_RANGES`.
CJK_RUN = re.compile(
    "[" + "".join(f"{chr(first)}-{chr(last)}" for first, last in CJK_RANGES) + "]+"
)


def has_cjk(text: str) -> bool:
    """True when ``text`` holds a character of :data:`CJK_RANGES`."""
    return not text.isascii() and CJK_RUN.search(text) is not None


def cjk_pairs(text: str) -> FrozenSet[str]:
    """The pairs of neighbouring CJK letters or digits in ``text`` (what a CJK phrase
    is made of; punctuation, like ``。``, is no part of one)."""
    if text.isascii():
        return frozenset()
    pairs = set()
    for match in CJK_RUN.finditer(text):
        run = match.group()
        for i in range(len(run) - 1):
            if run[i].isalnum() and run[i + 1].isalnum():
                pairs.add(run[i : i + 2])
    return frozenset(pairs)


def cjk_count(text: str) -> int:
    """How many characters of ``text`` are in :data:`CJK_RANGES`."""
    if text.isascii():
        return 0
    return sum(run.end() - run.start() for run in CJK_RUN.finditer(text))


def cjk_pieces(lowered: str) -> Iterator[Tuple[bool, str]]:
    """``(cjk, piece)``: the runs of CJK characters and what lies between them."""
    at = 0
    for run in CJK_RUN.finditer(lowered):
        if run.start() > at:
            yield False, lowered[at : run.start()]
        yield True, run.group()
        at = run.end()
    if at < len(lowered):
        yield False, lowered[at:]


def cjk_words(run: str) -> List[str]:
    """The words of a run of CJK characters: each of its letters and digits."""
    # Each letter or digit of the run (its punctuation separates), interned:
    # a long CJK text repeats a few thousand characters millions of times.
    return list(map(sys.intern, _WORD_CHAR.findall(run)))


_WORD_CHAR = re.compile(r"[^\W_]")


def _spaced(run: re.Match[str]) -> str:
    return " " + " ".join(run.group()) + " "


def index_text(text: str) -> Optional[str]:
    """What the keyword index reads for ``text``: None when it is ``text`` itself
    (no CJK character), else ``text`` with a space around each CJK character.

    The index's tokenizer then makes each of them a token, as :func:`words_of`
    does; the stored text is never changed.
    """
    if text.isascii() or CJK_RUN.search(text) is None:
        return None
    return CJK_RUN.sub(_spaced, text)


#: Characters of a long text segmented at once by :func:`index_chunks`.
_INDEX_CHUNK = 1 << 18


def index_chunks(text: str) -> Iterator[bytes]:
    """:func:`index_text` of a text with CJK, as UTF-8 pieces (a long text is
    never copied whole as a ``str``).

    A piece may end inside a run of CJK characters: each of them has its
    spaces around it either way.
    """
    for start in range(0, len(text), _INDEX_CHUNK):
        yield CJK_RUN.sub(_spaced, text[start : start + _INDEX_CHUNK]).encode("utf-8")


def index_size(text: str) -> int:
    """The UTF-8 size of everything :func:`index_chunks` yields, computed without
    building it (each run of CJK characters gets one space more than it has
    characters)."""
    total = 0
    for start in range(0, len(text), _INDEX_CHUNK):
        piece = text[start : start + _INDEX_CHUNK]
        runs = CJK_RUN.findall(piece)
        total += len(piece.encode("utf-8")) + sum(map(len, runs)) + len(runs)
    return total

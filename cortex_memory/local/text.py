"""Text analysis for the local engine: words, stems, stop words and sentences.

Python and the SQLite keyword index must agree on what a word is, so this
module mirrors the index's tokenizer (``porter unicode61 remove_diacritics 2``):

- **Words**: runs of letters and digits (``str.isalnum``: Unicode letters and
  digits count; ``_`` and punctuation separate), lowercased, with diacritics
  removed (``Café`` → ``cafe``). :func:`words_of` gives them in order.
- **Stems**: every word through the Porter stemmer SQLite uses
  (:mod:`cortex_memory.local.porter`), so ``ships``, ``shipped`` and
  ``shipping`` all meet ``ship``.
- **Stop words**: common English function words. A query leaves them out when
  it has any other word (``"what is it"`` keeps all three); the index keeps
  every word, so nothing stored is ever unfindable.
- **CJK**: every character of :data:`CJK_RANGES` is a word of its own, and
  a query's run of them becomes a phrase of its characters
  (:func:`query_phrases`). Which characters those are, and how the keyword
  index is made to read them so, is :mod:`cortex_memory.local.cjk`; its
  names are re-exported here.
- **Sentences**: prose split at ``.``, ``!`` or ``?`` followed by white space
  and at line breaks; recall and consolidation quote them.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import filterfalse
from typing import Dict, FrozenSet, Iterator, List, Sequence, Tuple

from cortex_memory.local.cjk import (
    CJK_RANGES,
    CJK_RUN,
    cjk_count,
    cjk_pairs,
    cjk_pieces,
    cjk_words,
    has_cjk,
    index_chunks,
    index_size,
    index_text,
)
from cortex_memory.local.porter import stem

__all__ = [
    "CJK_RANGES",
    "MAX_QUERY_WORDS",
    "PHRASE_CHARS",
    "STOPWORDS",
    "cjk_count",
    "cjk_pairs",
    "content_words",
    "fold",
    "has_cjk",
    "index_chunks",
    "index_size",
    "index_text",
    "jaccard",
    "prose_lines",
    "query_phrases",
    "query_words",
    "sentences",
    "split_sentences",
    "stem",
    "stems_of",
    "strip_labels",
    "words_of",
]

#: Distinct query words a search looks at; longer queries keep the first ones.
MAX_QUERY_WORDS = 64

# ``[^\W_]`` is exactly "alphanumeric" as ``str.isalnum`` means it: ``\w`` is
# alphanumeric or ``_`` in a str pattern.
_WORD = re.compile(r"[^\W_]+")
# A Latin full stop ends a sentence only before white space ("3.5", "e.g.x"
# stay whole); the CJK ones (。！？ and their full-width forms) end it where they
# stand, since CJK text puts no space after them, unless a closing quote or
# bracket follows.
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+"
    r"|(?<=[\u3002\uff01\uff1f\uff61])(?![\u300d\u300f\uff09\u201d\u2019\u3009\u300b\u3011])\s*"
    r"|(?<=[\u3002\uff01\uff1f\uff61][\u300d\u300f\uff09\u201d\u2019\u3009\u300b\u3011])\s*"
)
_SPACES = re.compile(r"\s+")
#: A query's run of CJK characters longer than this is read as a sentence: its
#: overlapping character pairs are phrases of their own (see query_phrases).
PHRASE_CHARS = 4

#: Common English words a query leaves out when it has any other word. The
#: pieces contractions split into (``don't`` → ``don`` ``t``) are here too.
STOPWORDS: FrozenSet[str] = frozenset(
    (
        "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
        "at", "be", "been", "before", "being", "both", "but", "by", "can", "could", "d", "did",
        "didn", "do", "does", "doesn", "doing", "don", "done", "each", "for", "from", "got",
        "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him",
        "himself", "his", "how", "i", "if", "in", "into", "is", "isn", "it", "its", "itself",
        "just", "ll", "m", "me", "more", "most", "my", "myself", "no", "nor", "not", "now",
        "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own",
        "re", "s", "same", "she", "should", "so", "some", "such", "t", "than", "that", "the",
        "their", "theirs", "them", "then", "there", "these", "they", "this", "those",
        "through", "to", "too", "under", "until", "up", "us", "ve", "very", "was", "wasn",
        "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
        "with", "won", "would", "you", "your", "yours", "yourself",
    )
)  # fmt: skip


_STOPWORD = STOPWORDS.__contains__


def _strip_marks(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    kept = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", kept)


def fold(text: str) -> str:
    """``text`` lowercased with diacritics removed (ASCII text is only lowercased)."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    return _strip_marks(lowered)


#: Texts longer than this are not kept in the words cache.
_CACHED_TEXT = 20_000


# For ASCII text, each byte mapped to itself lowercased when it is a letter or
# a digit and to a space otherwise: splitting the translated bytes finds the
# words in C (bytes.translate is several times faster than str.translate).
_ASCII_WORDS = bytes(
    ord(chr(c).lower()) if c < 128 and chr(c).isalnum() else ord(" ") for c in range(256)
)

def _split(text: str) -> Tuple[str, ...]:
    if text.isascii():
        return tuple(text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split())
    lowered = text.lower()
    if CJK_RUN.search(lowered) is None:
        return tuple(_WORD.findall(_strip_marks(lowered)))
    words: List[str] = []
    for cjk, piece in cjk_pieces(lowered):
        words.extend(cjk_words(piece) if cjk else _WORD.findall(_strip_marks(piece)))
    return tuple(words)



@lru_cache(maxsize=2048)
def _cached_words(text: str) -> Tuple[str, ...]:
    return _split(text)


def words_of(text: str) -> Tuple[str, ...]:
    """The words of ``text`` in order (repeats kept), folded.

    Cached for short texts: a stored item's text is read as words when it is
    written, embedded and scored, often several times in a row.
    """
    if len(text) <= _CACHED_TEXT:
        return _cached_words(text)
    return _split(text)


#: Words whose stems are remembered (then the memory starts afresh).
_STEM_CACHE = 200_000
_STEMS: Dict[str, str] = {}


def stems_of(words: Sequence[str]) -> List[str]:
    """The stem of every word, in order.

    A plain dictionary remembers them: ranking stems every candidate's words,
    and looking them all up is one ``map`` in C; only words never seen are
    stemmed in Python. Reads and writes race harmlessly (each is atomic; a
    lost write is computed again).
    """
    cache = _STEMS
    try:
        return list(map(cache.__getitem__, words))
    except KeyError:
        pass
    if len(cache) > _STEM_CACHE:
        cache.clear()
    for word in set(words).difference(cache):
        cache[word] = stem(word)
    try:
        return list(map(cache.__getitem__, words))
    except KeyError:  # another thread started the memory afresh meanwhile
        return [stem(word) for word in words]


@lru_cache(maxsize=4096)
def _query_words(text: str) -> Tuple[str, ...]:
    return tuple(dict.fromkeys(words_of(text)))[:MAX_QUERY_WORDS]


def query_words(text: str) -> Tuple[str, ...]:
    """The distinct words of a query, first occurrence first, at most 64 of them."""
    return _query_words(text)


def _run_phrases(chars: List[str]) -> Iterator[Tuple[str, ...]]:
    if len(chars) <= PHRASE_CHARS:
        yield tuple(chars)
        return
    for at in range(len(chars) - 1):
        yield (chars[at], chars[at + 1])


@lru_cache(maxsize=4096)
def _query_phrases(text: str) -> Tuple[Tuple[str, ...], ...]:
    if not has_cjk(text):
        return tuple((word,) for word in _query_words(text))
    phrases: List[Tuple[str, ...]] = []
    for cjk, piece in cjk_pieces(text.lower()):
        if not cjk:
            phrases.extend((word,) for word in _WORD.findall(_strip_marks(piece)))
        else:
            chars = cjk_words(piece)
            if chars:
                phrases.extend(_run_phrases(chars))
    return tuple(dict.fromkeys(phrases))[:MAX_QUERY_WORDS]


def query_phrases(text: str) -> Tuple[Tuple[str, ...], ...]:
    """The distinct phrases of a query, first occurrence first, at most 64 of them.

    A word is a phrase of one word. A run of CJK characters (written without
    spaces) is the phrase of its characters, up to :data:`PHRASE_CHARS` of
    them; a longer run reads as a sentence, and each pair of neighbouring
    characters in it is a phrase (so a question finds the words it shares
    with a text). Their words are those of :func:`words_of`.
    """
    return _query_phrases(text)


def content_words(words: Sequence[str]) -> Tuple[str, ...]:
    """``words`` without :data:`STOPWORDS`, or all of them when nothing else is left."""
    kept = tuple(filterfalse(_STOPWORD, words))
    return kept if kept else tuple(words)


def jaccard(a: FrozenSet[str], b: FrozenSet[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``; 0.0 when both are empty."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def prose_lines(text: str) -> List[str]:
    """The non-empty lines of ``text``, white space collapsed; Markdown headings
    (``#`` lines) are left out unless the text has nothing else."""
    lines = [line.strip() for line in text.splitlines()]
    prose = [line for line in lines if line and not line.startswith("#")]
    if not prose:
        prose = [line.lstrip("#").strip() for line in lines if line.lstrip("#").strip()]
    return [_SPACES.sub(" ", line) for line in prose]


def split_sentences(line: str) -> List[str]:
    """One line's sentences: split after ``.!?`` and white space, or right after ``。！？``."""
    return [part.strip() for part in _SENTENCE_END.split(line) if part.strip()]


def sentences(text: str, *, limit: int = 64) -> List[str]:
    """Up to ``limit`` sentences of ``text``, white space collapsed.

    Lines are split first (a line break ends a sentence), then each line at
    ``.``, ``!`` or ``?`` followed by white space. Markdown headings (``#``
    lines) are left out unless the text has nothing else.
    """
    out: List[str] = []
    for line in prose_lines(text):
        for sentence in split_sentences(line):
            out.append(sentence)
            if len(out) >= limit:
                return out
    return out


#: A line's label, as transcripts write the speaker ("Maya: …", "user: …"): a
#: name of at most 40 characters starting with a letter, a colon, a space.
_LABEL = re.compile(r"^[ \t]*[^\W\d_][\w .'-]{0,39}?:[ \t]+", re.MULTILINE)


def strip_labels(text: str) -> str:
    """``text`` without the speaker labels its lines start with (all of it when
    nothing else is left)."""
    if ":" not in text:
        return text
    stripped = _LABEL.sub("", text)
    return stripped if stripped.strip() else text

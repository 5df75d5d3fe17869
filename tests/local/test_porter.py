"""The Python Porter stemmer gives exactly the stems SQLite's FTS5 ``porter`` tokenizer keeps."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Dict, Iterable, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.local.porter import MAX_TOKEN, stem
from cortex_memory.local.schema import TOKENIZER
from cortex_memory.local.text import fold, words_of

_SUFFIXES = ("s", "es", "ed", "ing", "ly", "ness", "ation", "ational", "izer", "ization", "ful",
             "ive", "ible", "able", "ement", "ity", "ism", "eed", "y", "ies", "ied", "ying", "ll",
             "ative", "alize", "iciti", "ous", "ance", "ence", "er", "ic", "ant", "ent", "ion")


def _sqlite_stems(words: List[str]) -> Dict[str, str]:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{TOKENIZER}')")
    except sqlite3.OperationalError:
        pytest.skip("this SQLite build has no FTS5 porter tokenizer")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", enumerate(words, start=1))
    by_row = {int(doc): str(term) for doc, term in conn.execute("SELECT doc, term FROM v")}
    conn.close()
    return {word: by_row[n] for n, word in enumerate(words, start=1) if n in by_row}


def _vocabulary() -> List[str]:
    root = Path(__file__).resolve().parents[2]
    found: set[str] = set()
    for path in [*root.glob("docs/*.md"), *root.glob("cortex_memory/**/*.py")]:
        found.update(w for w in words_of(path.read_text(encoding="utf-8")) if w.isascii())
    base = sorted(w for w in found if w.isalpha())[:2500]
    return sorted(found | {w + s for w in base for s in _SUFFIXES})


def _check(words: Iterable[str]) -> None:
    # SQLite folds case and diacritics before stemming; the engine does too.
    unique = sorted(set(words))
    expected = _sqlite_stems(unique)
    wrong = [
        (w, expected[w], stem(fold(w))) for w in unique if expected.get(w) != stem(fold(w))
    ]
    assert not wrong[:20], f"{len(wrong)} of {len(unique)} differ"


def test_every_word_of_the_docs_and_their_derived_forms() -> None:
    _check(_vocabulary())


def test_the_classic_examples() -> None:
    examples = {
        "caresses": "caress", "ponies": "poni", "cats": "cat", "feed": "feed",
        "agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing",
        "conflated": "conflat", "hopping": "hop", "falling": "fall", "failing": "fail",
        "relational": "relat", "generalizations": "gener", "ships": "ship",
        "shipping": "ship", "vehicles": "vehicl", "vehicle": "vehicl",
    }
    assert {w: stem(w) for w in examples} == examples
    _check(examples)


def test_short_long_and_non_ascii_tokens() -> None:
    assert stem("is") == "is"
    assert stem("x" * (MAX_TOKEN + 1) + "ing") == "x" * (MAX_TOKEN + 1) + "ing"
    _check(["aing", "eing", "ss", "sses", "yyy", "bies", "naïve", "straßen", "数据",
            "dataset" + "é" * 30, "x" * MAX_TOKEN, "x" * (MAX_TOKEN - 3) + "ing"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.from_regex(re.compile(r"[a-z]{1,14}"), fullmatch=True), min_size=1,
                max_size=40))
def test_random_lowercase_words(words: List[str]) -> None:
    _check(words)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.from_regex(re.compile(r"[a-z0-9]{1,14}"), fullmatch=True), min_size=1,
                max_size=40))
def test_words_with_digits(words: List[str]) -> None:
    # A word that does not end in a letter is never stemmed (a shortcut the
    # stemmer takes): SQLite must agree.
    _check([*words, "term12345", "v2", "12ing", "ing2", "ships2", "2ships", "1990s", "x1y"])


_MORE_SUFFIXES = ("biliti", "bility", "iviti", "ously", "logy", "enci", "anci", "bli", "at", "bl",
                  "iz")
_SUFFIX_WORDS = st.lists(st.sampled_from((*_SUFFIXES, *_MORE_SUFFIXES)), max_size=3)


def _stem_begins_its_word(words: Iterable[str]) -> None:
    # Keyword scoring finds the words of a text that can stem to a term by
    # the term without its last letter (bm25.scan_heads): that must be how
    # every word whose stem it is begins.
    wrong = [(w, stem(w)) for w in words if not w.startswith(stem(w)[:-1])]
    assert not wrong[:20], f"{len(wrong)} words do not begin with their stem but its last letter"


def test_a_stem_is_never_more_than_its_last_letter_from_its_word() -> None:
    _stem_begins_its_word(_vocabulary())
    _stem_begins_its_word(["possibility", "mobility", "happy", "hoping", "relational",
                           "generalizations", "conflated", "ponies", "agreed", "ties", "a"])


@settings(max_examples=300, deadline=None)
@given(st.from_regex(re.compile(r"[a-z]{0,7}"), fullmatch=True), _SUFFIX_WORDS)
def test_a_stem_begins_its_word_whatever_the_suffixes(base: str, suffixes: List[str]) -> None:
    word = base + "".join(suffixes)
    if word:
        _stem_begins_its_word([word])

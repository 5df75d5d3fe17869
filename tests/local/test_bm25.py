"""Keyword scores: the ASCII scan tallies exactly what splitting and stemming a text does."""

from __future__ import annotations

from typing import Dict, List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.local import bm25
from cortex_memory.local.corpus import Stats
from cortex_memory.local.lexical import Terms
from cortex_memory.local.text import words_of

# Words whose stems share beginnings, inflections, capitals, digits and the
# separators the tokenizer knows (``_`` and punctuation end a word).
_WORDS = ["ship", "ships", "Shipped", "SHIPPING", "shipment", "shi", "plan", "plans", "planned",
          "planet", "plane", "release", "releases", "Released", "relational", "relation",
          "happy", "happiness", "hoping", "hope", "hop", "ties", "tie", "a", "I", "x_ship",
          "ship2", "2ship", "term01234", "term0123", "generalizations", "general", "mobility",
          "mobile", "possibility", "the", "sing", "singing", "news", "agreed", "agree"]
_SEPARATORS = [" ", "  ", ", ", ". ", "\n", "-", "'", "(", ") ", "_", "\t", "/"]


def _whole(terms: Terms, texts: Dict[int, str]) -> Dict[int, object]:
    tallies = {seq: bm25._tally_text(terms, text) for seq, text in texts.items()}
    # A text holding no term is no candidate: its length is never used.
    return {seq: tally for seq, tally in tallies.items() if tally[1]}


def _scanned(terms: Terms, texts: Dict[int, str]) -> Dict[int, object]:
    return {seq: (length, found, exact) for seq, length, found, exact in bm25._tallies(terms, texts)
            if found}


@st.composite
def _texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=14))
    out = draw(st.sampled_from(["", " ", "(", "-"]))
    for word in words:
        out += word + draw(st.sampled_from(_SEPARATORS))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(_texts(), min_size=1, max_size=8),
       st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4))
def test_the_scan_tallies_what_splitting_and_stemming_does(
    texts: List[str], query: List[str]
) -> None:
    terms = Terms.of(" ".join(query))
    by_seq = dict(enumerate(texts, start=1))
    assert _scanned(terms, by_seq) == _whole(terms, by_seq)


@settings(max_examples=300, deadline=None)
@given(st.lists(_texts(), min_size=1, max_size=8), st.sampled_from(_WORDS),
       st.one_of(st.none(), st.integers(min_value=0, max_value=50)))
def test_a_lone_term_scores_in_one_pass_what_the_general_loop_does(
    texts: List[str], word: str, holding: Optional[int]
) -> None:
    terms = Terms.of(word)
    by_seq = dict(enumerate(texts, start=1))
    counts = None if holding is None else dict.fromkeys(terms.stems, holding)
    stats = Stats(60, 600)
    quick = bm25.score_rows(terms, by_seq, counts, stats)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25, "_score_lone", _must_not_run)
        patch.setattr(bm25, "BATCH_CHARS", 0)  # the general loop, a batch per text
        general = bm25.score_rows(terms, by_seq, counts, stats)
    assert quick == general  # the same floats, in the same order


def _must_not_run(*args: object) -> object:
    raise AssertionError("the one-pass scorer ran")


def test_the_scan_counts_lengths_as_the_tokenizer_does() -> None:
    texts = {1: "", 2: "a", 3: " a", 4: "a_b-c,d  e.", 5: "Ships (item 12345) shipped!",
             6: "____", 7: "x" * 70 + " ships"}
    terms = Terms.of("ships")
    scanned = _scanned(terms, texts)
    for seq in (5, 7):
        length, found, exact = scanned[seq]  # type: ignore[misc]
        assert length == len(words_of(texts[seq]))
        assert found == {"ship": 1 if seq == 7 else 2}
        assert exact == frozenset({"ship"})
    assert scanned.keys() == {5, 7}
    assert list(bm25._tallies(terms, {4: texts[4], 6: texts[6]})) == []


def test_texts_outside_ascii_and_batches_give_the_same_scores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = {n: f"Shipping plans, café {n}: the ship sails; ships planned" * (n % 3 + 1)
             for n in range(1, 40)}
    texts.update({n: f"ship plan {n} ships" for n in range(40, 80)})
    stats = Stats(1000, 9000)
    terms = Terms.of("shipping plan")
    counts = {"ship": 120, "plan": 300}
    once = bm25.score_rows(terms, texts, counts, stats)
    monkeypatch.setattr(bm25, "BATCH_CHARS", 100)  # a batch per text or two
    batched = bm25.score_rows(terms, texts, counts, stats)
    monkeypatch.setattr(bm25, "scan_heads", lambda terms: None)
    whole = bm25.score_rows(terms, texts, counts, stats)
    assert once == batched == whole
    assert len(once) == len(texts)
    assert all(0.0 < score <= 1.0 for _seq, score, _bm25 in once)


def test_scan_heads() -> None:
    # Each stem but its last letter; a head another one begins is dropped.
    assert bm25.scan_heads(Terms.of("shipping ships planet plans")) == ("pla", "shi")
    assert bm25.scan_heads(Terms.of("shipping shipment")) == ("shi",)
    assert bm25.scan_heads(Terms.of("release")) == ("relea",)  # stem "releas"
    # A one-letter stem would find every word; a CJK phrase is not single words.
    assert bm25.scan_heads(Terms.of("a")) is None
    assert bm25.scan_heads(Terms.of("公园")) is None


def test_the_exact_form_counts_more() -> None:
    terms = Terms.of("plans")
    texts = {1: "She planned the garden", 2: "She plans the garden"}
    scored = bm25.score_rows(terms, texts, None, Stats(2, 8))
    assert [seq for seq, _score, _bm25 in scored] == [2, 1]
    (_, exact, _), (_, stemmed, _) = scored
    assert exact == pytest.approx(stemmed * (1 + bm25.EXACT_BOOST))

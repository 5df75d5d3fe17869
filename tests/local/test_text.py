"""Words, stop words, labels and passages: what the local engine reads in a text."""

from __future__ import annotations

from cortex_memory.local.text import (
    STOPWORDS,
    cjk_pairs,
    content_words,
    fold,
    jaccard,
    prose_lines,
    query_words,
    sentences,
    strip_labels,
    words_of,
)


def test_words_are_folded_alphanumeric_runs() -> None:
    assert words_of("Café au LAIT, x_1 2nd-floor! 数据") == (
        "cafe", "au", "lait", "x", "1", "2nd", "floor", "数", "据",  # CJK: a character a word
    )
    assert words_of("Plain ASCII: don't stop") == ("plain", "ascii", "don", "t", "stop")
    assert fold("ÉCOLE Straße") == "ecole straße"
    long_text = "word " * 10_000  # longer than the cache takes: still right
    assert len(words_of(long_text)) == 10_000


def test_query_words_keep_the_first_64_distinct() -> None:
    text = " ".join(f"w{i}" for i in range(100)) + " w1 w2"
    assert query_words(text) == tuple(f"w{i}" for i in range(64))


def test_stop_words_go_unless_nothing_else_is_left() -> None:
    assert content_words(("when", "do", "we", "ship")) == ("ship",)
    assert content_words(("what", "is", "it")) == ("what", "is", "it")
    assert {"the", "s", "t", "don"} <= STOPWORDS


def test_speaker_labels() -> None:
    assert strip_labels("Maya: I got a lemon tree\nuser: thanks") == (
        "I got a lemon tree\nthanks"
    )
    for kept in ("10:30 meeting", "https://example.com/a", "plain text", "a:b"):
        assert strip_labels(kept) == kept
    assert strip_labels("Note: ") == "Note: "  # nothing else left: kept whole


def test_lines_and_sentences() -> None:
    text = "# Title\n\nFirst one.  Second?\n\n  Third line!\n"
    assert prose_lines(text) == ["First one. Second?", "Third line!"]
    assert sentences(text) == ["First one.", "Second?", "Third line!"]
    assert sentences("# Only\n## Headings") == ["Only", "Headings"]
    assert len(sentences("A. " * 100, limit=5)) == 5


def test_cjk_pairs_are_neighbouring_letters() -> None:
    assert cjk_pairs("我们去公园。好 ok") == {"我们", "们去", "去公", "公园"}  # not across 。
    assert cjk_pairs("東京で") == {"東京", "京で"}
    assert cjk_pairs("plain ASCII") == frozenset()
    assert cjk_pairs("Café 公") == frozenset()


def test_cjk_sentences_end_at_their_own_stops() -> None:
    # CJK text puts no space after 。！？: each still ends a sentence, a
    # closing quote stays with the sentence it closes, and "3.5" stays whole.
    assert sentences("北京是中国的首都。人口超过两千万！你好吗？好") == [
        "北京是中国的首都。", "人口超过两千万！", "你好吗？", "好",
    ]
    assert sentences("他说：“走吧。”然后离开了。 Version 3.5 ships. Next") == [
        "他说：“走吧。”", "然后离开了。", "Version 3.5 ships.", "Next",
    ]


def test_jaccard() -> None:
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(frozenset("ab"), frozenset("bc")) == 1 / 3

"""CJK text in the local engine: a word inside a clause is findable, text stays as stored.

Chinese and Japanese are written without spaces between words, Korean with
particles attached, so the keyword index reads CJK characters a word each
(``items_cjk``) and a query's run of them is a phrase. These tests go
through the public surface (store, fetch, recall, forget, beliefs) on every
flavour (FTS5 and the fallback, file and memory), and check the tokenizer
mirror against SQLite's own.
"""

from __future__ import annotations

import sqlite3
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    BeliefsRequest,
    ConsolidateRequest,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    Namespace,
    Reach,
    RecallRequest,
    StoreItem,
)
from cortex_memory.local import LocalEngine, cjk
from cortex_memory.local.schema import TOKENIZER, fts5_available
from cortex_memory.local.store import LONG_TEXT
from cortex_memory.local.text import index_chunks, index_size, index_text, query_phrases, words_of

from .conftest import EngineFactory

ZH = "我们下周去公园野餐，团队同意了预算。"
JA = "データベースのバックアップは毎晩三時に実行されます。"
KO = "서울에서 회의가 있습니다."
MIXED = "Deploy 前请运行 pytest 测试，然后发布到 staging 环境。"
SCATTERED = "公司的园林很大。"  # 公 and 园, never side by side


def _texts(engine: LocalEngine, query: str, mode: FetchMode = FetchMode.KEYWORD) -> List[str]:
    return [hit.text for hit in engine.fetch(FetchRequest(query, mode, 10)).hits]


def _store_all(engine: LocalEngine) -> List[str]:
    items = [StoreItem.document(t) for t in (ZH, JA, KO, MIXED, SCATTERED)]
    items.append(StoreItem.document("The launch moved to Tuesday."))
    return [receipt.id for receipt in engine.store_many(items)]


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("公园", ZH),  # a Chinese word inside a clause
        ("预算", ZH),
        ("バックアップ", JA),  # katakana, as written (the voiced marks kept)
        ("毎晩", JA),
        ("서울", KO),  # a Korean noun with its particle attached
        ("회의", KO),
        ("测试", MIXED),
        ("staging 环境", MIXED),
    ],
)
def test_a_cjk_word_inside_a_clause_is_found(engine: LocalEngine, query: str, found: str) -> None:
    _store_all(engine)
    assert _texts(engine, query)[0] == found
    assert _texts(engine, query, FetchMode.HYBRID)[0] == found


def test_a_cjk_word_matches_where_its_characters_stand_together(engine: LocalEngine) -> None:
    _store_all(engine)
    # 公 and 园 both occur in SCATTERED, but not as the word 公园.
    assert _texts(engine, "公园") == [ZH]
    assert _texts(engine, "园林") == [SCATTERED]
    assert sorted(_texts(engine, "公园 园林")) == sorted([ZH, SCATTERED])
    assert _texts(engine, "野生动物") == []


def test_text_comes_back_exactly_as_stored(engine: LocalEngine) -> None:
    ids = _store_all(engine)
    hit = engine.fetch(FetchRequest("公园", FetchMode.KEYWORD, 1)).hits[0]
    assert hit.text == ZH
    got = engine.get(GetRequest((ids[0], ids[3])))
    assert sorted(g.text for g in got) == sorted([ZH, MIXED])


def test_mixed_cjk_and_english(engine: LocalEngine) -> None:
    _store_all(engine)
    assert _texts(engine, "pytest")[0] == MIXED
    assert _texts(engine, "Deploy 测试")[0] == MIXED
    # An English word glued to CJK text is a word of its own.
    engine.store(StoreItem.document("使用Python脚本导入数据。"))
    assert _texts(engine, "python") == ["使用Python脚本导入数据。"]
    assert _texts(engine, "脚本")[0] == "使用Python脚本导入数据。"


def test_a_cjk_question_recalls_the_item(engine: LocalEngine) -> None:
    _store_all(engine)
    answer = engine.recall(RecallRequest("团队同意了什么预算？", 3))
    assert answer.citations
    assert answer.citations[0].snippet == ZH


def test_forget_takes_cjk_items_out_of_the_index(engine: LocalEngine) -> None:
    ids = _store_all(engine)
    assert engine.forget(ForgetTarget.ids([ids[0], ids[2]])).forgotten == 2
    assert _texts(engine, "公园") == []
    assert _texts(engine, "서울") == []
    assert _texts(engine, "バックアップ") == [JA]
    # Stored again, it is found again.
    engine.store(StoreItem.document(ZH))
    assert _texts(engine, "公园") == [ZH]


def test_a_long_cjk_document_is_indexed_and_forgotten(engine: LocalEngine) -> None:
    paragraph = "季度评审之后团队讨论了客户跟进和发布时间表。"
    long = paragraph * (LONG_TEXT // len(paragraph) + 10) + "最后一句提到鲸鱼。"
    assert len(long) > LONG_TEXT
    receipt = engine.store(StoreItem.document(long))
    engine.store(StoreItem.document("短笔记：鲸鱼很大。"))
    found = _texts(engine, "鲸鱼")
    assert sorted(found, key=len) == ["短笔记：鲸鱼很大。", long]
    assert _texts(engine, "时间表") == [long]
    engine.forget(ForgetTarget.ids([receipt.id]))
    assert _texts(engine, "鲸鱼") == ["短笔记：鲸鱼很大。"]
    assert _texts(engine, "时间表") == []


def test_the_index_stays_consistent(make_engine: EngineFactory, db_path: str) -> None:
    engine = make_engine()
    ids = _store_all(engine)
    if not engine.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    long = "发布时间表。" * (LONG_TEXT // 6 + 1)
    engine.store(StoreItem.document(long))
    engine.forget(ForgetTarget.ids(ids[:2]))
    engine.close()
    conn = sqlite3.connect(db_path)
    try:
        for table in ("items_fts", "beliefs_fts"):
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
        rows = dict(conn.execute("SELECT seq, CAST(text AS TEXT) FROM items_cjk").fetchall())
        texts = dict(conn.execute("SELECT seq, text FROM items").fetchall())
        # Only texts with CJK characters have a row; the stored texts are untouched.
        assert set(rows) == {seq for seq, t in texts.items() if index_text(t) is not None}
        assert len(rows) == 4  # KO, MIXED, SCATTERED and the long one
        assert long in texts.values()
        assert MIXED in texts.values()
    finally:
        conn.close()


def test_writes_without_the_index_are_found_after_its_rebuild(
    make_engine: EngineFactory,
) -> None:
    without = make_engine(use_fts=False)
    without.store(StoreItem.document(ZH))
    without.store(StoreItem.document("发布时间表。" * (LONG_TEXT // 6 + 1)))
    without.close()
    engine = make_engine()
    assert _texts(engine, "公园") == [ZH]
    if not engine.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    assert len(_texts(engine, "时间表")) == 1


def test_beliefs_are_found_by_a_cjk_word(engine: LocalEngine) -> None:
    engine.store(StoreItem.document("团队同意了新的预算。\n部署使用蓝绿发布。"))
    engine.consolidate(ConsolidateRequest(Reach.subtree(Namespace.root())))
    request = BeliefsRequest(Reach.subtree(Namespace.root()), 5, "预算")
    assert next(hit.text for hit in engine.beliefs(request)) == "团队同意了新的预算。"
    request = BeliefsRequest(Reach.subtree(Namespace.root()), 5, "蓝绿")
    assert next(hit.text for hit in engine.beliefs(request)) == "部署使用蓝绿发布。"


# -- the tokenizer mirror -------------------------------------------------------------


def test_cjk_characters_are_words_of_their_own() -> None:
    assert words_of("我们去公园。Python好") == ("我", "们", "去", "公", "园", "python", "好")
    # Kana keep their voiced marks, as the index does (diacritics go elsewhere).
    assert words_of("データ Café") == ("デ", "ー", "タ", "cafe")
    assert words_of("서울에서") == ("서", "울", "에", "서")
    assert index_text("plain English") is None
    assert index_text("Ünïcode but no CJK") is None
    assert index_text("用Python写") == " 用 Python 写 "


def test_query_phrases() -> None:
    assert query_phrases("公园 the ship") == (("公", "园"), ("the",), ("ship",))
    # A long run reads as a sentence: its neighbouring pairs.
    assert query_phrases("团队同意预算") == (
        ("团", "队"), ("队", "同"), ("同", "意"), ("意", "预"), ("预", "算"),
    )  # fmt: skip
    assert query_phrases("季度评审") == (("季", "度", "评", "审"),)


def test_long_texts_are_spaced_a_piece_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cjk, "_INDEX_CHUNK", 7)
    value = "abc 公园野餐很好玩 and 서울에서 Café 々〇 end"
    pieces = b"".join(index_chunks(value)).decode("utf-8")
    assert len(pieces.encode("utf-8")) == index_size(value)
    # Runs cut between pieces still give every character its own word.
    assert words_of(pieces) == words_of(index_text(value) or value) == words_of(value)


_ALPHABET = st.sampled_from(
    [*"abcXYZ019 éüÅß.,-_'\n", *"公园野餐データベースが서울에서々〇。、「」ｶﾞＡ", "\u3099"]
)


@pytest.fixture(scope="module")
def vocab() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    if not fts5_available(conn):
        pytest.skip("this SQLite build has no FTS5")
    plain = TOKENIZER.replace("porter ", "")
    conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, tokenize='{plain}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, instance)")
    return conn


@settings(max_examples=200, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join))
def test_words_of_reads_text_as_the_index_does(vocab: sqlite3.Connection, value: str) -> None:
    vocab.execute("DELETE FROM f")
    vocab.execute("INSERT INTO f (rowid, text) VALUES (1, ?)", (index_text(value) or value,))
    tokens = tuple(t for (t,) in vocab.execute("SELECT term FROM v ORDER BY offset"))
    assert tokens == words_of(value)

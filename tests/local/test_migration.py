"""Files written by the first release (schema 1) open, migrate in place and lose nothing.

``data/schema_v1.sqlite3`` was written by cortex_memory at commit 9144e4b
(schema 1: hashed trigram columns, an index over distinct words), with
documents, a conversation, a learning, tags, a namespace, a forgotten item,
beliefs and a second tenant; ``data/schema_v1_export.json`` is what that
release exported from it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from cortex_memory.contract import (
    BeliefsRequest,
    FetchMode,
    FetchRequest,
    ListRequest,
    MetaFilter,
    Namespace,
    Reach,
    RecallRequest,
    StoreItem,
)
from cortex_memory.local import LocalEngine
from cortex_memory.local.schema import SCHEMA_VERSION

DATA = Path(__file__).resolve().parent / "data"


def _private_copy(name: str, tmp_path: Path) -> str:
    """A private copy of the fixture file ``name`` (the release's own file stays as made)."""
    target = tmp_path / name
    shutil.copyfile(DATA / name, target)
    target.chmod(0o600)
    return str(target)


@pytest.fixture
def old_file(tmp_path: Path) -> str:
    return _private_copy("schema_v1.sqlite3", tmp_path)


def _everything(engine: LocalEngine) -> list:
    page = engine.export(ListRequest(MetaFilter(reach=Reach.subtree(Namespace.root())), 100))
    assert page.next_cursor is None
    return [entry.item.to_json() for entry in page.items]


@pytest.mark.parametrize("fts", [True, False])
def test_a_schema_1_file_migrates_with_nothing_lost(old_file: str, fts: bool) -> None:
    before = json.loads((DATA / "schema_v1_export.json").read_text(encoding="utf-8"))
    with LocalEngine(old_file, use_fts=fts) as engine:
        assert engine.health().ok
        assert _everything(engine) == before
        # Stemmed keyword search now works on the old items.
        hits = engine.fetch(FetchRequest("When do we ship?", FetchMode.KEYWORD, 5)).hits
        assert [h.text for h in hits] == ["The team ships releases on Tuesdays."]
        vehicle = engine.fetch(FetchRequest("vehicle", FetchMode.HYBRID, 5)).hits
        assert vehicle[0].text == "Vehicles must be parked behind the building."
        assert engine.fetch(FetchRequest("cafe ecole", FetchMode.KEYWORD, 5)).hits
        answer = engine.recall(RecallRequest("which port does staging use?", 3))
        assert "8443" in answer.answer
        beliefs = engine.beliefs(BeliefsRequest(Reach.subtree(Namespace.root()), 50))
        assert len(beliefs) == 7
        new = engine.store(StoreItem.document("A note written after the upgrade."))
        assert not new.replayed
    with LocalEngine(old_file, tenant="other") as other:
        assert [h.text for h in other.list(ListRequest(MetaFilter(), 10)).items] == [
            "Another tenant's note about releases."
        ]
    conn = sqlite3.connect(old_file)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        columns = {row[1] for row in conn.execute("PRAGMA table_info(items)")}
        assert "d0" not in columns
        assert "inv_norm" not in columns
        # The forgotten item's seq (7) is never given out again.
        seqs = [row[0] for row in conn.execute("SELECT seq FROM items ORDER BY seq")]
        assert seqs[-1] > 8
        # The default embedder makes its vectors when it searches: none stored.
        assert conn.execute("SELECT count(*) FROM item_vectors").fetchone()[0] == 0
    finally:
        conn.close()


def test_a_second_open_does_not_migrate_again(old_file: str) -> None:
    with LocalEngine(old_file) as engine:
        engine.health()
    conn = sqlite3.connect(old_file)
    try:
        conn.execute("CREATE TABLE marker (x)")  # survives only if nothing rebuilds the file
        conn.commit()
    finally:
        conn.close()
    with LocalEngine(old_file) as engine:
        assert engine.health().ok
    conn = sqlite3.connect(old_file)
    try:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'marker'").fetchone()
    finally:
        conn.close()


# -- schema 2 -> 3 --------------------------------------------------------------------
#
# ``data/schema_v2.sqlite3`` was written by cortex_memory at commit 88f5cda (schema 2,
# whose keyword index read a CJK clause as one word) with ``data/make_schema_v2.py``:
# Chinese, Japanese and Korean documents, a learning, tags, a namespace, a forgotten
# item, beliefs and a second tenant; ``data/schema_v2_export.json`` is what that
# release exported from it.


@pytest.fixture
def v2_file(tmp_path: Path) -> str:
    return _private_copy("schema_v2.sqlite3", tmp_path)


def _keyword(engine: LocalEngine, query: str) -> list:
    return [h.text for h in engine.fetch(FetchRequest(query, FetchMode.KEYWORD, 5)).hits]


@pytest.mark.parametrize("fts", [True, False])
def test_a_schema_2_file_migrates_and_its_cjk_words_are_found(v2_file: str, fts: bool) -> None:
    conn = sqlite3.connect(v2_file)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        # What the release before could not do: a word inside a clause.
        found = conn.execute(
            "SELECT count(*) FROM items_fts WHERE items_fts MATCH '公园'"
        ).fetchone()[0]
        assert found == 0
    finally:
        conn.close()
    before = json.loads((DATA / "schema_v2_export.json").read_text(encoding="utf-8"))
    with LocalEngine(v2_file, use_fts=fts) as engine:
        assert engine.health().ok
        assert _everything(engine) == before
        assert _keyword(engine, "公园") == [before[0]["body"]["text"]]
        assert _keyword(engine, "バックアップ") == [before[1]["body"]["text"]]
        assert _keyword(engine, "서울") == [before[2]["body"]["text"]]
        assert _keyword(engine, "ships") == ["The team ships releases on Tuesdays."]
        assert _keyword(engine, "删除") == []  # the forgotten item stays forgotten
        beliefs = engine.beliefs(BeliefsRequest(Reach.subtree(Namespace.root()), 50, "预算"))
        assert beliefs[0].text == "我们下周去公园野餐，团队同意了预算。"
        new = engine.store(StoreItem.document("升级之后写的笔记。"))
        assert not new.replayed
        assert _keyword(engine, "升级") == ["升级之后写的笔记。"]
    with LocalEngine(v2_file, tenant="other") as other:
        assert _keyword(other, "租户") == ["另一个租户的笔记：发布在周二。"]
    conn = sqlite3.connect(v2_file)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
        held = {row[0] for row in conn.execute("SELECT seq FROM items_cjk")}
        texts = dict(conn.execute("SELECT seq, text FROM items").fetchall())
        assert held == {seq for seq, text in texts.items() if not text.isascii()}
        if fts:
            for table in ("items_fts", "beliefs_fts"):
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    finally:
        conn.close()


def test_a_schema_2_file_written_without_the_index_gets_one(v2_file: str) -> None:
    with LocalEngine(v2_file, use_fts=False) as engine:
        engine.store(StoreItem.document("没有索引时写的笔记。"))
    with LocalEngine(v2_file) as engine:
        assert _keyword(engine, "索引") == ["没有索引时写的笔记。"]
        assert len(_keyword(engine, "公园")) == 1


# -- schema 3 -> 4 --------------------------------------------------------------------
#
# ``data/schema_v3.sqlite3`` was written by cortex_memory at commit 92da3ae (schema 3,
# which indexed every item as it was stored) with ``data/make_schema_v3.py``: items
# stored one at a time and in a batch, Chinese and English text, a conversation, a
# learning, tags, a namespace, a forgotten item, beliefs and a second tenant;
# ``data/schema_v3_export.json`` is what that release exported from it.


@pytest.fixture
def v3_file(tmp_path: Path) -> str:
    return _private_copy("schema_v3.sqlite3", tmp_path)


@pytest.mark.parametrize("fts", [True, False])
def test_a_schema_3_file_migrates_and_new_short_notes_wait_for_the_index(
    v3_file: str, fts: bool
) -> None:
    before = json.loads((DATA / "schema_v3_export.json").read_text(encoding="utf-8"))
    with LocalEngine(v3_file, use_fts=fts) as engine:
        assert engine.health().ok
        assert _everything(engine) == before
        assert _keyword(engine, "公园") == [before[0]["body"]["text"]]
        assert _keyword(engine, "parked") == ["Parked on level 3, spot B12."]
        assert _keyword(engine, "forgotten") == []
        assert _keyword(engine, "lighthouse") == [
            "user: Where is the lighthouse?\nassistant: On the northern cape."
        ]
        beliefs = engine.beliefs(BeliefsRequest(Reach.subtree(Namespace.root()), 50, "budget"))
        assert beliefs
        new = engine.store(StoreItem.document("Written after the upgrade: the ferry leaves at 9."))
        assert not new.replayed
        assert _keyword(engine, "ferry") == ["Written after the upgrade: the ferry leaves at 9."]
    with LocalEngine(v3_file, tenant="other") as other:
        assert _keyword(other, "租户") == ["另一个租户的笔记：发布在周二。"]
    conn = sqlite3.connect(v3_file)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        waiting = [row[0] for row in conn.execute("SELECT seq FROM items_pending")]
        # The one row stored after the upgrade waits for the index (with it).
        assert len(waiting) == (1 if fts else 0)
        if fts:
            for table in ("items_fts", "beliefs_fts"):
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    finally:
        conn.close()

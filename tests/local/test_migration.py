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


@pytest.fixture
def old_file(tmp_path: Path) -> str:
    target = tmp_path / "old.sqlite3"
    shutil.copyfile(DATA / "schema_v1.sqlite3", target)
    target.chmod(0o600)
    return str(target)


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

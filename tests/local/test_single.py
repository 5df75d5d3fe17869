"""The one-item store (``local/single.py``): the rows of a batch, replays, ``seq`` and failures."""

from __future__ import annotations

import sqlite3
from typing import Dict, List, Sequence, Tuple

import pytest

from cortex_memory import EngineError
from cortex_memory.contract import (
    Document,
    ForgetIds,
    GetRequest,
    LearningKind,
    MemoryMeta,
    Namespace,
    Role,
    StoreItem,
    TextBody,
    Turn,
    TurnRange,
)
from cortex_memory.local import LocalEngine, pending, sessions, single
from cortex_memory.local import engine as engine_module
from cortex_memory.local.connections import write_transaction
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.store import LONG_TEXT, prepare

from .conftest import EngineFactory


class _Letters:
    """A tiny embedder that stores its vectors: how often each of 4 letters occurs."""

    model_id = "letters-test-4"
    dimension = 4

    def embed(self, texts: Sequence[str]) -> List[List[float]]:
        return [[float(t.count(c)) + 1.0 for c in "aeio"] for t in texts]


def _items() -> List[StoreItem]:
    meta = MemoryMeta(
        namespace=Namespace.parse("team:acme/agent:writer"), workspace="ws", tags=("b", "a")
    )
    chat = MemoryMeta(thread_id="t-1", turns=TurnRange(3, 4))
    return [
        StoreItem.document("The team ships releases on Tuesdays."),
        Document(TextBody("Budget review moved to Friday."), title="Plans", meta=meta),
        StoreItem.conversation(
            (Turn(Role.USER, "Where did I park?"), Turn(Role.ASSISTANT, "Level 3, spot B12.")),
            chat,
        ),
        StoreItem.learning("Prefers tea to coffee", LearningKind.PREFERENCE, 0.75),
        StoreItem.document("会議は火曜日です。 and an English tail"),
        StoreItem.document("The team ships releases on Tuesdays."),  # a replay
    ]


def _dump(engine: LocalEngine) -> Dict[str, List[Tuple[object, ...]]]:
    """The engine's rows; its keyword index after it took the pending rows."""
    with engine._session("reading") as conn:
        tables = {
            "items": "SELECT * FROM items ORDER BY seq",
            "items_cjk": "SELECT * FROM items_cjk ORDER BY seq",
            "item_vectors": "SELECT * FROM item_vectors ORDER BY seq",
            "stats": "SELECT * FROM stats ORDER BY key",
            "engine_info": "SELECT * FROM engine_info WHERE key = 'fts_state'",
        }
        dump = {name: conn.execute(sql).fetchall() for name, sql in tables.items()}
        if engine.uses_fts:
            with write_transaction(conn):
                pending.flush(conn, ITEMS)
            dump["vocab"] = conn.execute(
                "SELECT term, doc, cnt FROM items_vocab ORDER BY term"
            ).fetchall()
            # rank 1: the index must also match its content (every item row)
            conn.execute("INSERT INTO items_fts (items_fts, rank) VALUES ('integrity-check', 1)")
    return dump


def _pending(engine: LocalEngine) -> List[int]:
    with engine._session("reading") as conn:
        return [row[0] for row in conn.execute("SELECT seq FROM items_pending ORDER BY seq")]


@pytest.mark.parametrize("use_fts", [True, False], ids=["fts", "nofts"])
@pytest.mark.parametrize("vectors", [False, True], ids=["no-vectors", "vectors"])
def test_one_by_one_writes_the_rows_a_batch_writes(
    make_engine: EngineFactory, use_fts: bool, vectors: bool
) -> None:
    options: Dict[str, object] = {"use_fts": use_fts}
    if vectors:
        options["embedder"] = _Letters()
    one = make_engine(":memory:", **options)
    batch = make_engine(":memory:", **options)
    receipts = [one.store(item) for item in _items()]
    assert [r.replayed for r in receipts] == [False] * 5 + [True]
    assert [r.replayed for r in batch.store_many(_items())] == [False] * 5 + [True]
    # Short texts stored one at a time wait for the index (local/pending.py);
    # a batch's go in at once. Once the index takes them, the files match.
    assert _pending(one) == ([1, 2, 3, 4, 5] if use_fts else [])
    assert _pending(batch) == []
    dumped = _dump(one)
    assert dumped == _dump(batch)
    assert len(dumped["items"]) == 5
    assert len(dumped["item_vectors"]) == (5 if vectors else 0)
    assert len(dumped["items_cjk"]) == 1


def test_a_replay_writes_nothing(mem: LocalEngine) -> None:
    item = StoreItem.document("Only once")
    first, again = mem.store(item), mem.store(item)
    assert (first.replayed, again.replayed, first.id) == (False, True, again.id)
    assert len(_dump(mem)["items"]) == 1


def test_a_deleted_items_seq_is_never_given_again(mem: LocalEngine) -> None:
    a, b = mem.store(StoreItem.document("first")), mem.store(StoreItem.document("second"))
    assert mem.forget(ForgetIds((b.id,))).forgotten == 1
    c = mem.store(StoreItem.document("third"))
    seqs = {row[3]: row[0] for row in _dump(mem)["items"]}  # id -> seq
    assert seqs[c.id] > seqs[a.id] + 1  # above the deleted second's
    assert sorted(seqs) == sorted([a.id, c.id])


def test_a_long_text_takes_the_general_path(mem: LocalEngine) -> None:
    item = StoreItem.document("tuesday " * (LONG_TEXT // 8 + 1))
    with mem._session("test") as conn:
        assert single.store_one(conn, "default", prepare(item), fts=True, model=None) is None
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (0,)
    receipt = mem.store(item)
    assert not receipt.replayed
    assert [hit.id for hit in mem.get(GetRequest((receipt.id,)))] == [receipt.id]


def test_a_row_sqlite_refuses_is_a_defect_not_a_replay(mem: LocalEngine) -> None:
    mem.store(StoreItem.document("warm up"))
    good = prepare(StoreItem.document("kind goes missing"))
    kind = 2  # ``kind`` (NOT NULL) is the item's third value: OR IGNORE drops the row
    bad = good._replace(values=(*good.values[:kind], None, *good.values[kind + 1 :]))
    with mem._session("test") as conn:
        with pytest.raises(EngineError, match="did not store the item"):
            single.store_one(conn, "default", bad, fts=True, model=None)
        assert not conn.in_transaction
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (1,)


def test_a_failure_rolls_back_everything(mem: LocalEngine) -> None:
    item = prepare(StoreItem.document("never half written"))
    with mem._session("test") as conn:
        conn.execute(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.items_cjk "
            "BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        cjk = prepare(StoreItem.document("会議は火曜日です"))
        with pytest.raises(sqlite3.IntegrityError, match="refused"):
            single.store_one(conn, "default", cjk, fts=True, model=None)
        assert not conn.in_transaction
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (0,)
        assert single.store_one(conn, "default", item, fts=True, model=None) is not None
        conn.execute("DROP TRIGGER refuse")


def test_single_stores_count_towards_the_statistics_refresh(
    mem: LocalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: List[object] = []
    monkeypatch.setattr(sessions, "STATS_EVERY", 3)
    monkeypatch.setattr(engine_module, "refresh_statistics_quietly", calls.append)
    item = StoreItem.document("counted once")
    for n in range(7):
        mem.store(StoreItem.document(f"note {n}"))
        mem.store(item)  # replays count for nothing
    assert len(calls) == 2  # 8 new items, a check every 3

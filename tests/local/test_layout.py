"""The file's layout keeps its promises: seqs never reused, ids found exactly, BM25's counts."""

from __future__ import annotations

import sqlite3
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import (
    ForgetIds,
    GetRequest,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    StoreItem,
)
from cortex_memory.local import LocalEngine, lexical
from cortex_memory.local.corpus import ITEMS, Stats, decode_varints, read_stats, stats_of
from cortex_memory.local.store import id_key

from .conftest import EngineFactory


def _seqs(path: str) -> List[int]:
    conn = sqlite3.connect(path)
    try:
        return [int(row[0]) for row in conn.execute("SELECT seq FROM items ORDER BY seq")]
    finally:
        conn.close()


def test_a_forgotten_newest_items_seq_is_never_given_again(
    make_engine: EngineFactory, db_path: str
) -> None:
    engine = make_engine()
    first, second = (engine.store(StoreItem.document(t)).id for t in ("one", "two"))
    top = _seqs(db_path)[-1]
    engine.forget(ForgetIds((second,)))
    engine.store_many([StoreItem.document("three"), StoreItem.document("four")])
    assert _seqs(db_path)[-2:] == [top + 1, top + 2]
    # A listing cursor taken before the delete never skips the new items.
    page = engine.list(ListRequest(MetaFilter(), 1))
    rest = engine.list(ListRequest(MetaFilter(), 10, page.next_cursor))
    assert [h.text for h in rest.items] == ["three", "four"]
    assert page.items[0].id == first
    engine.close()
    # Also after a reopen (the floor is in the file, not in the engine).
    again = make_engine()
    again.forget(ForgetIds(tuple(h.id for h in rest.items)))
    again.store(StoreItem.document("five"))
    assert _seqs(db_path)[-1] == top + 3


def test_ids_sharing_an_id_key_stay_apart(make_engine: EngineFactory, db_path: str) -> None:
    engine = make_engine()
    a, b = StoreItem.document("alpha"), StoreItem.document("beta")
    engine.store_many([a, b])
    first = a.fingerprint()
    twin = first[:16] + b.fingerprint()[16:]  # same first 64 bits as ``first``
    conn = sqlite3.connect(db_path)
    try:  # what a 64-bit prefix collision looks like in the file
        conn.execute(
            "UPDATE items SET id = ?, idkey = ? WHERE id = ?", (twin, id_key(twin), b.fingerprint())
        )
        conn.commit()
    finally:
        conn.close()
    assert id_key(twin) == id_key(first)
    assert [h.text for h in engine.get(GetRequest((twin, first)))] == ["beta", "alpha"]
    assert [h.text for h in engine.get(GetRequest((first,)))] == ["alpha"]
    assert engine.store(a).replayed
    assert engine.forget(ForgetIds((twin,))).forgotten == 1
    assert [h.text for h in engine.list(ListRequest(MetaFilter(), 10)).items] == ["alpha"]


def test_id_keys_are_signed_64_bit_for_any_text() -> None:
    assert id_key("0" * 40) == 0
    assert id_key("f" * 40) == -1
    assert id_key("8" + "0" * 39) == -(1 << 63)
    assert id_key("7" + "f" * 39) == (1 << 63) - 1
    for odd in ("", "xyz", "FFFFFFFFFFFFFFFF", "-fff", " 1234567890abcdef", "é" * 20, "\ud800"):
        assert -(1 << 63) <= id_key(odd) < 1 << 63


def test_unknown_ids_find_nothing(mem: LocalEngine) -> None:
    mem.store(StoreItem.document("kept"))
    assert mem.get(GetRequest(("not-an-id", "F" * 40, "0" * 40))) == []
    assert mem.forget(ForgetIds(("not-an-id",))).forgotten == 0


def test_every_item_is_one_row(make_engine: EngineFactory, db_path: str) -> None:
    engine = make_engine()
    engine.store(StoreItem.document("text", MemoryMeta(tags=("x", "y"))))
    conn = sqlite3.connect(db_path)
    try:
        tables = {
            str(row[0])
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        row = conn.execute("SELECT text, tags FROM items").fetchone()
    finally:
        conn.close()
    assert not {"item_bodies", "item_tags"} & tables
    assert row == ("text", "\x1ex\x1ey\x1e")


def test_varints_decode_like_sqlite() -> None:
    assert decode_varints(b"") == []
    assert decode_varints(b"\x00\x7f") == [0, 127]
    assert decode_varints(b"\x81\x00") == [128]
    assert decode_varints(b"\x82$\x85\xa7`") == [292, 87008]
    nine = b"\xff" * 8 + b"\x01"  # the ninth byte counts all 8 bits
    assert decode_varints(nine) == [(((1 << 56) - 1) << 8) | 1]
    assert decode_varints(b"\x05\x81") == [5]  # a cut-off varint is left out


_RECORDS = [b"", b"\x00", b"\x03", b"\x82", b"\x82$\x85\xa7`", b"\x03\x09", b"\x03\x0a",
            b"\x03\x09\x01"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_RECORDS), st.binary(max_size=5), st.none(),
                          st.just("\x03\x09")), max_size=10))
def test_statistics_are_those_of_the_record_asked_whatever_came_before(
    blocks: List[object]
) -> None:
    # stats_of remembers the record it decoded last: a record asked again, or
    # another one, must give its own statistics.
    for block in blocks:
        values = decode_varints(block) if isinstance(block, bytes) else []
        expected = Stats(values[0], values[1]) if len(values) >= 2 else Stats(0, 0)
        assert stats_of(block) == expected


def test_term_counts_follow_the_stems_asked(mem: LocalEngine) -> None:
    mem.store_many([StoreItem.document(t) for t in ("ship plan", "plan tree", "tree", "plan")])
    if not mem.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    wanted = {"ship": 1, "plan": 3, "tree": 2, "desk": 0}
    with mem._session("testing") as conn:
        # Statements are made once per number of stems: asking for other stems,
        # in another order, or fewer, reads what is asked.
        for stems in (["ship"], ["plan", "ship"], [], ["desk", "tree", "plan"], ["tree"]):
            stats, counts, _waiting = lexical.index_counts(conn, ITEMS, stems)
            assert counts == {stem: wanted[stem] for stem in stems}
            assert (stats.docs, stats.words) == (4, 6)


def test_keyword_statistics_follow_the_index(make_engine: EngineFactory, db_path: str) -> None:
    engine = make_engine()
    engine.health()  # opens the file: whether FTS5 is used is known from then on
    if not engine.uses_fts:
        pytest.skip("this SQLite build has no FTS5")
    ids = [r.id for r in engine.store_many([
        StoreItem.document("one two three"), StoreItem.document("four five"),
        StoreItem.document("six", MemoryMeta(namespace=Namespace.parse("agent:a"))),
    ])]  # fmt: skip
    conn = sqlite3.connect(db_path)
    try:
        stats = read_stats(conn, ITEMS)
        assert (stats.docs, stats.words, stats.average_length) == (3, 6, 2.0)
        engine.forget(ForgetIds(ids[:1]))
        assert read_stats(conn, ITEMS).docs == 2
        assert read_stats(conn, ITEMS).words == 3
    finally:
        conn.close()
    assert engine.list(ListRequest(MetaFilter(reach=Reach.exact(Namespace.parse("agent:a"))), 5))

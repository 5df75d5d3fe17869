"""Listing, export and get: keyset cursors, the 1000-hit page cap, previews, order."""

from __future__ import annotations

from typing import List, Optional

import pytest

from cortex_memory.contract import (
    Conversation,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    Role,
    StoreItem,
    Turn,
)
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local import LocalEngine


def _fill(engine: LocalEngine, n: int, word: str = "note") -> List[str]:
    ids: List[str] = []
    for start in range(0, n, 100):
        batch = [StoreItem.document(f"{word} {i}") for i in range(start, min(start + 100, n))]
        ids.extend(r.id for r in engine.store_many(batch))
    return ids


def _list_all(engine: LocalEngine, flt: MetaFilter, limit: int) -> List[str]:
    seen: List[str] = []
    cursor: Optional[str] = None
    cursors = set()
    while True:
        page = engine.list(ListRequest(flt, limit, cursor))
        assert len(page.items) <= min(limit, 1000)
        assert all(hit.score == 0.0 for hit in page.items)
        seen.extend(hit.id for hit in page.items)
        if page.next_cursor is None:
            return seen
        assert page.next_cursor not in cursors
        cursors.add(page.next_cursor)
        cursor = page.next_cursor


def test_cursors_visit_everything_once_in_insertion_order(engine: LocalEngine) -> None:
    ids = _fill(engine, 25)
    for limit in (1, 2, 7, 25, 26, 10_000):
        assert _list_all(engine, MetaFilter(), limit) == ids


def test_pages_hold_at_most_1000_hits(mem: LocalEngine) -> None:
    ids = _fill(mem, 1203)
    first = mem.list(ListRequest(MetaFilter(), 5000))
    assert len(first.items) == 1000
    assert first.next_cursor is not None
    rest = mem.list(ListRequest(MetaFilter(), 5000, first.next_cursor))
    assert [h.id for h in first.items + rest.items] == ids
    assert rest.next_cursor is None
    exported = mem.export(ListRequest(MetaFilter(), 5000))
    assert len(exported.items) == 1000
    assert exported.next_cursor == first.next_cursor
    page = mem.fetch(FetchRequest("note", FetchMode.KEYWORD, 5000))
    assert len(page.hits) == 1000
    assert page.next_cursor is not None
    more = mem.fetch(FetchRequest("note", FetchMode.KEYWORD, 5000, cursor=page.next_cursor))
    assert len(page.hits) + len(more.hits) == 1203
    assert more.next_cursor is None
    assert {h.id for h in page.hits + more.hits} == set(ids)


def test_keyset_cursor_survives_writes_and_forgets(mem: LocalEngine) -> None:
    ids = _fill(mem, 6)
    page = mem.list(ListRequest(MetaFilter(), 3))
    assert [h.id for h in page.items] == ids[:3]
    mem.forget(ForgetTarget.ids([ids[0], ids[4]]))  # one before the cursor, one after
    later = mem.store(StoreItem.document("written meanwhile")).id
    rest = mem.list(ListRequest(MetaFilter(), 10, page.next_cursor))
    assert [h.id for h in rest.items] == [ids[3], ids[5], later]


@pytest.mark.parametrize("cursor", ["x", "12", "k", "k-1", "o5", "k1 ", "k" + "9" * 30])
def test_unknown_list_cursors_are_refused(mem: LocalEngine, cursor: str) -> None:
    with pytest.raises(InvalidRequestError, match="unknown cursor"):
        mem.list(ListRequest(MetaFilter(), 5, cursor))
    with pytest.raises(InvalidRequestError, match="unknown cursor"):
        mem.export(ListRequest(MetaFilter(), 5, cursor))


@pytest.mark.parametrize("cursor", ["x", "5", "k5", "o-1", "o"])
def test_unknown_fetch_cursors_are_refused(mem: LocalEngine, cursor: str) -> None:
    with pytest.raises(InvalidRequestError, match=f"unknown cursor `{cursor}`"):
        mem.fetch(FetchRequest("note", FetchMode.HYBRID, 5, cursor=cursor))


def test_limits_must_be_positive(mem: LocalEngine) -> None:
    with pytest.raises(InvalidRequestError):
        mem.list(ListRequest(MetaFilter(), 0))
    with pytest.raises(InvalidRequestError):
        mem.list_preview(ListRequest(MetaFilter(), 0))
    with pytest.raises(InvalidRequestError):
        mem.export(ListRequest(MetaFilter(), -1))


def test_preview_cuts_only_the_text(mem: LocalEngine) -> None:
    long_doc = StoreItem.document("word " * 400)
    talk = Conversation((Turn(Role.USER, "hi"), Turn(Role.ASSISTANT, "yo")))
    mem.store_many([long_doc, talk])
    full = mem.list(ListRequest(MetaFilter(), 1))
    preview = mem.list_preview(ListRequest(MetaFilter(), 1))
    assert [h.id for h in preview.items] == [h.id for h in full.items]
    assert preview.next_cursor == full.next_cursor
    assert preview.items[0].meta == full.items[0].meta
    assert full.items[0].text.startswith(preview.items[0].text)
    assert len(preview.items[0].text) == 512 < len(full.items[0].text)
    rest = mem.list_preview(ListRequest(MetaFilter(), 5, preview.next_cursor))
    assert rest.items[0].text == "user: hi\nassistant: yo"


def test_get_order_duplicates_unknown_and_reach(mem: LocalEngine) -> None:
    a = mem.store(StoreItem.document("a", MemoryMeta(namespace=Namespace.parse("agent:a")))).id
    b = mem.store(StoreItem.document("b")).id
    job_ns = Namespace.parse("agent:a/service:job")
    job = mem.store(StoreItem.document("job", MemoryMeta(namespace=job_ns))).id
    hits = mem.get(GetRequest((b, "missing", a, b, job)))
    assert [h.id for h in hits] == [b, a]  # the sandbox is left out without a reach
    assert [h.id for h in mem.get(GetRequest((a, b, job), Reach.exact(job_ns)))] == [job]
    assert [h.id for h in mem.get(GetRequest((a, b), Reach.default()))] == [b]
    with pytest.raises(InvalidRequestError, match="between 1 and 200"):
        mem.get(GetRequest(()))
    with pytest.raises(InvalidRequestError, match="blank"):
        mem.get(GetRequest((" ",)))

"""The contract's pure rules for replace, bulk store_many and deadlines (issues 14, 15)."""

from __future__ import annotations

import builtins
import copy
import dataclasses
import pickle
from typing import Any, Iterator, List, Optional, Tuple

import pytest

import cortex_memory
from cortex_memory import EngineError, InvalidRequestError, UnavailableError
from cortex_memory.contract import (
    Deadline,
    EngineDescriptor,
    EngineHealth,
    FetchMode,
    FetchPage,
    FetchRequest,
    ForgetReport,
    ForgetTarget,
    GetRequest,
    Hit,
    ItemKind,
    LearningKind,
    ListPage,
    ListRequest,
    MemoryEngine,
    MemoryMeta,
    MetaFilter,
    Namespace,
    RecallAnswer,
    RecallRequest,
    Source,
    SourceKind,
    StoreItem,
    StoreReceipt,
    WaitFor,
    deadline_keywords,
    is_version_of,
    redacted_id,
    source_identity,
    store_in_batches,
    version_key,
)
from cortex_memory.contract.bulk import stored_one_by_one
from cortex_memory.contract.conformance.checks_writes import past_deadline
from cortex_memory.contract.receipts import receipt
from cortex_memory.contract.replacing import FILE_PATH, SOURCE_ID, ReplaceBatch
from cortex_memory.cortex import timing


def doc(text: str, **meta: Any) -> StoreItem:
    return StoreItem.document(text, MemoryMeta(**meta))


# --------------------------------------------------------------------- receipts


@pytest.mark.parametrize("replayed", [False, True])
def test_the_quick_receipt_is_the_constructors(replayed: bool) -> None:
    quick, built = receipt("a" * 40, replayed), StoreReceipt("a" * 40, replayed)
    assert type(quick) is StoreReceipt
    assert quick == built
    assert hash(quick) == hash(built)
    assert repr(quick) == repr(built)
    assert quick.replaced == ()
    assert quick.to_json() == built.to_json()
    assert pickle.loads(pickle.dumps(quick)) == built
    assert dataclasses.replace(quick, replaced=("b" * 40,)).replaced == ("b" * 40,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.replayed = not replayed  # type: ignore[misc]


def test_the_quick_receipt_checks_what_is_not_exact() -> None:
    class Flag(int):
        pass

    # Anything but a str and a bool goes through the constructor's checks.
    with pytest.raises(TypeError, match="id must be a str"):
        receipt(b"a" * 40, False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="replayed must be a bool"):
        receipt("a" * 40, Flag(1))  # type: ignore[arg-type]


def test_a_receipt_writes_replaced_only_when_something_was() -> None:
    plain = StoreReceipt("a" * 40, False)
    assert plain.to_json() == {"id": "a" * 40, "replayed": False}
    replacing = StoreReceipt("a" * 40, True, ["b" * 40, "c" * 40])
    assert replacing.replaced == ("b" * 40, "c" * 40)
    assert replacing.to_json() == {
        "id": "a" * 40, "replayed": True, "replaced": ["b" * 40, "c" * 40]
    }
    assert StoreReceipt.from_json(replacing.to_json()) == replacing
    assert StoreReceipt.from_json(plain.to_json()) == plain
    with pytest.raises(TypeError):
        StoreReceipt("x", False, "bcd")  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError):
        StoreReceipt.from_json({"id": "x", "replayed": False, "replaced": [1]})


# ------------------------------------------------------------------- identity


def test_the_source_identity_is_the_source_id_else_the_file_path() -> None:
    assert source_identity(MemoryMeta()) is None
    assert source_identity(MemoryMeta(file_path="a.md")) == (FILE_PATH, "a.md")
    named = MemoryMeta(file_path="a.md", source=Source(SourceKind.FILE, "id-1"))
    assert source_identity(named) == (SOURCE_ID, "id-1")


def test_a_version_key_needs_an_identity_that_is_not_blank() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        version_key(StoreItem.learning("x", LearningKind.FACT, 0.5))
    assert caught.value.message == (
        "replace needs a source identity: the learning has neither meta.source.id nor "
        "meta.file_path"
    )
    with pytest.raises(InvalidRequestError, match=r"the document's meta\.file_path is blank"):
        version_key(doc("x", file_path=""))
    key = version_key(doc("x", file_path="a.md", namespace=Namespace.parse("agent:a")))
    assert key.kind is ItemKind.DOCUMENT
    assert str(key.namespace) == "agent:a"


def test_versions_match_kind_namespace_and_identity_exactly() -> None:
    key = version_key(doc("x", file_path="notes/a.md"))
    assert is_version_of(key, ItemKind.DOCUMENT, MemoryMeta(file_path="notes/a.md"))
    assert not is_version_of(key, ItemKind.LEARNING, MemoryMeta(file_path="notes/a.md"))
    assert not is_version_of(key, ItemKind.DOCUMENT, MemoryMeta(file_path="notes/a.md/b"))
    assert not is_version_of(key, ItemKind.DOCUMENT, MemoryMeta(file_path="notes"))
    elsewhere = MemoryMeta(file_path="notes/a.md", namespace=Namespace.parse("agent:b"))
    assert not is_version_of(key, ItemKind.DOCUMENT, elsewhere)
    named = MemoryMeta(file_path="notes/a.md", source=Source(SourceKind.FILE, "n"))
    assert not is_version_of(key, ItemKind.DOCUMENT, named)  # its identity is its source id
    phone = "+1 555 123 4567"
    by_phone = version_key(doc("y", source=Source(SourceKind.IMPORT, phone)))
    redacted = MemoryMeta(source=Source(SourceKind.IMPORT, redacted_id(phone)))
    assert is_version_of(by_phone, ItemKind.DOCUMENT, redacted)


def test_a_batch_collapses_to_the_last_version_of_each_source() -> None:
    v1, v2, w = doc("1", file_path="v"), doc("2", file_path="v"), doc("w", file_path="w")
    batch = ReplaceBatch.of([v1, w, v2, v1])
    assert batch.survives == [False, True, False, True]
    receipts = [StoreReceipt(i, False) for i in batch.ids]
    filled = batch.receipts(receipts, {3: ["old"], 1: []})
    assert [r.replaced for r in filled] == [(), (), (), tuple(sorted(["old", v2.fingerprint()]))]
    assert batch.prefix(3).survives == [False, True, True]


# ------------------------------------------------------------------------ bulk


def make_batch_store(calls: List[int]) -> Any:
    def store(batch: Tuple[StoreItem, ...]) -> List[StoreReceipt]:
        calls.append(len(batch))
        return [StoreReceipt(item.fingerprint(), False) for item in batch]

    return store


def unsized(items: List[StoreItem]) -> Iterator[StoreItem]:
    yield from items


def test_batches_progress_and_totals() -> None:
    items = [doc(f"n{i}") for i in range(250)]
    calls: List[int] = []
    seen: List[Tuple[int, Optional[int]]] = []
    receipts = store_in_batches(
        unsized(items), make_batch_store(calls), deadline=Deadline(None),
        progress=lambda d, t: seen.append((d, t)),
    )
    assert len(receipts) == 250
    assert calls == [100, 100, 50]
    assert seen == [(100, None), (200, None), (250, None)]
    seen.clear()
    store_in_batches(
        items, make_batch_store([]), deadline=Deadline(None), batch_size=120,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen == [(120, 250), (240, 250), (250, 250)]


def test_nothing_to_store_and_wrong_arguments_are_refused() -> None:
    with pytest.raises(InvalidRequestError, match="store_many takes at least one item"):
        store_in_batches(unsized([]), make_batch_store([]), deadline=Deadline(None))
    with pytest.raises(TypeError, match="iterable of StoreItem"):
        store_in_batches(doc("one"), make_batch_store([]), deadline=Deadline(None))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="progress must be callable"):
        store_in_batches([doc("x")], make_batch_store([]), deadline=Deadline(None), progress=3)  # type: ignore[arg-type]


def test_a_bad_item_stops_before_its_batch_with_the_receipts_so_far() -> None:
    items = [doc(f"n{i}") for i in range(150)]
    items[120] = doc(" ")
    calls: List[int] = []
    with pytest.raises(InvalidRequestError, match="must not be empty") as caught:
        store_in_batches(unsized(items), make_batch_store(calls), deadline=Deadline(None))
    assert calls == [100]  # the second batch was never handed over
    assert [r.id for r in caught.value.receipts] == [i.fingerprint() for i in items[:100]]


def test_a_failing_batch_adds_what_it_kept_to_the_receipts() -> None:
    items = [doc(f"n{i}") for i in range(130)]

    def store(batch: Tuple[StoreItem, ...]) -> List[StoreReceipt]:
        if len(batch) < 100:
            err = EngineError("disk full")
            err.receipts = (StoreReceipt(batch[0].fingerprint(), False),)
            raise err
        return [StoreReceipt(item.fingerprint(), False) for item in batch]

    with pytest.raises(EngineError) as caught:
        store_in_batches(items, store, deadline=Deadline(None))
    assert [r.id for r in caught.value.receipts] == [i.fingerprint() for i in items[:101]]


def test_the_deadline_is_checked_before_each_batch() -> None:
    items = [doc(f"n{i}") for i in range(150)]
    calls: List[int] = []
    with pytest.raises(UnavailableError, match="store_many: deadline exceeded") as caught:
        store_in_batches(items, make_batch_store(calls), deadline=past_deadline())
    assert calls == []
    assert caught.value.receipts == ()


def test_a_progress_error_carries_the_receipts() -> None:
    def stop(done: int, total: Optional[int]) -> None:
        raise UnavailableError("the user cancelled")

    with pytest.raises(UnavailableError) as caught:
        store_in_batches([doc(f"n{i}") for i in range(150)], make_batch_store([]),
                         deadline=Deadline(None), progress=stop)
    assert len(caught.value.receipts) == 100


def test_receipts_on_an_error_survive_copy_and_pickle() -> None:
    err = UnavailableError("down")
    err.receipts = (StoreReceipt("a", False),)
    assert copy.copy(err).receipts == err.receipts
    assert pickle.loads(pickle.dumps(err)).receipts == err.receipts
    assert UnavailableError("other").receipts == ()


def test_one_by_one_replaces_only_with_the_last_version() -> None:
    v1, v2 = doc("1", file_path="v"), doc("2", file_path="v")
    asked: List[Tuple[str, bool]] = []

    def store(item: StoreItem, replacing: bool) -> StoreReceipt:
        asked.append((item.render_text(), replacing))
        if item.render_text() == "2" and len(asked) > 2:
            raise EngineError("no")
        return StoreReceipt(item.fingerprint(), False)

    stored_one_by_one(store, [v1, v2], replace=True)
    assert asked == [("1", False), ("2", True)]
    with pytest.raises(EngineError) as caught:
        stored_one_by_one(store, [v1, v2], replace=False)
    assert [r.id for r in caught.value.receipts] == [v1.fingerprint()]


# --------------------------------------------------------------------- deadline


def test_deadline_is_one_class_everywhere() -> None:
    assert timing.Deadline is Deadline is cortex_memory.Deadline


def test_deadline_keywords_pass_only_what_is_set() -> None:
    assert deadline_keywords(Deadline(None)) == {}
    bounded = Deadline(5.0)
    assert deadline_keywords(bounded, replace=True) == {"replace": True, "deadline": bounded}


class OldStyle(MemoryEngine):
    """An engine written before replace= and deadline= existed (the seven methods)."""

    def __init__(self) -> None:
        self.items: List[StoreItem] = []
        self.list_kwargs: List[dict] = []

    def descriptor(self) -> EngineDescriptor:
        return EngineDescriptor("old", "Old", "old engine", fetch_modes=(FetchMode.KEYWORD,))

    def health(self) -> EngineHealth:
        return EngineHealth.ok()

    def recall(self, request: RecallRequest) -> RecallAnswer:
        return RecallAnswer("nothing")

    def fetch(self, request: FetchRequest) -> FetchPage:
        return FetchPage(())

    def store(self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE) -> StoreReceipt:
        item.validate()
        held = item in self.items
        if not held:
            self.items.append(item)
        return StoreReceipt(item.fingerprint(), held)

    def forget(self, target: ForgetTarget) -> ForgetReport:
        return ForgetReport(0)

    def list(self, request: ListRequest, **kwargs: Any) -> ListPage:
        self.list_kwargs.append(kwargs)
        start = int(request.cursor or 0)
        page = self.items[start : start + request.limit]
        end = start + len(page)
        return ListPage(tuple(Hit.of(i) for i in page), str(end) if end < len(self.items) else None)


def test_an_engine_without_the_new_keywords_works_with_the_defaults() -> None:
    engine = OldStyle()
    items = [doc(f"n{i}") for i in range(130)]
    assert [r.id for r in engine.store_many(unsized(items))] == [i.fingerprint() for i in items]
    hits: builtins.list[Hit] = engine.get(GetRequest((items[129].fingerprint(),)))
    assert [h.id for h in hits] == [items[129].fingerprint()]
    assert engine.list_kwargs
    assert all(kw == {} for kw in engine.list_kwargs)
    bound = Deadline(30.0)
    engine.get(GetRequest((items[0].fingerprint(),)), deadline=bound)
    assert engine.list_kwargs[-1] == {"deadline": bound}  # a bounded deadline is passed on
    with pytest.raises(UnavailableError, match="get: deadline exceeded"):
        engine.get(GetRequest(("x",)), deadline=past_deadline())


def test_the_default_explore_checks_its_deadline_between_pages() -> None:
    from cortex_memory.contract import ExploreRequest, Facet

    engine = OldStyle()
    engine.store_many(doc(f"n{i}") for i in range(450))
    page = engine.explore(ExploreRequest(Facet.KIND, 5, MetaFilter()), deadline=30)
    assert page.total == 450
    with pytest.raises(UnavailableError):
        engine.explore(ExploreRequest(Facet.KIND, 5), deadline=past_deadline())

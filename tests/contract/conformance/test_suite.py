"""run(engine) on the reference engine: it passes, runs every check, cleans up, and
reports failures with the right check, shape and detail."""

from __future__ import annotations

import builtins
import logging
from collections import Counter
from dataclasses import replace
from typing import Any, Iterable, Tuple

import pytest

from cortex_memory.contract import (
    ConsolidateReceipt,
    ConsolidateRequest,
    Consolidation,
    EngineDescriptor,
    EngineHealth,
    EraseReport,
    EraseRequest,
    FetchPage,
    FetchRequest,
    ForgetFilter,
    ForgetReport,
    ForgetTarget,
    ListPage,
    ListRequest,
    MemoryEngine,
    MemoryMeta,
    Namespace,
    RecallAnswer,
    RecallRequest,
    Segment,
    SegmentKind,
    StoreItem,
    StoreReceipt,
    WaitFor,
)
from cortex_memory.contract.conformance import (
    CHECK_NAMES,
    CheckEngineFailure,
    CheckFailure,
    ReferenceEngine,
    Run,
    Session,
    run,
    run_checks,
)
from cortex_memory.errors import UnavailableError, UnsupportedError


def _foreign() -> Tuple[StoreItem, ...]:
    job = Namespace.parse("agent:someone").child(Segment(SegmentKind.SERVICE, "job"))
    return (
        StoreItem.document("a note stored before the run"),
        StoreItem.document("another run's note", MemoryMeta(workspace="tinymemory-conformance/0")),
        StoreItem.document("a sandboxed note", MemoryMeta(namespace=job)),
    )


@pytest.mark.parametrize("consolidation", list(Consolidation), ids=lambda c: c.value)
def test_reference_engine_passes_and_leaves_its_store_empty(consolidation: Consolidation) -> None:
    engine = ReferenceEngine(consolidation)
    run(engine)
    assert engine.snapshot() == ()
    assert engine.backing_store.count() == 0


def test_foreign_items_are_still_there_after_a_run() -> None:
    engine = ReferenceEngine()
    foreign = _foreign()
    for item in foreign:
        engine.store(item)
    run(engine)
    assert engine.snapshot() == foreign


class Recording(MemoryEngine):
    """Forwards to a reference engine, counting the calls per method (and fetch modes)."""

    def __init__(self, inner: MemoryEngine) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattribute__(self, name: str) -> Any:
        if name in ("inner", "calls") or name.startswith("__"):
            return object.__getattribute__(self, name)
        self.calls[name] += 1
        return getattr(self.inner, name)

    # The abstract methods exist only to make the class concrete.
    def descriptor(self) -> EngineDescriptor:  # pragma: no cover
        raise AssertionError

    def health(self) -> EngineHealth:  # pragma: no cover
        raise AssertionError

    def recall(self, request: RecallRequest) -> RecallAnswer:  # pragma: no cover
        raise AssertionError

    def fetch(self, request: FetchRequest) -> FetchPage:  # pragma: no cover
        raise AssertionError

    def store(
        self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE
    ) -> StoreReceipt:  # pragma: no cover
        raise AssertionError

    def forget(self, target: ForgetTarget) -> ForgetReport:  # pragma: no cover
        raise AssertionError

    def list(self, request: ListRequest) -> ListPage:  # pragma: no cover
        raise AssertionError


def test_every_operation_is_exercised() -> None:
    engine = Recording(ReferenceEngine())
    run(engine)
    for operation in (
        "health", "descriptor", "store", "store_many", "list", "get", "explore", "export",
        "erase", "forget", "forget_within", "fetch", "recall", "consolidate", "beliefs",
    ):
        assert engine.calls[operation] > 0, operation


class SevenMethods(MemoryEngine):
    """Only the seven required methods, forwarded: every other one is the base default."""

    def __init__(self) -> None:
        self.inner = ReferenceEngine(Consolidation.NONE)

    def descriptor(self) -> EngineDescriptor:
        return self.inner.descriptor()

    def health(self, **kwargs: Any) -> EngineHealth:
        return self.inner.health(**kwargs)

    def recall(self, request: RecallRequest, **kwargs: Any) -> RecallAnswer:
        return self.inner.recall(request, **kwargs)

    def fetch(self, request: FetchRequest, **kwargs: Any) -> FetchPage:
        return self.inner.fetch(request, **kwargs)

    def store(self, item: StoreItem, **kwargs: Any) -> StoreReceipt:
        return self.inner.store(item, **kwargs)

    def forget(self, target: ForgetTarget, **kwargs: Any) -> ForgetReport:
        return self.inner.forget(target, **kwargs)

    def list(self, request: ListRequest, **kwargs: Any) -> ListPage:
        return self.inner.list(request, **kwargs)


def test_a_minimal_engine_passes_and_skips_export_and_erase() -> None:
    engine = SevenMethods()
    session = Session(engine, Run.fresh())
    run_checks(session)
    assert session.skipped == ["export", "erase"]
    assert engine.inner.snapshot() == ()


def test_checks_run_in_the_contract_order() -> None:
    assert CHECK_NAMES == (
        "health", "round_trip", "export", "replay", "explore", "get", "store_many",
        "store_with", "fetch_filters", "unsupported_modes", "namespaces", "empty_forget",
        "forget_by_id", "forget_by_filter", "erase", "recall", "consolidate",
        "replace", "deadline", "bulk",
    )


class FailingRecall(ReferenceEngine):
    def recall(self, request: RecallRequest) -> RecallAnswer:
        raise UnavailableError("the model is asleep")


def test_an_engine_error_is_a_check_engine_failure_and_cleanup_still_runs() -> None:
    engine = FailingRecall()
    foreign = _foreign()
    for item in foreign:
        engine.store(item)
    with pytest.raises(CheckEngineFailure) as caught:
        run(engine)
    failure = caught.value
    assert failure.check == "recall"
    assert failure.operation == "recall"
    assert isinstance(failure.__cause__, UnavailableError)
    assert str(failure) == (
        "conformance check `recall` failed: the engine returned an error: "
        "unavailable: the model is asleep"
    )
    assert engine.snapshot() == foreign


class BuggyRecall(ReferenceEngine):
    def recall(self, request: RecallRequest) -> RecallAnswer:
        raise TypeError("a programming error")


def test_a_programming_error_propagates_and_cleanup_still_runs() -> None:
    engine = BuggyRecall()
    with pytest.raises(TypeError, match="a programming error"):
        run(engine)
    assert engine.snapshot() == ()


class KeepsRunOnBareFilterForget(ReferenceEngine):
    """Ignores a forget of exactly the run's workspace filter (what cleanup sends)."""

    def forget(self, target: ForgetTarget, **kwargs: Any) -> ForgetReport:
        if isinstance(target, ForgetFilter):
            flt = target.filter
            if flt.workspace is not None and replace(flt, workspace=None).is_empty():
                target.validate()
                return ForgetReport(0)
        return super().forget(target, **kwargs)


def test_a_cleanup_failure_is_reported_as_cleanup() -> None:
    with pytest.raises(CheckFailure) as caught:
        run(KeepsRunOnBareFilterForget())
    assert caught.value.check == "cleanup"
    assert "items still list under workspace `tinymemory-conformance/" in caught.value.detail


class DownAndKeeping(KeepsRunOnBareFilterForget):
    def health(self) -> EngineHealth:
        return EngineHealth.down("maintenance")


def test_the_first_failure_wins_over_a_failing_cleanup(caplog: pytest.LogCaptureFixture) -> None:
    engine = DownAndKeeping()
    run_id = Run.fresh()
    engine.store(run_id.document("left from an earlier attempt"))
    with caplog.at_level(logging.WARNING), pytest.raises(CheckFailure) as caught:
        run(engine, identity=run_id)
    assert caught.value.check == "health"
    assert caught.value.detail == "health() is down: `maintenance`"
    assert any("cleanup" in record.getMessage() for record in caplog.records)


class DropsTagsOnList(ReferenceEngine):
    def list(self, request: ListRequest) -> ListPage:
        page = super().list(request)
        items = tuple(replace(hit, meta=hit.meta.with_tags(())) for hit in page.items)
        return replace(page, items=items)


def test_a_failure_detail_names_the_item_and_the_field() -> None:
    with pytest.raises(CheckFailure) as caught:
        run(DropsTagsOnList())
    detail = caught.value.detail
    assert caught.value.check == "round_trip"
    assert detail.startswith("the round-trip document `")
    assert 'meta.tags: expected ["roundtrip"], got nothing' in detail
    assert len(detail) < 300


class TextCutOnList(ReferenceEngine):
    def list(self, request: ListRequest) -> ListPage:
        page = super().list(request)
        return replace(page, items=tuple(replace(h, text=h.text[:5]) for h in page.items))


def test_a_text_difference_is_quoted_short() -> None:
    with pytest.raises(CheckFailure) as caught:
        run(TextCutOnList())
    assert caught.value.check == "round_trip"
    assert "text: expected `# Round trip" in caught.value.detail


class ExtraStoreManyReceipt(ReferenceEngine):
    def store_many(self, items: Iterable[StoreItem], **kwargs: Any) -> builtins.list[StoreReceipt]:
        receipts = super().store_many(items, **kwargs)
        return [*receipts, receipts[0]]


def test_store_many_receipt_count_is_checked() -> None:
    with pytest.raises(CheckFailure) as caught:
        run(ExtraStoreManyReceipt())
    assert caught.value.check == "store_many"
    assert caught.value.detail == "store_many of 3 items answered 4 receipts"


class WorkspaceRecorder(ReferenceEngine):
    def __init__(self) -> None:
        super().__init__()
        self.workspaces: builtins.set[str] = set()

    def store(self, item: StoreItem, **kwargs: Any) -> StoreReceipt:
        self.workspaces.add(item.meta.workspace or "")
        return super().store(item, **kwargs)


def test_run_takes_a_given_identity() -> None:
    engine = WorkspaceRecorder()
    run(engine, identity=Run("fixed0"))
    assert engine.workspaces == {
        "tinymemory-conformance/fixed0", "tinymemory-conformance/fixed0/probes"
    }
    assert engine.snapshot() == ()


class ConsolidateUnavailable(ReferenceEngine):
    def consolidate(self, request: ConsolidateRequest) -> ConsolidateReceipt:
        request.validate()
        raise UnsupportedError("not today")


def test_unsupported_consolidate_under_a_promise_is_an_engine_failure() -> None:
    engine = ConsolidateUnavailable(Consolidation.ON_DEMAND)
    with pytest.raises(CheckEngineFailure) as caught:
        run(engine)
    assert caught.value.check == "consolidate"
    assert caught.value.operation == "consolidate"
    assert engine.snapshot() == ()


class EraseBroken(ReferenceEngine):
    def erase(self, request: EraseRequest) -> EraseReport:
        request.validate()
        raise UnavailableError("erase backend down")


def test_an_erase_error_other_than_unsupported_fails() -> None:
    engine = EraseBroken()
    with pytest.raises(CheckEngineFailure) as caught:
        run(engine)
    assert caught.value.check == "erase"
    assert engine.snapshot() == ()


class EraseEverything(ReferenceEngine):
    def erase(self, request: EraseRequest) -> EraseReport:
        return super().erase(request.with_whole_tree())


def test_erasing_the_whole_tree_without_asking_is_caught() -> None:
    engine = EraseEverything()
    with pytest.raises(CheckFailure) as caught:
        run(engine)
    assert caught.value.check == "erase"
    assert caught.value.detail.startswith(
        "erase(subtree(root)) without whole_tree answered {\"erased_scopes\":"
    )

"""The harness: run identity, the error shapes, strict listing and cleanup."""

from __future__ import annotations

import copy
import pickle
import re
import threading
import time
from dataclasses import replace
from typing import List, Optional

import pytest

from cortex_memory.contract import (
    Exported,
    ExportPage,
    ForgetReport,
    ForgetTarget,
    Hit,
    ListPage,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Segment,
    SegmentKind,
    StoreItem,
    TextBody,
)
from cortex_memory.contract.conformance import (
    CheckEngineFailure,
    CheckFailure,
    ConformanceError,
    ReferenceEngine,
    Run,
    Session,
)
from cortex_memory.errors import Error, InvalidRequestError, UnavailableError, UnsupportedError

# --------------------------------------------------------------------- Run


def test_fresh_run_nonce_is_hex_time_then_hex_counter() -> None:
    before = time.time_ns()
    run = Run.fresh()
    after = time.time_ns()
    assert re.fullmatch("[0-9a-f]+", run.nonce)
    # The time part has as many hex digits as the clock now has.
    width = len(format(before, "x"))
    stamp, counter = int(run.nonce[:width], 16), run.nonce[width:]
    assert before <= stamp <= after
    assert re.fullmatch("[0-9a-f]+", counter)


def test_fresh_runs_differ_even_from_many_threads() -> None:
    nonces: List[str] = []
    lock = threading.Lock()

    def make() -> None:
        for _ in range(200):
            nonce = Run.fresh().nonce
            with lock:
                nonces.append(nonce)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(nonces)) == 800


def test_run_names_its_workspaces_and_marker() -> None:
    run = Run("abc")
    assert run.workspace == "tinymemory-conformance/abc"
    assert run.probe_workspace == "tinymemory-conformance/abc/probes"
    assert run.marker == "tmconfabc"
    assert run.meta() == MemoryMeta(workspace="tinymemory-conformance/abc")
    assert run.filter() == MetaFilter(workspace="tinymemory-conformance/abc")
    assert run.probe_filter() == MetaFilter(workspace="tinymemory-conformance/abc/probes")
    doc = run.document("replay")
    assert doc.body == TextBody("tmconfabc replay note")
    assert doc.meta == run.meta()
    tagged = run.meta().with_tags(["x"])
    assert run.document("x", tagged).meta == tagged


def test_the_exact_run_filter_leaves_out_the_probes() -> None:
    run = Run("abc")
    probe_meta = MemoryMeta(workspace=run.probe_workspace)
    assert not run.filter().matches(StoreItem.document("x").item_kind, probe_meta)


@pytest.mark.parametrize("nonce", ["", "a-b", "é", "x" * 65])
def test_run_refuses_a_nonce_that_cannot_be_a_word(nonce: str) -> None:
    with pytest.raises(ValueError, match="nonce"):
        Run(nonce)


def test_run_refuses_a_nonce_of_the_wrong_type() -> None:
    with pytest.raises(TypeError):
        Run(12)  # type: ignore[arg-type]


# ------------------------------------------------------------------ errors


def test_check_failure_shape() -> None:
    failure = CheckFailure("replay", "the second store was not a replay")
    assert isinstance(failure, ConformanceError)
    assert not isinstance(failure, Error)
    assert failure.check == "replay"
    assert failure.detail == "the second store was not a replay"
    assert str(failure) == (
        "conformance check `replay` failed: the second store was not a replay"
    )
    assert copy.copy(failure).detail == failure.detail
    assert str(pickle.loads(pickle.dumps(failure))) == str(failure)


def test_check_engine_failure_shape() -> None:
    error = UnavailableError("upstream down")
    failure = CheckEngineFailure("health", error, "health")
    assert failure.check == "health"
    assert failure.error is error
    assert failure.__cause__ is error
    assert failure.operation == "health"
    assert str(failure) == (
        "conformance check `health` failed: the engine returned an error: "
        "unavailable: upstream down"
    )
    again = pickle.loads(pickle.dumps(failure))
    assert str(again) == str(failure)
    assert again.error == error


def test_error_types_are_checked() -> None:
    with pytest.raises(TypeError):
        CheckEngineFailure("x", ValueError("no"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        CheckFailure("x", 3)  # type: ignore[arg-type]


# ----------------------------------------------------------------- session


def test_session_call_wraps_engine_errors_and_passes_programming_errors() -> None:
    session = Session(ReferenceEngine(), Run("abc"), "get")

    def refuse() -> None:
        raise InvalidRequestError("nope")

    with pytest.raises(CheckEngineFailure) as caught:
        session.call("get", refuse)
    assert caught.value.check == "get"
    assert caught.value.operation == "get"
    assert isinstance(caught.value.__cause__, InvalidRequestError)

    def broken() -> None:
        raise TypeError("a bug")

    with pytest.raises(TypeError, match="a bug"):
        session.call("get", broken)


def test_session_refuses_a_non_engine() -> None:
    with pytest.raises(TypeError, match="MemoryEngine"):
        Session(object(), Run("abc"))  # type: ignore[arg-type]


def test_refused_reports_an_answer_and_a_wrong_error() -> None:
    session = Session(ReferenceEngine(), Run("abc"), "explore")
    with pytest.raises(CheckFailure, match="answered 42 instead of refusing with"):
        session.refused("thing", (InvalidRequestError,), lambda: 42)

    def unavailable() -> None:
        raise UnavailableError("busy")

    with pytest.raises(CheckFailure, match="raised `unavailable: busy` where") as caught:
        session.refused("thing", (InvalidRequestError,), unavailable)
    assert isinstance(caught.value.__cause__, UnavailableError)


class _Lister(ReferenceEngine):
    """A reference engine whose list pages can be replaced by a test."""

    def __init__(self, pages: Optional[List[ListPage]] = None) -> None:
        super().__init__()
        self.pages = pages
        self.calls = 0

    def list(self, request: ListRequest) -> ListPage:
        self.calls += 1
        if self.pages is None:
            return super().list(request)
        return self.pages[min(self.calls - 1, len(self.pages) - 1)]


def _hit(score: float = 0.0) -> Hit:
    return replace(Hit.of(StoreItem.document("x")), score=score)


def test_list_all_follows_cursors_two_per_page() -> None:
    engine = _Lister()
    run = Run("abc")
    items = [run.document(f"n{i}") for i in range(5)]
    for item in items:
        engine.store(item)
    engine.store(StoreItem.document("foreign"))
    listed = Session(engine, run, "t").list_ids(run.filter())
    assert listed == [item.fingerprint() for item in items]
    assert engine.calls == 3


def test_list_all_catches_a_repeated_cursor() -> None:
    engine = _Lister([ListPage((), "1"), ListPage((), "2"), ListPage((), "1")])
    with pytest.raises(CheckFailure, match="list repeated the cursor `1`") as caught:
        Session(engine, Run("abc"), "get").list_all(MetaFilter())
    assert caught.value.check == "get"


def test_list_all_catches_a_cursor_that_does_not_move() -> None:
    engine = _Lister([ListPage((), "same")])
    with pytest.raises(CheckFailure, match="repeated the cursor `same`"):
        Session(engine, Run("abc"), "t").list_all(MetaFilter())
    assert engine.calls == 2


def test_list_all_catches_a_listing_score() -> None:
    engine = _Lister([ListPage((_hit(0.5),))])
    with pytest.raises(CheckFailure, match=r"with score 0\.5; a listing scores every hit 0\.0"):
        Session(engine, Run("abc"), "t").list_all(MetaFilter())


def test_list_all_catches_a_listing_that_never_ends() -> None:
    class Endless(ReferenceEngine):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def list(self, request: ListRequest) -> ListPage:
            self.calls += 1
            return ListPage((), str(self.calls))

    engine = Endless()
    with pytest.raises(CheckFailure, match="list did not end after 10000 pages"):
        Session(engine, Run("abc"), "t").list_all(MetaFilter())
    assert engine.calls == 10_000


def test_list_all_catches_a_page_longer_than_asked() -> None:
    engine = _Lister([ListPage((_hit(), _hit(), _hit()))])
    with pytest.raises(CheckFailure, match="3 items for a limit of 2"):
        Session(engine, Run("abc"), "t").list_all(MetaFilter())


def test_export_all_is_none_when_the_engine_does_not_export() -> None:
    class NoExport(ReferenceEngine):
        def export(self, request: ListRequest) -> ExportPage:
            request.validate()
            raise UnsupportedError("engine `x` does not export items")

    assert Session(NoExport(), Run("abc"), "export").export_all(MetaFilter()) is None


class _Exporter(ReferenceEngine):
    """A reference engine whose export pages (or errors) come from a script."""

    def __init__(self, pages: List[object]) -> None:
        super().__init__()
        self.pages = pages
        self.calls = 0

    def export(self, request: ListRequest) -> ExportPage:
        self.calls += 1
        answer = self.pages[min(self.calls - 1, len(self.pages) - 1)]
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, ExportPage)
        return answer


def _exported() -> Exported:
    item = StoreItem.document("x")
    return Exported(item.fingerprint(), item)


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        ([ExportPage((), (), "1"), ExportPage((), (), "1")], "export repeated the cursor `1`"),
        ([ExportPage((_exported(),) * 3)], "export returned 3 items for a limit of 2"),
        ([ExportPage((), ("abc",))], "export reported incomplete items [`abc`]"),
    ],
)
def test_export_all_catches_bad_pages(pages: List[object], message: str) -> None:
    session = Session(_Exporter(pages), Run("abc"), "export")
    with pytest.raises(CheckFailure) as caught:
        session.export_all(MetaFilter())
    assert caught.value.detail == message


def test_export_all_wraps_errors_and_allows_unsupported_only_first() -> None:
    first = Session(_Exporter([UnavailableError("busy")]), Run("abc"), "export")
    with pytest.raises(CheckEngineFailure) as caught:
        first.export_all(MetaFilter())
    assert caught.value.operation == "export"
    later = _Exporter([ExportPage((), (), "2"), UnsupportedError("stopped supporting it")])
    with pytest.raises(CheckEngineFailure) as caught:
        Session(later, Run("abc"), "export").export_all(MetaFilter())
    assert isinstance(caught.value.error, UnsupportedError)


def test_export_all_catches_an_export_that_never_ends() -> None:
    class Endless(ReferenceEngine):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def export(self, request: ListRequest) -> ExportPage:
            self.calls += 1
            return ExportPage((), (), str(self.calls))

    with pytest.raises(CheckFailure, match="export did not end after 10000 pages"):
        Session(Endless(), Run("abc"), "export").export_all(MetaFilter())


def test_cleanup_forgets_the_run_and_leaves_foreign_items() -> None:
    engine = ReferenceEngine()
    run = Run("abc")
    foreign = [
        StoreItem.document("foreign at the root"),
        StoreItem.document("other workspace", MemoryMeta(workspace="tinymemory-conformance/x")),
    ]
    for item in foreign:
        engine.store(item)
    session = Session(engine, run, "round_trip")
    job = Namespace.parse("agent:a").child(Segment(SegmentKind.SERVICE, "job"))
    for item in (
        run.document("one"),
        StoreItem.document("probe", MemoryMeta(workspace=run.probe_workspace)),
        run.document("sandboxed", run.meta().with_namespace(job)),
    ):
        session.store(item)
    session.cleanup()
    assert session.check == "cleanup"
    assert engine.snapshot() == tuple(foreign)


def test_cleanup_fails_when_items_still_list() -> None:
    class Forgetful(ReferenceEngine):
        def forget(self, target: ForgetTarget) -> ForgetReport:
            return ForgetReport(0)

    engine = Forgetful()
    run = Run("abc")
    engine.store(run.document("stays"))
    with pytest.raises(CheckFailure) as caught:
        Session(engine, run, "x").cleanup()
    assert caught.value.check == "cleanup"
    assert "1 items still list under workspace `tinymemory-conformance/abc`" in str(caught.value)

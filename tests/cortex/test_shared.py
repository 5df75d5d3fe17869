"""Behaviour both wires share, one test body over ``both_doubles()`` (doubles.md §12.2)."""

from __future__ import annotations

import logging

import pytest

from cortex_memory.contract import (
    Document,
    ExploreRequest,
    Facet,
    FetchMode,
    FetchRequest,
    ForgetTarget,
    GetRequest,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    RecallRequest,
    StoreReceipt,
    TextBody,
)
from cortex_memory.cortex import StaticBearer
from cortex_memory.errors import Error, InvalidRequestError, UnauthorizedError
from cortex_memory.testing import both_doubles, sample_items

CANARY = "tiny_live_CANARY_9d41f7e2"


def _posts(double: object) -> int:
    return sum(1 for line in double.state.requests() if line.startswith("POST"))  # type: ignore[attr-defined]


def test_both_doubles_gives_one_engine_per_wire() -> None:
    with both_doubles() as pairs:
        assert [engine.wire.id for engine, _ in pairs] == ["cortexdb", "tinyhumans"]
        assert [double.wire for _, double in pairs] == ["direct", "hosted"]
        assert pairs[1][1].state.rate_limit_requests is None
    assert len(sample_items()) == 3


def test_round_trip() -> None:
    with both_doubles() as pairs:
        for engine, double in pairs:
            items = sample_items()
            receipts = engine.store_many(items)
            assert receipts == [StoreReceipt(item.fingerprint(), False) for item in items]
            assert double.state.event_count() == 5
            hits = engine.get(GetRequest(tuple(r.id for r in receipts)))
            assert [hit.text for hit in hits] == [item.render_text() for item in items]
            assert [hit.meta for hit in hits] == [item.meta for item in items]
            assert hits[2].confidence == pytest.approx(0.8)
            listed = engine.list(ListRequest(MetaFilter(), 10))
            assert [hit.id for hit in listed.items] == [r.id for r in receipts]
            found = engine.fetch(FetchRequest("helix", FetchMode.HYBRID, 5))
            assert receipts[2].id in {hit.id for hit in found.hits}


def test_replay_sends_no_post() -> None:
    with both_doubles() as pairs:
        for engine, double in pairs:
            engine.store_many(sample_items())
            double.state.clear_seen()
            receipts = engine.store_many(sample_items())
            assert all(r.replayed for r in receipts)
            assert _posts(double) == 0
            assert double.state.event_count() == 5


def test_forget_then_store_again_is_not_a_replay() -> None:
    with both_doubles() as pairs:
        for engine, double in pairs:
            items = sample_items()
            ids = [r.id for r in engine.store_many(items)]
            assert engine.forget(ForgetTarget.ids(ids)).forgotten == 3
            assert double.state.event_count() == 0
            again = engine.store_many(items)
            assert [r.replayed for r in again] == [False, False, False]
            assert double.state.event_count() == 5


def test_invalid_requests_send_nothing() -> None:
    with both_doubles() as pairs:
        for engine, double in pairs:
            calls = [
                lambda e: e.list(ListRequest(MetaFilter(), 0)),
                lambda e: e.list_preview(ListRequest(MetaFilter(), 0)),
                lambda e: e.get(GetRequest(())),
                lambda e: e.get(GetRequest((" ",))),
                lambda e: e.fetch(FetchRequest(" ", FetchMode.HYBRID, 5)),
                lambda e: e.fetch(FetchRequest("q", FetchMode.HYBRID, 0)),
                lambda e: e.recall(RecallRequest(" ", 3)),
                lambda e: e.explore(ExploreRequest(Facet.KIND, 0)),
                lambda e: e.forget(ForgetTarget.filter(MetaFilter())),
                lambda e: e.store_many([]),
                lambda e: e.store(Document(TextBody("   "))),
            ]
            for call in calls:
                with pytest.raises(InvalidRequestError):
                    call(engine)
            assert double.state.requests() == []


def test_local_paths_never_leave_the_machine() -> None:
    meta = MemoryMeta(
        workspace="/home/alice/work",
        folder="/home/alice/work/secret-project",
        file_path="/home/alice/work/secret-project/notes.md",
    )
    doc = Document(TextBody("meeting notes about the launch"), "Notes", None, meta)
    with both_doubles() as pairs:
        for engine, double in pairs:
            receipt = engine.store(doc)
            engine.list(ListRequest(MetaFilter(folder="/home/alice/work/secret-project"), 5))
            seen = double.state.seen
            wire_text = "\n".join(seen.requests) + b"\n".join(seen.bodies).decode()
            assert "alice" not in wire_text
            assert "secret-project" not in wire_text
            assert "file:notes.md" in wire_text
            # Filters on the full paths still match, by digest.
            for flt in (
                MetaFilter(folder="/home/alice/work"),
                MetaFilter(file_path="/home/alice/work/secret-project/notes.md"),
                MetaFilter(workspace="/home/alice/work"),
                MetaFilter(file_path="notes.md"),
            ):
                hits = engine.list(ListRequest(flt, 5)).items
                assert [hit.id for hit in hits] == [receipt.id]
                assert hits[0].meta.file_path == "notes.md"
                assert hits[0].meta.folder is None
            assert not engine.list(ListRequest(MetaFilter(folder="/home/alice/other"), 5)).items


def test_canary_secret_never_in_requests_logs_or_errors(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG), both_doubles() as pairs:
        for plain, double in pairs:
            engine = double.engine(
                token=CANARY, source=StaticBearer(CANARY) if double.hosted else None
            )
            engine.store_many(sample_items())
            engine.recall(RecallRequest("which editor?", 3))
            double.state.fail_all = (401, "UNAUTHORIZED")
            texts = []
            for call in (
                lambda e: e.list(ListRequest(MetaFilter(), 5)),
                lambda e: e.store(sample_items()[0]),
            ):
                with pytest.raises(UnauthorizedError) as info:
                    call(engine)
                texts.append(str(info.value) + repr(info.value))
            double.state.fail_all = None
            texts.append(repr(engine) + str(engine.health()))
            seen = double.state.seen
            assert all(auth == f"Bearer {CANARY}" for auth in seen.auth)
            assert CANARY not in "\n".join(seen.requests)
            assert all(CANARY.encode() not in body for body in seen.bodies)
            assert all(CANARY not in text for text in texts)
            assert plain is not engine
    assert CANARY not in caplog.text


def test_a_refusing_bearer_source_is_unauthorized_before_any_request() -> None:
    class SignedOut:
        def bearer(self) -> str:
            raise RuntimeError("no session for " + CANARY)

    with both_doubles() as pairs:
        hosted = pairs[1][1]
        engine = hosted.engine(source=SignedOut())
        with pytest.raises(Error) as info:
            engine.list(ListRequest(MetaFilter(), 5))
        assert isinstance(info.value, UnauthorizedError)
        assert hosted.state.requests() == []

"""The engine's shared helpers: fan-out, recency, scopes, pack notes, the log's walks."""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any, List, Tuple
from urllib.parse import parse_qs

import pytest

from cortex_memory.contract import (
    ItemKind,
    Learning,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
)
from cortex_memory.cortex import CortexEngine, EngineCredential, Timing
from cortex_memory.cortex.engine.fanout import fan_out
from cortex_memory.cortex.engine.recency import (
    TRUSTED_SECONDS,
    RecencyMap,
    is_named,
    newest_observed,
    pick_scopes,
    query_words,
)
from cortex_memory.cortex.engine.scopes import (
    every_scope,
    held,
    kind_scope,
    known,
    scopes_for,
)
from cortex_memory.cortex.log.notes import log_pack_notes
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import EngineError, NotFoundError
from cortex_memory.testing import LoopbackServer, sample_items
from cortex_memory.testing.hostile import RawRequest

FAST = Timing(poll_interval=0.005, read_backoff=0.005, visibility=2.0, settle=2.0)
NS = Namespace.parse


# -- fan-out --------------------------------------------------------------------------


def test_fan_out_keeps_input_order_and_bounds_concurrency() -> None:
    lock = threading.Lock()
    running = peak = 0

    def work(n: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.01 * (n % 3))
        with lock:
            running -= 1
        return n * n

    assert fan_out(work, list(range(12)), 4) == [n * n for n in range(12)]
    assert 1 < peak <= 4
    assert fan_out(work, [], 4) == []
    assert fan_out(work, [3], 4) == [9]


def test_fan_out_raises_the_earliest_failing_input_after_in_flight_ones_end() -> None:
    finished: List[int] = []
    lock = threading.Lock()

    def work(n: int) -> int:
        if n == 1:
            time.sleep(0.05)
            raise NotFoundError("one")
        if n == 2:
            raise EngineError("two")
        time.sleep(0.02)
        with lock:
            finished.append(n)
        return n

    with pytest.raises(NotFoundError, match="one"):
        fan_out(work, list(range(40)), 4)
    # The in-flight calls ended; the inputs never started were cancelled.
    assert 0 in finished
    assert len(finished) < 38
    assert threading.active_count() < 10


# -- recency --------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_recency_map_trusts_entries_for_ten_minutes() -> None:
    clock = _Clock()
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    recency = RecencyMap(clock=clock, now=lambda: base)
    assert recency.fresh("a") is None
    recency.touch("a")
    entry = recency.fresh("a")
    assert entry is not None
    assert entry.newest == base
    # A probe that saw older events does not overwrite a fresh, newer entry.
    recency.learn("a", base - timedelta(days=1))
    assert recency.fresh("a").newest == base  # type: ignore[union-attr]
    recency.learn("a", base + timedelta(days=1))
    assert recency.fresh("a").newest == base + timedelta(days=1)  # type: ignore[union-attr]
    clock.now += TRUSTED_SECONDS
    assert recency.fresh("a") is None
    recency.learn("a", None)
    assert recency.fresh("a").newest is None  # type: ignore[union-attr]
    assert len(recency) == 1


def test_query_words_and_named_scopes() -> None:
    assert query_words("What did the Go-team say, ok?") == {"what", "did", "the", "team", "say"}
    words = query_words("notes from the helix editor")
    assert is_named(kind_scope(NS("agent:helix"), ItemKind.LEARNING), words)
    assert is_named(kind_scope(NS("project:my-editor_x"), ItemKind.LEARNING), words)
    assert not is_named(kind_scope(NS("agent:helixir"), ItemKind.LEARNING), words)
    assert not is_named(kind_scope(NS("agent:ab-he"), ItemKind.LEARNING), {"ab", "he"})


def test_newest_observed_reads_parseable_times_only() -> None:
    events: List[Any] = [
        {"context": {"observed_at": "2026-01-01T00:00:00Z"}},
        {"context": {"observed_at": "2026-03-01T00:00:00.123456789+00:00"}},
        {"context": {"observed_at": "not a time"}},
        {"context": {}},
        "junk",
    ]
    newest = newest_observed(events)
    assert newest is not None
    assert (newest.year, newest.month) == (2026, 3)
    assert newest_observed([]) is None


def test_pick_scopes_prefers_named_then_recent_and_keeps_order(direct) -> None:
    engine = direct.engine()
    old = datetime(2025, 1, 1, tzinfo=timezone.utc)
    new = datetime(2026, 6, 1, tzinfo=timezone.utc)
    for name, at in (("a", old), ("b", new), ("c", None), ("helix", old)):
        meta = MemoryMeta(namespace=NS(f"agent:{name}"), observed_at=at)
        engine.store(Learning(f"note {name}", LearningKind.FACT, 0.5, None, meta))
    scopes = [kind_scope(NS(f"agent:{n}"), ItemKind.LEARNING) for n in ("a", "b", "c", "helix")]
    ctx = engine.context
    ctx.recency.clear()
    direct.state.clear_seen()
    chosen = pick_scopes(ctx, scopes, "what about helix", 2, Deadline())
    assert [s.namespace for s in chosen] == [NS("agent:b"), NS("agent:helix")]
    probes = [line for line in direct.state.requests() if "limit=20" in line]
    assert len(probes) == 4
    # Fresh entries are not probed again.
    direct.state.clear_seen()
    assert pick_scopes(ctx, scopes, "nothing named", 1, Deadline()) == [scopes[1]]
    assert direct.state.requests() == []


def test_store_touches_the_recency_of_its_scope(direct) -> None:
    engine = direct.engine()
    engine.store(sample_items()[2])
    assert engine.context.recency.fresh("app:tinymemory/app:learnings") is not None


# -- scopes ---------------------------------------------------------------------------


def test_known_scopes_follow_the_reach() -> None:
    reach = Reach.of(NS("team:acme/agent:w"))
    paths = [s.path for s in known(reach, [ItemKind.LEARNING, ItemKind.DOCUMENT])]
    assert paths == [
        "app:tinymemory/app:documents",
        "app:tinymemory/team:acme/app:documents",
        "app:tinymemory/team:acme/agent:w/app:documents",
        "app:tinymemory/app:learnings",
        "app:tinymemory/team:acme/app:learnings",
        "app:tinymemory/team:acme/agent:w/app:learnings",
    ]


def test_scopes_need_no_request_without_descendants(direct) -> None:
    engine = direct.engine()
    flt = MetaFilter(reach=Reach.of(NS("team:acme")), kinds=(ItemKind.LEARNING,))
    assert len(scopes_for(engine.context, flt, Deadline())) == 2
    assert scopes_for(engine.context, MetaFilter(kinds=()), Deadline())
    assert direct.state.requests() == ["GET /v1/scopes/list?prefix=app%3Atinymemory&limit=1000"]


def test_held_and_every_scope(direct, kit) -> None:
    engine = direct.engine()
    engine.store_many(
        [
            kit.learning("root"),
            kit.learning("boxed", namespace=NS("agent:a/service:box")),
            kit.document("team doc", namespace=NS("team:t")),
        ]
    )
    ctx = engine.context
    kinds = [ItemKind.LEARNING]
    assert [s.path for s in held(ctx, Reach.subtree(Namespace.root()), kinds, Deadline())] == [
        "app:tinymemory/app:learnings"
    ]
    paths = [s.path for s in every_scope(ctx, Deadline())]
    assert "app:tinymemory/agent:a/service:box/app:learnings" in paths
    assert "app:tinymemory/team:t/app:documents" in paths
    assert "app:tinymemory/app:conversations" in paths  # the root's scopes always


# -- the log's walks and notes --------------------------------------------------------


def test_walk_refuses_a_log_past_500_pages() -> None:
    count = 0

    def handler(request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        nonlocal count
        if request.path != "/v1/events":
            return 404, [], b""
        count += 1
        query = parse_qs(request.query)
        start = int(query.get("cursor", ["0"])[0])
        item = {"id": f"e{start}", "content": {"text": "x"}, "context": {"labels": []}}
        return 200, [], {"items": [item], "has_more": True, "next_cursor": str(start + 1)}

    with LoopbackServer(handler) as server:
        engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
        with pytest.raises(EngineError, match="exceeded 500 pages"):
            engine.context.log.walk("app:tinymemory/app:learnings", None, Deadline())
        engine.close()
    assert count == 500


def test_scopes_listing_reads_items_or_scopes_strings_or_objects() -> None:
    answers = [
        {"items": [{"path": "a/b"}, "c", {"nope": 1}, 7]},
        {"scopes": ["d", {"path": "e"}]},
    ]

    def handler(request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        if request.path == "/v1/scopes/list":
            return 200, [], answers.pop(0) if answers else b""
        return 404, [], b""

    with LoopbackServer(handler) as server:
        engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
        log = engine.context.log
        assert log.scopes("app:tinymemory", Deadline()) == ["a/b", "c"]
        assert log.scopes("app:tinymemory", Deadline()) == ["d", "e"]
        assert log.scopes("app:tinymemory", Deadline()) == []
        engine.close()


def test_pack_notes_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="cortex_memory"):
        log_pack_notes(
            "scope\nFAKE LINE",
            {
                "warnings": ["plain note", "parent_pack_unranked_sample: 40 of 90", 3],
                "diagnostics": {"knapsack_evictions": 2},
            },
        )
        log_pack_notes(
            "s2",
            {
                "provenance": {
                    "trail": [
                        {
                            "context_contributors": [
                                {"evicted_from_layers": True, "event_id": "e1"},
                                {"evicted_from_layers": True, "event_id": "e2"},
                                {"evicted_from_layers": False, "event_id": "e3"},
                            ]
                        }
                    ]
                }
            },
        )
    records = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("DEBUG", "recall pack for scope 'scope\\nFAKE LINE' warned 'plain note'") in records
    warnings = [message for level, message in records if level == "WARNING"]
    assert any("unranked sample" in message for message in warnings)
    assert any("evicted 2 events" in message for message in warnings)
    assert any("count unreported" in message and "2" in message for message in warnings)
    assert all("\n" not in message for _, message in records)


def test_many_threads_share_one_engine(wire, make_double, kit) -> None:
    double = make_double(wire)
    engine = double.engine()
    errors: List[BaseException] = []

    def worker(n: int) -> None:
        try:
            item = kit.learning(f"thread {n}", namespace=NS(f"agent:t{n % 4}"))
            receipt = engine.store(item)
            page = engine.list(ListRequest(MetaFilter(reach=Reach.of(NS(f"agent:t{n % 4}"))), 50))
            assert receipt.id in {hit.id for hit in page.items}
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert double.state.event_count() == 16

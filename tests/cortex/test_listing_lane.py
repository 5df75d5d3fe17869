"""The listing's lane (``Lane.read``) against the general path, page by page (issue 13).

A listing reads runs of common events through ``Lane.read`` and hands every event it
leaves to the general path (``decode_event``, ``Keeper.keeps``, ``whole_hit``). These
tests list the same served events twice, once as shipped and once with the lane
answering nothing (so every event takes the general path), and compare every page:
its hits, field by field, and its cursor. The events mix what the lane reads with
everything it must leave: other kinds, odd members, odd events, copies that are not
consecutive, an item stored twice, namespaces a reach does not admit.
"""

from __future__ import annotations

import json
import random
from typing import Any, Dict, List, Optional, Tuple

import pytest

from cortex_memory.contract import ItemKind, ListRequest, MetaFilter, Namespace, Reach
from cortex_memory.cortex import CortexEngine, EngineCredential, Timing
from cortex_memory.cortex.engine.store import plan_item
from cortex_memory.cortex.envelope.quick import Lane
from cortex_memory.cortex.envelope.scopes import scope_path
from cortex_memory.testing import LoopbackServer
from cortex_memory.testing.hostile import RawRequest

FAST = Timing(poll_interval=0.005, read_backoff=0.005, visibility=2.0, settle=2.0)
_PART = "tm:e:00:"


class _Served:
    """``GET /v1/events`` over fixed per-scope event lists, ``size`` events a page."""

    def __init__(self, streams: Dict[str, List[Any]], size: int) -> None:
        self.streams = streams
        self.size = size

    def __call__(self, request: RawRequest) -> Tuple[int, List[Tuple[str, str]], Any]:
        from urllib.parse import parse_qs

        if request.path == "/v1/auth/whoami":
            return 404, [], b""
        if request.path == "/v1/scopes/list":
            return 200, [], {"items": []}
        query = parse_qs(request.query)
        stream = self.streams.get(query["scope"][0], [])
        start = int(query.get("cursor", ["0"])[0])
        page = stream[start : start + self.size]
        end = start + len(page)
        return 200, [], {"items": page, "has_more": end < len(stream), "next_cursor": str(end)}


def _events(item: Any, scope: Optional[str] = None) -> List[Dict[str, Any]]:
    out = []
    for _, request in plan_item(item).events:
        body = request.to_json()
        out.append({"scope": scope or body["scope"], "content": body["content"],
                    "context": body["context"]})  # fmt: skip
    return out


def _with_part(event: Dict[str, Any], **changes: Any) -> Dict[str, Any]:
    labels = list(event["context"]["labels"])
    part = json.loads(labels[-1][len(_PART) :])
    part.update(changes)
    labels[-1] = _PART + json.dumps(
        {k: v for k, v in part.items() if v is not _DROP}, separators=(",", ":")
    )
    return {**event, "context": {**event["context"], "labels": labels}}


_DROP = object()


def _streams(kit: Any, seed: int) -> Dict[str, List[Any]]:
    """Per-scope events (newest first), each repeated as CortexDB repeats them, with
    odd events, odd parts and non-consecutive copies mixed in."""
    rng = random.Random(seed)
    root = Namespace.root()
    team = Namespace.parse("team:acme")
    learnings = scope_path(root, ItemKind.LEARNING)
    documents = scope_path(root, ItemKind.DOCUMENT)
    conversations = scope_path(root, ItemKind.CONVERSATION)
    pool: Dict[str, List[Any]] = {learnings: [], documents: [], conversations: []}
    for n in range(40):
        choice = rng.randrange(12)
        if choice < 4:
            meta = rng.choice([{}, {"tags": ("a", "b")}, {"thread_id": "t1"}, {"namespace": team}])
            events = _events(kit.learning(f"note {n}", **meta), learnings)
        elif choice == 4:  # a learning served in the root scope with another namespace's meta
            events = _events(kit.learning(f"away {n}", namespace=team), learnings)
        elif choice == 5:
            events = _events(kit.document(f"doc {n}", rng.choice(["", "Title", " "])))
        elif choice == 6:
            events = _events(kit.document("long " * 400 + str(n)))  # chunked
        elif choice == 7:
            events = _events(kit.conversation(rng.choice([1, 3]), f"talk {n}"))
        elif choice == 8:  # a part the lane leaves: the general path decides
            base = _events(kit.learning(f"odd {n}"), learnings)[0]
            change = rng.choice([{"confidence": 1}, {"unknown": 1}, {"v": 2}, {"meta": None},
                                 {"learning_kind": "bogus"}, {"confidence": 1e39},
                                 {"title": "t"}, {"id": _DROP}, {"ws": "w"}])  # fmt: skip
            events = [_with_part(base, **change)]
        elif choice == 9:  # not an event of ours
            odd = {"id": f"e{n}", "content": {"text": "t"}, "context": {}}
            events = [rng.choice([5, "x", None, [], {"scope": learnings}, {"id": 7}, odd])]
        elif choice == 10:  # an item stored again: same item id, a new event
            again = [e for e in pool[learnings] if isinstance(e, dict) and "id" in e]
            events = [dict(rng.choice(again))] if again else []
        else:  # a copy that is not consecutive: an event id seen before, later
            again = [e for e in pool[learnings] if isinstance(e, dict) and "id" in e]
            events = [rng.choice(again)] if again else []
        for event in events:
            scope = event["scope"] if isinstance(event, dict) and "scope" in event else learnings
            if isinstance(event, dict) and choice not in (9, 11):
                event = {**event, "id": f"evt_{n}_{len(pool[scope])}"}
            pool.setdefault(scope, []).append(event)
    return {
        scope: [copy for event in reversed(events) for copy in (event, event)]
        for scope, events in pool.items()
    }


def _pages(engine: CortexEngine, flt: MetaFilter, limit: int, preview: bool) -> List[Any]:
    pages: List[Any] = []
    cursor: Optional[str] = None
    for _ in range(200):
        request = ListRequest(flt, limit, cursor)
        page = engine.list_preview(request) if preview else engine.list(request)
        pages.append(
            ([(h.id, h.kind, h.text, h.meta, h.score, h.confidence) for h in page.items],
             page.next_cursor)
        )  # fmt: skip
        cursor = page.next_cursor
        if cursor is None:
            return pages
    raise AssertionError("the listing did not end")


def _no_lane(
    self: Lane, items: List[Any], position: int, previous: object, last: Optional[str], *rest: Any
) -> Tuple[int, Optional[str]]:
    return position, last


@pytest.mark.parametrize("seed", range(6))
def test_the_lane_lists_what_the_general_path_lists(kit, monkeypatch, seed: int) -> None:
    rng = random.Random(seed)
    streams = _streams(kit, seed)
    filters = [
        MetaFilter(),
        MetaFilter(kinds=(ItemKind.LEARNING,)),
        MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.LEARNING,)),
        MetaFilter(reach=Reach.exact(Namespace.parse("team:acme"))),
        MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.DOCUMENT,)),
        MetaFilter(kinds=(ItemKind.LEARNING,), thread_id="t1"),  # no lane: general path only
    ]
    for size in (rng.randint(1, 5), 100):
        with LoopbackServer(_Served(streams, size)) as server:
            engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
            for flt in filters:
                for limit in (1, 2, rng.randint(3, 9), 200):
                    preview = rng.random() < 0.3
                    shipped = _pages(engine, flt, limit, preview)
                    with monkeypatch.context() as patch:
                        patch.setattr(Lane, "read", _no_lane)
                        general = _pages(engine, flt, limit, preview)
                    assert shipped == general, (size, flt, limit, preview)
            engine.close()


def test_the_lane_reads_the_usual_page_whole(kit, monkeypatch) -> None:
    """On a page of common learnings the lane answers every event: the general path
    is never asked (so the comparison above compares the lane, not itself)."""
    from cortex_memory.cortex.engine import listing

    learnings = scope_path(Namespace.root(), ItemKind.LEARNING)
    events = [
        {**event, "id": f"evt_{n}"}
        for n in range(5)
        for event in _events(kit.learning(f"note {n}"), learnings)
    ]
    streams = {learnings: [copy for event in reversed(events) for copy in (event, event)]}
    asked: List[Any] = []
    original = listing._Walk.admit

    def admit(self: Any, scope: Any, event: object) -> None:
        asked.append(event)
        original(self, scope, event)

    monkeypatch.setattr(listing._Walk, "admit", admit)
    with LoopbackServer(_Served(streams, 100)) as server:
        engine = CortexEngine.direct(server.url, EngineCredential.static("k"), timing=FAST)
        flt = MetaFilter(reach=Reach.exact(Namespace.root()), kinds=(ItemKind.LEARNING,))
        page = engine.list(ListRequest(flt, 5))
        engine.close()
    assert [hit.text for hit in page.items] == [f"note {n}" for n in reversed(range(5))]
    assert page.next_cursor is None
    assert asked == []

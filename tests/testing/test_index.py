"""The log's lookup index (`_index.py`): narrowed reads answer exactly what a scan would.

Every check compares the indexed answer with the plain scan of doubles.md §6.4 and
§6.8 (every event of the log, newest first, kept by scope and labels), after each
kind of change a log sees: its own appends, a forget, an erasure, and the edits a
test may make to `log.events` under the lock (push, pop, replace, reassign).
"""

from __future__ import annotations

import random
import threading
from typing import Any, Dict, List, Sequence

from cortex_memory.testing._log import EventLog, labels_match

SCOPES = ("app:a", "app:b", "app:a/app:c")
LABELS = ("tm:i:1", "tm:i:2", "tm:i:3", "kind:document")


def make_log() -> EventLog:
    return EventLog(threading.RLock())


def scan(log: EventLog, scope: str, pieces: Sequence[str]) -> List[Any]:
    return [
        e["id"]
        for e in reversed(log.events)
        if e.get("scope") == scope and labels_match(e, pieces)
    ]


def pushed(event_id: Any, scope: Any, labels: Any) -> Dict[str, Any]:
    return {"id": event_id, "scope": scope, "content": {"text": "alpha"}, "context": labels}


def body(rng: random.Random, n: int) -> Dict[str, Any]:
    labels = rng.sample(LABELS, rng.randint(0, 3))
    return {
        "scope": rng.choice(SCOPES),
        "idempotency_key": f"k{n}",
        "content": {"role": "user", "text": f"alpha note {n}"},
        "context": {"labels": labels},
    }


def check(log: EventLog) -> None:
    for scope in SCOPES:
        for pieces in ([], ["tm:i:1"], ["tm:i:2", "kind:document"], ["nowhere"]):
            assert [e["id"] for e in log.listing(scope, pieces, 0.0)] == scan(log, scope, pieces)
            chosen, _ = log.select(
                scope=scope, view="granular", pieces=pieces, event_limit=None,
                belief_limit=0, query="alpha", now=0.0,
            )  # fmt: skip
            assert [e["id"] for e in chosen] == scan(log, scope, pieces)
    held = sorted({e["scope"] for e in log.events if isinstance(e.get("scope"), str)})
    assert log.scopes_holding_events() == held


def test_indexed_reads_match_a_scan_through_every_kind_of_change() -> None:
    rng = random.Random(13)
    log = make_log()
    for n in range(300):
        log.append(body(rng, n), indexed_at=0.0, allowed_scope_types=None,
                   size_counts_role_prefix=True)  # fmt: skip
    check(log)
    ids = [e["id"] for e in log.events if e["scope"] == "app:a"][:40]
    log.forget({"scope": "app:a", "selector": {"memory_ids": ids}, "cascade": "redact_events"})
    check(log)
    log.erase("app:a/app:c")
    check(log)
    with log.lock:
        log.events.append(pushed("pushed", "app:b", {"labels": ["tm:i:1"]}))
        check(log)
        log.events.pop()
        log.events.append(pushed("swapped", "app:a", {"labels": ["tm:i:2"]}))
        check(log)  # same length, another last element: rebuilt
        log.events[0] = pushed("replaced", "app:b", {"labels": []})
        log.events.append(pushed("after", "app:b", {}))
        log.events = list(log.events)  # a new list object
        check(log)
        log.events.insert(0, pushed("odd", ["not", "a", "string"], 5))
        log.events.append(pushed(7, None, None))
        check(log)
        log.events = []
        check(log)


def test_the_wait_hold_sees_only_held_events() -> None:
    log = make_log()
    first, _ = log.append(
        {"scope": "a", "idempotency_key": "k1", "content": {"text": "x"}},
        indexed_at=10.0, allowed_scope_types=None, size_counts_role_prefix=True,
    )  # fmt: skip
    assert log.all_indexed([first], 5.0) is False
    assert log.all_indexed([first], 10.0) is True
    log.forget({"scope": "a", "selector": {"memory_ids": [first]}, "cascade": "redact_events"})
    assert log.all_indexed([first, "unknown"], 5.0) is True  # gone: nothing to wait for

"""The event log's lookup index: events by scope, by (scope, label) and by id.

CortexDB answers a narrowed read (one scope, a few labels, a small limit) from
its indexes, so the read costs the same in a scope of ten events or of ten
thousand. The doubles do too: without an index every listing, recall and
`?wait=` hold would scan the whole log, and a benchmark of a client in a big
scope would measure the double instead (doubles.md §5.6: the doubles must never
be the slow part).

The index follows `EventLog.events`, which tests may also edit under the state
lock: events the list gained at its end (the log's own appends and a test's
`append`) are added as they are found; a new list (every removal the log makes
builds one), a shorter list or another last element rebuilds the index on the
next read. Every candidate is checked against the read's own rules again, so
the index only narrows. The one edit it cannot see is an event replaced in the
middle of the same list without any of those changes: a test doing that assigns
a new list (`log.events = [...]`).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

__all__ = ["EventIndex"]

Event = Dict[str, Any]


def _labels(event: Event) -> List[str]:
    context = event.get("context")
    labels = context.get("labels") if isinstance(context, dict) else None
    if not isinstance(labels, list):
        return []
    return [label for label in labels if isinstance(label, str)]


class EventIndex:
    """Positions of the log's events by scope, by (scope, label) and by id.

    Not thread-safe on its own: the log calls it with the state lock held.
    """

    __slots__ = ("_by_id", "_by_label", "_by_scope", "_last", "_length", "_source")

    def __init__(self) -> None:
        self._source: Optional[List[Event]] = None
        self._length = 0
        self._last: Optional[Event] = None
        self._by_scope: Dict[str, List[int]] = {}
        self._by_label: Dict[Tuple[str, str], List[int]] = {}
        self._by_id: Dict[str, int] = {}

    def _add(self, position: int, event: Event) -> None:
        # Only string scopes and ids are indexed: reads name them as strings, and a
        # test may push an event of any shape.
        scope = event.get("scope")
        if isinstance(scope, str):
            self._by_scope.setdefault(scope, []).append(position)
            for label in dict.fromkeys(_labels(event)):
                self._by_label.setdefault((scope, label), []).append(position)
        event_id = event.get("id")
        if isinstance(event_id, str):
            self._by_id[event_id] = position

    def sync(self, events: List[Event]) -> None:
        """Bring the index up to date with ``events`` (see the module docs)."""
        grown = (
            events is self._source
            and len(events) >= self._length
            and (self._length == 0 or events[self._length - 1] is self._last)
        )
        if not grown:
            self._source = events
            self._length = 0
            self._by_scope, self._by_label, self._by_id = {}, {}, {}
        for position in range(self._length, len(events)):
            self._add(position, events[position])
        self._length = len(events)
        self._last = events[-1] if events else None

    def newest_first(
        self, events: List[Event], scope: str, labels: Sequence[str] = ()
    ) -> List[Event]:
        """The events of exactly ``scope`` carrying any of ``labels`` (none: all), newest first."""
        self.sync(events)
        if not labels:
            return [events[p] for p in reversed(self._by_scope.get(scope, ()))]
        positions: Set[int] = set()
        for label in labels:
            positions.update(self._by_label.get((scope, label), ()))
        return [events[p] for p in sorted(positions, reverse=True)]

    def scopes(self, events: List[Event]) -> List[str]:
        """Every (string) scope that holds at least one event."""
        self.sync(events)
        return [scope for scope, held in self._by_scope.items() if held]

    def named(self, events: List[Event], ids: Iterable[Any]) -> List[Event]:
        """The held events among ``ids`` (an id held twice: its last event)."""
        self.sync(events)
        found = (self._by_id.get(i) for i in ids if isinstance(i, str))
        return [events[p] for p in found if p is not None]

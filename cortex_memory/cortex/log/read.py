"""Reading the event log: listings, walks, scope listings, recall and answer (engine.md §8.2).

:class:`Log` is the engine's view of one CortexDB event log over one
:class:`~cortex_memory.cortex.transport.HttpClient` (and its timings). Every method
takes the operation's :class:`~cortex_memory.cortex.timing.Deadline`, so one bound
covers every attempt, poll and sleep of a public call.

Reads are retried (``retry_transient``); ``answer`` is sent once (hosted: under a
fresh claim). Events come back as the server sent them (``dict`` objects); the
envelope layer decodes them.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Set

from cortex_memory.cortex.log.notes import log_pack_notes
from cortex_memory.cortex.log.sizes import LABELS_PER_LISTING, PAGE_LIMIT, SCOPES_LIMIT, WALK_PAGES
from cortex_memory.cortex.timing import Deadline, Timing
from cortex_memory.cortex.transport.client import HttpClient
from cortex_memory.cortex.transport.keys import urlencode
from cortex_memory.cortex.wire import CortexWire, Route
from cortex_memory.errors import EngineError, NotFoundError

__all__ = ["Event", "Log", "Page", "event_id"]

logger = logging.getLogger(__name__)

Event = Dict[str, Any]
"""A listed or recalled event as the server sent it (``{id, content, context, ...}``)."""


class Page(NamedTuple):
    """One listing page: its events and the cursor of the next page (``None`` at the end)."""

    items: List[Any]
    next_cursor: Optional[str]


def event_id(event: object) -> Optional[str]:
    """The event's ``id`` when it is a string, else ``None``."""
    if type(event) is dict:
        value = event.get("id")
        if type(value) is str:
            return value
    return None


class Log:
    """The event log as the engine sees it: one client plus its timings.

    Cheap to build; holds no mutable state of its own (the client's family holds
    the pool, actor cache and pause), so one instance serves many threads.
    """

    __slots__ = ("_client",)

    def __init__(self, client: HttpClient) -> None:
        self._client = client

    @property
    def client(self) -> HttpClient:
        """The HTTP client every call goes through."""
        return self._client

    @property
    def wire(self) -> CortexWire:
        """The HTTP surface."""
        wire = self._client.wire
        if not isinstance(wire, CortexWire):  # pragma: no cover - engines build CortexWire clients
            raise TypeError(f"the client's wire must be a CortexWire, not {type(wire).__name__}")
        return wire

    @property
    def hosted(self) -> bool:
        """True on the TinyHumans hosted wire."""
        return self.wire.hosted

    @property
    def timing(self) -> Timing:
        """The client's timings."""
        return self._client.timing

    def route(self, route: Route) -> str:
        """The path of ``route`` on this log's wire."""
        return self.wire.route(route)

    # -- listings ------------------------------------------------------------------------

    def page(
        self,
        scope: str,
        labels: Optional[Sequence[str]],
        cursor: Optional[str],
        limit: int,
        deadline: Deadline,
    ) -> Page:
        """One page of ``scope``'s events (any of ``labels``), from ``cursor``; retried.

        The labels travel as one comma-joined parameter (the hosted API refuses a
        repeated ``labels=``). A next page exists only when ``has_more`` is true and
        ``next_cursor`` is a string; a next cursor equal to the one sent is
        ``EngineError`` (the listing does not advance).
        """
        query = f"scope={urlencode(scope)}&limit={int(limit)}"
        if labels:
            query += f"&labels={urlencode(','.join(labels))}"
        if cursor is not None:
            query += f"&cursor={urlencode(cursor)}"
        route = self.route(Route.EVENTS)
        body = self._client.retry_transient(
            "GET", f"{route}?{query}", deadline=deadline, listing=True
        ).data
        items: List[Any] = []
        following: Optional[str] = None
        if isinstance(body, dict):
            listed = body.get("items")
            if isinstance(listed, list):
                items = listed
            nxt = body.get("next_cursor")
            if body.get("has_more") is True and isinstance(nxt, str):
                following = nxt
        if following is not None and following == cursor:
            raise EngineError(
                f"memory API {route} on {self._client.host}: the listing does not advance"
            )
        return Page(items, following)

    def walk(
        self, scope: str, labels: Optional[Sequence[str]], deadline: Deadline
    ) -> List[Any]:
        """Every event of ``scope`` (any of ``labels``), page after page, deduped by id.

        Events without an id are kept. More than 500 pages is ``EngineError``: an
        answer from a truncated log would be wrong without saying so.
        """
        out: List[Any] = []
        for events in self._pages(scope, labels, deadline, PAGE_LIMIT, set()):
            out.extend(events)
        return out

    def _pages(
        self,
        scope: str,
        labels: Optional[Sequence[str]],
        deadline: Deadline,
        limit: int,
        seen: Set[str],
    ) -> Iterator[List[Any]]:
        """Each page's events not ``seen`` before (ids added to ``seen``), as read."""
        cursor: Optional[str] = None
        for _ in range(WALK_PAGES):
            page = self.page(scope, labels, cursor, limit, deadline)
            fresh: List[Any] = []
            _dedupe_into(page.items, seen, fresh)
            yield fresh
            if page.next_cursor is None:
                return
            cursor = page.next_cursor
        raise EngineError(
            f"reading scope {scope!r} exceeded {WALK_PAGES} pages; "
            "refusing to answer from a truncated log"
        )

    def walk_labels(
        self, scope: str, labels: Sequence[str], deadline: Deadline
    ) -> List[Any]:
        """:meth:`walk` per chunk of 50 labels, deduped by id across the chunks.

        No labels reads nothing (an unlabelled walk would read the whole scope).
        """
        out: List[Any] = []
        for events in self.label_pages(scope, labels, deadline):
            out.extend(events)
        return out

    def label_pages(
        self, scope: str, labels: Sequence[str], deadline: Deadline, *, limit: int = PAGE_LIMIT
    ) -> Iterator[List[Any]]:
        """:meth:`walk_labels` a page at a time (``limit`` events a page), so a caller
        that keeps little of each event holds one page, not the whole walk."""
        seen: Set[str] = set()
        for start in range(0, len(labels), LABELS_PER_LISTING):
            chunk = labels[start : start + LABELS_PER_LISTING]
            yield from self._pages(scope, chunk, deadline, limit, seen)

    # -- scopes ------------------------------------------------------------------------

    def scopes(self, prefix: str, deadline: Deadline) -> List[str]:
        """The scope paths under ``prefix`` (lenient: a maybe-truncated answer is logged)."""
        paths = self._scopes(prefix, deadline)
        if len(paths) >= SCOPES_LIMIT:
            logger.warning(
                "the scopes listing under %r returned %d entries and may be truncated; "
                "some scopes may be missing from this read",
                prefix,
                len(paths),
            )
        return paths

    def all_scopes(self, prefix: str, deadline: Deadline) -> List[str]:
        """The scope paths under ``prefix``; a maybe-truncated answer is ``EngineError``."""
        paths = self._scopes(prefix, deadline)
        if len(paths) >= SCOPES_LIMIT:
            raise EngineError(f"more than {SCOPES_LIMIT - 1} scopes under {prefix!r}")
        return paths

    def _scopes(self, prefix: str, deadline: Deadline) -> List[str]:
        route = f"{self.route(Route.SCOPES)}?prefix={urlencode(prefix)}&limit={SCOPES_LIMIT}"
        try:
            body = self._client.retry_transient("GET", route, deadline=deadline).data
        except NotFoundError:
            return []
        entries: object = None
        if isinstance(body, dict):
            entries = body.get("items")
            if not isinstance(entries, list):
                entries = body.get("scopes")
        paths: List[str] = []
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, str):
                    paths.append(entry)
                elif isinstance(entry, dict) and isinstance(entry.get("path"), str):
                    paths.append(entry["path"])
        return paths

    # -- recall and answer -------------------------------------------------------------

    def recall(self, body: Dict[str, Any], deadline: Deadline) -> Dict[str, Any]:
        """POST a recall (retried) and log its pack notes; a non-object answer is empty."""
        response = self._client.retry_transient(
            "POST", self.route(Route.RECALL), body, deadline=deadline
        )
        answer = response.data
        pack: Dict[str, Any] = answer if isinstance(answer, dict) else {}
        log_pack_notes(body.get("scope"), pack, response.scrub)
        return pack

    def answer(self, body: Dict[str, Any], deadline: Deadline) -> Dict[str, Any]:
        """POST an answer once (hosted: under a fresh claim); a non-object answer is empty."""
        answer = self._client.once("POST", self.route(Route.ANSWER), body, deadline=deadline).data
        return answer if isinstance(answer, dict) else {}

    def __repr__(self) -> str:
        return f"Log(wire={self.wire.id!r}, endpoint={self._client.origin!r})"


def _dedupe_into(events: List[Any], seen: Set[str], out: List[Any]) -> None:
    for event in events:
        key = event_id(event)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        out.append(event)

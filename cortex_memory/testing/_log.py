"""The in-memory event log of one double: events, keys, index times, beliefs, packs, erasures.

doubles.md §4 and §6.2–§6.9. Every method expects the state lock to be held
(the public helpers take it themselves, the lock is re-entrant). Times are
passed in (`now`), so the log itself never reads a clock.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from cortex_memory.testing._beliefs import belief_matches, belief_of
from cortex_memory.testing._gate import check_scope_types
from cortex_memory.testing._index import EventIndex
from cortex_memory.testing._reply import UPSTREAM, Refusal

__all__ = ["MAX_EVENT_BYTES", "RECORDED_AT", "EventLog", "flattened_text", "query_words"]

MAX_EVENT_BYTES = 1_048_576
RECORDED_AT = "2026-09-02T00:00:00Z"
_CASCADES = ("derived_only", "redact_events")

Event = Dict[str, Any]


def flattened_text(content: Any) -> str:
    """`"[role] " + text` when the content has a non-empty string role, else the text (§4)."""
    if not isinstance(content, dict):
        return ""
    text = content.get("text")
    text = text if isinstance(text, str) else ""
    role = content.get("role")
    if isinstance(role, str) and role:
        return f"[{role}] {text}"
    return text


def query_words(query: Any) -> List[str]:
    """Recall query words (§6.8): split, trim non-alphanumerics, lowercase, drop < 3 bytes."""
    if not isinstance(query, str):
        return []
    words = []
    for raw in query.split():
        start, end = 0, len(raw)
        while start < end and not raw[start].isalnum():
            start += 1
        while end > start and not raw[end - 1].isalnum():
            end -= 1
        word = raw[start:end].lower()
        if len(word.encode("utf-8")) >= 3:
            words.append(word)
    return words


def in_view(item_scope: Any, scope: str, view: Any) -> bool:
    """Recall scope selection: `descend` widens to the subtree, any other view is exact."""
    if item_scope == scope:
        return True
    return view == "descend" and isinstance(item_scope, str) and item_scope.startswith(scope + "/")


def at_or_below(item_scope: Any, scope: str) -> bool:
    """Erasure reach: the scope itself and every scope below it (`""` reaches everything)."""
    if scope == "":
        return True
    below = isinstance(item_scope, str) and item_scope.startswith(scope + "/")
    return item_scope == scope or below


def labels_match(event: Event, pieces: Sequence[str]) -> bool:
    """Any-of label filter; no pieces means no filter."""
    if not pieces:
        return True
    context = event.get("context")
    labels = context.get("labels") if isinstance(context, dict) else None
    if not isinstance(labels, list):
        return False
    return any(piece in labels for piece in pieces)


class EventLog:
    """The event log with its idempotency table, beliefs, packs, claims and erasure counter."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self.events: List[Event] = []
        self.index_times: Dict[str, float] = {}
        self.keys: Dict[str, Tuple[Any, str]] = {}
        self.beliefs: List[Dict[str, Any]] = []
        self.forgotten: List[str] = []
        self.erasures = 0
        self.packs: Dict[str, Dict[str, Any]] = {}
        self.claims: Set[str] = set()
        self._next_event = 0
        self._next_pack = 0
        # Narrowed reads cost what they return, not the size of the log (_index.py).
        self._index = EventIndex()

    def __repr__(self) -> str:
        return f"EventLog(events={len(self.events)}, packs={len(self.packs)})"

    # -- indexing ------------------------------------------------------------------------

    def is_indexed(self, event: Event, now: float) -> bool:
        """An event is indexed once `now >= indexed_at` (events pushed by tests: at once)."""
        indexed_at = self.index_times.get(event.get("id", ""))
        return indexed_at is None or now >= indexed_at

    def all_indexed(self, event_ids: Iterable[str], now: float) -> bool:
        """True when every named event that is still held is indexed."""
        with self.lock:
            held = self._index.named(self.events, set(event_ids))
            return all(self.is_indexed(event, now) for event in held)

    # -- append (§6.2) -------------------------------------------------------------------

    def append(
        self,
        body: Dict[str, Any],
        *,
        indexed_at: float,
        allowed_scope_types: Any,
        size_counts_role_prefix: bool,
    ) -> Tuple[str, bool]:
        """Append one experience body; return `(event_id, replayed)` or raise `Refusal`."""
        with self.lock:
            scope = body.get("scope")
            if not isinstance(scope, str):
                raise Refusal(422, "INVALID_BODY", kind=UPSTREAM)
            check_scope_types(scope, allowed_scope_types)
            content = body.get("content")
            text = content.get("text") if isinstance(content, dict) else None
            key = _key_of(body.get("idempotency_key"))
            known = self.keys.get(key)
            if known is not None:
                if known[0] == text:
                    return known[1], True
                raise Refusal(409, "IDEMPOTENCY_CONFLICT", kind=UPSTREAM)
            sized = flattened_text(content) if size_counts_role_prefix else _plain_text(text)
            if len(sized.encode("utf-8")) > MAX_EVENT_BYTES:
                raise Refusal(422, "INVALID_ENVELOPE", kind=UPSTREAM)
            self._next_event += 1
            event_id = f"evt_{self._next_event}"
            context = body.get("context")
            stored_context = dict(context) if isinstance(context, dict) else {}
            stored_context["recorded_at"] = RECORDED_AT
            self.events.append(
                {
                    "id": event_id,
                    "scope": scope,
                    "modality": body.get("modality"),
                    "content": content,
                    "context": stored_context,
                }
            )
            self.index_times[event_id] = indexed_at
            self.keys[key] = (text, event_id)
            return event_id, False

    # -- reads ---------------------------------------------------------------------------

    def listing(self, scope: str, pieces: Sequence[str], now: float) -> List[Event]:
        """Indexed events of exactly `scope` passing the label filter, newest first."""
        with self.lock:
            return [
                event
                for event in self._index.newest_first(self.events, scope, pieces)
                if event.get("scope") == scope
                and self.is_indexed(event, now)
                and labels_match(event, pieces)
            ]

    def select(
        self,
        *,
        scope: str,
        view: Any,
        pieces: Sequence[str],
        event_limit: Optional[int],
        belief_limit: int,
        query: Any,
        now: float,
    ) -> Tuple[List[Event], List[Dict[str, Any]]]:
        """Recall selection (§6.8): scored events and matching beliefs."""
        words = query_words(query)
        with self.lock:
            # `descend` reaches every scope below: only then is the whole log read.
            candidates = (
                reversed(self.events)
                if view == "descend"
                else self._index.newest_first(self.events, scope, pieces)
            )
            chosen = [
                event
                for event in candidates
                if in_view(event.get("scope"), scope, view)
                and self.is_indexed(event, now)
                and labels_match(event, pieces)
            ]
            beliefs = [b for b in reversed(self.beliefs) if in_view(b.get("scope"), scope, view)]
        scored = [(_score(event, words), event) for event in chosen]
        if words:
            scored = [pair for pair in scored if pair[0] > 0]
        # Newest first already; a stable sort by score keeps ties newest first.
        scored.sort(key=lambda pair: -pair[0])
        events = [event for _, event in scored]
        if event_limit is not None:
            events = events[: max(event_limit, 0)]
        if words:
            beliefs = [b for b in beliefs if belief_matches(b, words)]
        return events, beliefs[: max(belief_limit, 0)]

    def scopes_holding_events(self) -> List[str]:
        """Every scope holding at least one event (indexed or not), sorted."""
        with self.lock:
            return sorted(self._index.scopes(self.events))

    def scopes_matching(self, prefix: str, *, string_prefix: bool = False) -> List[str]:
        """Scopes holding events that a scope-listing prefix matches (§6.7 step 2)."""
        return [s for s in self.scopes_holding_events() if scope_matches(s, prefix, string_prefix)]

    # -- packs ---------------------------------------------------------------------------

    def issue_pack(self, pack: Dict[str, Any]) -> str:
        """Store a recall pack as `pack_<n>` and return its id."""
        with self.lock:
            self._next_pack += 1
            pack_id = f"pack_{self._next_pack}"
            self.packs[pack_id] = dict(pack, id=pack_id)
            return pack_id

    def live_pack(self, pack_id: Any, now: float, ttl: float) -> Optional[Dict[str, Any]]:
        """The live pack named `pack_id`, purging expired packs first; None when gone."""
        with self.lock:
            for stale in [k for k, p in self.packs.items() if now - p["created_at"] >= ttl]:
                del self.packs[stale]
            return self.packs.get(pack_id) if isinstance(pack_id, str) else None

    def drop_packs(self) -> None:
        """Drop every pack, whatever its scope (any forget or erasure does this)."""
        with self.lock:
            self.packs.clear()

    # -- removal -------------------------------------------------------------------------

    def _remove(self, doomed: Set[str]) -> None:
        self.events = [e for e in self.events if e.get("id") not in doomed]
        for event_id in doomed:
            self.index_times.pop(event_id, None)

    def _release_keys(self, event_ids: Set[str]) -> None:
        for key in [k for k, (_, eid) in self.keys.items() if eid in event_ids]:
            del self.keys[key]

    def _drop_beliefs(self, sources: Set[str]) -> None:
        self.beliefs = [b for b in self.beliefs if b.get("source") not in sources]

    def forget(self, body: Dict[str, Any]) -> Dict[str, Any]:
        """Forget (§6.5): checks, effects, and every pack dropped. Returns the response body."""
        confirm_all = body.get("confirm_all") is True
        selector = body.get("selector")
        raw_ids = selector.get("memory_ids") if isinstance(selector, dict) else None
        raw_ids = raw_ids if isinstance(raw_ids, list) else []
        ids = [i for i in raw_ids if isinstance(i, str)]
        cascade = body.get("cascade", "derived_only")
        if not isinstance(cascade, str) or cascade not in _CASCADES:
            raise Refusal(400, "INVALID_CASCADE", kind=UPSTREAM)
        if ids and confirm_all:
            raise Refusal(400, "AMBIGUOUS_SELECTOR_CONFIRM_ALL", kind=UPSTREAM)
        if not ids and not confirm_all:
            raise Refusal(422, "EMPTY_SELECTOR_WITHOUT_CONFIRMATION", kind=UPSTREAM)
        scope = body.get("scope")
        requested = 0 if confirm_all else len(raw_ids)
        with self.lock:
            held = self._index.newest_first(self.events, scope) if isinstance(scope, str) else []
            in_scope = [e for e in reversed(held) if e.get("scope") == scope]
            deleted = 0
            if cascade == "derived_only":
                named = {e["id"] for e in in_scope} if confirm_all else set(ids)
                self._drop_beliefs(named)
            elif confirm_all:
                doomed = {e["id"] for e in in_scope}
                self._remove(doomed)  # keys kept: a re-send replays
                deleted = len(doomed)
            else:
                wanted = set(ids)
                doomed = {e["id"] for e in in_scope if e["id"] in wanted}
                self._remove(doomed)
                self._release_keys(doomed)
                self._drop_beliefs(doomed)
                self.forgotten.extend(e["id"] for e in in_scope if e["id"] in doomed)
                deleted = len(doomed)
            self.drop_packs()
        return {"deleted": {"events": deleted}, "requested": requested}

    def erase(self, scope: Any, confirm_all: Any = True, *, selector: bool = False) -> str:
        """Erase `scope` and everything below it (§6.6); return the `erasure_<n>` id."""
        if not isinstance(scope, str):
            raise Refusal(422, "INVALID_BODY", kind=UPSTREAM)
        if confirm_all is not True or selector:
            raise Refusal(422, "EMPTY_SELECTOR_WITHOUT_CONFIRMATION", kind=UPSTREAM)
        with self.lock:
            reached = [e for e in self.events if at_or_below(e.get("scope"), scope)]
            own = {e["id"] for e in reached if e.get("scope") == scope}
            removed = {e["id"] for e in reached}
            self._remove(removed)
            # Only the scope's own events count as deleted; descendants keep their keys.
            self._release_keys(own)
            self.forgotten.extend(e["id"] for e in reached if e["id"] in own)
            self._drop_beliefs(removed)
            self.erasures += 1
            self.drop_packs()
            return f"erasure_{self.erasures}"

    def erase_everything(self) -> int:
        """Erase every scope holding events, deepest first; return how many held events."""
        with self.lock:
            scopes = sorted(self.scopes_holding_events(), reverse=True)
            for scope in scopes:
                self.erase(scope, True)
            self.drop_packs()
            return len(scopes)

    def lose_last(self, scope: str) -> Optional[Event]:
        """Remove the newest event of `scope` and its idempotency record, as if never written."""
        with self.lock:
            for event in reversed(self.events):
                if event.get("scope") == scope:
                    self._remove({event["id"]})
                    self._release_keys({event["id"]})
                    return event
            return None

    # -- beliefs (§6.9) ------------------------------------------------------------------

    def build_beliefs(self, scope: str, now: float) -> Tuple[int, int]:
        """Add one belief per indexed event of exactly `scope` that has none; (built, scanned)."""
        with self.lock:
            have = {b.get("source") for b in self.beliefs}
            scanned = [
                e
                for e in reversed(self._index.newest_first(self.events, scope))
                if e.get("scope") == scope and self.is_indexed(e, now)
            ]
            built = 0
            for event in scanned:
                if event["id"] in have:
                    continue
                self.beliefs.append(belief_of(event))
                built += 1
            return built, len(scanned)

    def beliefs_of(self, scope: Any) -> List[Dict[str, Any]]:
        """Beliefs of exactly `scope`, newest first."""
        with self.lock:
            return [b for b in reversed(self.beliefs) if b.get("scope") == scope]


def scope_matches(scope: str, prefix: str, string_prefix: bool) -> bool:
    """The scope-listing prefix rule (§6.7 step 2)."""
    if prefix == "":
        return True
    if prefix.endswith("/"):
        return scope.startswith(prefix) and scope != prefix
    if string_prefix:
        return scope.startswith(prefix)
    return scope == prefix or scope.startswith(prefix + "/")


def _key_of(key: Any) -> str:
    if key is None:
        return ""
    return key if isinstance(key, str) else json.dumps(key, sort_keys=True)


def _plain_text(text: Any) -> str:
    return text if isinstance(text, str) else ""


def _score(event: Event, words: Sequence[str]) -> int:
    content = event.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    lowered = text.lower() if isinstance(text, str) else ""
    return sum(1 for word in words if word in lowered)

"""list, list_preview and get (engine.md §9.6, §9.7).

A listing walks the admitted scopes in order (kind-major, then namespace order),
page after page, and admits each item once, at its first event. The server lists
newest first and may repeat an event (the real service emits each twice in a
row), so the cursor remembers the last event id admitted and skips its copy.
Conversations and chunked documents are put back together after the walk.

The opaque ``l`` cursor records where to resume: the scope path, the server's
cursor in it, the offset into that page and the last event id. A scope that has
vanished since (its items forgotten) is skipped by resuming at the first scope
sorting after it.
"""

from __future__ import annotations

import builtins
from typing import Any, Dict, List, Optional, Set, Tuple, Union

from cortex_memory.contract.defaults import in_request_order
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemId, ItemKind
from cortex_memory.contract.namespace import Namespace
from cortex_memory.contract.requests import GetRequest, ListRequest
from cortex_memory.contract.responses import Hit, ListPage
from cortex_memory.cortex.engine.context import EngineContext
from cortex_memory.cortex.engine.cursor import ListCursor
from cortex_memory.cortex.engine.items import assembled, item_events
from cortex_memory.cortex.engine.scopes import KindScope, kind_scope, scopes_for
from cortex_memory.cortex.envelope.codec import decode_event
from cortex_memory.cortex.envelope.labels import narrowing
from cortex_memory.cortex.envelope.quick import Lane
from cortex_memory.cortex.envelope.reads import (
    Keeper,
    hit,
    lane_reads,
    one_turn_conversation,
    whole_hit,
)
from cortex_memory.cortex.envelope.rebuild import rebuild, rebuild_whole
from cortex_memory.cortex.envelope.scopes import parse_scope
from cortex_memory.cortex.log.read import event_id
from cortex_memory.cortex.log.sizes import PAGE_LIMIT, WALK_PAGES
from cortex_memory.cortex.timing import Deadline
from cortex_memory.errors import EngineError, InvalidRequestError

__all__ = ["get_items", "list_items"]

# An admitted item: ready (a Hit), or waiting for assembly (a tuple: kind, id, namespace).
_Pending = Tuple[ItemKind, ItemId, Namespace]
_Entry = Union[Hit, _Pending]
# The cursor of a first page, and of the end (no scope).
_FIRST = ListCursor()


def _resume_at(scopes: List[KindScope], cursor: ListCursor) -> Tuple[int, ListCursor]:
    """The scope index to start at and the cursor to start with."""
    if cursor.scope is None:
        return 0, ListCursor(scopes[0].path) if scopes else cursor
    for index, scope in enumerate(scopes):
        if scope.path == cursor.scope:
            return index, cursor
    parsed = parse_scope(cursor.scope)
    if parsed is None:
        raise InvalidRequestError("the page cursor is malformed")
    gone = kind_scope(*parsed)
    for index, scope in enumerate(scopes):
        if scope > gone:
            return index, ListCursor(scope.path)
    return len(scopes), ListCursor()


class _Walk:
    """The state of one listing call."""

    def __init__(self, flt: MetaFilter, limit: int, preview: bool) -> None:
        self.limit = limit
        self.preview = preview
        self.filter = flt
        # One keeper per kind met, built when an event first needs the general path.
        self.keepers: Dict[ItemKind, Keeper] = {}
        self.seen: Set[ItemId] = set()
        self.entries: List[_Entry] = []
        self.pending = False  # some entry waits for assembly

    def full(self) -> bool:
        return len(self.entries) >= self.limit

    def keeper(self, kind: ItemKind) -> Keeper:
        """The filter's keeper for ``kind`` (one per kind met: most listings read one kind)."""
        keeper = self.keepers.get(kind)
        if keeper is None:
            keeper = self.keepers[kind] = Keeper(self.filter, kind)
        return keeper

    def admit(self, scope: KindScope, event: object) -> None:
        """The general path: decode ``event``, keep it or not, and admit its item once."""
        env = decode_event(event)
        if env is None or not self.keeper(scope.kind).keeps(env):
            return
        # The item must start here: its part (turn, else chunk index) is None or 0.
        turn, chunk = env.turn, env.chunk
        if (turn.index if turn is not None else chunk.index if chunk is not None else 0) != 0:
            return
        if env.id in self.seen:
            return
        self.seen.add(env.id)
        if chunk is None and (turn is None or one_turn_conversation(env)):
            self.entries.append(whole_hit(env))
        elif self.preview:
            self.entries.append(hit(env.id, rebuild([env]), 0.0))
        else:
            self.entries.append((env.kind, env.id, scope.namespace))
            self.pending = True


def list_items(
    ctx: EngineContext, req: ListRequest, deadline: Deadline, *, preview: bool
) -> ListPage:
    """One page of the items ``req.filter`` admits (``preview``: long items from their
    first event, not assembled)."""
    start = ListCursor.decode(req.cursor) if req.cursor is not None else _FIRST
    flt = req.filter
    scopes = scopes_for(ctx, flt, deadline)
    # The one-pass lane of whole learnings and documents, for a filter of kinds and
    # a reach alone (the usual listing, which no label narrows); any other filter
    # reads every event through the general path.
    lane_kinds = flt.kinds if lane_reads(flt) else None
    labels = narrowing(flt) if lane_kinds is None else []
    index, cursor = _resume_at(scopes, start)
    walk = _Walk(flt, req.limit, preview)
    limit = req.limit
    seen = walk.seen
    entries = walk.entries
    budget = WALK_PAGES + len(scopes)
    pages = 0
    following: Optional[ListCursor] = None
    while index < len(scopes) and following is None:
        scope = scopes[index]
        if cursor.scope != scope.path:
            cursor = ListCursor(scope.path)
        if pages >= budget:
            raise EngineError(
                f"read {pages} pages (stopped in {scope.path!r}) without filling a page of results"
            )
        page = ctx.log.page(scope.path, labels, cursor.engine, PAGE_LIMIT, deadline)
        pages += 1
        items = page.items
        position, last = cursor.offset, cursor.last
        # (A lane answers only learnings and documents: none for a conversation scope.)
        lane = (
            Lane(scope.kind, lane_kinds, flt.reach)
            if lane_kinds is not None and scope.kind is not ItemKind.CONVERSATION
            else None
        )
        stop = len(items)
        previous: object = None
        while position < stop:
            if lane is not None:
                # A run of common events, read by the lane in one call; it stops at
                # the first event it cannot answer (left untouched), or when full.
                begin = position
                position, last = lane.read(items, position, previous, last, seen, entries, limit)
                if len(entries) >= limit or position >= stop:
                    break
                if position > begin:
                    previous = items[position - 1]
            # The general path, for the event the lane left (or every event).
            event = items[position]
            position += 1
            if event is previous:
                # The same object again (a listing's repeated copy, parsed once):
                # its id is the one just seen, so it would be skipped below, or,
                # without a string id, never admitted.
                continue
            previous = event
            # event_id(event), written out: it runs for every event listed.
            eid = event.get("id") if type(event) is dict else None
            if type(eid) is not str:
                eid = None
            elif eid == last:
                continue
            last = eid
            walk.admit(scope, event)
            if len(entries) >= limit:
                break
        if len(entries) >= limit:
            following = _next_cursor(
                scopes, index, cursor, page.next_cursor, _unread(items, position, last), last
            )
            break
        if page.next_cursor is not None:
            cursor = ListCursor(scope.path, page.next_cursor, 0, last)
        else:
            index += 1
    hits = _resolve(ctx, entries, deadline) if walk.pending else entries
    token = following.encode() if following is not None and following.scope is not None else None
    # ListPage(tuple(hits), token), its fields set directly: every item is a Hit
    # built here (the lane, whole_hit, hit) and the token is encode()'s str or
    # None, so its checks (a tuple of Hit, an optional str) could not fail or
    # change anything.
    out = object.__new__(ListPage)
    fields = out.__dict__
    fields["items"] = tuple(hits)
    if token is not None:
        fields["next_cursor"] = token
    return out


def _unread(items: List[Any], offset: int, last: Optional[str]) -> Optional[int]:
    """The offset to resume this page at, or None when nothing in the rest of it could
    be admitted: every event left is a copy of ``last`` (skipped on resume) or has no
    string id (never admitted). The usual case: the page filled at an item whose
    repeated copy ends the server's page."""
    for position in range(offset, len(items)):
        if event_id(items[position]) not in (last, None):
            return offset
    return None


def _next_cursor(
    scopes: List[KindScope],
    index: int,
    cursor: ListCursor,
    next_page: Optional[str],
    offset: Optional[int],
    last: Optional[str],
) -> ListCursor:
    """Where the next call resumes once the page of results is full (scope None = the
    end); ``offset`` None: this page has nothing more to give."""
    scope = scopes[index].path
    if offset is not None:
        return ListCursor(scope, cursor.engine, offset, last)
    if next_page is not None:
        return ListCursor(scope, next_page, 0, last)
    if index + 1 < len(scopes):
        return ListCursor(scopes[index + 1].path)
    return _FIRST


def _resolve(ctx: EngineContext, entries: List[_Entry], deadline: Deadline) -> List[Hit]:
    """Assemble the waiting items (conversations, then documents) and keep listing order."""
    waiting = [entry for entry in entries if type(entry) is tuple]
    whole: Dict[ItemId, Hit] = {}
    for kind in (ItemKind.CONVERSATION, ItemKind.DOCUMENT):
        pairs = [(p[1], p[2]) for p in waiting if p[0] is kind]
        if not pairs:
            continue
        for item_id, item in assembled(ctx, kind, pairs, deadline).items():
            whole[item_id] = hit(item_id, item, 0.0)
    out: List[Hit] = []
    for entry in entries:
        if not isinstance(entry, tuple):
            out.append(entry)
        elif entry[1] in whole:
            out.append(whole[entry[1]])
    return out


def get_items(ctx: EngineContext, req: GetRequest, deadline: Deadline) -> builtins.list[Hit]:
    """Whole items by id inside ``req.reach``, in request order; unknown ids are omitted."""
    wanted: Set[ItemId] = set(req.ids)
    found: Dict[ItemId, Hit] = {}
    for scope in scopes_for(ctx, MetaFilter(reach=req.reach), deadline):
        missing = [item_id for item_id in wanted if item_id not in found]
        if not missing:
            break
        for item_id, envs in item_events(ctx, scope, missing, deadline).items():
            item = rebuild_whole(envs)
            if item is not None and item_id not in found:
                found[item_id] = hit(item_id, item, 0.0)
    return in_request_order(req.ids, found.values())

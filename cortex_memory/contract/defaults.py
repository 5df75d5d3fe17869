"""The helpers behind ``MemoryEngine``'s default methods, for engines to call directly.

``explore`` by walking a listing, ``get`` by listing pages, ``forget_within``
by asking ``get`` first, listing cursors made of offsets, and the keywords a
default passes on. Each takes the engine it works for, so an engine that has a
faster way for one operation can still use the others.
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
)

from cortex_memory.contract._coerce import str_tuple
from cortex_memory.contract._enum import quote
from cortex_memory.contract.deadline import Deadline, DeadlineLike
from cortex_memory.contract.explore import Bucket, ExplorePage, ExploreRequest
from cortex_memory.contract.facet import Facet
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.forget import ForgetIds, ForgetReport, ForgetTarget
from cortex_memory.contract.items import ItemId
from cortex_memory.contract.limits import MAX_GET_IDS, SCAN_PAGE
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.requests import (
    GetRequest,
    ListRequest,
)
from cortex_memory.contract.responses import (
    Hit,
)
from cortex_memory.contract.text import is_blank
from cortex_memory.errors import EngineError, InvalidRequestError

if TYPE_CHECKING:
    from cortex_memory.contract.engine import MemoryEngine

__all__ = [
    "cursor_from_offset",
    "deadline_keywords",
    "explore_by_listing",
    "explore_page_of",
    "forget_within_by_get",
    "forget_within_ids",
    "get_by_listing",
    "in_request_order",
    "offset_from_cursor",
]


def deadline_keywords(deadline: Deadline, *, replace: bool = False) -> Dict[str, Any]:
    """The keywords a default passes on: ``deadline`` when bounded, ``replace`` when True.

    Leaving them out otherwise keeps engines written before those keywords
    existed working with every call that does not use them.
    """
    out: Dict[str, Any] = {}
    if replace:
        out["replace"] = True
    if deadline.bounded:
        out["deadline"] = deadline
    return out


def _check_progress(engine: MemoryEngine, sent: Optional[str], got: Optional[str]) -> None:
    # A cursor that does not move would loop for ever; fail instead of hanging.
    if got is not None and got == sent:
        raise EngineError(f"engine `{engine.descriptor().id}` repeated a listing cursor")


def explore_page_of(
    facet: Facet,
    counts: Mapping[str, int],
    limit: int,
    total: int,
    missing: int,
    truncated: bool,
) -> ExplorePage:
    """Build an explore page: buckets by count descending, ties by value, cut to ``limit``.

    Values tie-break in UTF-8 byte order, which is code point order, so plain
    string comparison gives it. ``more_buckets`` counts the buckets cut off.
    """
    ordered = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))
    buckets = tuple(Bucket(value, count) for value, count in ordered[: max(limit, 0)])
    return ExplorePage(
        facet, buckets, total, missing, max(0, len(ordered) - limit), truncated
    )


def explore_by_listing(
    engine: MemoryEngine, request: ExploreRequest, *, deadline: DeadlineLike = None
) -> ExplorePage:
    """Explore by paging through ``engine.list`` (the default ``explore``).

    Reads at most ``scan_limit`` items, 200 per page; ``truncated`` when the
    limit was reached while a cursor remained. The deadline is checked before
    each page and passed on to ``list``.
    """
    request.validate()
    bound = Deadline.of(deadline)
    keywords = deadline_keywords(bound)
    counts: Dict[str, int] = {}
    total = missing = read = 0
    facet = request.facet
    cursor: Optional[str] = None
    truncated = False
    while True:
        bound.check("explore")
        page = engine.list(
            ListRequest(request.filter, min(SCAN_PAGE, request.scan_limit - read), cursor),
            **keywords,
        )
        for hit in page.items:
            total += 1
            values = facet.values(hit.kind, hit.meta)
            if not values:
                missing += 1
            for value in values:
                counts[value] = counts.get(value, 0) + 1
        read += len(page.items)
        _check_progress(engine, cursor, page.next_cursor)
        cursor = page.next_cursor
        if cursor is None:
            break
        if read >= request.scan_limit:
            truncated = True
            break
    return explore_page_of(facet, counts, request.limit, total, missing, truncated)


def offset_from_cursor(cursor: Optional[str]) -> int:
    """The offset in a decimal offset cursor (``None`` is the first page, 0).

    The reference and local engines page by offset. Anything but ASCII digits
    (at most 18) is ``InvalidRequestError("unknown cursor `x`")``.
    """
    if cursor is None:
        return 0
    if cursor.isascii() and cursor.isdigit() and len(cursor) <= 18:
        return int(cursor)
    raise InvalidRequestError(f"unknown cursor {quote(cursor)}")


def cursor_from_offset(offset: int, total: int) -> Optional[str]:
    """The cursor of the page starting at ``offset``, or ``None`` when ``offset`` is the end."""
    return str(offset) if offset < total else None


def in_request_order(ids: Sequence[ItemId], hits: Iterable[Hit]) -> List[Hit]:
    """The hits for ``ids`` in the order asked, each id once; unknown ids are left out.

    When ``hits`` holds an id twice, the first hit wins.
    """
    found: Dict[ItemId, Hit] = {}
    for hit in hits:
        found.setdefault(hit.id, hit)
    ordered: List[Hit] = []
    for item_id in ids:
        if item_id in found:
            ordered.append(found.pop(item_id))
    return ordered


def get_by_listing(
    engine: MemoryEngine, request: GetRequest, *, deadline: DeadlineLike = None
) -> List[Hit]:
    """Get by paging through ``engine.list`` under the request's reach (the default ``get``).

    Stops once every asked id is found or the listing ends. The deadline is
    checked before each page and passed on to ``list``.
    """
    request.validate()
    bound = Deadline.of(deadline)
    keywords = deadline_keywords(bound)
    wanted = set(request.ids)
    found: Dict[ItemId, Hit] = {}
    flt = MetaFilter(reach=request.reach)
    cursor: Optional[str] = None
    while True:
        bound.check("get")
        page = engine.list(ListRequest(flt, SCAN_PAGE, cursor), **keywords)
        for hit in page.items:
            if hit.id in wanted and hit.id not in found:
                found[hit.id] = hit
        if len(found) == len(wanted):
            break
        _check_progress(engine, cursor, page.next_cursor)
        cursor = page.next_cursor
        if cursor is None:
            break
    return in_request_order(request.ids, found.values())


def forget_within_ids(ids: Iterable[ItemId]) -> List[ItemId]:
    """Check the ids of a ``forget_within`` and dedupe them, keeping the first occurrence.

    No ids is refused as ``ForgetIds`` refuses it; a blank id is refused too, and a
    single ``str`` is ``TypeError`` (it would iterate as one-character ids).
    """
    target = ForgetIds(str_tuple("forget_within", "ids", ids))
    target.validate()
    unique: Dict[ItemId, None] = {}
    for item_id in target.ids:
        if is_blank(item_id):
            raise InvalidRequestError("an id must not be blank")
        unique.setdefault(item_id, None)
    return [*unique]


def forget_within_by_get(
    engine: MemoryEngine,
    ids: Iterable[ItemId],
    reach: Reach,
    *,
    deadline: DeadlineLike = None,
) -> ForgetReport:
    """Forget ``ids`` only inside ``reach`` (the default ``forget_within``).

    Looks the ids up with ``engine.get`` under ``reach`` (200 at a time) and
    forgets only those found; when none is found, no forget is sent at all.
    The deadline is checked before each call and passed on.
    """
    unique = forget_within_ids(ids)
    bound = Deadline.of(deadline)
    keywords = deadline_keywords(bound)
    found: List[ItemId] = []
    for start in range(0, len(unique), MAX_GET_IDS):
        chunk = unique[start : start + MAX_GET_IDS]
        asked = set(chunk)
        bound.check("forget_within")
        for hit in engine.get(GetRequest(tuple(chunk), reach), **keywords):
            if hit.id in asked:
                asked.discard(hit.id)
                found.append(hit.id)
    if not found:
        return ForgetReport(0)
    bound.check("forget_within")
    return engine.forget(ForgetTarget.ids(found), **keywords)

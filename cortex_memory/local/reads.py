"""Reads of the local engine: list, list_preview, export, get, fetch and recall's ranking.

Listings walk ``items`` in insertion order with keyset cursors (``k<seq>``:
"after row seq"), so a page costs the same however deep it is and items
written or forgotten meanwhile never shift the pages. Ranked reads use an
offset cursor (``o<offset>``) into the ranking, which is recomputed per page.
No page holds more than :data:`MAX_PAGE` hits; a larger ``limit`` gets a
short page with a cursor.

Every row read back is checked with ``MetaFilter.matches`` (or the reach)
before it leaves, on top of the SQL condition.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import re
import sqlite3
from typing import Dict, List, Optional, Sequence, Tuple, cast

from cortex_memory.contract import (
    Exported,
    ExportPage,
    FetchMode,
    FetchPage,
    Hit,
    ListPage,
    MetaFilter,
    Reach,
    StoreItem,
    TimeHint,
    admitted_by,
    in_request_order,
)
from cortex_memory.errors import EngineError, InvalidRequestError
from cortex_memory.local.bm25 import rarity
from cortex_memory.local.corpus import ITEMS
from cortex_memory.local.rows import (
    HIT_COLUMNS,
    HIT_FROM,
    hit_of,
    item_of,
    kind_of,
    meta_of,
    page_hits,
)
from cortex_memory.local.search import Query, Ranking, VectorSpace, hint_window, rank
from cortex_memory.local.sqlfilter import filter_condition, reach_condition
from cortex_memory.local.store import ID_FROM, chunks, id_condition

__all__ = [
    "MAX_PAGE",
    "Ranking",
    "export_page",
    "fetch_page",
    "get_hits",
    "keyset_after",
    "list_page",
    "offset_of",
    "ranked_hits",
    "term_rarity",
]

#: Most hits (or exported items) one page holds.
MAX_PAGE = 1000

_KEYSET = re.compile(r"k([0-9]{1,18})")
_OFFSET = re.compile(r"o([0-9]{1,12})")


def _unknown(cursor: str) -> InvalidRequestError:
    shown = cursor if len(cursor) <= 80 else cursor[:80] + "…"
    return InvalidRequestError(f"unknown cursor `{shown}`")


def _cursor_number(pattern: re.Pattern[str], cursor: Optional[str]) -> int:
    # The number a cursor of ``pattern``'s shape holds; no cursor is 0.
    if cursor is None:
        return 0
    match = pattern.fullmatch(cursor)
    if match is None:
        raise _unknown(cursor)
    return int(match.group(1))


def keyset_after(cursor: Optional[str]) -> int:
    """The seq a listing cursor continues after (0 for the first page)."""
    return _cursor_number(_KEYSET, cursor)


def offset_of(cursor: Optional[str]) -> int:
    """The ranking offset a fetch cursor continues at (0 for the first page)."""
    return _cursor_number(_OFFSET, cursor)


def _listing_rows(
    conn: sqlite3.Connection, tenant: str, flt: MetaFilter, cursor: Optional[str], limit: int
) -> Tuple[List[Tuple[object, ...]], Optional[str]]:
    after = keyset_after(cursor)
    size = min(limit, MAX_PAGE)
    where, params = filter_condition(flt, tenant)
    rows = conn.execute(
        f"SELECT {HIT_COLUMNS} FROM {HIT_FROM} WHERE {where} AND c.seq > ? "
        "ORDER BY c.seq LIMIT ?",
        (*params, after, size + 1),
    ).fetchall()
    next_cursor = f"k{rows[size - 1][0]}" if len(rows) > size else None
    return rows[:size], next_cursor


def list_page(
    conn: sqlite3.Connection,
    tenant: str,
    flt: MetaFilter,
    cursor: Optional[str],
    limit: int,
    *,
    preview: bool = False,
) -> ListPage:
    """A page of the items ``flt`` admits, in insertion order, every score 0.0."""
    rows, next_cursor = _listing_rows(conn, tenant, flt, cursor, limit)
    hits: List[Hit] = []
    for row in rows:
        meta = meta_of(str(row[1]), str(row[5]))
        if flt.matches(kind_of(row[2]), meta):
            hits.append(hit_of(row, meta, preview=preview))
    return ListPage(tuple(hits), next_cursor)


def export_page(
    conn: sqlite3.Connection, tenant: str, flt: MetaFilter, cursor: Optional[str], limit: int
) -> ExportPage:
    """Like :func:`list_page`, with each item whole; unreadable rows go to ``incomplete``."""
    rows, next_cursor = _listing_rows(conn, tenant, flt, cursor, limit)
    exported: List[Exported] = []
    incomplete: List[str] = []
    for row in rows:
        item_id = str(row[1])
        try:
            item = item_of(item_id, str(row[5]), str(row[3]))
        except EngineError:
            incomplete.append(item_id)
            continue
        if flt.matches(item.item_kind, item.meta):
            exported.append(Exported(item_id, item))
    return ExportPage(tuple(exported), tuple(incomplete), next_cursor)


def get_hits(
    conn: sqlite3.Connection, tenant: str, ids: Sequence[str], reach: Optional[Reach]
) -> List[Hit]:
    """The hits for ``ids`` that live where ``reach`` admits, in the order asked."""
    reach_sql, reach_params = reach_condition(reach, "c")
    unique = list(dict.fromkeys(ids))
    found: List[Hit] = []
    for chunk in chunks(unique):
        where, params = id_condition(cast(Sequence[str], chunk))
        for row in conn.execute(
            f"SELECT {HIT_COLUMNS} FROM {ID_FROM} WHERE {where} AND c.tenant = ? "
            f"AND {reach_sql}",
            (*params, tenant, *reach_params),
        ):
            hit = hit_of(row)
            if admitted_by(reach, hit.meta.namespace):
                found.append(hit)
    return in_request_order(ids, found)


def ranked_hits(
    conn: sqlite3.Connection,
    tenant: str,
    mode: FetchMode,
    query: Query,
    flt: MetaFilter,
    hint: Optional[TimeHint],
    offset: int,
    limit: int,
    *,
    use_fts: bool,
    space: Optional[VectorSpace],
    bounded: Optional[bool] = None,
) -> Tuple[List[Tuple[Hit, str]], Optional[str], Ranking]:
    """``(hit, item_json)`` pairs ranked ``offset ..`` (at most ``limit``, capped at
    :data:`MAX_PAGE`), the cursor of the next page, and the ranking they came from."""
    size = min(limit, MAX_PAGE)
    ranking = rank(
        conn, ITEMS, mode, query, filter_condition(flt, tenant), space,
        use_fts=use_fts, offset=offset, size=size, window=hint_window(hint), bounded=bounded,
    )
    out = page_hits(ranking.page, ranking.rows, flt)
    more = f"o{offset + len(ranking.page)}" if ranking.more else None
    return out, more, ranking


def fetch_page(hits: Sequence[Hit], cursor: Optional[str], beliefs: Sequence[Hit]) -> FetchPage:
    """``FetchPage(tuple(hits), cursor, tuple(beliefs))``, its fields set directly.

    Every hit comes from :func:`ranked_hits` or the beliefs layer (``Hit``
    instances: ``rows.scored_hit``, ``rows.hit_of``, ``beliefs.belief_hit``) and the cursor
    is :func:`ranked_hits`' ``str`` or None, so ``FetchPage``'s checks (tuples
    of ``Hit``, an optional ``str``) could neither fail nor change anything;
    they cost more than the rest of a page's assembly. Fields left at their
    defaults are read from the class, as ``cortex/engine/listing.py`` builds
    ``ListPage``.
    """
    page = object.__new__(FetchPage)
    fields = page.__dict__
    fields["hits"] = tuple(hits)
    if cursor is not None:
        fields["next_cursor"] = cursor
    if beliefs:
        fields["beliefs"] = tuple(beliefs)
    return page


def term_rarity(query: Query, ranking: Ranking) -> Optional[Dict[str, float]]:
    """How rare each query term is in the items, from the counts the ranking read
    (None without the keyword index)."""
    if ranking.stats is None or ranking.counts is None:
        return None
    return rarity(query.terms, ranking.counts, ranking.stats)


def items_of(pairs: Sequence[Tuple[Hit, str]]) -> List[Tuple[Hit, StoreItem]]:
    """Rebuild the stored items of ranked pairs (recall quotes their sentences)."""
    return [(hit, item_of(hit.id, item_json, hit.text)) for hit, item_json in pairs]

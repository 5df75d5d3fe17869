"""Facet counts in SQL, with the same answer ``explore_by_listing`` gives.

The scan takes the first ``scan_limit`` matching rows in listing order
(insertion order) and counts the facet's values among them; ``truncated``
says that more rows matched beyond them. Buckets are then ordered and cut by
the contract's ``explore_page_of``. A ``tag`` counts once per tag (an item
with two tags adds to two buckets); ``namespace`` counts the path string,
``root`` for the root.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from typing import Dict

from cortex_memory.contract import ExplorePage, ExploreRequest, Facet, explore_page_of
from cortex_memory.local.sqlfilter import filter_condition, tags_of

__all__ = ["explore"]

_COLUMN: Dict[Facet, str] = {
    Facet.KIND: "c.kind",
    Facet.SOURCE: "c.source_kind",
    Facet.SOURCE_ID: "c.source_id",
    Facet.WORKSPACE: "c.workspace",
    Facet.FOLDER: "c.folder",
    Facet.FILE_PATH: "c.file_path",
    Facet.LANGUAGE: "c.language",
    Facet.REPO: "c.repo",
    Facet.URL: "c.url",
    Facet.THREAD: "c.thread_id",
    Facet.AGENT: "c.agent_id",
    Facet.TOOL_CALL: "c.tool_call",
    Facet.NAMESPACE: "CASE c.namespace WHEN '' THEN 'root' ELSE c.namespace END",
}


def explore(conn: sqlite3.Connection, tenant: str, request: ExploreRequest) -> ExplorePage:
    """Count ``request.facet`` over the first ``scan_limit`` items the filter admits."""
    where, params = filter_condition(request.filter, tenant)
    scan_params = [*params, request.scan_limit]
    counts: Dict[str, int] = {}
    if request.facet is Facet.TAG:
        tagged = conn.execute(
            f"SELECT c.tags FROM items c WHERE {where} ORDER BY c.seq LIMIT ?", scan_params
        ).fetchall()
        total, missing = len(tagged), 0
        for (tags,) in tagged:
            found = tags_of(tags)
            if not found:
                missing += 1
            for tag in found:  # a tag given twice counts twice
                counts[tag] = counts.get(tag, 0) + 1
    else:
        total = missing = 0
        value_sql = _COLUMN[request.facet]
        rows = conn.execute(
            f"SELECT v, count(*) FROM (SELECT {value_sql} AS v FROM items c WHERE {where} "
            "ORDER BY c.seq LIMIT ?) GROUP BY v",
            scan_params,
        )
        for value, count in rows:
            total += int(count)
            if value is None:
                missing += int(count)
            else:
                counts[str(value)] = int(count)
    truncated = False
    if total >= request.scan_limit:
        beyond = conn.execute(
            f"SELECT 1 FROM items c WHERE {where} ORDER BY c.seq LIMIT 1 OFFSET ?",
            [*params, request.scan_limit],
        ).fetchone()
        truncated = beyond is not None
    return explore_page_of(
        request.facet, counts, request.limit, int(total), int(missing), truncated
    )

"""Recall-pack notes: what a pack's warnings and diagnostics say, logged (engine.md §8.6).

Logging only; nothing here changes a result. Server text is untrusted, so it is
logged with ``%r`` and cannot forge log lines, and it is scrubbed first of the
credential the recall sent and of any bearer or authorization value
(:mod:`~cortex_memory.cortex.transport.redact`).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Optional

from cortex_memory.cortex.transport.redact import Scrubber

__all__ = ["UNRANKED_SAMPLE", "log_pack_notes"]

logger = logging.getLogger(__name__)

UNRANKED_SAMPLE = "parent_pack_unranked_sample"
"""A warning saying the pack is an unranked sample of a parent pack."""


def log_pack_notes(
    scope: object, pack: Mapping[str, Any], scrub: Optional[Callable[[str], str]] = None
) -> None:
    """Log a pack's ``warnings[]`` and any knapsack eviction it reports.

    Each warning goes to debug; the unranked-sample warning to warning. An
    eviction (``diagnostics.knapsack_evictions`` > 0, or provenance rows marked
    ``evicted_from_layers``) is a warning with the count, or "unreported" when
    only rows were seen.
    """
    warnings = pack.get("warnings")
    if isinstance(warnings, list):
        clean = scrub if scrub is not None else Scrubber()
        for raw in warnings:
            if not isinstance(raw, str):
                continue
            note = clean(raw)
            if note == UNRANKED_SAMPLE or note.startswith(UNRANKED_SAMPLE + ":"):
                logger.warning("recall pack for scope %r is an unranked sample: %r", scope, note)
            else:
                logger.debug("recall pack for scope %r warned %r", scope, note)
    count = _evictions(pack)
    rows = _evicted_rows(pack)
    if count is not None and count > 0:
        logger.warning("recall pack for scope %r evicted %d events to fit its budget", scope, count)
    elif rows:
        logger.warning(
            "recall pack for scope %r evicted events to fit its budget "
            "(%d rows marked, count unreported)",
            scope,
            rows,
        )


def _evictions(pack: Mapping[str, Any]) -> Any:
    diagnostics = pack.get("diagnostics")
    if not isinstance(diagnostics, dict):
        return None
    value = diagnostics.get("knapsack_evictions")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _evicted_rows(pack: Mapping[str, Any]) -> int:
    provenance = pack.get("provenance")
    trail = provenance.get("trail") if isinstance(provenance, dict) else None
    if not isinstance(trail, list):
        return 0
    ids = set()
    rows = 0
    for step in trail:
        contributors = step.get("context_contributors") if isinstance(step, dict) else None
        if not isinstance(contributors, list):
            continue
        for row in contributors:
            if isinstance(row, dict) and row.get("evicted_from_layers") is True:
                rows += 1
                if isinstance(row.get("event_id"), str):
                    ids.add(row["event_id"])
    return len(ids) if ids else rows

"""Beliefs as hits (engine.md §9.12): what CortexDB derives, shown as tagged learnings.

A belief comes from a pack's ``layers.beliefs`` or the Direct beliefs listing:
``{id, scope, claim: {subject, predicate, object}, stance, confidence,
valid_from | updated_at | created_at}``. It becomes a ``learning`` hit of kind
fact tagged ``belief`` at the node of its scope, its text the claim read as a
sentence ("user said prefers helix"). Anything malformed is skipped, never an
error: beliefs are advisory and a server may add shapes we do not know.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, Dict, List, Optional, Sequence

from cortex_memory.contract.consolidation import BELIEF_TAG
from cortex_memory.contract.items import ItemKind
from cortex_memory.contract.jsonfmt import parse_timestamp, to_f32
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.namespace import Namespace
from cortex_memory.contract.responses import Hit
from cortex_memory.contract.text import trim
from cortex_memory.cortex.engine.packs import interleave
from cortex_memory.cortex.envelope import parse_scope
from cortex_memory.errors import Error

__all__ = [
    "CONTESTED_SUFFIX",
    "DEFAULT_CONFIDENCE",
    "belief_hit",
    "belief_hits",
    "by_confidence",
    "merge_beliefs",
    "rank_score",
]

DEFAULT_CONFIDENCE = 0.5
"""The confidence of a belief that states none (or a non-number)."""

CONTESTED_SUFFIX = " (contested)"
"""Appended to the text of a contested belief."""

_STANCES = ("supported", "contested")
_TIME_FIELDS = ("valid_from", "updated_at", "created_at")


def rank_score(rank: int) -> float:
    """``float32(1 / (1 + rank))``, rank from 0: the score every ranked hit carries."""
    return to_f32(1.0 / (1.0 + rank))


def _scalar_text(value: object) -> Optional[str]:
    """A string as is; a number or boolean as its JSON text; anything else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value) if math.isfinite(value) else None
    return None


def _part_text(part: object) -> Optional[str]:
    """A claim part's text: its ``name``, else its ``value``, else the part itself.

    Non-empty after trimming, else None (so a part without usable text drops the
    belief).
    """
    if isinstance(part, dict):
        for key in ("name", "value"):
            if key in part:
                text = _scalar_text(part[key])
                if text is not None and trim(text):
                    return trim(text)
        return None
    text = _scalar_text(part)
    if text is None or not trim(text):
        return None
    return trim(text)


def _confidence(value: object) -> float:
    """Clamped to [0, 1] as float32; a missing, non-numeric or NaN value is 0.5."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return DEFAULT_CONFIDENCE
    number = float(value)
    if math.isnan(number):
        return DEFAULT_CONFIDENCE
    return to_f32(min(1.0, max(0.0, number)))


def _observed_at(belief: Dict[str, Any]) -> Optional[datetime]:
    """The first parseable of ``valid_from``, ``updated_at``, ``created_at``."""
    for name in _TIME_FIELDS:
        value = belief.get(name)
        if isinstance(value, str):
            try:
                return parse_timestamp(value, truncate=True)
            except Error:
                continue
    return None


def belief_hit(belief: object, rank: int) -> Optional[Hit]:
    """The hit of one belief at position ``rank`` of its array, or None when unusable.

    (1) a string ``id``; (2) ``stance`` (default ``supported``) supported or
    contested; (3) a ``scope`` that parses as ours; (4) a ``claim`` with a
    predicate (underscores read as spaces) and an object, each with text; (5) text
    ``subject predicate object`` (or ``predicate object``), `` (contested)`` added
    for a contested belief; (6) confidence clamped, default 0.5; (7) observed_at
    the first parseable time; (8) meta ``{namespace, tags: [belief], observed_at}``;
    (9) score ``1/(1 + rank)``.
    """
    if not isinstance(belief, dict):
        return None
    belief_id = belief.get("id")
    if not isinstance(belief_id, str):
        return None
    stance = belief.get("stance")
    if stance is None:
        stance = "supported"
    if stance not in _STANCES:
        return None
    scope = belief.get("scope")
    parsed = parse_scope(scope) if isinstance(scope, str) else None
    if parsed is None:
        return None
    namespace: Namespace = parsed[0]
    claim = belief.get("claim")
    if not isinstance(claim, dict):
        return None
    predicate = _part_text(claim.get("predicate"))
    obj = _part_text(claim.get("object"))
    if predicate is None or obj is None:
        return None
    words: List[str] = []
    subject = _part_text(claim.get("subject")) if "subject" in claim else None
    if subject is not None:
        words.append(subject)
    words.append(predicate.replace("_", " "))
    words.append(obj)
    text = " ".join(words)
    if stance == "contested":
        text += CONTESTED_SUFFIX
    confidence = _confidence(belief.get("confidence"))
    meta = MemoryMeta(namespace=namespace, tags=(BELIEF_TAG,), observed_at=_observed_at(belief))
    return Hit(belief_id, ItemKind.LEARNING, text, meta, rank_score(rank), confidence)


def belief_hits(beliefs: Sequence[object]) -> List[Hit]:
    """The usable beliefs of one array as hits, ranked by position (skipped entries count)."""
    out: List[Hit] = []
    for rank, belief in enumerate(beliefs):
        found = belief_hit(belief, rank)
        if found is not None:
            out.append(found)
    return out


def merge_beliefs(per_scope: Sequence[Sequence[Hit]], limit: int) -> List[Hit]:
    """Round-robin across scopes, the text deduped case-insensitively, cut to ``limit``."""
    return interleave(per_scope, lambda found: found.text.casefold(), limit)


def by_confidence(hits: Sequence[Hit]) -> List[Hit]:
    """Most confident first, then newest ``observed_at`` (undated last); stable otherwise."""
    dated = sorted(
        hits,
        key=lambda h: h.meta.observed_at.timestamp() if h.meta.observed_at else -math.inf,
        reverse=True,
    )
    return sorted(dated, key=lambda h: h.confidence or 0.0, reverse=True)

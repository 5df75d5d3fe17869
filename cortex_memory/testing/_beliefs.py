"""The beliefs a double builds from its events (doubles.md §6.9) and how recall matches them."""

from __future__ import annotations

import json
from typing import Any, Dict, Sequence

__all__ = ["belief_matches", "belief_of", "belief_text"]

Event = Dict[str, Any]

_BELIEF_VALID_FROM = "2026-09-01T09:00:00Z"


def belief_text(event: Event) -> str:
    """The event's own text: v3 `content.text`, or the `text` of a v2 JSON envelope."""
    content = event.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    if not isinstance(text, str):
        return ""
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            return text
        inner = parsed.get("text") if isinstance(parsed, dict) else None
        if isinstance(inner, str) and parsed.get("v") == 2:
            return inner
    return text


def belief_matches(belief: Dict[str, Any], words: Sequence[str]) -> bool:
    """True when any query word occurs in the belief's whole JSON, lowercased."""
    whole = json.dumps(belief, ensure_ascii=False).lower()
    return any(word in whole for word in words)


def belief_of(event: Event) -> Dict[str, Any]:
    """The one belief a build adds for ``event``."""
    return {
        "id": f"belief_{event['id']}",
        "scope": event.get("scope"),
        "source": event["id"],
        "claim": {
            "subject": {"id": "ent_user", "name": "user"},
            "predicate": "said",
            "object": {"datatype": "string", "value": belief_text(event)},
        },
        "stance": "supported",
        "confidence": 0.9,
        "valid_from": _BELIEF_VALID_FROM,
    }

"""Short, specific wording for failure details.

A failure should say which item, which id, what was expected and what came
back, without dumping whole memory contents: every value shown here is cut to
a few dozen characters and lists stop after a handful of entries.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Sequence

from cortex_memory.contract._enum import quote
from cortex_memory.contract.jsonfmt import dumps

__all__ = ["brief", "difference", "id_list", "name_set", "text"]

_SHOWN_IDS = 5
_SHOWN_DIFFERENCES = 3


def brief(value: object, limit: int = 120) -> str:
    """A short printable form of an engine answer (its contract JSON when it has one)."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        shown = dumps(to_json())
    elif isinstance(value, (list, tuple)):
        shown = f"a list of {len(value)}"
    else:
        shown = repr(value)
    if len(shown) > limit:
        shown = shown[:limit] + "…"
    return shown


def text(value: str, limit: int = 60) -> str:
    """A text quoted in backticks and cut to ``limit`` characters."""
    return quote(value, limit)


def id_list(ids: Sequence[str], limit: int = _SHOWN_IDS) -> str:
    """Ids for a message: at most ``limit`` of them, then how many more."""
    shown = ", ".join(f"`{i}`" for i in ids[:limit])
    extra = len(ids) - limit
    if extra > 0:
        shown += f" and {extra} more"
    return f"[{shown}]"


def name_set(names: Iterable[str]) -> str:
    """A set of short names, sorted: ``{a, root}`` (``{}`` when empty)."""
    return "{" + ", ".join(sorted(names)) + "}"


def difference(expected: Mapping[str, Any], got: Mapping[str, Any], prefix: str = "") -> str:
    """Which keys of two JSON objects differ: ``meta.tags: expected [...], got [...]``.

    Nested objects are compared key by key so the message names the field;
    at most three differences are shown.
    """
    found: List[str] = []
    _differences(expected, got, prefix, found)
    if not found:
        return "no field differs in JSON"
    extra = len(found) - _SHOWN_DIFFERENCES
    shown = "; ".join(found[:_SHOWN_DIFFERENCES])
    return shown + (f"; and {extra} more" if extra > 0 else "")


def _differences(
    expected: Mapping[str, Any], got: Mapping[str, Any], prefix: str, found: List[str]
) -> None:
    for key in [*expected, *(k for k in got if k not in expected)]:
        path = f"{prefix}{key}"
        want, have = expected.get(key), got.get(key)
        if want == have:
            continue
        if isinstance(want, Mapping) and isinstance(have, Mapping):
            _differences(want, have, f"{path}.", found)
            continue
        found.append(f"{path}: expected {_json(want)}, got {_json(have)}")


def _json(value: object) -> str:
    if value is None:
        return "nothing"
    shown = dumps(value)
    return shown if len(shown) <= 60 else shown[:60] + "…"

"""Turn a ``MetaFilter`` or a ``Reach`` into an SQL condition on the ``items`` table.

The condition selects exactly the rows ``MetaFilter.matches`` admits (the
tests hold the two to each other), so SQLite does the filtering with its
indexes. Readers still run ``matches`` on every row they return, as a guard:
what leaves the engine obeys the contract's own code.

Each rule, as SQL:

- reach: ``namespace = at``; or (inherit) ``namespace IN (ancestors)``; or
  (descendants) the path starts with ``at/`` (a byte range: ``'/'`` and ``'0'``
  are neighbours) and ``svc <= depth(at)`` (no service segment below ``at``).
  No reach is ``svc = 0``: the whole tree without sandboxes.
- ``folder``/``file_path``: equal to the wanted value, or to its base (trailing
  ``/`` stripped), or inside the byte range of ``base/``.
- ``thread_id``/``agent_id``/``source_id``: the value or its redacted form.
- tags: ``instr(tags, ?)`` with the wanted tag between separators (see
  :func:`tags_key`); the time window: ``observed_us`` bounds (a NULL compares
  false, so undated items drop out).
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Iterable, List, Optional, Sequence, Tuple

from cortex_memory.contract import MetaFilter, Namespace, Reach, SegmentKind, redacted_id

__all__ = [
    "Condition",
    "filter_condition",
    "micros",
    "namespace_key",
    "reach_condition",
    "service_depth",
    "tags_key",
    "tags_of",
]

#: SQL text (``AND``-joined clauses, never empty) and its parameters.
Condition = Tuple[str, List[object]]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def micros(at: datetime) -> int:
    """Microseconds since the Unix epoch of an aware instant (exact)."""
    delta = at - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def namespace_key(ns: Namespace) -> str:
    """How a namespace is stored: its path, ``''`` for the root."""
    return "" if ns.is_root() else str(ns)


def service_depth(ns: Namespace) -> int:
    """1 + the index of the deepest ``service`` segment; 0 when there is none."""
    last = 0
    for index, segment in enumerate(ns.segments):
        if segment.kind is SegmentKind.SERVICE:
            last = index + 1
    return last


# How a row keeps its tags in one column: each tag with its separator and
# escape characters escaped, each followed by the separator, the whole
# preceded by it: ``SEP t1 SEP t2 SEP``. A wanted tag, escaped the same way
# between two separators, is then found by ``instr`` exactly where a stored
# tag equals it: the separator appears only between tags, so a match cannot
# span two of them, and the escape is one-to-one.
_SEP, _ESC = "\x1e", "\x1d"
_ESCAPES = str.maketrans({_ESC: _ESC + _ESC, _SEP: _ESC + "\x1f"})


def _escape(tag: str) -> str:
    return tag.translate(_ESCAPES) if _SEP in tag or _ESC in tag else tag


_UNESCAPE = re.compile("\x1d(.)", re.DOTALL)


def _unescaped(match: re.Match[str]) -> str:
    return _SEP if match.group(1) == "\x1f" else match.group(1)


def tags_key(tags: Iterable[str]) -> Optional[str]:
    """The ``tags`` column of an item with ``tags`` (repeats kept); None for none."""
    escaped = [_escape(tag) for tag in tags]
    if not escaped:
        return None
    return _SEP + _SEP.join(escaped) + _SEP


def tags_of(value: Optional[str]) -> List[str]:
    """The tags a ``tags`` column holds, in order (the inverse of :func:`tags_key`)."""
    if not value:
        return []
    return [
        _UNESCAPE.sub(_unescaped, field) if _ESC in field else field
        for field in value[1:-1].split(_SEP)
    ]


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def reach_condition(reach: Optional[Reach], alias: str) -> Condition:
    """The rows at nodes ``reach`` admits (``admitted_by`` semantics for None)."""
    if reach is None:
        return f"{alias}.svc = 0", []
    at = reach.at
    key = namespace_key(at)
    parts = [f"{alias}.namespace = ?"]
    params: List[object] = [key]
    if reach.inherit and not at.is_root():
        ancestors = [namespace_key(ns) for ns in at.ancestors_and_self()[:-1]]
        parts.append(f"{alias}.namespace IN ({_marks(len(ancestors))})")
        params.extend(ancestors)
    if reach.descendants:
        depth = at.depth()
        if at.is_root():
            parts.append(f"{alias}.svc = 0")
        else:
            parts.append(
                f"({alias}.namespace >= ? AND {alias}.namespace < ? AND {alias}.svc <= ?)"
            )
            params.extend([key + "/", key + "0", depth])
    if len(parts) == 1:
        return parts[0], params
    return "(" + " OR ".join(parts) + ")", params


def _path_clause(column: str, wanted: str, params: List[object]) -> str:
    base = wanted.rstrip("/")
    params.extend([wanted, base, base + "/", base + "0"])
    return f"({column} = ? OR {column} = ? OR ({column} >= ? AND {column} < ?))"


def _in(column: str, values: Sequence[str], params: List[object]) -> str:
    params.extend(values)
    return f"{column} IN ({_marks(len(values))})"


#: The condition made last, and what it was made of: a filter is immutable (a
#: frozen dataclass of immutable values), and every call of an engine without
#: a filter, or reusing one, asks for the same condition again. Kept whole in
#: one tuple, so threads never see one filter's condition under another.
_last: Tuple[object, str, str, str, Tuple[object, ...]] = (None, "", "", "", ())


def filter_condition(flt: MetaFilter, tenant: str, alias: str = "c") -> Condition:
    """The SQL condition selecting ``tenant``'s rows that ``flt`` admits.

    The same filter object (and tenant and alias) as the last call gets the
    condition made then (its parameters in a new list).
    """
    global _last
    last = _last
    if last[0] is flt and last[1] == tenant and last[2] == alias:
        return last[3], list(last[4])
    sql, params = _condition(flt, tenant, alias)
    _last = (flt, tenant, alias, sql, tuple(params))
    return sql, params


def _condition(flt: MetaFilter, tenant: str, alias: str) -> Condition:
    """:func:`filter_condition`, made afresh."""
    clauses = [f"{alias}.tenant = ?"]
    params: List[object] = [tenant]
    if flt.kinds:
        clauses.append(_in(f"{alias}.kind", [k.value for k in flt.kinds], params))
    reach_sql, reach_params = reach_condition(flt.reach, alias)
    clauses.append(reach_sql)
    params.extend(reach_params)
    for field, column in (
        ("workspace", "workspace"),
        ("language", "language"),
        ("repo", "repo"),
        ("commit", "vcs_commit"),
        ("url", "url"),
        ("tool_call", "tool_call"),
    ):
        value = getattr(flt, field)
        if value is not None:
            clauses.append(f"{alias}.{column} = ?")
            params.append(value)
    if flt.folder is not None:
        clauses.append(_path_clause(f"{alias}.folder", flt.folder, params))
    if flt.file_path is not None:
        clauses.append(_path_clause(f"{alias}.file_path", flt.file_path, params))
    for field in ("thread_id", "agent_id", "source_id"):
        value = getattr(flt, field)
        if value is not None:
            clauses.append(_in(f"{alias}.{field}", [value, redacted_id(value)], params))
    if flt.turns is not None:
        clauses.append(f"{alias}.turns_first = ? AND {alias}.turns_last = ?")
        params.extend([flt.turns.first, flt.turns.last])
    if flt.sources:
        clauses.append(_in(f"{alias}.source_kind", [k.value for k in flt.sources], params))
    if flt.tags_any:
        tags = list(dict.fromkeys(flt.tags_any))
        clauses.append(
            "(" + " OR ".join(f"instr({alias}.tags, ?) > 0" for _ in tags) + ")"
        )
        params.extend(_SEP + _escape(tag) + _SEP for tag in tags)
    if flt.observed_after is not None:
        clauses.append(f"{alias}.observed_us >= ?")
        params.append(micros(flt.observed_after))
    if flt.observed_before is not None:
        clauses.append(f"{alias}.observed_us < ?")
        params.append(micros(flt.observed_before))
    return " AND ".join(clauses), params

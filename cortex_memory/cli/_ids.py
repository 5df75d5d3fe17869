"""Item ids on the command line: whole ids, or unambiguous prefixes of at least 8 hex digits.

The README and the CLI show ids cut to 8 characters (``3f2a9c1e``); ``get``
and ``forget`` take such a prefix wherever they take an id. No engine can look
an id up by prefix, so a prefix is resolved through the public contract alone:
one walk of ``list_preview`` (the cheap listing, same ids as ``list``) over the
items in reach, 200 per page, keeping only the ids that match a prefix. That
works on every engine and is bounded:

- memory: at most three candidate ids per prefix, whatever the store holds;
- time: at most :data:`SCAN_LIMIT` items (250 pages); a prefix that cannot be
  proven unique within them is an error asking for the whole id, never a guess.

A whole id (40 hex digits) is passed on as it is and costs nothing: the walk
only happens when a prefix is given. On CortexDB the walk is one scope listing
plus one event page per 200 events of each scope in reach (docs/cli.md gives
the measured figures); on the local engine it is one indexed query per page.

A prefix names items in the listing's reach: everything but service
sandboxes, or the ``--namespace``/``--reach`` of ``get``. An item inside a
sandbox is reached by its whole id only.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

from cortex_memory.cli._select import UsageError
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.fingerprint import ID_HEX_LEN
from cortex_memory.contract.limits import SCAN_PAGE
from cortex_memory.contract.namespace import Reach
from cortex_memory.contract.requests import ListRequest
from cortex_memory.errors import EngineError, NotFoundError

__all__ = ["MIN_PREFIX", "SCAN_LIMIT", "resolve_ids"]

#: Fewest hex digits a prefix may have (what the README and the CLI print).
MIN_PREFIX = 8
#: Most items one command reads to resolve its prefixes.
SCAN_LIMIT = 50_000
# Candidates kept per prefix: two prove ambiguity; a third shows "or more".
_KEPT = 3

_HEX = re.compile(r"[0-9a-fA-F]+")


def _shown(token: str) -> str:
    return token if len(token) <= 48 else token[:48] + "…"


def _prefix_of(token: str) -> Optional[str]:
    """The lowercase prefix ``token`` stands for, or None when it is to be taken as an id.

    Hex shorter than :data:`MIN_PREFIX` is refused: eight digits is the
    shortest form ever printed, and fewer would match too much to be useful.
    """
    if not _HEX.fullmatch(token) or len(token) >= ID_HEX_LEN:
        return None
    if len(token) < MIN_PREFIX:
        raise UsageError(
            f"id `{token}` is too short: give at least {MIN_PREFIX} hex characters "
            "(or the whole id)"
        )
    return token.lower()


def resolve_ids(
    engine: MemoryEngine, tokens: Sequence[str], reach: Optional[Reach] = None
) -> List[str]:
    """``tokens`` with every prefix replaced by the one id it names, in the order given.

    Whole ids and anything that is not hex pass unchanged (the engine then
    says whether it holds them). Raises :class:`UsageError` for a prefix that
    is too short, matches several items, or cannot be settled within
    :data:`SCAN_LIMIT` items, and :class:`~cortex_memory.errors.NotFoundError`
    for one that matches nothing; all problems are named in one message and
    nothing is resolved when any is found.
    """
    prefixes = {token: p for token in tokens if (p := _prefix_of(token)) is not None}
    if not prefixes:
        return [_whole(t) for t in tokens]
    found, settled = _scan(engine, sorted(set(prefixes.values())), reach)
    usage: List[str] = []
    missing: List[str] = []
    for token, prefix in prefixes.items():
        ids = found[prefix]
        if len(ids) > 1:
            more = "or more " if len(ids) >= _KEPT else ""
            listed = ", ".join(i[:16] + "…" for i in ids[:2])
            usage.append(
                f"id prefix `{prefix}` matches {len(ids)} {more}items ({listed}); "
                "give more characters"
            )
        elif not settled:
            usage.append(
                f"id prefix `{prefix}` cannot be resolved within the first {SCAN_LIMIT} items "
                "listed; give the whole id"
            )
        elif not ids:
            missing.append(f"no item id starts with `{_shown(token)}`")
    if usage:
        raise UsageError("; ".join(usage + missing))
    if missing:
        raise NotFoundError("; ".join(missing))
    return [found[prefixes[t]][0] if t in prefixes else _whole(t) for t in tokens]


def _whole(token: str) -> str:
    # Ids are lowercase hex; one copied in capitals names the same item.
    if len(token) == ID_HEX_LEN and _HEX.fullmatch(token):
        return token.lower()
    return token


def _scan(
    engine: MemoryEngine, prefixes: Sequence[str], reach: Optional[Reach]
) -> Tuple[Dict[str, List[str]], bool]:
    """Walk the listing once; return up to ``_KEPT`` distinct ids per prefix, and
    whether that settles every prefix (the end was reached, or all are ambiguous)."""
    found: Dict[str, List[str]] = {p: [] for p in prefixes}
    # Every prefix has at least MIN_PREFIX digits, so its first eight pick the
    # candidates of an id in one dictionary lookup.
    by_head: Dict[str, List[str]] = {}
    for prefix in prefixes:
        by_head.setdefault(prefix[:MIN_PREFIX], []).append(prefix)
    flt = MetaFilter(reach=reach)
    cursor: Optional[str] = None
    read = 0
    while True:
        page = engine.list_preview(ListRequest(flt, SCAN_PAGE, cursor))
        for hit in page.items:
            for prefix in by_head.get(hit.id[:MIN_PREFIX], ()):
                ids = found[prefix]
                if hit.id.startswith(prefix) and hit.id not in ids and len(ids) < _KEPT:
                    ids.append(hit.id)
        read += len(page.items)
        if page.next_cursor is None:
            return found, True
        if page.next_cursor == cursor:
            raise EngineError(f"engine `{engine.descriptor().id}` repeated a listing cursor")
        if all(len(ids) >= 2 for ids in found.values()):
            return found, True  # every prefix is already ambiguous: more reading changes nothing
        if read >= SCAN_LIMIT:
            return found, False
        cursor = page.next_cursor

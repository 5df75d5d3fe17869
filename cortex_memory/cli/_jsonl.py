"""The export format: one JSON object per line (``export`` writes it, ``import`` reads it).

Each line is::

    {"version": 1, "id": "<40 hex>", "item": {<the item in the contract's JSON>}}

``item`` is exactly ``StoreItem.to_json()`` (``type`` first, ``meta`` last;
float32 values in their shortest form), so a line read back gives the same
item, and storing it gives the same ``id``. An engine that cannot hand its
items back whole (the CortexDB engines in this release: ``export`` is
``UnsupportedError`` there) is exported from its listing instead; such a line
carries ``"approximate": true`` and an item rebuilt from the listed text, as
far as the contract allows (see :func:`item_from_hit`). Its stored id then
differs from the ``id`` on the line, which is always the source engine's.

Readers skip blank lines and refuse, line by line with the line's number, a
line that is not JSON, not an object, of another ``version`` or holding an
item the contract refuses; the other lines are still read.
"""

from __future__ import annotations

import json
from typing import IO, Any, Dict, Iterator, List, Optional, Tuple, Union

from cortex_memory.cli._exits import EXIT_FAILURE
from cortex_memory.cli._transfer import Entry
from cortex_memory.contract.content import Role, TextBody, Turn
from cortex_memory.contract.items import (
    Conversation,
    Document,
    ItemKind,
    Learning,
    LearningKind,
    StoreItem,
)
from cortex_memory.contract.jsonfmt import dumps
from cortex_memory.contract.limits import MAX_ITEM_BYTES
from cortex_memory.contract.replacing import source_identity
from cortex_memory.contract.responses import Hit
from cortex_memory.contract.text import is_blank
from cortex_memory.errors import Error

__all__ = ["EXPORT_VERSION", "MAX_LINE", "export_line", "item_from_hit", "jsonl_entries"]

#: The ``version`` every line carries; readers refuse any other.
EXPORT_VERSION = 1
#: Longest line read, in characters: the largest item's text with every
#: character escaped (``\\u0001``: six per byte), plus room for its metadata.
MAX_LINE = 6 * MAX_ITEM_BYTES + (1 << 20)
_INVALID = 4  # InvalidRequestError's status: the line breaks the format
_ROLES = {f"{role.value}: ": role for role in Role}


def export_line(item_id: str, item: StoreItem, *, approximate: bool = False) -> str:
    """One line of an export (with its newline)."""
    line: Dict[str, Any] = {"version": EXPORT_VERSION, "id": item_id, "item": item.to_json()}
    if approximate:
        line["approximate"] = True
    return dumps(line) + "\n"


def item_from_hit(hit: Hit) -> StoreItem:
    """The item a listed hit stands for, as near as its text allows.

    A hit carries the item's rendered text, its metadata and (for a learning)
    its confidence, not the item itself, so: a document whose text starts with
    a ``# Title`` line and a blank line gets that title back (documents render
    as ``# {title}\\n\\n{body}``); a learning's kind is not listed and becomes
    ``other``; a conversation is split back into turns at lines that start
    with a role (``user: ``), other lines continuing the turn before them.
    A document's media type and a turn's time and tool calls are not listed.
    """
    if hit.kind is ItemKind.LEARNING:
        confidence = 0.0 if hit.confidence is None else hit.confidence
        return Learning(hit.text, LearningKind.OTHER, confidence, None, hit.meta)
    if hit.kind is ItemKind.CONVERSATION:
        return Conversation(_turns(hit.text), hit.meta)
    title: Optional[str] = None
    body = hit.text
    head, gap, rest = hit.text.partition("\n\n")
    if gap and head.startswith("# ") and "\n" not in head and not is_blank(rest):
        title, body = head[2:], rest
    return Document(TextBody(body), title, None, hit.meta)


def _turns(text: str) -> Tuple[Turn, ...]:
    turns: List[Tuple[Role, str]] = []
    for line in text.split("\n"):
        role = next((r for prefix, r in _ROLES.items() if line.startswith(prefix)), None)
        if role is not None:
            turns.append((role, line[len(role.value) + 2 :]))
        elif turns:
            turns[-1] = (turns[-1][0], turns[-1][1] + "\n" + line)
        else:
            turns.append((Role.USER, line))
    return tuple(Turn(role, said) for role, said in turns)


# ------------------------------------------------------------------- reading


def jsonl_entries(label: str, stream: IO[Any], *, replace: bool) -> Iterator[Entry]:
    """The entries of an export read from ``stream`` (text or bytes), named ``label:LINE``.

    With ``replace``, items that have a source identity replace its older
    versions; the others are stored as they are.
    """
    number = 0
    while True:
        number += 1
        try:
            raw = stream.readline(MAX_LINE + 1)
        except UnicodeDecodeError:
            yield Entry.fail(f"{label}:{number}", "not UTF-8 text; reading stopped here", _INVALID)
            return
        if not raw:
            return
        where = f"{label}:{number}"
        if len(raw) > MAX_LINE and not _ends_line(raw):
            _skip_rest(stream)
            yield Entry.fail(where, f"longer than {MAX_LINE} characters", _INVALID)
            continue
        text = _decoded(raw)
        if text is None:
            yield Entry.fail(where, "not UTF-8 text", _INVALID)
            continue
        if is_blank(text):
            continue
        yield _line_entry(where, text, replace)


def _ends_line(raw: Union[str, bytes]) -> bool:
    return raw.endswith(b"\n") if isinstance(raw, bytes) else raw.endswith("\n")


def _decoded(raw: Union[str, bytes]) -> Optional[str]:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _skip_rest(stream: IO[Any]) -> None:
    """Read past the end of an overlong line, a bounded piece at a time."""
    while True:
        piece = stream.readline(1 << 20)
        if not piece or _ends_line(piece):
            return


def _line_entry(where: str, text: str, replace: bool) -> Entry:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        return Entry.fail(where, f"not valid JSON: {exc}", _INVALID)
    if not isinstance(value, dict):
        return Entry.fail(where, "not an export line: a JSON object was expected", _INVALID)
    version = value.get("version")
    if version is None:
        return Entry.fail(where, "not an export line: it has no `version`", _INVALID)
    if version != EXPORT_VERSION or isinstance(version, bool):
        return Entry.fail(
            where,
            f"export version {json.dumps(version)[:20]} is not one this cortex-memory reads "
            f"(it reads version {EXPORT_VERSION})",
            _INVALID,
        )
    if "item" not in value:
        return Entry.fail(where, "not an export line: it has no `item`", _INVALID)
    try:
        item = StoreItem.from_json(value["item"])
    except Error as err:
        return Entry.fail(where, err.message, _INVALID)
    except RecursionError:  # pragma: no cover - json.loads refuses deeper nesting first
        return Entry.fail(where, "the item is nested too deeply", EXIT_FAILURE)
    identity = source_identity(item.meta)
    replacing = replace and identity is not None and not is_blank(identity.value)
    return Entry(where, item, replace=replacing)

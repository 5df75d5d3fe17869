"""An event of the item the thread decoded last, read from its own members alone.

A conversation's turns and a document's pieces are events of one item: their
envelopes are one envelope but for the ``turn`` or ``chunk`` member, which the
codec writes last, and for the text. A listing holds them in a row. So the JSON
of the next event repeats the last one's but for those: in v3 (the text is the
event's, outside the JSON) it starts with the very text of the last one up to
its ``"turn":`` (or ``"chunk":``); in v2 it starts with the same ``{"v":2,"id":
…,"kind":…,"text":``, then its own text, then the same members up to
``"turn":``. This reads only what differs (a string and the member's value)
instead of scanning and reading the whole envelope again: about half a
listing's events are such siblings.

**Why that is exact.** Kept: the last event's JSON ``T`` (parsed whole, and
read), cut where ``,"turn":`` last occurs in it, when the value there is
followed by ``}`` and nothing else (a scan from there says so). That comma and
the quote after it are outside any string (a quote inside a string follows a
backslash; a string's closing quote is followed by ``,``, ``:``, ``}``, ``]``
or space, not by ``t``), so ``turn`` is a key, and its object closes at the end
of ``T``: the top-level object, whose last member it is. A JSON text ``N`` that
starts with the same text puts the parser in the same state there (top level,
the value of ``turn`` next); when what follows is one value and then exactly
``}``, ``N`` parses as ``T`` with that value as its ``turn`` (the last of
duplicate keys wins, for both). In v2 the text kept is cut once more, around
the text's value: its head is exactly ``{"v":2,"id":<id>,"kind":<kind>,"text":``
(the members before it fixed, so ``text`` is a top-level key), and what follows
the string up to ``"turn":`` holds no backslash and no ``"text"`` (so no later
``text`` key, escaped or not, overrides it); a string there in ``N`` leaves the
parser in the same state as ``T``'s, and ``N`` parses as ``T`` with that text
and that turn. The reader reads each member on its own, so ``N`` reads as ``T``
read, with this turn and text (:func:`~.reader.with_part`). A turn it refuses
(``N`` not ours) is left to the full read, which refuses it too.

Only a value whose members are all known (those of a written turn or chunk,
and of its tool calls) is read so, and only after a ``T`` holding at most 64
brackets outside its v2 text: anything the reader then accepts is at most three
levels deep and ``N`` at most 68, so reading it so cannot succeed where
scanning all of ``N`` would exhaust the parser's recursion (short of a caller
within a few dozen frames of the recursion limit, where the decoder's answers
depend on the stack anyway). Any other value, and any other JSON, goes to the
full read. One per thread: threads share nothing.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Optional, Tuple

from cortex_memory.contract.jsonfmt import dumps
from cortex_memory.cortex.envelope.envelope import Envelope
from cortex_memory.cortex.envelope.reader import with_part

__all__ = ["keep_v2", "keep_v3", "sibling_v2", "sibling_v3"]

# json's scanner (as the codec calls it): stateless, so a second one is the same.
_SCAN: Callable[[str, int], Tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]
_TURN_KEYS = frozenset(("index", "count", "role", "at", "tool_calls"))
_CALL_KEYS = frozenset(("name", "id"))
_CHUNK_KEYS = frozenset(("index", "count", "pages", "section"))
# Brackets a kept JSON may hold (a written envelope holds a handful).
_MAX_BRACKETS = 64


class _Last(threading.local):
    """The last envelope with a turn or chunk the thread decoded, and its JSON's cuts.

    ``head`` is the JSON up to the member's value (v3) or up to the text's (v2);
    ``middle`` is None (v3), or the JSON between the text's value and the member's.
    """

    def __init__(self) -> None:
        # The start of no JSON and no parts (they start "{" or "tm:e:00:"): none yet.
        self.head = "\x00"
        self.middle: Optional[str] = None
        self.member = ""
        self.env: Optional[Envelope] = None


_LAST = _Last()


def sibling_v3(prefixed: str, text: str) -> Optional[Envelope]:
    """The envelope of the v3 ``prefixed`` (parts JSON after an 8-character prefix) and
    ``text`` when it is the kept envelope's sibling, and ours; else None (the full
    read decides: for a sibling whose turn or chunk is not ours, None again)."""
    last = _LAST
    if last.middle is not None or not prefixed.startswith(last.head):
        return None
    return _read_member(prefixed, len(last.head), last, text)


def sibling_v2(json_text: str) -> Optional[Envelope]:
    """:func:`sibling_v3` for the JSON of a v2 event, whose text it holds."""
    last = _LAST
    middle = last.middle
    if middle is None or not json_text.startswith(last.head):
        return None
    try:
        own, after = _SCAN(json_text, len(last.head))
    except (StopIteration, ValueError, RecursionError):
        return None
    if type(own) is not str or not json_text.startswith(middle, after):
        return None
    return _read_member(json_text, after + len(middle), last, own)


def _read_member(json_text: str, at: int, last: _Last, text: str) -> Optional[Envelope]:
    try:
        value, end = _SCAN(json_text, at)
    except (StopIteration, ValueError, RecursionError):
        return None
    if end != len(json_text) - 1 or json_text[end] != "}" or not _known(last.member, value):
        return None
    env = last.env
    assert env is not None  # kept with its head
    return with_part(env, last.member, value, text)


def keep_v3(prefixed: str, env: Envelope) -> None:
    """Keep ``env`` (just read from the v3 ``prefixed`` whole) for its siblings, when it
    has a turn or a chunk and its JSON ends with that member."""
    member = _member(env)
    if member is None:
        return
    at = _member_at(prefixed, member, 0)
    if at != -1 and _few_brackets(prefixed):
        _keep(prefixed[:at], None, member, env)


def keep_v2(json_text: str, env: Envelope) -> None:
    """:func:`keep_v3` for a v2 event's JSON (``env`` read from it whole)."""
    member = _member(env)
    if member is None:
        return
    head = f'{{"v":2,"id":{dumps(env.id)},"kind":"{env.kind.value}","text":'
    if not json_text.startswith(head):
        return
    try:
        _, after = _SCAN(json_text, len(head))
    except (StopIteration, ValueError, RecursionError):
        return
    at = _member_at(json_text, member, after)
    if at == -1:
        return
    middle = json_text[after:at]
    if "\\" in middle or '"text"' in middle or not _few_brackets(head + middle):
        return
    _keep(head, middle, member, env)


def _member(env: Envelope) -> Optional[str]:
    """``turn`` or ``chunk``, whichever ``env`` has (an event of an item of several)."""
    if env.turn is not None:
        return "turn" if env.chunk is None else None
    return "chunk" if env.chunk is not None else None


def _member_at(json_text: str, member: str, start: int) -> int:
    """Where the value of the last ``,"member":`` after ``start`` begins, when that value
    ends the JSON but for its final ``}``; else -1."""
    key = f',"{member}":'
    comma = json_text.rfind(key, start)
    if comma == -1:
        return -1
    at = comma + len(key)
    try:
        _, end = _SCAN(json_text, at)
    except (StopIteration, ValueError, RecursionError):
        return -1
    if end != len(json_text) - 1 or json_text[end] != "}":
        return -1
    return at


def _few_brackets(json_text: str) -> bool:
    return json_text.count("{") + json_text.count("[") <= _MAX_BRACKETS


def _keep(head: str, middle: Optional[str], member: str, env: Envelope) -> None:
    last = _LAST
    last.head = head
    last.middle = middle
    last.member = member
    last.env = env


def _known(member: str, value: object) -> bool:
    """True when ``value`` is no container, or one with only members the reader reads."""
    if type(value) is not dict:
        return type(value) is not list
    if member == "chunk":
        return value.keys() <= _CHUNK_KEYS
    if not value.keys() <= _TURN_KEYS:
        return False
    calls = value.get("tool_calls")
    if type(calls) is list:
        for call in calls:
            if type(call) is list or (type(call) is dict and not call.keys() <= _CALL_KEYS):
                return False
    return True

"""Encoding envelopes as v3 labels or v2 text, and decoding events (engine.md §7.6, §7.10).

- **v3** (written whenever it fits): ``content.text`` is the event's own text; the
  envelope JSON (``v: 3``, empty ``text``) travels in ``tm:e:NN:`` labels of at most
  240 UTF-8 bytes each, after the lookup and readable labels.
- **v2** (the fallback, for an empty text or more than 64 labels): ``content.text``
  is the whole envelope JSON (``v: 2``); the labels are the lookup labels only.

Readers accept both and skip events that are neither (they are not ours). Decoding
runs for every event of every listing page, so it avoids work it does not need: no
regex per event, one JSON parse per event, no re-serialization.
"""

from __future__ import annotations

import json
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple

from cortex_memory.contract.jsonfmt import c_dumps, dumps
from cortex_memory.cortex.envelope.digests import LOOKUP_HEX
from cortex_memory.cortex.envelope.envelope import Envelope
from cortex_memory.cortex.envelope.labels import (
    WORKSPACE_TAG,
    lookup_labels,
    readable_labels,
)
from cortex_memory.cortex.envelope.reader import parse_scanned
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "MAX_EVENT_BYTES",
    "MAX_LABELS",
    "PART_BYTES",
    "PART_TAG",
    "Encoded",
    "decode",
    "decode_event",
    "encode",
    "encode_checked",
    "from_labels",
    "part_labels",
]

MAX_EVENT_BYTES = 786_432
"""The largest v2 encoding sent (768 KiB); CortexDB refuses events over 1 MiB."""

MAX_LABELS = 64
"""Labels per event."""

PART_BYTES = 240
"""UTF-8 bytes of envelope JSON per ``tm:e:`` label, cut back to a character boundary."""

PART_TAG = "tm:e:"
"""Prefix of a v3 envelope part: ``tm:e:`` + 2-digit index + ``:`` + JSON slice."""

_PART_TAG_LEN = len(PART_TAG)
_FIRST_PART = PART_TAG + "00:"
_FIRST_PART_LEN = len(_FIRST_PART)
_SEPARATOR = "\x00"
# A part number with more digits could never be below the number of labels held.
_MAX_PART_DIGITS = 9
_JSON_SPACE = " \t\n\r"
_JSON_SPACE_CHARS = frozenset(_JSON_SPACE)
# The prefixes the codec writes, ``tm:e:00:`` to ``tm:e:63:`` (at most 64 labels),
# and for each the number of parts it closes when it is the last label.
_PART_PREFIXES = tuple(f"{PART_TAG}{n:02d}:" for n in range(MAX_LABELS))
_PART_COUNT = {prefix: n + 1 for n, prefix in enumerate(_PART_PREFIXES)}


class Encoded(NamedTuple):
    """An event's ``content.text`` and ``context.labels`` (the item label first)."""

    text: str
    labels: Tuple[str, ...]

    @property
    def version(self) -> int:
        """3 when the envelope travels in labels, else 2."""
        return 3 if any(label.startswith(PART_TAG) for label in self.labels) else 2


def encode(env: Envelope) -> str:
    """The v2 encoding: compact JSON of the envelope in member order with ``v`` = 2.

    Every size limit is checked against the UTF-8 length of this text.
    """
    return dumps(env.to_json(2))


def part_labels(envelope_json: str) -> List[str]:
    """Slice JSON into ``tm:e:NN:`` labels of at most 240 UTF-8 bytes, whole characters."""
    labels: List[str] = []
    if envelope_json.isascii():
        for n, at in enumerate(range(0, len(envelope_json), PART_BYTES)):
            labels.append(f"{PART_TAG}{n:02d}:{envelope_json[at : at + PART_BYTES]}")
        return labels
    data = envelope_json.encode("utf-8", "surrogatepass")
    size = len(data)
    at = 0
    while at < size:
        end = min(at + PART_BYTES, size)
        # Back off over continuation bytes (10xxxxxx) to the start of a character.
        while end < size and data[end] & 0xC0 == 0x80:
            end -= 1
        labels.append(
            f"{PART_TAG}{len(labels):02d}:{data[at:end].decode('utf-8', 'surrogatepass')}"
        )
        at = end
    return labels


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def encode_checked(env: Envelope) -> Encoded:
    """Encode ``env`` for the wire: v3 when it fits, else v2 (§7.6).

    Raises ``InvalidRequestError`` when the v2 encoding would pass 786 432 bytes.
    """
    # The v3 JSON is the v2 JSON with ``"v":3`` for ``"v":2`` (one digit either way)
    # and ``"text":""`` for the text member: ``dumps`` writes members one after
    # another, so the v2 size follows from the v3 JSON without writing v2, which
    # is only written when it is sent.
    # Only a learning's confidence (an F32) is a number the C encoder would write
    # differently; every other member is text, an integer or a list or object of
    # them, which ``c_dumps`` writes byte for byte as ``dumps`` does, in C.
    v3 = (dumps if env.confidence is not None else c_dumps)(env.to_json(3, text=""))
    size = _utf8_len(v3) - len('""') + _utf8_len(dumps(env.text))
    if size > MAX_EVENT_BYTES:
        raise InvalidRequestError(
            f"a {env.kind.value} event would be {size} bytes; CortexDB refuses events over "
            f"1 MiB and this client sends at most {MAX_EVENT_BYTES}"
        )
    lookup = lookup_labels(env.id, env.meta)
    if env.ws is not None:
        # An absolute workspace is not in the wire meta; its label comes from the
        # digest, after tm:k: (a logical workspace's label sits in field order).
        lookup.append(WORKSPACE_TAG + env.ws[:LOOKUP_HEX])
    if not env.text:
        return Encoded(encode(env), tuple(lookup))
    parts = part_labels(v3)
    readable = readable_labels(env)
    if len(lookup) + len(readable) + len(parts) > MAX_LABELS:
        return Encoded(encode(env), tuple(lookup))
    return Encoded(env.text, (*lookup, *readable, *parts))


# json's own scanner, called directly: json.loads(text) runs it behind three
# Python frames and two whitespace matches, which cost about as much as the
# scan of a small envelope. It holds no state between calls.
_SCAN: Callable[[str, int], Tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]


def _load(text: str) -> object:
    """``json.loads(text)``, or None where that raises ``ValueError`` or ``RecursionError``."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        # No value at the start: leading whitespace (json.loads skips it), or not JSON.
        return _loads(text) if text[:1] in _JSON_SPACE_CHARS else None
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError and over-long integers; a deeply nested
        # text exhausts the parser's recursion.
        return None
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        return None  # json.loads: "Extra data"
    return value


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def decode(text: str) -> Optional[Envelope]:
    """A v2 envelope from an event's text, or None.

    The text may carry any bracketed prefix (``[user] {...}``): what follows the first
    ``] `` is tried when the whole text does not parse. Only ``v == 2`` is accepted.
    """
    first = text[:1]
    if first not in ("{", "["):
        if not first or first not in _JSON_SPACE:
            return None
        first = text.lstrip(_JSON_SPACE)[:1]
    env = _v2(text) if first == "{" else None
    if env is None and text.startswith("["):
        cut = text.find("] ")
        if cut != -1:
            env = _v2(text[cut + 2 :])
    return env


def _v2(text: str) -> Optional[Envelope]:
    env = parse_scanned(_load(text))
    if env is None or env.v != 2:
        return None
    return env


def from_labels(text: str, labels: Sequence[str]) -> Optional[Envelope]:
    """A v3 envelope from an event's labels (its parts) and text, or None.

    Every ``tm:e:`` label must read ``tm:e:<number>:<slice>``; the numbers must be
    exactly 0..n-1 (n >= 1) in any order. The joined JSON must be an envelope with
    ``v == 3``; its text is the event's ``content.text``.
    """
    # Labels come from the server: anything that is not a string is not a part. The
    # comprehension keeps the common case (a few parts among ~10 labels) in C.
    found = [x for x in labels if type(x) is str and x.startswith(PART_TAG)]
    if len(found) == 1 and found[0].startswith(_FIRST_PART):
        # One part numbered 00 (most envelopes fit in one): what the loop below
        # would read and join, without the loop.
        return _v3(found[0][_FIRST_PART_LEN:], text)
    parts: List[Tuple[int, str]] = []
    in_order = True
    for label in found:
        colon = label.find(":", _PART_TAG_LEN)
        if colon == -1:
            return None
        number = label[_PART_TAG_LEN:colon]
        if not number.isdigit() or not number.isascii() or len(number) > _MAX_PART_DIGITS:
            return None
        index = int(number)
        if index != len(parts):
            in_order = False
        parts.append((index, label[colon + 1 :]))
    if not parts:
        return None
    # Written in order; only sort (stable, by number) when they arrive otherwise.
    if not in_order:
        parts.sort(key=_number)
        if any(parts[i][0] != i for i in range(len(parts))):
            return None
    return _v3("".join([piece for _, piece in parts]), text)


def _v3(joined: str, text: str) -> Optional[Envelope]:
    # What parse_envelope(_load(joined), text=text) gives, without their frames
    # when the JSON scans whole (the common case); any other text goes through
    # _load, which decides as json.loads does.
    try:
        value, end = _SCAN(joined, 0)
    except (StopIteration, ValueError, RecursionError):
        value, end = _load(joined), len(joined)
    if end != len(joined):
        value = _load(joined)
    env = parse_scanned(value, text=text)
    if env is None or env.v != 3:
        return None
    return env


def _number(part: Tuple[int, str]) -> int:
    return part[0]


def decode_event(event: object) -> Optional[Envelope]:
    """The envelope of a listed or recalled event, or None when the event is not ours.

    The event needs a string ``id`` and a string ``content.text``; v3 is tried from
    ``context.labels`` (labels that are not strings are ignored), then v2 from the text.
    """
    if type(event) is not dict:
        return None
    content = event.get("content")
    if type(event.get("id")) is not str or type(content) is not dict:
        return None
    text = content.get("text")
    if type(text) is not str:
        return None
    context = event.get("context")
    labels = context.get("labels") if type(context) is dict else None
    if type(labels) is list and labels:
        last = labels[-1]
        held = _PART_COUNT.get(last[:_FIRST_PART_LEN]) if type(last) is str else None
        if held is None:
            # No part last: not the written layout. No label holding tm:e: (a v2
            # event's labels) is what from_labels finds no part in.
            env = None if _no_part(labels) else from_labels(text, labels)
        else:
            prefixed = _written_json(labels, held)
            env = from_labels(text, labels) if prefixed is None else _scan_v3(prefixed, text)
        if env is not None:
            return env
    return decode(text)


def _written_json(labels: List[Any], held: int) -> Optional[str]:
    """The parts' JSON (after an 8-character prefix) when ``labels`` are as the codec
    writes them, else None (from_labels decides).

    Written: the labels end with parts ``tm:e:00:`` .. ``tm:e:NN:`` in order (the
    caller read ``held`` = NN + 1 from the last) and no label before them holds
    ``tm:e:``. Then from_labels finds exactly these parts, numbered 0..held-1 in
    order, and reads their slices joined: what this returns past its prefix (the
    first part whole, so that one part is the label itself and two, most
    envelopes, one concatenation). The labels before are joined to be searched
    once: joined, they hold ``tm:e:`` when one of them starts with it (and maybe
    when one holds it further in: None then, and from_labels decides exactly).
    """
    start = len(labels) - held
    if start < 0:
        return None
    prefixed: str
    if held == 1:
        prefixed = labels[-1]
    elif held == 2:
        first = labels[-2]
        if type(first) is not str or not first.startswith(_FIRST_PART):
            return None
        prefixed = first + labels[-1][_FIRST_PART_LEN:]
    else:
        for n in range(held - 1):
            label = labels[start + n]
            if type(label) is not str or not label.startswith(_PART_PREFIXES[n]):
                return None
        tail = [label[_FIRST_PART_LEN:] for label in labels[start + 1 :]]
        prefixed = labels[start] + "".join(tail)
    if start and not _no_part(labels[:start]):
        return None
    return prefixed


def _no_part(labels: List[Any]) -> bool:
    """True when no label holds ``tm:e:`` (so none starts with it); False when one
    may, or a label is not a string (from_labels decides those)."""
    try:
        return PART_TAG not in _SEPARATOR.join(labels)
    except TypeError:
        return False


def _scan_v3(prefixed: str, text: str) -> Optional[Envelope]:
    """``_v3(prefixed[8:], text)``, the JSON scanned where it starts (no copy of it)."""
    try:
        value, end = _SCAN(prefixed, _FIRST_PART_LEN)
    except (StopIteration, ValueError, RecursionError):
        return _v3(prefixed[_FIRST_PART_LEN:], text)
    if end != len(prefixed):
        return _v3(prefixed[_FIRST_PART_LEN:], text)
    env = parse_scanned(value, text=text)
    if env is None or env.v != 3:
        return None
    return env

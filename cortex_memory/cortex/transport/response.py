"""Request bodies out, :class:`Response` in: JSON encoding and decoding (engine.md §5.6).

A request body goes out as compact JSON with sorted keys (:func:`encode_body`);
a 2xx answer comes back as a :class:`Response` whose ``data`` is the parsed
JSON value, with the hosted envelope already unwrapped (:func:`decode_data`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from cortex_memory.cortex.transport.body import RawBody
from cortex_memory.cortex.transport.failure import route_name, status_failure
from cortex_memory.cortex.transport.redact import Scrubber
from cortex_memory.cortex.transport.surface import unwrap_hosted
from cortex_memory.errors import EngineError

__all__ = ["Body", "Response", "answer", "decode_data", "encode_body"]

Body = Union[None, bytes, Mapping[str, Any], List[Any]]
"""A request body: ``None``, a JSON value (sent compact with sorted keys) or ready bytes."""


def encode_body(body: Body) -> Optional[bytes]:
    """Serialize a request body: compact JSON with **sorted keys**, UTF-8; bytes pass through.

    Raises ``TypeError`` / ``ValueError`` for a value JSON cannot carry.
    """
    if body is None:
        return None
    if isinstance(body, (bytes, bytearray)):
        return bytes(body)
    return json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


@dataclass(frozen=True)
class Response:
    """A 2xx answer: its status, the parsed body and the headers.

    ``data`` is the JSON value (hosted: the unwrapped ``data``; Direct: ``None``
    for an empty body); a :meth:`HttpClient.probe` leaves it ``None``.
    ``attempts`` counts the attempts the call made. ``scrub`` cleans backend text
    of the attempt's credential before it is logged (:mod:`.redact`). The repr
    shows neither the body nor the headers.
    """

    status: int
    data: object = field(repr=False)
    headers: Mapping[str, str] = field(repr=False)
    attempts: int = 1
    scrub: Scrubber = field(default_factory=Scrubber, repr=False, compare=False)


def answer(status: int, data: object, headers: Mapping[str, str], scrub: Scrubber) -> Response:
    """``Response(status, data, headers, scrub=scrub)``, its fields set directly.

    Every attempt builds one; a frozen dataclass sets each field through
    ``object.__setattr__``. ``attempts`` keeps the class's default (1).
    """
    out = object.__new__(Response)
    fields = out.__dict__
    fields["status"] = status
    fields["data"] = data
    fields["headers"] = headers
    fields["scrub"] = scrub
    return out


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


# NaN and Infinity are Python extensions, not JSON: a backend sending them is broken.
# json.loads(raw, parse_constant=...) builds this same decoder on every call; it
# keeps no state between calls, so threads may share one.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _text(raw: RawBody) -> str:
    """What json.loads does with bytes before it parses: detect UTF-8/16/32, decode.

    A body gathered in pieces is a memoryview, which has no ``decode``; ``str()``
    decodes any buffer, and the encoding follows from the first four bytes.
    """
    return str(raw, json.detect_encoding(bytes(raw[:4])), "surrogatepass")


def _parse_json(raw: RawBody) -> object:
    return _DECODER.decode(_text(raw))


# -- listings: a run of identical array elements parsed once ---------------------------
#
# CortexDB lists every event twice in a row, and an event is most of a listing's
# bytes. _parse_listing gives what _parse_json gives, but reads the top-level
# object (and an object directly inside it: the hosted wire's "data") itself,
# and in their arrays parses an element whose text is the same as the previous
# element's only once: the list holds that one value twice (the same object,
# not a copy; listings are only read). Every other value is scanned by json's
# own scanner, as _parse_json would. Anything unexpected (a syntax error, a
# constant, deep nesting, extra data) goes to _parse_json, which decides.

# The decoder's own scanner (json.scanner.make_scanner(decoder)) and string reader.
_SCAN: Callable[[str, int], Tuple[Any, int]] = vars(_DECODER)["scan_once"]
_STRING: Callable[[str, int, bool], Tuple[str, int]] = vars(_DECODER)["parse_string"]
_SPACE = re.compile(r"[ \t\n\r]+")
_SPACES = frozenset(" \t\n\r")
_ELEMENT_END = frozenset((",", "]", " ", "\t", "\n", "\r"))
_OBJECT_DEPTH = 2


def _skip(text: str, at: int) -> int:
    """The index of the first character at or after ``at`` that is not JSON whitespace."""
    if text[at : at + 1] not in _SPACES:
        return at
    match = _SPACE.match(text, at)
    return match.end() if match is not None else at


class _Irregular(Exception):
    """The text is not the plain shape read here: _parse_json decides."""


def _parse_listing(raw: RawBody) -> object:
    text = _text(raw)
    try:
        at = _skip(text, 0)
        if text[at : at + 1] != "{":
            raise _Irregular
        value, at = _object(text, at, 1)
        if _skip(text, at) != len(text):
            raise _Irregular  # json.loads: "Extra data"
        return value
    except (_Irregular, StopIteration, ValueError, RecursionError):
        return _DECODER.decode(text)


def _object(text: str, at: int, depth: int) -> Tuple[Dict[str, Any], int]:
    """The object starting at ``text[at]`` (``{``) and the index after it."""
    out: Dict[str, Any] = {}
    at = _skip(text, at + 1)
    if text[at : at + 1] == "}":
        return out, at + 1
    while True:
        if text[at : at + 1] != '"':
            raise _Irregular
        key, at = _STRING(text, at + 1, True)
        at = _skip(text, at)
        if text[at : at + 1] != ":":
            raise _Irregular
        at = _skip(text, at + 1)
        first = text[at : at + 1]
        value: Any
        if first == "[":
            value, at = _array(text, at)
        elif first == "{" and depth < _OBJECT_DEPTH:
            value, at = _object(text, at, depth + 1)
        else:
            value, at = _SCAN(text, at)
        out[key] = value  # a repeated key: the last wins, as in json.loads
        at = _skip(text, at)
        after = text[at : at + 1]
        if after == ",":
            at = _skip(text, at + 1)
        elif after == "}":
            return out, at + 1
        else:
            raise _Irregular


def _array(text: str, at: int) -> Tuple[List[Any], int]:
    """The array starting at ``text[at]`` (``[``), its repeated elements parsed once."""
    out: List[Any] = []
    append = out.append
    at = _skip(text, at + 1)
    if text[at : at + 1] == "]":
        return out, at + 1
    previous: Any = None
    seen = ""  # the previous element's text
    size = 0
    while True:
        # The same text again, ending where an element ends, is the same value.
        if size and text.startswith(seen, at) and text[at + size : at + size + 1] in _ELEMENT_END:
            at += size
        else:
            previous, end = _SCAN(text, at)
            seen = text[at:end]
            size = end - at
            at = end
        append(previous)
        # A "," straight after the element (compact JSON) is checked first, and
        # the whitespace skip is written out: this runs for every element.
        after = text[at : at + 1]
        if after != ",":
            if after in _SPACES:
                at = _skip(text, at)
                after = text[at : at + 1]
            if after == "]":
                return out, at + 1
            if after != ",":
                raise _Irregular
        at += 1
        if text[at : at + 1] in _SPACES:
            at = _skip(text, at)


def decode_data(
    status: int,
    raw: RawBody,
    *,
    hosted: bool,
    route: str,
    host: str,
    where: Optional[str] = None,
    scrubbed: Optional[Scrubber] = None,
    listing: bool = False,
) -> object:
    """The JSON value of a 2xx body; hosted: the envelope's ``data``.

    An empty Direct body is ``None``. Invalid JSON is an ``EngineError``; a
    hosted envelope that says ``ok: false`` maps like the failure status it
    describes. ``where`` names the request in messages (by default as the
    transport names ``route`` on ``host``). ``listing``: the body is a listing,
    whose repeated elements are parsed once (the same value; see ``_parse_listing``).
    """
    if not raw and not hosted:
        return None
    try:
        value = _parse_listing(raw) if listing else _parse_json(raw)
    except (ValueError, RecursionError):
        # RecursionError: nesting deeper than the parser's recursion limit, which a
        # body far under the size cap can reach.
        where = where if where is not None else route_name(route, host)
        raise EngineError(f"{where} returned invalid JSON") from None
    if not hosted:
        return value
    unwrapped = unwrap_hosted(value, where if where is not None else route_name(route, host))
    if unwrapped.ok:
        return unwrapped.data
    raise status_failure(
        status, bytes(raw), route=route, host=host, hosted=True, scrubbed=scrubbed
    )

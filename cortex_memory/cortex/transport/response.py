"""Request bodies out, :class:`Response` in: JSON encoding and decoding (engine.md §5.6).

A request body goes out as compact JSON with sorted keys (:func:`encode_body`);
a 2xx answer comes back as a :class:`Response` whose ``data`` is the parsed
JSON value, with the hosted envelope already unwrapped (:func:`decode_data`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Union

from cortex_memory.cortex.transport.body import RawBody
from cortex_memory.cortex.transport.failure import status_failure
from cortex_memory.cortex.transport.redact import Scrubber
from cortex_memory.cortex.wire import unwrap_hosted
from cortex_memory.errors import EngineError

__all__ = ["Body", "Response", "decode_data", "encode_body"]

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


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


# NaN and Infinity are Python extensions, not JSON: a backend sending them is broken.
# json.loads(raw, parse_constant=...) builds this same decoder on every call; it
# keeps no state between calls, so threads may share one.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _parse_json(raw: RawBody) -> object:
    # What json.loads does with bytes: detect UTF-8/16/32 and decode, then parse.
    return _DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))


def decode_data(
    status: int,
    raw: RawBody,
    *,
    hosted: bool,
    route: str,
    host: str,
    where: str,
    scrubbed: Optional[Scrubber] = None,
) -> object:
    """The JSON value of a 2xx body; hosted: the envelope's ``data``.

    An empty Direct body is ``None``. Invalid JSON is an ``EngineError``; a
    hosted envelope that says ``ok: false`` maps like the failure status it
    describes.
    """
    if not raw and not hosted:
        return None
    try:
        value = _parse_json(raw)
    except (ValueError, RecursionError):
        # RecursionError: nesting deeper than the parser's recursion limit, which a
        # body far under the size cap can reach.
        raise EngineError(f"{where} returned invalid JSON") from None
    if not hosted:
        return value
    unwrapped = unwrap_hosted(value, where)
    if unwrapped.ok:
        return unwrapped.data
    raise status_failure(
        status, bytes(raw), route=route, host=host, hosted=True, scrubbed=scrubbed
    )

"""The contract's JSON writer (float32 values: :mod:`.floats`; timestamps: :mod:`.timestamps`).

:func:`dumps` is the only writer of contract JSON: fingerprints, envelopes,
parts and cursors all go through it, so its bytes must equal what Rust's
``serde_json`` writes for the same value (compact, member order, raw UTF-8,
float32 values as their shortest round-tripping decimal).

Plain ``json.dumps`` is wrong for these values: it writes a float32 as its
float64 repr (``0.8999999761581421``) and exponents as ``1e-06``.
"""

from __future__ import annotations

import json.encoder
from typing import Any, Callable, List

from cortex_memory.contract.floats import F32, format_f32, format_f64, to_f32
from cortex_memory.contract.timestamps import (
    format_timestamp,
    format_timestamp_offset,
    parse_timestamp,
)

__all__ = [
    "F32",
    "LONG_STR",
    "c_dumps",
    "dumps",
    "format_f32",
    "format_f64",
    "format_timestamp",
    "format_timestamp_offset",
    "parse_timestamp",
    "to_f32",
    "write",
]

# The C-accelerated string encoder behind json.dumps(s, ensure_ascii=False): it
# escapes exactly what serde_json escapes (quote, backslash, control characters
# with lowercase \u00XX) and writes everything else raw.
_encode_str: Callable[[str], str] = json.encoder.encode_basestring


# ---------------------------------------------------------------------- writer


#: Characters per piece when a string member is longer: it is escaped a piece at a
#: time (escaping is per character, so the pieces join to the same text), and
#: :func:`write` never holds a whole escaped copy of a long text.
LONG_STR = 1 << 16


def dumps(value: object) -> str:
    """Write a contract JSON value: compact, member order, serde_json's bytes.

    Takes ``dict`` (string keys, insertion order), ``list``/``tuple``, ``str``,
    ``int``, ``bool``, ``None``, :class:`F32` (by :func:`format_f32`) and plain
    ``float`` (by :func:`format_f64`). Anything else is ``TypeError``.
    """
    if type(value) is str:
        return _encode_str(value)
    parts: List[str] = []
    _emit(value, parts.append)
    return "".join(parts)


def write(value: object, put: Callable[[str], None]) -> None:
    """Write what :func:`dumps` would return, in pieces, to ``put`` (they join to it).

    A string longer than :data:`LONG_STR` characters goes in pieces of that
    size, so a consumer that does not keep them (a hash) holds one piece at a time.
    """
    if type(value) is str:
        _put_str(value, put)
    else:
        _emit(value, put)


def _put_str(text: str, put: Callable[[str], None]) -> None:
    if len(text) <= LONG_STR:
        put(_encode_str(text))
        return
    put('"')
    for at in range(0, len(text), LONG_STR):
        put(_encode_str(text[at : at + LONG_STR])[1:-1])
    put('"')


def _emit(o: Any, put: Callable[[str], None]) -> None:
    # One function with the common cases inlined: strings go through the C
    # encoder, and a dict member or list item that is a string (or a member
    # that is an int) is written in one step, which keeps this walk within a
    # small factor of json.dumps. A top-level string never gets here.
    t = type(o)
    if t is dict:
        sep = "{"
        for key, item in o.items():
            if type(key) is not str:
                key = _key(key)
            ti = type(item)
            if ti is str:
                if len(item) > LONG_STR:
                    put(f"{sep}{_encode_str(key)}:")
                    _put_str(item, put)
                else:
                    put(f"{sep}{_encode_str(key)}:{_encode_str(item)}")
            elif ti is int:
                put(f"{sep}{_encode_str(key)}:{int.__repr__(item)}")
            else:
                put(f"{sep}{_encode_str(key)}:")
                _emit(item, put)
            sep = ","
        put("}" if sep == "," else "{}")
    elif t is list or t is tuple:
        sep = "["
        for item in o:
            if type(item) is str:
                if len(item) > LONG_STR:
                    put(sep)
                    _put_str(item, put)
                else:
                    put(sep + _encode_str(item))
            else:
                put(sep)
                _emit(item, put)
            sep = ","
        put("]" if sep == "," else "[]")
    elif o is None:
        put("null")
    elif o is True:
        put("true")
    elif o is False:
        put("false")
    elif t is F32:
        put(format_f32(o))
    else:
        _emit_other(o, put)


def _emit_other(o: object, put: Callable[[str], None]) -> None:
    """Subclasses: str enums, int subclasses, other floats, dict/list subclasses."""
    if isinstance(o, str):
        _put_str(str.__str__(o), put)
    elif isinstance(o, bool):  # pragma: no cover - True/False are singletons
        put("true" if o else "false")
    elif isinstance(o, int):
        put(int.__repr__(o))
    elif isinstance(o, F32):
        put(format_f32(o))
    elif isinstance(o, float):
        put(format_f64(o))
    elif isinstance(o, dict):
        _emit(dict(o), put)
    elif isinstance(o, (list, tuple)):
        _emit(list(o), put)
    else:
        raise TypeError(f"contract JSON cannot hold a {type(o).__name__}")


def _key(key: object) -> str:
    if isinstance(key, str):
        return str.__str__(key)
    raise TypeError(f"contract JSON object keys must be str, not {type(key).__name__}")


def _c_writer() -> Callable[[Any], str]:
    """The C encoder's compact writer, built once (``JSONEncoder.encode`` builds
    it again on every call); ``encode`` itself where the C one is missing."""
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython has it
        return encoder.encode
    try:
        chunks = make(None, encoder.default, _encode_str, None, ":", ",", False, False, True)
    except TypeError:  # pragma: no cover - a C encoder of another signature
        return encoder.encode

    def write(value: Any) -> str:
        return "".join(chunks(value, 0))

    # Checked once: a C encoder that writes otherwise is not used.
    sample = {"a": ["\u00e9\n", 1, None, True, ()]}
    return write if write(sample) == encoder.encode(sample) else encoder.encode


_C_WRITER = _c_writer()


def c_dumps(value: Any) -> str:
    """Compact JSON by the C encoder: on a value that holds no float (``str``,
    ``int``, ``bool``, ``None``, ``dict`` with ``str`` keys, ``list``, ``tuple``)
    exactly what :func:`dumps` writes, in C; a float is written
    by ``repr`` (not serde_json's printer), so values that hold one need :func:`dumps`.
    """
    if type(value) is str:
        return _encode_str(value)
    return _C_WRITER(value)

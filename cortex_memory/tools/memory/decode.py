"""Decoding a ``memory`` call: closed shapes, exact types, bounds first.

The decoder is as strict as the published input schema, and a little
stricter where JSON is loose: a boolean is not an integer, ``1.0`` is not an
integer, and ``NaN``/``Infinity`` are not JSON. Unknown fields are refused, so
a call cannot carry authority the schema does not give it
(``{"operation":"delete", ..., "is_root": true}`` fails). Length bounds are
checked here, before the tool does anything else. Messages name fields, never
values.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from cortex_memory.contract.text import is_blank
from cortex_memory.tools.memory.errors import (
    CONTENT_EMPTY,
    CONTENT_NOT_UNICODE,
    CONTENT_TOO_LONG,
    READ_NEEDS_KEYS,
    READ_TOO_MANY_KEYS,
    SCAN_LIMIT_RANGE,
    SCAN_QUERY_EMPTY,
    SCAN_QUERY_NOT_UNICODE,
    SCAN_QUERY_TOO_LONG,
    MemoryRequestError,
)
from cortex_memory.tools.memory.records import MemoryKey
from cortex_memory.tools.memory.schemas import (
    DEFAULT_SCAN_LIMIT,
    MAX_CONTENT_CHARS,
    MAX_QUERY_CHARS,
    MAX_READ_KEYS,
    MAX_SCAN_LIMIT,
)

__all__ = [
    "DeleteCall",
    "MemoryCall",
    "PutCall",
    "ReadCall",
    "ScanCall",
    "decode_call",
    "decode_key",
    "is_unicode",
]


@dataclass(frozen=True)
class ScanCall:
    """``{"operation": "scan", "query", "limit"?}``, bounds checked."""

    query: str
    limit: int = DEFAULT_SCAN_LIMIT


@dataclass(frozen=True)
class ReadCall:
    """``{"operation": "read", "keys"}``; duplicate keys dropped, order kept."""

    keys: Tuple[MemoryKey, ...]


@dataclass(frozen=True)
class PutCall:
    """``{"operation": "put", "content", "replace"?}``, bounds checked."""

    content: str
    replace: Optional[MemoryKey] = None

    def __repr__(self) -> str:
        return f"PutCall(content=<{len(self.content)} chars>, replace={self.replace!r})"


@dataclass(frozen=True)
class DeleteCall:
    """``{"operation": "delete", "key"}``."""

    key: MemoryKey


MemoryCall = Union[ScanCall, ReadCall, PutCall, DeleteCall]

_FIELDS: Dict[str, Tuple[str, ...]] = {
    "scan": ("operation", "query", "limit"),
    "read": ("operation", "keys"),
    "put": ("operation", "content", "replace"),
    "delete": ("operation", "key"),
}
_KEY_FIELDS = ("id", "version", "namespace")
_QUOTABLE = re.compile(r"[A-Za-z0-9_.-]{1,40}")
# A Python str may hold lone surrogates (JSON's "\ud800" decodes to one); UTF-8,
# and so every backend, cannot carry them.
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_unicode(text: str) -> bool:
    """True when ``text`` holds no lone surrogate (UTF-8 can carry it)."""
    return text.isascii() or _SURROGATE.search(text) is None


def _refuse(message: str) -> MemoryRequestError:
    return MemoryRequestError(message)


def _name(field: str) -> str:
    # A field name comes from the caller; quote it only when it is plainly a name.
    return f"`{field}`" if _QUOTABLE.fullmatch(field) else "an unknown field"


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _load(input_json: Union[str, bytes, bytearray, Mapping[str, Any]]) -> Mapping[str, Any]:
    if isinstance(input_json, Mapping):
        return input_json
    if not isinstance(input_json, (str, bytes, bytearray)):
        raise TypeError(
            f"memory input must be JSON text or a mapping, not {type(input_json).__name__}"
        )
    try:
        value = json.loads(input_json, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise _refuse("memory input is not valid JSON") from exc
    if not isinstance(value, dict):
        raise _refuse("memory input must be a JSON object")
    return value


def _closed(obj: Mapping[str, Any], allowed: Tuple[str, ...], what: str) -> None:
    for field in obj:
        if not isinstance(field, str) or field not in allowed:
            name = _name(field) if isinstance(field, str) else "an unknown field"
            raise _refuse(f"{what} does not take {name}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode_key(value: object, what: str = "memory key") -> MemoryKey:
    """Read a closed MemoryKey object: ``id`` and ``version`` ≥ 1, ``namespace`` non-empty."""
    if not isinstance(value, Mapping):
        raise _refuse(f"{what} must be an object with `id` and `version`")
    _closed(value, _KEY_FIELDS, what)
    numbers = []
    for field in ("id", "version"):
        if field not in value:
            raise _refuse(f"{what} needs `{field}`")
        number = value[field]
        if not _is_int(number) or number < 1:
            raise _refuse(f"{what} `{field}` must be an integer of at least 1")
        numbers.append(number)
    namespace = value.get("namespace")
    if "namespace" in value and (not isinstance(namespace, str) or not namespace):
        raise _refuse(f"{what} `namespace` must be a non-empty string")
    return MemoryKey(numbers[0], numbers[1], namespace)


def _string(obj: Mapping[str, Any], field: str, what: str) -> str:
    if field not in obj:
        raise _refuse(f"{what} needs `{field}`")
    value = obj[field]
    if not isinstance(value, str):
        raise _refuse(f"{what} `{field}` must be a string")
    return value


def _scan(obj: Mapping[str, Any]) -> ScanCall:
    query = _string(obj, "query", "memory scan")
    if len(query) > MAX_QUERY_CHARS:
        raise _refuse(SCAN_QUERY_TOO_LONG)
    limit = obj.get("limit", DEFAULT_SCAN_LIMIT)
    if "limit" in obj and not _is_int(limit):
        raise _refuse("memory scan `limit` must be an integer")
    if is_blank(query):
        raise _refuse(SCAN_QUERY_EMPTY)
    if not is_unicode(query):
        raise _refuse(SCAN_QUERY_NOT_UNICODE)
    if not 1 <= limit <= MAX_SCAN_LIMIT:
        raise _refuse(SCAN_LIMIT_RANGE)
    return ScanCall(query, limit)


def _read(obj: Mapping[str, Any]) -> ReadCall:
    if "keys" not in obj:
        raise _refuse("memory read needs `keys`")
    raw = obj["keys"]
    if not isinstance(raw, list):
        raise _refuse("memory read `keys` must be an array of memory keys")
    if not raw:
        raise _refuse(READ_NEEDS_KEYS)
    if len(raw) > MAX_READ_KEYS:
        raise _refuse(READ_TOO_MANY_KEYS)
    keys: Dict[MemoryKey, None] = {}
    for item in raw:
        keys.setdefault(decode_key(item), None)
    return ReadCall(tuple(keys))


def _put(obj: Mapping[str, Any]) -> PutCall:
    content = _string(obj, "content", "memory put")
    if len(content) > MAX_CONTENT_CHARS:
        raise _refuse(CONTENT_TOO_LONG)
    replace = obj.get("replace")
    key = decode_key(replace, "memory put `replace`") if "replace" in obj else None
    if is_blank(content):
        raise _refuse(CONTENT_EMPTY)
    if not is_unicode(content):
        raise _refuse(CONTENT_NOT_UNICODE)
    return PutCall(content, key)


def _delete(obj: Mapping[str, Any]) -> DeleteCall:
    if "key" not in obj:
        raise _refuse("memory delete needs `key`")
    return DeleteCall(decode_key(obj["key"]))


_DECODERS: Dict[str, Callable[[Mapping[str, Any]], MemoryCall]] = {
    "scan": _scan,
    "read": _read,
    "put": _put,
    "delete": _delete,
}


def decode_call(input_json: Union[str, bytes, bytearray, Mapping[str, Any]]) -> MemoryCall:
    """Decode one call (JSON text or an already parsed mapping) or raise ``MemoryRequestError``."""
    obj = _load(input_json)
    operation = obj.get("operation")
    if not isinstance(operation, str) or operation not in _DECODERS:
        raise _refuse("memory `operation` must be one of scan, read, put, delete")
    _closed(obj, _FIELDS[operation], f"memory {operation}")
    return _DECODERS[operation](obj)

"""Readers for ``from_json``: pull typed fields out of parsed JSON or refuse.

Every refusal is ``InvalidRequestError`` naming the field (``meta.tags must be
a list of strings``); no ``KeyError``, ``TypeError`` or ``ValueError`` leaks out
of a ``from_json``. A key whose value is ``null`` reads as missing, as serde
reads ``Option`` fields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple, Type, TypeVar

from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract.jsonfmt import parse_timestamp, to_f32
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "JsonObject",
    "get_bool",
    "get_enum",
    "get_enum_tuple",
    "get_f32",
    "get_int",
    "get_list",
    "get_opt_str",
    "get_str",
    "get_str_tuple",
    "get_timestamp",
    "obj",
    "opt_bool",
    "opt_f32",
    "opt_int",
    "opt_timestamp",
    "require",
]

JsonObject = Dict[str, Any]

_E = TypeVar("_E", bound=WireEnum)
_MISSING: Any = object()


def obj(value: object, what: str) -> JsonObject:
    """Return ``value`` when it is a JSON object (a ``dict``)."""
    if not isinstance(value, dict):
        raise InvalidRequestError(f"{what} must be a JSON object")
    return value


def require(o: JsonObject, key: str, what: str) -> Any:
    """Return the value at ``key``; a missing or null key is refused."""
    value = o.get(key)
    if value is None:
        raise InvalidRequestError(f"{what} needs `{key}`")
    return value


def get_str(o: JsonObject, key: str, what: str) -> str:
    """A required string."""
    value = require(o, key, what)
    if not isinstance(value, str):
        raise InvalidRequestError(f"{what}.{key} must be a string")
    return value


def get_opt_str(o: JsonObject, key: str, what: str) -> Optional[str]:
    """An optional string (missing or null gives ``None``)."""
    value = o.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InvalidRequestError(f"{what}.{key} must be a string")


def _int(value: object, key: str, what: str) -> int:
    if type(value) is not int or value < 0:
        raise InvalidRequestError(f"{what}.{key} must be a non-negative integer")
    return value


def get_int(o: JsonObject, key: str, what: str, default: Any = _MISSING) -> int:
    """A required non-negative integer, or ``default`` when one is given."""
    value = o.get(key)
    if value is None:
        if default is _MISSING:
            raise InvalidRequestError(f"{what} needs `{key}`")
        return int(default)
    return _int(value, key, what)


def opt_int(o: JsonObject, key: str, what: str) -> Optional[int]:
    """An optional non-negative integer."""
    value = o.get(key)
    return None if value is None else _int(value, key, what)


def get_bool(o: JsonObject, key: str, what: str, default: Any = _MISSING) -> bool:
    """A required boolean, or ``default`` when one is given."""
    value = o.get(key)
    if value is None:
        if default is _MISSING:
            raise InvalidRequestError(f"{what} needs `{key}`")
        return bool(default)
    if not isinstance(value, bool):
        raise InvalidRequestError(f"{what}.{key} must be a boolean")
    return value


def opt_bool(o: JsonObject, key: str, what: str) -> Optional[bool]:
    """An optional boolean."""
    value = o.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise InvalidRequestError(f"{what}.{key} must be a boolean")


def _f32(value: object, key: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequestError(f"{what}.{key} must be a number")
    return to_f32(value)


def get_f32(o: JsonObject, key: str, what: str, default: Any = _MISSING) -> float:
    """A required number, rounded to float32."""
    value = o.get(key)
    if value is None:
        if default is _MISSING:
            raise InvalidRequestError(f"{what} needs `{key}`")
        return float(default)
    return _f32(value, key, what)


def opt_f32(o: JsonObject, key: str, what: str) -> Optional[float]:
    """An optional number, rounded to float32."""
    value = o.get(key)
    return None if value is None else _f32(value, key, what)


def get_list(o: JsonObject, key: str, what: str, *, required: bool = False) -> List[Any]:
    """A list; missing or null gives ``[]`` unless ``required``."""
    value = o.get(key)
    if value is None:
        if required:
            raise InvalidRequestError(f"{what} needs `{key}`")
        return []
    if not isinstance(value, list):
        raise InvalidRequestError(f"{what}.{key} must be a list")
    return value


def get_str_tuple(
    o: JsonObject, key: str, what: str, *, required: bool = False
) -> Tuple[str, ...]:
    """A list of strings as a tuple; missing gives ``()`` unless ``required``."""
    items = get_list(o, key, what, required=required)
    for item in items:
        if not isinstance(item, str):
            raise InvalidRequestError(f"{what}.{key} must be a list of strings")
    return tuple(items)


def get_enum(o: JsonObject, key: str, what: str, cls: Type[_E]) -> _E:
    """A required enum wire string."""
    return cls.parse(require(o, key, what), f"{what}.{key}")


def get_enum_tuple(o: JsonObject, key: str, what: str, cls: Type[_E]) -> Tuple[_E, ...]:
    """A list of enum wire strings; missing gives ``()``."""
    name = f"{what}.{key}"
    return tuple(cls.parse(item, name) for item in get_list(o, key, what))


def get_timestamp(o: JsonObject, key: str, what: str) -> datetime:
    """A required RFC 3339 instant."""
    value = require(o, key, what)
    if not isinstance(value, str):
        raise InvalidRequestError(f"{what}.{key} must be a timestamp string")
    return parse_timestamp(value)


def opt_timestamp(o: JsonObject, key: str, what: str) -> Optional[datetime]:
    """An optional RFC 3339 instant."""
    value = o.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequestError(f"{what}.{key} must be a timestamp string")
    return parse_timestamp(value)

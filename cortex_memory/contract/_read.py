"""Readers for ``from_json``: pull typed fields out of parsed JSON or refuse.

Every refusal is ``InvalidRequestError`` naming the field (``meta.tags must be
a list of strings``); no ``KeyError``, ``TypeError`` or ``ValueError`` leaks out
of a ``from_json``. A key whose value is ``null`` reads as missing, as serde
reads ``Option`` fields.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar

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
    "only_key",
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


def only_key(value: object, what: str) -> Tuple[JsonObject, Optional[str]]:
    """An externally tagged value: the JSON object and its one key (``None`` when it
    holds no key or several)."""
    o = obj(value, what)
    return o, (next(iter(o)) if len(o) == 1 else None)


def require(o: JsonObject, key: str, what: str) -> Any:
    """Return the value at ``key``; a missing or null key is refused."""
    value = o.get(key)
    if value is None:
        raise InvalidRequestError(f"{what} needs `{key}`")
    return value


def _default(key: str, what: str, default: Any) -> Any:
    """What a missing key reads as: ``default``, or a refusal when there is none."""
    if default is _MISSING:
        raise InvalidRequestError(f"{what} needs `{key}`")
    return default


def _typed(value: object, key: str, what: str, cls: type, noun: str) -> Any:
    """``value`` when it is a ``cls``; else a refusal naming the field and ``noun``."""
    if not isinstance(value, cls):
        raise InvalidRequestError(f"{what}.{key} must be {noun}")
    return value


def get_str(o: JsonObject, key: str, what: str) -> str:
    """A required string."""
    text: str = _typed(require(o, key, what), key, what, str, "a string")
    return text


def get_opt_str(o: JsonObject, key: str, what: str) -> Optional[str]:
    """An optional string (missing or null gives ``None``)."""
    value = o.get(key)
    return None if value is None else get_str(o, key, what)


def _int(value: object, key: str, what: str) -> int:
    if type(value) is not int or value < 0:
        raise InvalidRequestError(f"{what}.{key} must be a non-negative integer")
    return value


def _present(
    o: JsonObject, key: str, what: str, default: Any, parse: Callable[[object, str, str], Any]
) -> Any:
    """``parse`` of the value at ``key``, or what a missing key reads as (:func:`_default`)."""
    value = o.get(key)
    if value is None:
        return _default(key, what, default)
    return parse(value, key, what)


def get_int(o: JsonObject, key: str, what: str, default: Any = _MISSING) -> int:
    """A required non-negative integer, or ``default`` when one is given."""
    return int(_present(o, key, what, default, _int))


def opt_int(o: JsonObject, key: str, what: str) -> Optional[int]:
    """An optional non-negative integer."""
    count: Optional[int] = _present(o, key, what, None, _int)
    return count


def _bool(value: object, key: str, what: str) -> bool:
    flag: bool = _typed(value, key, what, bool, "a boolean")
    return flag


def get_bool(o: JsonObject, key: str, what: str, default: Any = _MISSING) -> bool:
    """A required boolean, or ``default`` when one is given."""
    return bool(_present(o, key, what, default, _bool))


def opt_bool(o: JsonObject, key: str, what: str) -> Optional[bool]:
    """An optional boolean."""
    flag: Optional[bool] = _present(o, key, what, None, _bool)
    return flag


def _f32(value: object, key: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequestError(f"{what}.{key} must be a number")
    return to_f32(value)


def get_f32(o: JsonObject, key: str, what: str, default: Any = _MISSING) -> float:
    """A required number, rounded to float32."""
    return float(_present(o, key, what, default, _f32))


def opt_f32(o: JsonObject, key: str, what: str) -> Optional[float]:
    """An optional number, rounded to float32."""
    number: Optional[float] = _present(o, key, what, None, _f32)
    return number


def get_list(o: JsonObject, key: str, what: str, *, required: bool = False) -> List[Any]:
    """A list; missing or null gives ``[]`` unless ``required``."""
    value = o.get(key)
    if value is None:
        return _default(key, what, _MISSING if required else [])  # type: ignore[no-any-return]
    items: List[Any] = _typed(value, key, what, list, "a list")
    return items


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
    return parse_timestamp(_typed(require(o, key, what), key, what, str, "a timestamp string"))


def opt_timestamp(o: JsonObject, key: str, what: str) -> Optional[datetime]:
    """An optional RFC 3339 instant."""
    return None if o.get(key) is None else get_timestamp(o, key, what)

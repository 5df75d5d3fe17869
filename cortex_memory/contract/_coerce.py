"""Type checks and normalisation used by the contract dataclasses' ``__post_init__``.

Construction never checks the contract's *rules* (blank text, limits): engines
refuse those in ``validate()``. It only normalises (tuples, UTC instants,
float32 rounding) and refuses values of the wrong Python type with
``TypeError``, a programming error.
"""

from __future__ import annotations

from collections import abc
from datetime import datetime, timezone
from typing import Any, Iterable, Optional, Tuple, Type, TypeVar

from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract.jsonfmt import to_f32
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "enum_member",
    "enum_tuple",
    "f32_field",
    "opt_f32_field",
    "opt_str",
    "opt_type",
    "req_bool",
    "req_int",
    "req_str",
    "req_type",
    "set_attr",
    "str_tuple",
    "tuple_of",
    "utc",
]

_E = TypeVar("_E", bound=WireEnum)
_T = TypeVar("_T")

# Frozen dataclasses normalise their own fields through object.__setattr__.
set_attr = object.__setattr__


def _where(owner: object) -> str:
    if isinstance(owner, str):  # a function's name, for a parameter that is no field
        return owner
    return owner.__name__ if isinstance(owner, type) else type(owner).__name__


def _type_error(owner: object, name: str, expected: str, value: object) -> TypeError:
    return TypeError(f"{_where(owner)}.{name} must be {expected}, not {type(value).__name__}")


def req_type(owner: object, name: str, cls: Type[Any], value: object) -> None:
    """Refuse anything but an instance of ``cls``."""
    if not isinstance(value, cls):
        raise _type_error(owner, name, f"a {cls.__name__}", value)


def opt_type(owner: object, name: str, cls: Type[Any], value: object) -> None:
    """Refuse anything but ``None`` or an instance of ``cls``."""
    if value is not None and not isinstance(value, cls):
        raise _type_error(owner, name, f"a {cls.__name__} or None", value)


def req_str(owner: object, name: str, value: object) -> None:
    """Refuse anything but a ``str``."""
    if type(value) is not str and not isinstance(value, str):
        raise _type_error(owner, name, "a str", value)


def opt_str(owner: object, name: str, value: object) -> None:
    """Refuse anything but ``None`` or a ``str``."""
    if value is not None and not isinstance(value, str):
        raise _type_error(owner, name, "a str or None", value)


def req_int(owner: object, name: str, value: object) -> None:
    """Refuse anything but an ``int`` (``bool`` included in the refusal)."""
    if type(value) is not int and (not isinstance(value, int) or isinstance(value, bool)):
        raise _type_error(owner, name, "an int", value)


def req_bool(owner: object, name: str, value: object) -> None:
    """Refuse anything but a ``bool``."""
    if not isinstance(value, bool):
        raise _type_error(owner, name, "a bool", value)


def enum_member(owner: object, name: str, cls: Type[_E], value: object) -> _E:
    """Return ``value`` as a member of ``cls``; its wire string is accepted too.

    An unknown string is ``InvalidRequestError`` (the same refusal ``from_json``
    gives); any other type is ``TypeError``.
    """
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        return cls.parse(value, f"{cls.__name__} value")
    raise _type_error(owner, name, f"a {cls.__name__}", value)


def _refuse_single(owner: object, name: str, what: str, value: object) -> None:
    """Refuse a bare ``str`` or ``bytes`` where a sequence belongs.

    Both are iterable, so ``tuple("3f2a...")`` would quietly become one
    one-character value per character (forty ids that name nothing); the
    message says how to pass one value instead.
    """
    if isinstance(value, (str, bytes, bytearray)):
        raise TypeError(
            f"{_where(owner)}.{name} must be a list or tuple of {what}, not a single "
            f"{type(value).__name__}; wrap one value in a list: [value]"
        )


def tuple_of(owner: object, name: str, cls: Type[_T], value: Iterable[Any]) -> Tuple[_T, ...]:
    """Return ``value`` as a tuple whose items are all ``cls`` instances (a bare
    ``str`` or ``bytes`` is refused, with a hint to wrap it in a list)."""
    _refuse_single(owner, name, cls.__name__, value)
    if not _iterable(value):
        raise _type_error(owner, name, f"an iterable of {cls.__name__}", value)
    items = value if type(value) is tuple else tuple(value)
    for item in items:
        if not isinstance(item, cls):
            raise _type_error(owner, f"{name}[]", f"a {cls.__name__}", item)
    return items


def enum_tuple(owner: object, name: str, cls: Type[_E], value: Iterable[Any]) -> Tuple[_E, ...]:
    """Return ``value`` as a tuple of ``cls`` members (wire strings accepted; a bare
    ``str`` is refused, with a hint to wrap it in a list)."""
    _refuse_single(owner, name, cls.__name__, value)
    if not _iterable(value):
        raise _type_error(owner, name, f"an iterable of {cls.__name__}", value)
    return tuple(enum_member(owner, f"{name}[]", cls, item) for item in value)


def str_tuple(owner: object, name: str, value: Iterable[Any]) -> Tuple[str, ...]:
    """Return ``value`` as a tuple of ``str`` (a bare string is refused)."""
    return tuple_of(owner, name, str, value)


def utc(owner: object, name: str, value: object) -> Optional[datetime]:
    """Return an aware ``datetime`` converted to UTC; ``None`` passes through.

    A naive datetime is a programming error: the instant it means is unknown.
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise _type_error(owner, name, "a datetime or None", value)
    offset = value.utcoffset()
    if offset is None:
        raise TypeError(
            f"{_where(owner)}.{name} must be timezone-aware (a naive datetime "
            "has no instant)"
        )
    if value.tzinfo is timezone.utc:
        return value
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidRequestError(
            f"{_where(owner)}.{name} is out of range in UTC"
        ) from None


def f32_field(owner: object, name: str, value: object) -> float:
    """Round a float32 field; anything but an ``int`` or ``float`` is ``TypeError``."""
    if type(value) is float:  # the common case, decided by one check
        return to_f32(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _type_error(owner, name, "a float", value)
    return to_f32(value)


def opt_f32_field(owner: object, name: str, value: object) -> Optional[float]:
    """Like :func:`f32_field`, letting ``None`` through."""
    return None if value is None else f32_field(owner, name, value)


def _iterable(value: object) -> bool:
    return isinstance(value, abc.Iterable)

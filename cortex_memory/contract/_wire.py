"""Field tables: one description of a contract value serves its checks and its JSON.

Most contract values are flat frozen dataclasses: each field is one wire key,
checked on construction by one ``_coerce`` rule, read by one ``_read`` reader
and written by one rule (always, only when set, or only when not empty). A
class lists its fields once in a :class:`Shape`; :class:`Written` and
:class:`Wire` build ``__post_init__``, ``to_json`` and ``from_json`` from it,
so every value refuses a wrong type, reads bad JSON and writes its object the
same way, with the messages the field-by-field code gave.

Values whose construction sits on a hot path (``Hit``, items, metadata) keep
their own ``__post_init__``; they may still take ``to_json``/``from_json`` from
a shape.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable, ClassVar, Dict, Optional, Tuple, Type, TypeVar, cast

from cortex_memory.contract import _coerce as coerce
from cortex_memory.contract._enum import WireEnum
from cortex_memory.contract._read import (
    JsonObject,
    get_bool,
    get_enum,
    get_enum_tuple,
    get_f32,
    get_int,
    get_list,
    get_opt_str,
    get_str,
    get_str_tuple,
    obj,
    opt_f32,
    opt_int,
    require,
)
from cortex_memory.contract.jsonfmt import F32

__all__ = [
    "BOOL",
    "COUNT",
    "F32_NUMBER",
    "OPT_COUNT",
    "OPT_F32_NUMBER",
    "OPT_TEXT",
    "REQUIRED_TEXTS",
    "TEXT",
    "TEXTS",
    "Kind",
    "Shape",
    "Wire",
    "Written",
    "enum",
    "enums",
    "nested",
    "nested_list",
    "opt_nested",
]

#: ``(owner, name, value) -> value to keep``: refuses a wrong type with ``TypeError``.
Check = Callable[[object, str, Any], Any]
#: ``(object, key, what) -> value``: refuses bad JSON with ``InvalidRequestError``.
Reader = Callable[[JsonObject, str, str], Any]
#: ``value -> JSON value``.
Writer = Callable[[Any], Any]

# Named as PEP 673 spells it, so the API reference reads ``from_json(...) -> Self``.
Self = TypeVar("Self", bound="Wire")
_REQUIRED: Any = object()


def _same(value: Any) -> Any:
    return value


def _is_set(value: Any) -> bool:
    return value is not None


def _always(value: Any) -> bool:
    return True


def _keeping(check: Callable[[object, str, Any], None]) -> Check:
    """A check that only refuses, turned into one that gives the value back."""

    def run(owner: object, name: str, value: Any) -> Any:
        check(owner, name, value)
        return value

    return run


@dataclass(frozen=True)
class Kind:
    """How one kind of field is checked, read and written, and when it is written.

    ``default`` is what a missing (or null) key reads as; without one the
    reader decides (a required reader refuses the missing key).
    """

    check: Check
    read: Reader
    write: Writer = _same
    written: Callable[[Any], bool] = _always
    default: Any = _REQUIRED

    def or_missing(self, default: Any) -> Kind:
        """This kind, reading a missing key as ``default``."""
        return replace(self, default=default)

    def written_when(self, written: Callable[[Any], bool]) -> Kind:
        """This kind, written only when ``written(value)`` is true."""
        return replace(self, written=written)

    def always_written(self) -> Kind:
        """This kind, written even when unset (``null``) or empty."""
        return replace(self, written=_always)


@dataclass(frozen=True)
class _Field:
    key: str
    attr: str
    kind: Kind

    def read(self, o: JsonObject, what: str) -> Any:
        kind = self.kind
        if kind.default is not _REQUIRED and o.get(self.key) is None:
            return kind.default
        return kind.read(o, self.key, what)


@dataclass(frozen=True)
class Shape:
    """A value's fields in constructor order, what its JSON is called in
    messages, and the order its keys are written in."""

    what: str
    fields: Tuple[_Field, ...]
    written: Tuple[_Field, ...]

    @classmethod
    def of(
        cls,
        what: str,
        /,
        *,
        order: Tuple[str, ...] = (),
        keys: Optional[Dict[str, str]] = None,
        **kinds: Kind,
    ) -> Shape:
        """The shape of fields ``kinds`` (attribute name to kind, in constructor order).

        ``keys`` maps an attribute to a wire key of another name; ``order``
        lists the wire keys in written order when it is not the constructor's.
        """
        rename = keys or {}
        fields = tuple(_Field(rename.get(attr, attr), attr, kind) for attr, kind in kinds.items())
        by_key = {f.key: f for f in fields}
        return cls(what, fields, tuple(by_key[k] for k in order) if order else fields)

    def check(self, owner: object) -> None:
        """Check (and normalise in place) every field of ``owner`` in order."""
        for f in self.fields:
            value = getattr(owner, f.attr)
            kept = f.kind.check(owner, f.attr, value)
            if kept is not value:
                coerce.set_attr(owner, f.attr, kept)

    def write(self, owner: object) -> Dict[str, Any]:
        """The wire object of ``owner``, keys in wire order, unwritten ones left out."""
        out: Dict[str, Any] = {}
        for f in self.written:
            value = getattr(owner, f.attr)
            kind = f.kind
            if kind.written(value):
                out[f.key] = kind.write(value)
        return out

    def read(self, value: object) -> Dict[str, Any]:
        """The constructor's keyword arguments read from the wire object ``value``."""
        o = obj(value, self.what)
        return {f.attr: f.read(o, self.what) for f in self.fields}


class Written:
    """A value whose fields its ``_SHAPE`` checks on construction and writes as JSON."""

    _SHAPE: ClassVar[Shape]

    def __post_init__(self) -> None:
        self._SHAPE.check(self)

    def to_json(self) -> Dict[str, Any]:
        """The wire object the class describes, its keys in wire order."""
        return self._SHAPE.write(self)


class Wire(Written):
    """A :class:`Written` value that is also read back from its JSON."""

    @classmethod
    def from_json(cls: Type[Self], value: object) -> Self:
        """Read the wire object the class describes; a bad field is
        ``InvalidRequestError`` naming it."""
        built: Self = cast(Any, cls)(**cls._SHAPE.read(value))
        return built


# -- kinds of field ---------------------------------------------------------------


def _member(cls: Type[WireEnum]) -> Check:
    def check(owner: object, name: str, value: Any) -> Any:
        return value if type(value) is cls else coerce.enum_member(owner, name, cls, value)

    return check


def _instance(cls: type, optional: bool) -> Check:
    rule = coerce.opt_type if optional else coerce.req_type

    def check(owner: object, name: str, value: Any) -> Any:
        rule(owner, name, cls, value)
        return value

    return check


def _tuple_of(cls: type) -> Check:
    def check(owner: object, name: str, value: Any) -> Any:
        return coerce.tuple_of(owner, name, cls, value)

    return check


def _enum_tuple(cls: Type[WireEnum]) -> Check:
    def check(owner: object, name: str, value: Any) -> Any:
        return coerce.enum_tuple(owner, name, cls, value)

    return check


def _opt_int(owner: object, name: str, value: Any) -> None:
    if value is not None:
        coerce.req_int(owner, name, value)


def _value(member: WireEnum) -> Any:
    return member.value


def _values(members: Tuple[WireEnum, ...]) -> Any:
    return [m.value for m in members]


def _json(value: Any) -> Any:
    return value.to_json()


def _jsons(values: Tuple[Any, ...]) -> Any:
    return [v.to_json() for v in values]


#: A required string.
TEXT = Kind(_keeping(coerce.req_str), get_str)
#: A string or ``None``; written only when set.
OPT_TEXT = Kind(_keeping(coerce.opt_str), get_opt_str, written=_is_set)
#: A required non-negative integer on the wire (any ``int`` on construction).
COUNT = Kind(_keeping(coerce.req_int), get_int)
#: An integer or ``None``; written only when set.
OPT_COUNT = Kind(_keeping(_opt_int), opt_int, written=_is_set)
#: A required boolean.
BOOL = Kind(_keeping(coerce.req_bool), get_bool)
#: A float32 number, rounded on construction.
F32_NUMBER = Kind(coerce.f32_field, get_f32, F32)
#: A float32 number or ``None``; written only when set.
OPT_F32_NUMBER = Kind(coerce.opt_f32_field, opt_f32, F32, _is_set)
#: A tuple of strings (a list on the wire); written only when not empty.
TEXTS = Kind(coerce.str_tuple, get_str_tuple, list, bool)
#: A tuple of strings the wire object must hold; always written.
REQUIRED_TEXTS = Kind(coerce.str_tuple, partial(get_str_tuple, required=True), list)


def enum(cls: Type[WireEnum]) -> Kind:
    """A member of ``cls`` (its wire string accepted on construction)."""
    return Kind(_member(cls), partial(get_enum, cls=cls), _value)


def enums(cls: Type[WireEnum]) -> Kind:
    """A tuple of ``cls`` members; written only when not empty."""
    return Kind(_enum_tuple(cls), partial(get_enum_tuple, cls=cls), _values, bool)


def _read_nested(read: Callable[[Any], Any], o: JsonObject, key: str, what: str) -> Any:
    return read(require(o, key, what))


def nested(cls: Any) -> Kind:
    """A required instance of ``cls`` (a contract value with ``to_json``/``from_json``)."""
    return Kind(_instance(cls, False), partial(_read_nested, cls.from_json), _json)


def opt_nested(cls: Any) -> Kind:
    """An instance of ``cls`` or ``None``; written only when set."""
    return Kind(_instance(cls, True), partial(_read_nested, cls.from_json), _json, _is_set, None)


def _read_list(read: Callable[[Any], Any], required: bool, o: JsonObject, key: str,
               what: str) -> Any:
    return tuple(read(v) for v in get_list(o, key, what, required=required))


def nested_list(cls: Any, *, required: bool = False) -> Kind:
    """A tuple of ``cls`` instances (a list of objects on the wire).

    A ``required`` list is refused when missing and always written; any other
    reads as empty when missing and is written only when not empty.
    """
    read = partial(_read_list, cls.from_json, required)
    return Kind(_tuple_of(cls), read, _jsons, _always if required else bool)

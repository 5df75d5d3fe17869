"""``TimeHint``: the days a question refers to, used only to reorder results."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timezone, tzinfo
from typing import ClassVar, Iterable, List, Optional, Protocol, TypeVar
from zoneinfo import ZoneInfo

from cortex_memory.contract._enum import quote
from cortex_memory.contract._read import JsonObject, get_str
from cortex_memory.contract._wire import OPT_TEXT, Kind, Shape, Wire
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.errors import InvalidRequestError

__all__ = ["TimeHint"]

_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class _HasMeta(Protocol):
    @property
    def meta(self) -> MemoryMeta: ...


_H = TypeVar("_H", bound=_HasMeta)


def _zone(name: str) -> tzinfo:
    """Load an IANA zone or raise ``InvalidRequestError`` (``IST`` is not one)."""
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError, OSError):
        # ZoneInfoNotFoundError is a KeyError; malformed keys are ValueError.
        raise InvalidRequestError(f"unknown time zone {quote(name)}") from None


def _day(value: object, key: str) -> date:
    if not isinstance(value, str) or _DAY.fullmatch(value) is None:
        raise InvalidRequestError(f"time hint `{key}` must be a YYYY-MM-DD date")
    try:
        return date(int(value[:4]), int(value[5:7]), int(value[8:]))
    except ValueError:
        raise InvalidRequestError(f"time hint `{key}` must be a YYYY-MM-DD date") from None


def _is_day(owner: object, name: str, value: object) -> object:
    if isinstance(value, datetime) or not isinstance(value, date):
        raise TypeError(f"TimeHint.{name} must be a date, not {type(value).__name__}")
    return value


def _read_day(o: JsonObject, key: str, what: str) -> date:
    return _day(get_str(o, key, what), key)


def _iso_day(value: date) -> str:
    return value.isoformat()


# A day: a ``date`` (not a ``datetime``), ``YYYY-MM-DD`` on the wire.
_DAY_KIND = Kind(_is_day, _read_day, _iso_day)


@dataclass(frozen=True)
class TimeHint(Wire):
    """Days (inclusive) in a zone, UTC when none ↔ ``{from, to, zone?}``.

    ``from`` is a Python keyword, hence ``from_``. A hint only reorders hits
    (:meth:`rank`); it never filters them out.
    """

    _SHAPE: ClassVar[Shape] = Shape.of(
        "time hint", keys={"from_": "from"}, from_=_DAY_KIND, to=_DAY_KIND, zone=OPT_TEXT
    )

    from_: date
    to: date
    zone: Optional[str] = None

    def validate(self) -> None:
        """Refuse ``from`` after ``to`` and a zone ``zoneinfo`` cannot load."""
        if self.from_ > self.to:
            raise InvalidRequestError("time hint `from` must not be after `to`")
        if self.zone is not None:
            _zone(self.zone)

    def covers(self, when: datetime) -> bool:
        """True when the day of ``when`` in the hint's zone lies within the days."""
        if when.utcoffset() is None:
            raise TypeError("TimeHint.covers needs a timezone-aware datetime")
        zone = timezone.utc if self.zone is None else _zone(self.zone)
        return self.from_ <= when.astimezone(zone).date() <= self.to

    def rank(self, hits: Iterable[_H]) -> List[_H]:
        """Hits whose ``meta.observed_at`` is covered first, each group in engine order.

        Undated hits stay with the rest. Works on anything with a ``meta``
        (:class:`Hit`, :class:`Citation`).
        """
        covered: List[_H] = []
        rest: List[_H] = []
        zone = timezone.utc if self.zone is None else _zone(self.zone)
        for hit in hits:
            at = hit.meta.observed_at
            if at is not None and self.from_ <= at.astimezone(zone).date() <= self.to:
                covered.append(hit)
            else:
                rest.append(hit)
        return covered + rest

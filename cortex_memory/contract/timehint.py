"""``TimeHint``: the days a question refers to, used only to reorder results."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timezone, tzinfo
from typing import Any, Dict, Iterable, List, Optional, Protocol, TypeVar
from zoneinfo import ZoneInfo

from cortex_memory.contract._coerce import opt_str
from cortex_memory.contract._enum import quote
from cortex_memory.contract._read import get_opt_str, get_str, obj
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


@dataclass(frozen=True)
class TimeHint:
    """Days (inclusive) in a zone, UTC when none ↔ ``{from, to, zone?}``.

    ``from`` is a Python keyword, hence ``from_``. A hint only reorders hits
    (:meth:`rank`); it never filters them out.
    """

    from_: date
    to: date
    zone: Optional[str] = None

    def __post_init__(self) -> None:
        for name in ("from_", "to"):
            value = getattr(self, name)
            if isinstance(value, datetime) or not isinstance(value, date):
                raise TypeError(
                    f"TimeHint.{name} must be a date, not {type(value).__name__}"
                )
        opt_str(self, "zone", self.zone)

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

    def to_json(self) -> Dict[str, Any]:
        """``{from, to, zone?}`` with ``YYYY-MM-DD`` days."""
        out: Dict[str, Any] = {"from": self.from_.isoformat(), "to": self.to.isoformat()}
        if self.zone is not None:
            out["zone"] = self.zone
        return out

    @classmethod
    def from_json(cls, value: object) -> TimeHint:
        """Read ``{from, to, zone?}``."""
        o = obj(value, "time hint")
        return cls(
            _day(get_str(o, "from", "time hint"), "from"),
            _day(get_str(o, "to", "time hint"), "to"),
            get_opt_str(o, "zone", "time hint"),
        )

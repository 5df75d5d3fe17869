"""Contract timestamps: RFC 3339 instants, written in UTC and read from any offset.

Every instant the contract holds is an aware ``datetime``; on the wire it is
RFC 3339 in UTC ending ``Z`` (contract.md §1.4), with a fraction only when it is
not zero (3 digits for whole milliseconds, else 6). :func:`parse_timestamp`
reads the form :func:`format_timestamp` writes on a fast path and every other
RFC 3339 form (``t``/``z``, offsets, up to 9 fraction digits) on the general
one, refusing what cannot round-trip. Re-exported by
:mod:`cortex_memory.contract.jsonfmt`, where they used to live.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from cortex_memory.errors import InvalidRequestError

__all__ = ["format_timestamp", "format_timestamp_offset", "parse_timestamp"]

_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
# What format_timestamp writes (``Z``; 0, 3 or 6 fraction digits; hours, minutes and
# seconds in range): every character fixed, so datetime.fromisoformat reads it the
# same on every Python (the date's ranges are the constructor's) at a fraction of
# the general path's cost: its seven int() calls. Decoding reads one or two per event.
_WRITTEN = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:\.[0-9]{3}(?:[0-9]{3})?)?Z"
)
_IS_WRITTEN = _WRITTEN.fullmatch
_FROM_ISO = datetime.fromisoformat


def _reads_zulu() -> bool:
    """True when ``fromisoformat`` reads a written ``Z`` as ``+00:00`` (Python 3.11+).

    Then a written timestamp goes to it as it is, without a copy ending ``+00:00``
    (a slice and a concatenation: a sixth of the parse). Asked of the function,
    not the version, on a sample of each written form.
    """
    for text in ("2000-02-29T23:59:59Z", "1999-12-31T00:00:00.123Z", "2000-01-01T01:02:03.000004Z"):
        try:
            value = _FROM_ISO(text)
        except ValueError:
            return False
        if value != _FROM_ISO(text[:-1] + "+00:00") or value.tzinfo is not timezone.utc:
            return False  # pragma: no cover - no Python reads Z otherwise
    return True


_ZULU = _reads_zulu()


def _utc(value: datetime) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"a timestamp must be a datetime, not {type(value).__name__}")
    offset = value.utcoffset()
    if offset is None:
        raise TypeError("a timestamp must be timezone-aware (a naive datetime has no instant)")
    return value if not offset else value - offset


def _clock(d: datetime) -> str:
    text = (
        f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
    )
    micros = d.microsecond
    if not micros:
        return text
    if micros % 1000 == 0:
        return f"{text}.{micros // 1000:03d}"
    return f"{text}.{micros:06d}"


def format_timestamp(value: datetime) -> str:
    """Write an aware instant as RFC 3339 UTC ending ``Z`` (contract.md §1.4).

    The fraction appears only when non-zero: 3 digits for whole milliseconds,
    else 6 (a ``datetime`` holds no more). A naive datetime is ``TypeError``.
    """
    return _clock(_utc(value)) + "Z"


def format_timestamp_offset(value: datetime) -> str:
    """Like :func:`format_timestamp` but ending ``+00:00`` (the envelope's ``observed_at``)."""
    return _clock(_utc(value)) + "+00:00"


def parse_timestamp(text: str, *, truncate: bool = False) -> datetime:
    """Parse an RFC 3339 instant into an aware UTC ``datetime``.

    Accepts ``T``/``t``, ``Z``/``z`` or a ``±HH:MM`` offset, and 0 to 9 fraction
    digits. Non-zero digits past the microsecond cannot round-trip through a
    ``datetime`` and are refused, unless ``truncate`` is set (readers of server
    times that may carry nanoseconds). Failures are ``InvalidRequestError``.
    """
    if type(text) is str and _IS_WRITTEN(text) is not None:
        try:
            # ``Z`` and ``+00:00`` give the timezone.utc singleton, as the general
            # path sets; ``Z`` where this Python reads it (see _reads_zulu).
            return _FROM_ISO(text if _ZULU else text[:-1] + "+00:00")
        except ValueError:
            pass  # a day past its month, year 0: the general path words the refusal
    match = _TIMESTAMP.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidRequestError(f"invalid timestamp {_quote(text)}")
    year, month, day, hour, minute, second, frac, zulu, sign, off_h, off_m = match.groups()
    micros = 0
    if frac:
        if len(frac) > 6 and not truncate and frac[6:].strip("0"):
            raise InvalidRequestError(
                f"timestamp {_quote(text)} has sub-microsecond digits, which cannot round-trip"
            )
        micros = int(frac[:6].ljust(6, "0"))
    try:
        value = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), micros,
            tzinfo=timezone.utc,
        )
        if not zulu:
            hours, minutes = int(off_h), int(off_m)
            if hours > 23 or minutes > 59:
                raise ValueError("offset out of range")
            offset = timedelta(hours=hours, minutes=minutes)
            value = value - offset if sign == "+" else value + offset
    except (ValueError, OverflowError):
        raise InvalidRequestError(f"invalid timestamp {_quote(text)}") from None
    return value


def _quote(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return f"`{text[:64]}…`" if len(text) > 64 else f"`{text}`"

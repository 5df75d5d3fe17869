"""The base of every contract enum: ``str``-valued, printed as its wire string."""

from __future__ import annotations

from enum import Enum
from functools import cache
from operator import attrgetter
from typing import TYPE_CHECKING, Dict, Optional, Type, TypeVar

from cortex_memory.errors import InvalidRequestError

__all__ = ["WireEnum"]

_E = TypeVar("_E", bound="WireEnum")


def quote(value: object, limit: int = 80) -> str:
    """Quote a user-supplied value for a message, cut so a huge input stays short."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    return f"`{text}`"


class WireEnum(str, Enum):
    """A contract enum: members are UPPER_CASE, each value is the wire string.

    ``str(member)`` and ``format(member)`` give the wire string on every Python
    version (3.11 changed the default for ``str``-mixed enums), so messages can
    interpolate members directly.
    """

    # ``value`` as a property with a C getter: Enum's own ``value`` goes through
    # two Python frames (enum's property descriptor), and wire strings are read
    # for every item written and read. Same value: the member's ``_value_``.
    if TYPE_CHECKING:  # pragma: no cover - how type checkers see it

        @property
        def value(self) -> str:
            """The wire string."""

    else:
        value = property(attrgetter("_value_"), doc="The wire string.")

    def __str__(self) -> str:
        return str(self._value_)

    def __format__(self, spec: str) -> str:
        return format(str(self._value_), spec)

    @classmethod
    def parse(cls: Type[_E], value: object, what: str) -> _E:
        """Return the member for a wire string, or raise ``InvalidRequestError``.

        ``what`` names the thing in the message (``"unknown item kind `x`"``).
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            # The members by wire string first: calling the class does the same
            # lookup behind several Python frames (read for every decoded event).
            member: Optional[_E] = _members(cls).get(value)
            if member is not None:
                return member
            try:
                return cls(value)  # _missing_ (retired values) and the refusal
            except ValueError:
                pass
            raise InvalidRequestError(f"unknown {what} {quote(value)}")
        raise InvalidRequestError(f"{what} must be a string")


@cache
def _members(cls: Type[_E]) -> Dict[str, _E]:
    """Each member of ``cls`` by its wire string, built once per class (thread-safe)."""
    return {member.value: member for member in cls}

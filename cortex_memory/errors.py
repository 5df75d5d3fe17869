"""The one exception tree of ``cortex_memory``.

Every failure a public call reports is an :class:`Error` subclass; nothing else
escapes except programming errors (``TypeError`` for an argument of the wrong
type). ``str(err)`` starts with the variant prefix (``"unavailable: ..."``);
``err.message`` is the bare message. Status failures of either CortexDB wire also
carry their facts as attributes: ``err.status`` (the HTTP status) and
``err.code`` (the backend's error code), both ``None`` otherwise. An error
that stops a ``store_many`` part-way carries ``err.receipts``: the receipts of
the items stored before it (empty on every other error).

No message is ever built from a credential.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, ClassVar, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover - a type only; the contract imports this module
    from cortex_memory.contract.items import StoreReceipt

__all__ = [
    "ConfigError",
    "ConflictError",
    "EngineError",
    "Error",
    "InvalidRequestError",
    "NotFoundError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedError",
    "error_code",
    "is_insufficient_credits",
]

INSUFFICIENT_CREDITS = "USER_INSUFFICIENT_CREDITS"

# A hosted failure's message starts with "[CODE] ": 1..64 of [A-Z0-9_].
_CODE_PREFIX = re.compile(r"\[([A-Z0-9_]{1,64})\] ")


class Error(Exception):
    """Root of every error a ``cortex_memory`` call raises.

    Two errors compare equal when they have the same class and message, so
    tests and hosts can compare them directly; they are hashable and copyable.
    ``receipts`` holds, on an error that stopped a ``store_many`` part-way, the
    receipts of the items stored before it, in item order (so a caller knows
    what was kept; sending the same items again replays those and stores the
    rest). It is empty on every other error.
    """

    prefix: ClassVar[str] = "error: "

    message: str
    status: Optional[int]
    code: Optional[str]
    #: Receipts of the items a failed ``store_many`` stored before failing.
    receipts: Tuple[StoreReceipt, ...] = ()

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
    ) -> None:
        if not isinstance(message, str):
            raise TypeError(f"message must be a str, not {type(message).__name__}")
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    @property
    def is_transient(self) -> bool:
        """True only for :class:`UnavailableError`: retrying later may succeed."""
        return False

    def __str__(self) -> str:
        return self.prefix + self.message

    def __repr__(self) -> str:
        extra = ""
        if self.status is not None:
            extra += f", status={self.status!r}"
        if self.code is not None:
            extra += f", code={self.code!r}"
        return f"{type(self).__name__}({self.message!r}{extra})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Error):
            return NotImplemented
        return type(self) is type(other) and self.message == other.message

    def __hash__(self) -> int:
        return hash((type(self), self.message))

    def __reduce__(self) -> tuple[object, ...]:
        # Keeps copy.copy and pickle working with the keyword-only attributes.
        return (
            _rebuild,
            (type(self), self.message, self.status, self.code),
            self.__dict__ or None,
        )


def _rebuild(
    cls: type[Error], message: str, status: Optional[int], code: Optional[str]
) -> Error:
    return cls(message, status=status, code=code)


class UnsupportedError(Error):
    """The operation or fetch mode is not offered by this engine."""

    prefix = "unsupported: "


class InvalidRequestError(Error):
    """The request is malformed (validation failed, unknown cursor, bad namespace)."""

    prefix = "invalid request: "


class UnauthorizedError(Error):
    """The credential is missing, expired or was rejected; sign in again or check the key."""

    prefix = "unauthorized: "


class NotFoundError(Error):
    """The item or route is missing (``get`` of an unknown id is not an error)."""

    prefix = "not found: "


class ConflictError(Error):
    """The write conflicts with what the store already holds."""

    prefix = "conflict: "


class UnavailableError(Error):
    """A transient failure: timeout, rate limit or upstream outage; retry later."""

    prefix = "unavailable: "

    @property
    def is_transient(self) -> bool:
        """Always true: an unavailable engine may answer a later attempt."""
        return True


class EngineError(Error):
    """The engine's own failure, sanitized (bad response, cap exceeded, no credits)."""

    prefix = "engine error: "


class ConfigError(Error):
    """Construction or configuration failed (unknown engine, missing key, cleartext endpoint)."""

    prefix = "configuration error: "


def error_code(err: BaseException) -> Optional[str]:
    """Return the hosted backend's error code carried at the start of ``err.message``.

    The hosted (TinyHumans) wire prefixes every failure message with ``[CODE] ``.
    Direct failures, local refusals and messages without a well-formed prefix
    give ``None``. (``err.code`` holds the code of either wire as an attribute.)
    """
    if not isinstance(err, Error):
        return None
    match = _CODE_PREFIX.match(err.message)
    return match.group(1) if match else None


def is_insufficient_credits(err: BaseException) -> bool:
    """True for an :class:`EngineError` meaning the account must be topped up (HTTP 402)."""
    if not isinstance(err, EngineError):
        return False
    return err.code == INSUFFICIENT_CREDITS or error_code(err) == INSUFFICIENT_CREDITS

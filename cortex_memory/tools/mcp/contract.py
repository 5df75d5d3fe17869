"""The MCP write contract (seed 001): names, hints, codes, messages and lowering.

Pure: no I/O, and nothing here ever logs or embeds a payload, an idempotency
key, a hash or a token. A successful write lowers to
``{"observation_ref": {...}, "status": ...}`` (:func:`from_write_result`,
which fails closed); any failure lowers to
``{"error": {"code", "message", "retryable"}}`` (:func:`from_error`), whose
message is a constant for generic failures and the typed error's own
pre-redacted message otherwise, redacted again and cut to 200 code points.

Transport failures are recognised only by explicit type matches (urllib3's
errors, named socket and connection errors, ``UnavailableError``), never by
walking ``__cause__``: a persistence failure wrapped around a
``sqlite3.OperationalError`` stays ``persistence``.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import sys
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar, Dict, FrozenSet, Optional, Tuple, Type

from cortex_memory.errors import (
    ConflictError,
    EngineError,
    Error,
    InvalidRequestError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
)
from cortex_memory.tools.memory.secrets import redact

__all__ = [
    "CODE_CONFLICT",
    "CODE_FORBIDDEN",
    "CODE_PAYLOAD_TOO_LARGE",
    "CODE_PERSISTENCE",
    "CODE_TIMEOUT",
    "CODE_TRANSPORT",
    "CODE_UNAVAILABLE",
    "CODE_VALIDATION",
    "ERROR_CODES",
    "HANDOFF_HINTS",
    "HandoffConflictError",
    "Hints",
    "MAX_ERROR_MESSAGE_LENGTH",
    "MESSAGES",
    "ObservationRef",
    "PayloadTooLargeError",
    "PersistenceError",
    "RETRYABLE_CODES",
    "SAVE_HINTS",
    "STATUSES",
    "STATUS_CREATED",
    "STATUS_REPLAYED",
    "STATUS_UPDATED",
    "TOOL_HANDOFF",
    "TOOL_NAMES",
    "TOOL_SAVE",
    "WriteFailure",
    "WriteResult",
    "WriteValidationError",
    "bound_message",
    "classify",
    "from_error",
    "from_write_result",
    "is_valid_status",
    "unavailable_error",
    "validation_error",
]

# -- names and hints ---------------------------------------------------------------------

TOOL_SAVE = "cortex_save"
TOOL_HANDOFF = "cortex_handoff"
TOOL_NAMES: Tuple[str, str] = (TOOL_SAVE, TOOL_HANDOFF)


@dataclass(frozen=True)
class Hints:
    """A tool's MCP annotations: a title and the four behaviour hints."""

    title: str
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def to_json(self) -> Dict[str, Any]:
        """The MCP ``annotations`` object."""
        return {
            "title": self.title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


#: Both write tools are read/write, non-destructive and closed-world.
SAVE_HINTS = Hints("Save Memory")
HANDOFF_HINTS = Hints("Record Handoff", idempotent=True)

# -- codes and messages --------------------------------------------------------------------

CODE_VALIDATION = "validation"
CODE_PAYLOAD_TOO_LARGE = "payload_too_large"
CODE_FORBIDDEN = "forbidden"
CODE_CONFLICT = "conflict"
CODE_TIMEOUT = "timeout"
CODE_PERSISTENCE = "persistence"
CODE_TRANSPORT = "transport"
CODE_UNAVAILABLE = "unavailable"

ERROR_CODES: Tuple[str, ...] = (
    CODE_VALIDATION,
    CODE_PAYLOAD_TOO_LARGE,
    CODE_FORBIDDEN,
    CODE_CONFLICT,
    CODE_TIMEOUT,
    CODE_PERSISTENCE,
    CODE_TRANSPORT,
    CODE_UNAVAILABLE,
)
RETRYABLE_CODES: FrozenSet[str] = frozenset({CODE_TIMEOUT, CODE_TRANSPORT, CODE_UNAVAILABLE})

#: The constant, redacted message of each generic class.
MESSAGES: Dict[str, str] = {
    CODE_VALIDATION: "the request is invalid",
    CODE_PAYLOAD_TOO_LARGE: "the observation is too large",
    CODE_FORBIDDEN: "this operation is not allowed",
    CODE_CONFLICT: "the idempotency key was already used with a different payload",
    CODE_TIMEOUT: "the memory store did not answer in time",
    CODE_PERSISTENCE: "the memory store could not save the observation",
    CODE_TRANSPORT: "the memory service could not be reached",
    CODE_UNAVAILABLE: "the memory service is not available",
}

#: Every structured error message is at most this many code points.
MAX_ERROR_MESSAGE_LENGTH = 200

STATUS_CREATED = "created"
STATUS_REPLAYED = "replayed"
STATUS_UPDATED = "updated"
STATUSES: FrozenSet[str] = frozenset({STATUS_CREATED, STATUS_REPLAYED, STATUS_UPDATED})


def is_valid_status(status: object) -> bool:
    """True when ``status`` belongs to the closed write-status set."""
    return isinstance(status, str) and status in STATUSES


# -- typed failures ------------------------------------------------------------------------


class WriteFailure(Error):
    """A typed failure of a durable write; ``failure_code`` is its contract code.

    Its message is written to be safe (it names fields and rules, never values),
    so :func:`from_error` passes it on, redacted again and bounded.
    """

    failure_code: ClassVar[str] = CODE_PERSISTENCE


class WriteValidationError(WriteFailure, InvalidRequestError):
    """The request's shape or references are invalid (before any mutation)."""

    failure_code = CODE_VALIDATION


class PayloadTooLargeError(WriteFailure, InvalidRequestError):
    """The observation is larger than the write surface accepts."""

    failure_code = CODE_PAYLOAD_TOO_LARGE


class HandoffConflictError(WriteFailure, ConflictError):
    """The idempotency key was already used with a different payload."""

    failure_code = CODE_CONFLICT


class PersistenceError(WriteFailure, EngineError):
    """The memory store could not save (a local store has no transport to blame)."""

    failure_code = CODE_PERSISTENCE


# -- references and results ---------------------------------------------------------------


@dataclass(frozen=True)
class ObservationRef:
    """Where an observation lives: ``local_id`` XOR ``public_id``.

    Construction does not check (so a broken value can reach
    :func:`from_write_result`, which refuses it); build with :meth:`local`
    or :meth:`public` to check at once.
    """

    local_id: Optional[int] = None
    public_id: Optional[str] = None

    @classmethod
    def local(cls, local_id: int) -> ObservationRef:
        """A checked local reference (a positive integer)."""
        ref = cls(local_id=local_id)
        ref.validate()
        return ref

    @classmethod
    def public(cls, public_id: str) -> ObservationRef:
        """A checked public reference (a canonical lower-case UUID)."""
        ref = cls(public_id=public_id)
        ref.validate()
        return ref

    def validate(self) -> None:
        """Raise ``EngineError`` unless exactly one well-formed id is set."""
        if (self.local_id is None) == (self.public_id is None):
            raise EngineError("an observation reference needs exactly one of local_id, public_id")
        if self.local_id is not None:
            if isinstance(self.local_id, bool) or not isinstance(self.local_id, int):
                raise EngineError("an observation local_id must be an integer")
            if self.local_id < 1:
                raise EngineError("an observation local_id must be positive")
        elif not _is_canonical_uuid(self.public_id):
            raise EngineError("an observation public_id must be a UUID")

    def to_json(self) -> Dict[str, Any]:
        """``{"local_id": n}`` or ``{"public_id": "..."}``."""
        if self.local_id is not None:
            return {"local_id": self.local_id}
        return {"public_id": self.public_id}


def _is_canonical_uuid(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


@dataclass(frozen=True)
class WriteResult:
    """A completed write: the observation's reference and the write status."""

    ref: ObservationRef
    status: str


def from_write_result(result: WriteResult) -> Dict[str, Any]:
    """``{"observation_ref": ..., "status": ...}``; fails closed with ``EngineError``.

    A reference with both or neither id, a non-positive local id, a malformed
    UUID or a status outside the closed set raises: no success is fabricated.
    """
    if not isinstance(result, WriteResult) or not isinstance(result.ref, ObservationRef):
        raise EngineError("a write result must be a WriteResult")
    result.ref.validate()
    if not is_valid_status(result.status):
        raise EngineError("a write status must be created, replayed or updated")
    return {"observation_ref": result.ref.to_json(), "status": result.status}


# -- errors ------------------------------------------------------------------------------------


def bound_message(message: str) -> str:
    """``message`` redacted, then cut to 200 code points."""
    return redact(message)[:MAX_ERROR_MESSAGE_LENGTH]


def _payload(code: str, message: str) -> Dict[str, Any]:
    return {
        "error": {
            "code": code,
            "message": bound_message(message),
            "retryable": code in RETRYABLE_CODES,
        }
    }


def _timeout_types() -> Tuple[Type[BaseException], ...]:
    kinds: Tuple[Type[BaseException], ...] = (TimeoutError, socket.timeout)
    u3 = sys.modules.get("urllib3.exceptions")
    if u3 is not None:  # not imported means no urllib3 error can exist yet
        kinds += (u3.TimeoutError,)
    return kinds


def _transport_types() -> Tuple[Type[BaseException], ...]:
    kinds: Tuple[Type[BaseException], ...] = (
        UnavailableError,
        socket.gaierror,
        socket.herror,
        ConnectionError,  # refused, reset, aborted, broken pipe
        ssl.SSLError,
        http.client.HTTPException,
    )
    u3 = sys.modules.get("urllib3.exceptions")
    if u3 is not None:
        kinds += (u3.HTTPError,)
    return kinds


def classify(err: BaseException) -> str:
    """The contract code of ``err``, by its own type only (its causes are not consulted)."""
    if isinstance(err, WriteFailure):
        return err.failure_code
    if isinstance(err, InvalidRequestError):
        return CODE_VALIDATION
    if isinstance(err, (UnauthorizedError, UnsupportedError)):
        return CODE_FORBIDDEN
    if isinstance(err, ConflictError):
        return CODE_CONFLICT
    u3 = sys.modules.get("urllib3.exceptions")
    # urllib3's NewConnectionError subclasses ConnectTimeoutError for history's
    # sake; a refused connection is a transport failure, not a timeout.
    if u3 is not None and isinstance(err, u3.NewConnectionError):
        return CODE_TRANSPORT
    if isinstance(err, _timeout_types()):
        return CODE_TIMEOUT
    if isinstance(err, _transport_types()):
        return CODE_TRANSPORT
    return CODE_PERSISTENCE


def from_error(err: BaseException) -> Dict[str, Any]:
    """Lower any failure to ``{"error": {"code", "message", "retryable"}}``.

    A :class:`WriteFailure` contributes its own message; every other failure
    gets its class's constant message. Either way the message is redacted and
    cut to 200 code points, and nothing else (no reference, status, key, hash,
    content or token) is carried.
    """
    code = classify(err)
    if isinstance(err, WriteFailure) and err.message:
        return _payload(code, err.message)
    return _payload(code, MESSAGES[code])


def _format(fmt: str, args: Tuple[object, ...]) -> str:
    if not args:
        return fmt
    try:
        return fmt % args
    except (TypeError, ValueError):
        return fmt


def validation_error(fmt: str, *args: object) -> Dict[str, Any]:
    """A bounded ``validation`` payload for a request-shape rejection (``%``-formatted)."""
    return _payload(CODE_VALIDATION, _format(fmt, args) or MESSAGES[CODE_VALIDATION])


def unavailable_error(fmt: str = "", *args: object) -> Dict[str, Any]:
    """A bounded, retryable ``unavailable`` payload for a missing dependency."""
    return _payload(CODE_UNAVAILABLE, _format(fmt, args) or MESSAGES[CODE_UNAVAILABLE])

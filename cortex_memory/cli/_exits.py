"""The CLI's exit statuses: one per library error class (docs/cli.md has the table)."""

from __future__ import annotations

from typing import Tuple, Type

from cortex_memory.errors import (
    ConfigError,
    ConflictError,
    EngineError,
    Error,
    InvalidRequestError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedError,
)

__all__ = [
    "EXIT_CODES",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "exit_code",
]

#: Exit status per error class (the first matching class wins).
EXIT_CODES: Tuple[Tuple[Type[Error], int], ...] = (
    (ConfigError, 3),
    (InvalidRequestError, 4),
    (UnauthorizedError, 5),
    (NotFoundError, 6),
    (ConflictError, 7),
    (UnavailableError, 8),
    (UnsupportedError, 9),
    (EngineError, 10),
)
#: A failure without a more specific status.
EXIT_FAILURE = 1
#: A mistake in the command line.
EXIT_USAGE = 2
#: Ctrl-C.
EXIT_INTERRUPTED = 130


def exit_code(err: Error) -> int:
    """The exit status for a library error."""
    for cls, code in EXIT_CODES:
        if isinstance(err, cls):
            return code
    return EXIT_FAILURE

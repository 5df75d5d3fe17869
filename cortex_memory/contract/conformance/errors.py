"""The conformance suite's own failures (contract.md §2).

They form a tree apart from :class:`cortex_memory.errors.Error`: a conformance
failure is a verdict on an engine, not an error an engine raises. Every one
names the ``check`` that failed.
"""

from __future__ import annotations

from typing import Optional, Tuple

from cortex_memory.errors import Error

__all__ = ["CheckEngineFailure", "CheckFailure", "ConformanceError"]


class ConformanceError(Exception):
    """Root of the conformance failures; ``check`` names the check that failed."""

    check: str

    def __init__(self, check: str, message: str) -> None:
        if not isinstance(check, str):
            raise TypeError(f"check must be a str, not {type(check).__name__}")
        super().__init__(message)
        self.check = check

    def __str__(self) -> str:
        return f"conformance check `{self.check}` failed: {self.args[0]}"


class CheckFailure(ConformanceError):
    """The engine answered wrongly; ``detail`` says what was expected and what came back.

    ``str()`` is ``conformance check `<check>` failed: <detail>``.
    """

    detail: str

    def __init__(self, check: str, detail: str) -> None:
        if not isinstance(detail, str):
            raise TypeError(f"detail must be a str, not {type(detail).__name__}")
        super().__init__(check, detail)
        self.detail = detail

    def __repr__(self) -> str:
        return f"CheckFailure({self.check!r}, {self.detail!r})"

    def __reduce__(self) -> Tuple[object, ...]:
        return (type(self), (self.check, self.detail))


class CheckEngineFailure(ConformanceError):
    """The engine raised ``error`` on a call it must serve (``__cause__`` is the error).

    ``str()`` is ``conformance check `<check>` failed: the engine returned an
    error: <error>``. ``operation`` names the call that raised (``"store"``),
    when known.
    """

    error: Error
    operation: Optional[str]

    def __init__(self, check: str, error: Error, operation: Optional[str] = None) -> None:
        if not isinstance(error, Error):
            raise TypeError(f"error must be a cortex_memory Error, not {type(error).__name__}")
        super().__init__(check, f"the engine returned an error: {error}")
        self.error = error
        self.operation = operation
        self.__cause__ = error

    def __repr__(self) -> str:
        return f"CheckEngineFailure({self.check!r}, {self.error!r})"

    def __reduce__(self) -> Tuple[object, ...]:
        return (type(self), (self.check, self.error, self.operation))

"""Where the CLI writes: results to stdout, notes and errors to stderr.

Stored content is printed as text, and memory can hold anything (a pasted log
line with terminal escape sequences, for one). Text output therefore shows
control characters as visible escapes instead of sending them to the terminal;
``--json`` output is escaped by the JSON writer.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Optional, TextIO

from cortex_memory.contract.jsonfmt import dumps

__all__ = [
    "Console",
    "PROG",
    "clean",
    "one_line",
    "shorten",
]

#: The command's name in messages and usage lines.
PROG = "cortex-memory"

# C0 controls except tab and newline, DEL, and the C1 controls (some terminals
# read U+009B as an escape sequence introducer).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"\s+")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def clean(text: str) -> str:
    """``text`` with control characters (other than tab and newline) made visible."""
    return _CONTROL.sub(_escape, text)


def one_line(text: str) -> str:
    """``text`` cleaned, with every run of whitespace (newlines too) collapsed to one space."""
    return _SPACES.sub(" ", clean(text)).strip()


def shorten(text: str, width: int) -> str:
    """:func:`one_line` cut to ``width`` characters, ending in ``…`` when cut."""
    line = one_line(text)
    if len(line) <= width:
        return line
    return line[: max(width - 1, 0)].rstrip() + "…"


class Console:
    """The CLI's three streams and its output mode (text or ``--json``)."""

    def __init__(
        self, stdin: TextIO, stdout: TextIO, stderr: TextIO, *, json_mode: bool = False
    ) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.json_mode = json_mode

    @staticmethod
    def _write(stream: TextIO, text: str) -> None:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            # A console whose encoding cannot show some character (a legacy
            # Windows code page): escape what it cannot show rather than fail.
            encoding = getattr(stream, "encoding", None) or "ascii"
            stream.write(text.encode(encoding, "backslashreplace").decode(encoding))

    def out(self, line: str = "") -> None:
        """Write one line of the result to stdout."""
        self._write(self.stdout, line + "\n")

    def json(self, value: Any) -> None:
        """Write one JSON document (contract shapes, float32 kept exact) to stdout."""
        self._write(self.stdout, dumps(value) + "\n")

    def result(self, to_json: Callable[[], Any], lines: Callable[[], Iterable[str]]) -> None:
        """Write a command's result: ``to_json()`` with ``--json``, else ``lines()``, one a line."""
        if self.json_mode:
            self.json(to_json())
        else:
            for line in lines():
                self.out(line)

    def note(self, message: str) -> None:
        """Write ``cortex-memory: <message>`` to stderr (never part of the result)."""
        self._write(self.stderr, f"{PROG}: {message}\n")

    def warn(self, message: str) -> None:
        """Write ``cortex-memory: warning: <message>`` to stderr."""
        self.note(f"warning: {message}")

    def error(self, message: str) -> None:
        """Write ``cortex-memory: <message>`` to stderr."""
        self.note(message)

    def flush(self, stream: Optional[TextIO] = None) -> None:
        """Flush stdout (or ``stream``), ignoring streams that cannot be flushed."""
        target = self.stdout if stream is None else stream
        flush = getattr(target, "flush", None)
        if flush is not None:
            flush()

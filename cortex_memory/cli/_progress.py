"""Progress of the long commands (``import``, ``export``, ``copy``) on stderr.

Three ways to show it, picked from the console:

- **a bar** when stderr is a terminal: one line redrawn in place (``\\r``), at
  most ten times a second, ending with a newline when the work is done;
- **plain lines** when stderr is a file or a pipe (a log, a CI job): one line
  every :data:`LINE_EVERY` seconds while the work goes on, and the final count
  when any was shown (a short run shows only its summary), so a log is
  readable and never floods;
- **nothing** with ``--json``, whose only output is the final JSON summary
  (skipped and failed inputs are named in it rather than on stderr).

Notes written while a bar is shown (a skipped file, a failure) first clear
the bar and then redraw it, so the terminal never shows the two mixed.
"""

from __future__ import annotations

import shutil
import time
from typing import Callable, Optional

from cortex_memory.cli._console import Console

__all__ = ["LINE_EVERY", "Progress"]

#: Seconds between two plain progress lines.
LINE_EVERY = 2.0
# Seconds between two redraws of the bar.
_REDRAW_EVERY = 0.1
_BAR_WIDTH = 20


def _count(value: int, unit: str = "") -> str:
    text = f"{value:,}"
    if not unit:
        return text
    return f"{text} {unit[:-1] if value == 1 and unit.endswith('s') else unit}"


class Progress:
    """Counts work done for one command and shows it the way the console calls for.

    ``verb`` names the work (``importing``); ``unit`` what is counted
    (``files``, ``items``). ``total`` may be ``None`` when it is not known in
    advance (a generator, stdin, a remote listing).
    """

    def __init__(
        self,
        console: Console,
        verb: str,
        unit: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.verb = verb
        self.unit = unit
        self.total: Optional[int] = None
        self.done = 0
        self._clock = clock
        self._started = clock()
        self._shown_at: Optional[float] = None
        self._shown_done = -1
        self._bar_drawn = False
        if console.json_mode:
            self.mode = "off"
        else:
            isatty = getattr(console.stderr, "isatty", None)
            self.mode = "bar" if isatty is not None and isatty() else "lines"

    # -- what the commands call ---------------------------------------------------

    def start(self, total: Optional[int]) -> None:
        """Begin counting (``total`` inputs expected, or ``None`` when unknown)."""
        self.total = total
        self.done = 0
        self._started = self._clock()

    def advance(self, count: int = 1) -> None:
        """``count`` more inputs are done; show it if it is time to."""
        self.done += count
        self._show(final=False)

    def note(self, message: str) -> None:
        """Write ``cortex-memory: <message>`` on stderr without garbling the bar
        (nothing with ``--json``: its summary says it all)."""
        if self.mode == "off":
            return
        if self.mode == "bar" and self._bar_drawn:
            self._write("\r" + " " * self._columns() + "\r")
            self._bar_drawn = False
        self.console.note(message)
        if self.mode == "bar" and self.done:
            self._show(final=False, force=True)

    def finish(self) -> None:
        """Show the final count (a bar ends its line)."""
        self._show(final=True)
        if self.mode == "bar" and self._bar_drawn:
            self._write("\n")
            self._bar_drawn = False
        self.console.flush(self.console.stderr)

    # -- drawing --------------------------------------------------------------------

    def _show(self, *, final: bool, force: bool = False) -> None:
        if self.mode == "off":
            return
        now = self._clock()
        if self.mode == "bar":
            due = self._shown_at is None or now - self._shown_at >= _REDRAW_EVERY
            if final or force or due:
                self._write("\r" + self._bar_text(now).ljust(self._columns())[: self._columns()])
                self._bar_drawn = True
                self._shown_at = now
            return
        if self.done == self._shown_done or (final and self._shown_at is None):
            return
        since = self._started if self._shown_at is None else self._shown_at
        if final or now - since >= LINE_EVERY:
            self.console.note(f"{self.verb}: {self._line_text()}")
            self.console.flush(self.console.stderr)
            self._shown_at = now
            self._shown_done = self.done

    def _line_text(self) -> str:
        if self.total is None:
            return _count(self.done, self.unit)
        percent = 100 * self.done // self.total if self.total else 100
        return f"{_count(self.done)} of {_count(self.total, self.unit)} ({percent}%)"

    def _bar_text(self, now: float) -> str:
        elapsed = max(now - self._started, 1e-9)
        rate = f"  {self.done / elapsed:,.0f}/s"
        if self.total is None:
            text = f"{self.verb} {_count(self.done, self.unit)}"
        else:
            share = min(self.done / self.total, 1.0) if self.total else 1.0
            filled = int(share * _BAR_WIDTH)
            bar = "#" * filled + "." * (_BAR_WIDTH - filled)
            text = (
                f"{self.verb} [{bar}] {_count(self.done)}/{_count(self.total)} "
                f"{int(share * 100)}%"
            )
        # The rate goes first when the terminal is narrow; the count never does.
        return text + rate if len(text + rate) <= self._columns() else text

    def _columns(self) -> int:
        # One column short of the width: a full line would wrap on some terminals.
        return max(shutil.get_terminal_size((80, 24)).columns - 1, 20)

    def _write(self, text: str) -> None:
        self.console.stderr.write(text)  # ASCII only: every console can show it

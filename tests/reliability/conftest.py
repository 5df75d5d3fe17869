"""Session-wide secrecy watch of the reliability suite (quality.md, "Secrets").

Every test in this folder runs with the root logger (and every logger known so
far, urllib3's included) at DEBUG and a handler that checks each record as it is
emitted: its formatted message, its arguments and any exception text must never
hold the canary token or a canary local path, and a record above DEBUG must never
hold canary memory content. The engines of this suite all carry the canary token
and store canary content and paths (``_support.py``), so the fault matrix, the
hostile servers, the thread tests and the canary sweep are all watched.
"""

from __future__ import annotations

import logging
from typing import Iterator, List, Tuple

import pytest

from ._support import CANARY_CONTENT, CANARY_TOKEN, PATH_FRAGMENTS

_FORMAT = logging.Formatter("%(name)s %(levelname)s %(message)s")


class CanaryWatch(logging.Handler):
    """Checks every record against the canaries; keeps only the offending ones."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.seen = 0
        self.leaks: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen += 1
        try:
            text = _FORMAT.format(record) + " " + repr(record.args)
        except Exception as exc:  # a record that cannot be formatted is a bug too
            self.leaks.append(f"{record.name}: unformattable record ({exc!r})")
            return
        where = f"{record.name} {record.levelname}"
        if CANARY_TOKEN in text:
            self.leaks.append(f"{where}: the canary token: {text[:200]!r}")
        for fragment in PATH_FRAGMENTS:
            if fragment in text:
                self.leaks.append(f"{where}: local path {fragment!r}: {text[:200]!r}")
        if record.levelno > logging.DEBUG and CANARY_CONTENT in text:
            self.leaks.append(f"{where}: memory content above DEBUG: {text[:200]!r}")


def _open_up() -> List[Tuple[logging.Logger, int, bool]]:
    touched = []
    names = [*logging.root.manager.loggerDict, "urllib3", "cortex_memory"]
    for name in names:
        logger = logging.getLogger(name)
        touched.append((logger, logger.level, logger.disabled))
        logger.setLevel(logging.DEBUG)
        logger.disabled = False
    return touched


@pytest.fixture(autouse=True)
def canary_watch() -> Iterator[CanaryWatch]:
    """Capture every log record at DEBUG during the test; fail it if any holds a canary."""
    watch = CanaryWatch()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(watch)
    root.setLevel(logging.DEBUG)
    touched = _open_up()
    try:
        yield watch
    finally:
        root.removeHandler(watch)
        root.setLevel(old_level)
        for logger, level, disabled in touched:
            logger.setLevel(level)
            logger.disabled = disabled
    assert watch.leaks == [], "\n".join(watch.leaks[:20])

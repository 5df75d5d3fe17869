"""What the GUI examples run on their worker thread, with no toolkit and no thread of its own.

The Tk example (``tk_memory.py``) and the Qt example (``qt_memory.py``) differ in
how a job reaches the worker thread and how its outcome comes back to the UI
thread: queues polled with ``after()`` under Tk, queued signals under Qt. What a
job *is*, how it runs against an engine and how its outcome reads are the same,
and live here:

* :class:`Job` and :class:`Outcome`, the values that cross between the threads;
* :class:`JobRunner`, which runs one job against a ``MemoryEngine`` (bounded by
  ``deadline=``, which every engine takes) and turns every result, failures
  included, into an :class:`Outcome`;
* :func:`describe_error`, the line a window shows for each kind of failure,
  and :func:`render`, the transcript text of an outcome;
* :func:`open_local_engine`, the engine both examples use by default.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from cortex_memory import (
    ConfigError,
    Error,
    InvalidRequestError,
    MemoryEngine,
    RecallRequest,
    StoreItem,
    UnauthorizedError,
    UnavailableError,
    WaitFor,
    is_insufficient_credits,
)

logger = logging.getLogger(__name__)

STORE = "store"
RECALL = "recall"


@dataclass(frozen=True)
class Job:
    """One thing to do on the worker: store a note or recall an answer."""

    id: int
    action: str
    text: str


@dataclass(frozen=True)
class Outcome:
    """What became of a job: ``ok`` and the text to show (``error`` when it failed)."""

    job_id: int
    action: str
    ok: bool
    message: str
    error: Optional[BaseException] = None
    citations: Tuple[str, ...] = ()


def describe_error(err: BaseException) -> str:
    """The line the window shows for a failed job: what happened and what to do."""
    if isinstance(err, UnauthorizedError):
        return "Sign in again: the memory service refused the credential."
    if is_insufficient_credits(err):
        return "Top up: the account has run out of credits."
    if isinstance(err, UnavailableError):
        return f"Retry later: the memory service is unavailable ({err.message})."
    if isinstance(err, InvalidRequestError):
        return f"Check your input: {err.message}"
    if isinstance(err, ConfigError):
        return f"Check the settings: {err.message}"
    if isinstance(err, Error):
        return f"Memory error: {err.message}"
    return f"Unexpected error ({type(err).__name__}); see the log."


def render(outcome: Outcome) -> str:
    """The transcript lines of an outcome: ``[store ok] ...`` and one line per citation."""
    mark = "ok" if outcome.ok else "failed"
    lines = [f"[{outcome.action} {mark}] {outcome.message}"]
    lines += [f"    cites: {snippet}" for snippet in outcome.citations]
    return "\n".join(lines) + "\n"


class JobRunner:
    """Runs jobs against one engine, one at a time, on whatever thread calls :meth:`run`.

    ``deadline`` (seconds) bounds each call (every ``MemoryEngine`` takes
    ``deadline=``), so a stalled network or a locked database file cannot hold
    a job forever; ``None`` leaves the engine's own timeouts in charge. Notes are
    stored as documents and wait until they are visible, so a recall submitted
    right after a note finds it.
    """

    def __init__(
        self, engine: MemoryEngine, *, deadline: Optional[float] = 30.0, recall_limit: int = 5
    ) -> None:
        self.engine = engine
        self._recall_limit = recall_limit
        self._store_options: Dict[str, Any] = {"wait": WaitFor.VISIBLE, "deadline": deadline}
        self._recall_options: Dict[str, Any] = {"deadline": deadline}

    def run(self, job: Job) -> Outcome:
        """Run ``job``; every failure becomes a failed :class:`Outcome`, nothing is raised."""
        try:
            if job.action == STORE:
                receipt = self.engine.store(StoreItem.document(job.text), **self._store_options)
                said = "Already remembered" if receipt.replayed else "Remembered"
                return Outcome(job.id, job.action, True, f"{said} ({receipt.id[:8]})")
            request = RecallRequest.new(job.text, self._recall_limit)
            answer = self.engine.recall(request, **self._recall_options)
            cited = tuple(citation.snippet for citation in answer.citations)
            return Outcome(job.id, job.action, True, answer.answer, citations=cited)
        except Error as err:
            return Outcome(job.id, job.action, False, describe_error(err), error=err)
        except Exception as exc:  # a bug must not kill the worker: show it, log it
            logger.exception("memory job %d (%s) failed", job.id, job.action)
            return Outcome(job.id, job.action, False, describe_error(exc), error=exc)


def open_local_engine(path: Optional[str] = None) -> MemoryEngine:
    """The local engine at ``path`` (default: the per-user database, its folder created)."""
    from cortex_memory.local import LocalEngine
    from cortex_memory.paths import default_database_path

    return LocalEngine(path if path is not None else default_database_path(create=True))

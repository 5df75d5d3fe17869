"""A Tk window that remembers notes and answers questions without ever freezing.

    python docs/examples/tk_memory.py [PATH]

PATH is the local engine's SQLite file (default: the per-user data path, the
same file the ``cortex-memory`` command uses; ``:memory:`` keeps nothing after
the window closes).

Every engine call blocks: it may read a disk, wait on a network, retry, poll.
So the window never calls the engine itself. It hands each job to one worker
thread through a ``queue.Queue`` and picks the outcomes up from a second queue
with ``after()``, a few times a second, on the Tk thread. Tk widgets are touched
only on the Tk thread; the engine is touched only on the worker.

The two halves are separate on purpose:

* :class:`MemoryWorker` owns the engine, the job queue, the outcome queue and
  the thread. It needs no display and no Tk, so it can be tested (and reused
  under Qt, a CLI or a server) on its own;
* :class:`MemoryWindow` is the Tk part: two entries, two buttons, a transcript
  and a status line. It only submits jobs and shows outcomes.

Errors are shown in the window by class, with what the user can do about it
(:func:`describe_error`): sign in again, top up, retry later, fix the input.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import logging
import queue
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

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

if TYPE_CHECKING:  # pragma: no cover
    import tkinter as tk

logger = logging.getLogger(__name__)

STORE = "store"
RECALL = "recall"


# -- the worker: no Tk, no display ---------------------------------------------------------


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


def _takes_deadline(method: Any) -> bool:
    """True when an engine method accepts ``deadline=`` (``CortexEngine`` does)."""
    try:
        return "deadline" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


class MemoryWorker:
    """One thread that runs every engine call of a window, in the order submitted.

    ``submit_store`` and ``submit_recall`` return a job id at once; the outcomes
    arrive, in submission order, from :meth:`poll` (which never blocks). An
    engine error becomes a failed :class:`Outcome` with a readable message; the
    thread survives every failure. ``deadline`` (seconds) bounds each call of an
    engine that accepts ``deadline=`` (``CortexEngine``), so a stalled network
    cannot hold a job forever. :meth:`close` drops the jobs not yet started,
    waits for the one in flight and joins the thread; it closes the engine when
    ``close_engine`` is true and the thread has ended.
    """

    def __init__(
        self,
        engine: MemoryEngine,
        *,
        close_engine: bool = True,
        deadline: Optional[float] = 30.0,
        recall_limit: int = 5,
    ) -> None:
        self.engine = engine
        self._close_engine = close_engine
        self._recall_limit = recall_limit
        self._store_options: Dict[str, Any] = {"wait": WaitFor.VISIBLE}
        self._recall_options: Dict[str, Any] = {}
        if deadline is not None:
            if _takes_deadline(engine.store):
                self._store_options["deadline"] = deadline
            if _takes_deadline(engine.recall):
                self._recall_options["deadline"] = deadline
        self._jobs: queue.Queue[Optional[Job]] = queue.Queue()
        self._outcomes: queue.Queue[Outcome] = queue.Queue()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending = 0
        self._closing = threading.Event()
        self._engine_closed = False
        self._thread = threading.Thread(target=self._run, name="memory-worker", daemon=True)
        self._thread.start()

    # -- the caller's side (the UI thread) -------------------------------------------------

    def submit_store(self, note: str) -> int:
        """Queue storing ``note`` as a document; return the job id."""
        return self._submit(STORE, note)

    def submit_recall(self, question: str) -> int:
        """Queue answering ``question`` from memory; return the job id."""
        return self._submit(RECALL, question)

    def _submit(self, action: str, text: str) -> int:
        with self._lock:
            if self._closing.is_set():
                raise RuntimeError("the memory worker is closed")
            job = Job(next(self._ids), action, text)
            self._pending += 1
        self._jobs.put(job)
        return job.id

    def poll(self) -> List[Outcome]:
        """Every outcome that has arrived since the last poll, oldest first; never blocks."""
        outcomes: List[Outcome] = []
        while True:
            try:
                outcomes.append(self._outcomes.get_nowait())
            except queue.Empty:
                return outcomes

    @property
    def pending(self) -> int:
        """Jobs submitted whose outcome has not been produced yet."""
        with self._lock:
            return self._pending

    @property
    def alive(self) -> bool:
        """True while the worker thread runs."""
        return self._thread.is_alive()

    def close(self, timeout: float = 10.0) -> bool:
        """Stop: drop unstarted jobs, finish the running one, join. True when the thread ended."""
        with self._lock:
            self._closing.set()
        self._jobs.put(None)
        self._thread.join(timeout)
        ended = not self._thread.is_alive()
        with self._lock:
            close_now = ended and self._close_engine and not self._engine_closed
            self._engine_closed = self._engine_closed or close_now
        if close_now:
            self.engine.close()
        return ended

    # -- the worker thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if self._closing.is_set():
                self._finished()
                continue  # the window is closing: nobody will read this outcome
            outcome = self._perform(job)
            self._outcomes.put(outcome)
            self._finished()

    def _finished(self) -> None:
        with self._lock:
            self._pending -= 1

    def _perform(self, job: Job) -> Outcome:
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


# -- the window: Tk, on the Tk thread only ---------------------------------------------------


class MemoryWindow:
    """The Tk front of a :class:`MemoryWorker`: submits jobs, polls outcomes with ``after()``."""

    POLL_MS = 50

    def __init__(self, root: tk.Tk, worker: MemoryWorker) -> None:
        import tkinter as tk
        from tkinter import ttk

        self.root = root
        self.worker = worker
        root.title("Memory")
        frame = ttk.Frame(root, padding=8)
        frame.grid(sticky="nsew")
        root.columnconfigure(0, weight=1)
        root.rowconfigure(0, weight=1)
        frame.columnconfigure(1, weight=1)
        frame.rowconfigure(2, weight=1)

        ttk.Label(frame, text="Note").grid(row=0, column=0, sticky="w")
        self.note = ttk.Entry(frame)
        self.note.grid(row=0, column=1, sticky="ew", padx=4)
        self.remember = ttk.Button(frame, text="Remember", command=self.on_remember)
        self.remember.grid(row=0, column=2)

        ttk.Label(frame, text="Question").grid(row=1, column=0, sticky="w")
        self.question = ttk.Entry(frame)
        self.question.grid(row=1, column=1, sticky="ew", padx=4)
        self.ask = ttk.Button(frame, text="Recall", command=self.on_recall)
        self.ask.grid(row=1, column=2)

        self.output = tk.Text(frame, height=14, width=70, wrap="word", state="disabled")
        self.output.grid(row=2, column=0, columnspan=3, sticky="nsew", pady=(8, 4))
        self.status = tk.StringVar(value="Ready.")
        ttk.Label(frame, textvariable=self.status).grid(row=3, column=0, columnspan=3, sticky="w")

        self.note.bind("<Return>", lambda _event: self.on_remember())
        self.question.bind("<Return>", lambda _event: self.on_recall())
        root.protocol("WM_DELETE_WINDOW", self.close)
        self._poll_id: Optional[str] = root.after(self.POLL_MS, self._poll)

    def on_remember(self) -> None:
        """Queue the typed note; the entry clears at once, the outcome comes later."""
        note = self.note.get()
        if not note.strip():
            self.status.set("Type a note first.")
            return
        self.worker.submit_store(note)
        self.note.delete(0, "end")
        self._show_pending()

    def on_recall(self) -> None:
        """Queue the typed question."""
        question = self.question.get()
        if not question.strip():
            self.status.set("Type a question first.")
            return
        self.worker.submit_recall(question)
        self._append(f"? {question}\n")
        self._show_pending()

    def transcript(self) -> str:
        """Everything the window has shown so far."""
        return str(self.output.get("1.0", "end-1c"))

    def _poll(self) -> None:
        for outcome in self.worker.poll():
            self._append(self._render(outcome))
        self._show_pending()
        self._poll_id = self.root.after(self.POLL_MS, self._poll)

    @staticmethod
    def _render(outcome: Outcome) -> str:
        mark = "ok" if outcome.ok else "failed"
        lines = [f"[{outcome.action} {mark}] {outcome.message}"]
        lines += [f"    cites: {snippet}" for snippet in outcome.citations]
        return "\n".join(lines) + "\n"

    def _append(self, text: str) -> None:
        self.output.configure(state="normal")
        self.output.insert("end", text)
        self.output.see("end")
        self.output.configure(state="disabled")

    def _show_pending(self) -> None:
        pending = self.worker.pending
        self.status.set(f"Working on {pending} job(s)..." if pending else "Ready.")

    def close(self) -> None:
        """Stop polling, close the worker (it joins its thread) and destroy the window."""
        if self._poll_id is not None:
            self.root.after_cancel(self._poll_id)
            self._poll_id = None
        self.worker.close()
        self.root.destroy()


# -- running it -------------------------------------------------------------------------------


def open_local_engine(path: Optional[str] = None) -> MemoryEngine:
    """The local engine at ``path`` (default: the per-user database, its folder created)."""
    from cortex_memory.local import LocalEngine
    from cortex_memory.paths import default_database_path

    return LocalEngine(path if path is not None else default_database_path(create=True))


def run(engine: MemoryEngine, *, root: Optional[tk.Tk] = None) -> MemoryWindow:
    """Build the window for any engine; the caller runs ``window.root.mainloop()``."""
    import tkinter as tk

    return MemoryWindow(root if root is not None else tk.Tk(), MemoryWorker(engine))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="A small Tk window over cortex_memory.")
    parser.add_argument(
        "path", nargs="?", help="SQLite file of the local engine (default: per-user data path)"
    )
    args = parser.parse_args(argv)
    window = run(open_local_engine(args.path))
    window.root.mainloop()
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sys.exit(main())

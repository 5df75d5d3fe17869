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
  under a CLI or a server) on its own;
* :class:`MemoryWindow` is the Tk part: two entries, two buttons, a transcript
  and a status line. It only submits jobs and shows outcomes.

What a job is, how it runs against the engine and how its outcome reads come
from ``memory_jobs.py`` beside this file, which the Qt example
(``qt_memory.py``) shares. Errors are shown in the window by class, with what
the user can do about it (:func:`describe_error`): sign in again, top up, retry
later, fix the input.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import queue
import sys
import threading
from typing import TYPE_CHECKING, List, Optional, Sequence

from memory_jobs import (
    RECALL,
    STORE,
    Job,
    JobRunner,
    Outcome,
    describe_error,
    open_local_engine,
    render,
)

from cortex_memory import MemoryEngine

if TYPE_CHECKING:  # pragma: no cover
    import tkinter as tk

__all__ = [
    "Job",
    "MemoryWindow",
    "MemoryWorker",
    "Outcome",
    "describe_error",
    "main",
    "open_local_engine",
    "render",
    "run",
]

logger = logging.getLogger(__name__)


# -- the worker: no Tk, no display ---------------------------------------------------------


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
        self._runner = JobRunner(engine, deadline=deadline, recall_limit=recall_limit)
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
            outcome = self._runner.run(job)
            self._outcomes.put(outcome)
            self._finished()

    def _finished(self) -> None:
        with self._lock:
            self._pending -= 1


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
        self._shown_pending = 0  # the job count the status line last showed
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
        arrived = self.worker.poll()
        for outcome in arrived:
            self._append(render(outcome))
        # The status changes only when something happened (an outcome, or the
        # count of jobs in flight): a hint such as "Type a note first." must
        # stay until then, not be overwritten by the next tick.
        if arrived or self.worker.pending != self._shown_pending:
            self._show_pending()
        self._poll_id = self.root.after(self.POLL_MS, self._poll)

    def _append(self, text: str) -> None:
        self.output.configure(state="normal")
        self.output.insert("end", text)
        self.output.see("end")
        self.output.configure(state="disabled")

    def _show_pending(self) -> None:
        pending = self.worker.pending
        self._shown_pending = pending
        self.status.set(f"Working on {pending} job(s)..." if pending else "Ready.")

    def close(self) -> None:
        """Stop polling, close the worker (it joins its thread) and destroy the window."""
        if self._poll_id is not None:
            self.root.after_cancel(self._poll_id)
            self._poll_id = None
        self.worker.close()
        self.root.destroy()


# -- running it -------------------------------------------------------------------------------


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

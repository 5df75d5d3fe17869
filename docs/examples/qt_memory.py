"""A Qt (PySide6) window that remembers notes and answers questions without ever freezing.

    pip install PySide6-Essentials    # or PySide6
    python docs/examples/qt_memory.py [PATH]

PATH is the local engine's SQLite file (default: the per-user data path, the
same file the ``cortex-memory`` command uses; ``:memory:`` keeps nothing after
the window closes). It is the Qt twin of ``tk_memory.py``: the same window,
the same jobs, the same error lines.

Every engine call blocks: it may read a disk, wait on a network, retry, poll.
So the window never calls the engine itself. Under Qt the hand-over is done by
signals instead of queues:

* :class:`MemoryWorker` is a ``QObject`` moved to a ``QThread``. Its slot
  :meth:`~MemoryWorker.run_job` runs one job; it is connected to a signal of
  the GUI side, so every job crosses to the worker thread as a *queued* call
  and the worker's event loop runs them one at a time, in the order submitted
  (a recall submitted after a note sees the note).
* :class:`MemoryClient` lives on the GUI thread. It owns the thread and the
  worker, submits jobs (``submit_store``, ``submit_recall``: they return a job
  id at once) and re-emits each :class:`Outcome` as its ``outcome`` signal,
  delivered on the GUI thread, so a slot connected to it may touch widgets.
  It needs no widget and no display: a ``QCoreApplication`` is enough.
* :class:`MemoryWindow` is the widget part: two line edits, two buttons, a
  transcript and a status line. It only submits jobs and shows outcomes.

Closing the window drops the jobs not yet started, waits for the one in flight
(bounded by ``deadline=`` on a ``CortexEngine``), ends the thread and closes
the engine. What a job is, how it runs and how its outcome reads come from
``memory_jobs.py`` beside this file, shared with the Tk example.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import sys
import threading
from typing import Optional, Sequence

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
from PySide6.QtCore import QObject, QThread, Signal, Slot
from PySide6.QtGui import QCloseEvent, QTextCursor
from PySide6.QtWidgets import (
    QApplication,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QWidget,
)

from cortex_memory import MemoryEngine

__all__ = [
    "Job",
    "MemoryClient",
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


# -- the worker thread and its handle: no widgets, no display --------------------------------


class _Tally:
    """Jobs submitted and not finished, counted under a lock by both threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.pending = 0

    def add(self, count: int) -> None:
        with self._lock:
            self.pending += count

    def read(self) -> int:
        with self._lock:
            return self.pending

    def clear(self) -> None:
        with self._lock:
            self.pending = 0


class MemoryWorker(QObject):
    """Runs the jobs on the worker thread; emits ``finished(Outcome)`` for each one it ran.

    Built by :class:`MemoryClient`, which moves it to its ``QThread``. A job
    that reaches :meth:`run_job` after the client started closing is dropped:
    nobody would read its outcome.
    """

    finished = Signal(object)

    def __init__(self, runner: JobRunner, closing: threading.Event, tally: _Tally) -> None:
        super().__init__()
        self._runner = runner
        self._closing = closing
        self._tally = tally

    @Slot(object)
    def run_job(self, job: Job) -> None:
        """Run ``job`` (on the worker thread) and emit its outcome."""
        if self._closing.is_set():
            self._tally.add(-1)
            return
        outcome = self._runner.run(job)
        self._tally.add(-1)  # before the emit: the GUI reads the count when the outcome lands
        self.finished.emit(outcome)


class MemoryClient(QObject):
    """The GUI thread's handle on one worker thread that runs every engine call, in order.

    ``submit_store`` and ``submit_recall`` return a job id at once; each
    outcome arrives, in submission order, as the ``outcome`` signal, emitted on
    the thread that built the client (connect a slot that updates widgets). An
    engine error becomes a failed :class:`Outcome` with a readable message; the
    thread survives every failure. ``deadline`` (seconds) bounds each call of an
    engine that accepts ``deadline=`` (``CortexEngine``). :meth:`close` drops
    the jobs not yet started, waits for the one in flight and ends the thread;
    it closes the engine when ``close_engine`` is true and the thread has ended.
    """

    outcome = Signal(object)
    _jobs = Signal(object)

    def __init__(
        self,
        engine: MemoryEngine,
        *,
        close_engine: bool = True,
        deadline: Optional[float] = 30.0,
        recall_limit: int = 5,
        parent: Optional[QObject] = None,
    ) -> None:
        super().__init__(parent)
        self.engine = engine
        self._close_engine = close_engine
        self._engine_closed = False
        self._ids = itertools.count(1)
        self._closing = threading.Event()
        self._tally = _Tally()
        self._thread = QThread()
        self._thread.setObjectName("memory-worker")
        runner = JobRunner(engine, deadline=deadline, recall_limit=recall_limit)
        self._worker = MemoryWorker(runner, self._closing, self._tally)
        self._worker.moveToThread(self._thread)
        # The worker lives on the other thread, so both connections are queued:
        # a job crosses to the worker's event loop, an outcome comes back to ours.
        self._jobs.connect(self._worker.run_job)
        self._worker.finished.connect(self._deliver)
        self._thread.finished.connect(self._worker.deleteLater)
        self._thread.start()

    def submit_store(self, note: str) -> int:
        """Queue storing ``note`` as a document; return the job id."""
        return self._submit(STORE, note)

    def submit_recall(self, question: str) -> int:
        """Queue answering ``question`` from memory; return the job id."""
        return self._submit(RECALL, question)

    def _submit(self, action: str, text: str) -> int:
        if self._closing.is_set():
            raise RuntimeError("the memory worker is closed")
        job = Job(next(self._ids), action, text)
        self._tally.add(1)
        self._jobs.emit(job)
        return job.id

    @Slot(object)
    def _deliver(self, outcome: Outcome) -> None:
        self.outcome.emit(outcome)

    @property
    def pending(self) -> int:
        """Jobs submitted whose outcome has not been produced yet."""
        return self._tally.read()

    @property
    def alive(self) -> bool:
        """True while the worker thread runs."""
        return bool(self._thread.isRunning())

    def close(self, timeout: float = 10.0) -> bool:
        """Stop: drop unstarted jobs, finish the running one, end the thread. True when it ended.

        Outcomes already produced still arrive through ``outcome`` once the
        event loop of the client's thread runs again.
        """
        self._closing.set()
        self._thread.quit()
        ended = bool(self._thread.wait(max(0, int(timeout * 1000))))
        if ended:
            self._tally.clear()  # jobs still queued to the ended thread never run
        close_now = ended and self._close_engine and not self._engine_closed
        self._engine_closed = self._engine_closed or close_now
        if close_now:
            self.engine.close()
        return ended


# -- the window: widgets, on the GUI thread only ------------------------------------------------


class MemoryWindow(QWidget):
    """The Qt front of a :class:`MemoryClient`: submits jobs, shows outcomes as they arrive."""

    def __init__(self, client: MemoryClient, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.client = client
        self.setWindowTitle("Memory")
        grid = QGridLayout(self)

        grid.addWidget(QLabel("Note"), 0, 0)
        self.note = QLineEdit()
        grid.addWidget(self.note, 0, 1)
        self.remember = QPushButton("Remember")
        grid.addWidget(self.remember, 0, 2)

        grid.addWidget(QLabel("Question"), 1, 0)
        self.question = QLineEdit()
        grid.addWidget(self.question, 1, 1)
        self.ask = QPushButton("Recall")
        grid.addWidget(self.ask, 1, 2)

        self.output = QPlainTextEdit()
        self.output.setReadOnly(True)
        grid.addWidget(self.output, 2, 0, 1, 3)
        self.status = QLabel("Ready.")
        grid.addWidget(self.status, 3, 0, 1, 3)
        grid.setRowStretch(2, 1)
        grid.setColumnStretch(1, 1)
        self.resize(640, 360)

        self.remember.clicked.connect(self.on_remember)
        self.note.returnPressed.connect(self.on_remember)
        self.ask.clicked.connect(self.on_recall)
        self.question.returnPressed.connect(self.on_recall)
        client.outcome.connect(self._show_outcome)

    @Slot()
    def on_remember(self) -> None:
        """Queue the typed note; the entry clears at once, the outcome comes later."""
        note = self.note.text()
        if not note.strip():
            self.status.setText("Type a note first.")
            return
        self.client.submit_store(note)
        self.note.clear()
        self._show_pending()

    @Slot()
    def on_recall(self) -> None:
        """Queue the typed question."""
        question = self.question.text()
        if not question.strip():
            self.status.setText("Type a question first.")
            return
        self.client.submit_recall(question)
        self._append(f"? {question}\n")
        self._show_pending()

    def transcript(self) -> str:
        """Everything the window has shown so far."""
        return str(self.output.toPlainText())

    @Slot(object)
    def _show_outcome(self, outcome: Outcome) -> None:
        self._append(render(outcome))
        self._show_pending()

    def _append(self, text: str) -> None:
        # The transcript is read-only to the user; text goes in at its end.
        self.output.moveCursor(QTextCursor.MoveOperation.End)
        self.output.insertPlainText(text)
        self.output.ensureCursorVisible()

    def _show_pending(self) -> None:
        pending = self.client.pending
        self.status.setText(f"Working on {pending} job(s)..." if pending else "Ready.")

    def closeEvent(self, event: QCloseEvent) -> None:  # Qt's name for the handler
        """Close the client (it ends its thread and closes the engine), then the window."""
        self.client.close()
        event.accept()


# -- running it -------------------------------------------------------------------------------


def run(engine: MemoryEngine) -> MemoryWindow:
    """Build the window for any engine (a ``QApplication`` must exist); the caller shows it."""
    return MemoryWindow(MemoryClient(engine))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="A small Qt window over cortex_memory.")
    parser.add_argument(
        "path", nargs="?", help="SQLite file of the local engine (default: per-user data path)"
    )
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = run(open_local_engine(args.path))
    window.show()
    return int(app.exec())


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sys.exit(main())

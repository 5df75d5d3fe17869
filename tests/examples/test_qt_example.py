"""The Qt GUI example (docs/examples/qt_memory.py): a QThread worker keeps the window responsive.

Headless: this module sets ``QT_QPA_PLATFORM=offscreen`` before Qt starts (and
``scripts/test`` exports it too), so the real widgets are built, typed into and
clicked with ``QTest`` on any machine, display or not. The event loop is pumped
by the test (``processEvents``); it must keep ticking while an engine call is
held on the worker thread, and each outcome must arrive on the GUI thread.

PySide6 is a test-only dependency: ``scripts/test`` installs PySide6-Essentials
into the default test venv when the package index has a wheel for the machine,
and never into a plain install or the oldest-Python venv. Without it the whole
module is skipped, and the skip says why.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from typing import Any, Iterator, List

import pytest

from cortex_memory import RecallRequest
from cortex_memory.local import LocalEngine

from ._engines import (
    ERROR_SCRIPT,
    EXAMPLES,
    WAIT,
    Gated,
    Scripted,
    TakesDeadline,
    check_error_script,
    load_example,
    submit_error_script,
    wait_for,
)

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before any Qt application exists

try:
    from PySide6.QtCore import QCoreApplication, Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication
except ImportError as exc:  # pragma: no cover - depends on the machine
    pytest.skip(
        f"PySide6 cannot be imported ({exc}): scripts/test installs PySide6-Essentials only "
        "where the package index has a wheel for this machine and Python",
        allow_module_level=True,
    )

qt_memory = load_example("qt_memory")


@pytest.fixture(scope="module")
def app() -> QApplication:
    """The process's one QApplication (Qt allows one; it lives until the process ends)."""
    existing = QApplication.instance()
    if existing is not None:
        assert isinstance(existing, QApplication)
        return existing
    return QApplication([])


@pytest.fixture
def local() -> Iterator[LocalEngine]:
    engine = LocalEngine(":memory:")
    yield engine
    engine.close()


@pytest.fixture
def clients(app: QApplication) -> Iterator[List[Any]]:
    """Clients and windows a test made; closed (threads ended) and collected on this thread."""
    made: List[Any] = []
    yield made
    for thing in made:
        client = getattr(thing, "client", thing)
        for engine in (client.engine, getattr(client.engine, "inner", None)):
            if isinstance(engine, Gated):
                engine.release()
        client.close(WAIT)  # a QThread destroyed while it runs aborts the process
        thing.deleteLater()
    made.clear()
    _pump(0.05)
    gc.collect()


def _pump(seconds: float) -> None:
    """Run the GUI thread's event loop for ``seconds``."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        QCoreApplication.processEvents()
        time.sleep(0.005)


def _process() -> None:
    QCoreApplication.processEvents()


# -- the window ----------------------------------------------------------------------------------


def test_window_stays_responsive_while_the_engine_is_slow(
    clients: List[Any], local: LocalEngine
) -> None:
    slow = Gated(local)
    window = qt_memory.run(slow)
    clients.append(window)
    window.show()
    delivered_on: List[int] = []
    window.client.outcome.connect(lambda _outcome: delivered_on.append(threading.get_ident()))
    ticks = [0]
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
    timer.start(10)

    QTest.keyClicks(window.note, "The helix release ships on Friday.")
    QTest.mouseClick(window.remember, Qt.MouseButton.LeftButton)
    assert window.note.text() == "", "the entry clears at once"
    assert slow.entered.wait(WAIT), "the worker never called the engine"
    held_at = ticks[0]
    wait_for(lambda: ticks[0] >= held_at + 20, _process, "20 timer ticks while the call is held")
    assert "Remembered" not in window.transcript()
    assert window.status.text() == "Working on 1 job(s)..."
    slow.release()
    wait_for(lambda: "Remembered" in window.transcript(), _process, "the store outcome")
    assert window.status.text() == "Ready."

    QTest.keyClicks(window.question, "When does the helix release ship?")
    QTest.keyClick(window.question, Qt.Key.Key_Return)  # Return submits like the button
    wait_for(lambda: "cites:" in window.transcript(), _process, "the recall outcome")
    timer.stop()
    transcript = window.transcript()
    assert "? When does the helix release ship?\n" in transcript
    assert "[recall ok] The helix release ships on Friday." in transcript
    assert "    cites: The helix release ships on Friday." in transcript
    assert transcript.index("[store ok] Remembered (") < transcript.index("[recall ok]")

    main_thread = threading.get_ident()
    assert delivered_on == [main_thread, main_thread], "outcomes arrive on the GUI thread"
    assert slow.threads, "the engine was called"
    assert main_thread not in slow.threads, "the engine is never called on the GUI thread"
    assert len(set(slow.threads)) == 1, "one worker thread runs every job"

    client = window.client
    assert window.close()  # closeEvent closes the client: thread ended, engine closed
    assert not client.alive
    assert slow.closed


def test_a_hint_stays_until_something_happens(clients: List[Any], local: LocalEngine) -> None:
    slow = Gated(local)
    window = qt_memory.run(slow)
    clients.append(window)
    window.show()
    QTest.mouseClick(window.remember, Qt.MouseButton.LeftButton)  # nothing typed
    assert window.status.text() == "Type a note first."
    _pump(0.4)
    assert window.status.text() == "Type a note first."
    QTest.mouseClick(window.ask, Qt.MouseButton.LeftButton)
    _pump(0.2)
    assert window.status.text() == "Type a question first."
    assert window.client.pending == 0
    # Something happening replaces the hint: a job in flight, then its outcome.
    QTest.keyClicks(window.note, "Hints give way to news.")
    QTest.keyClick(window.note, Qt.Key.Key_Return)
    assert window.status.text() == "Working on 1 job(s)..."
    slow.release()
    wait_for(lambda: window.status.text() == "Ready.", _process, "the outcome")
    assert "[store ok] Remembered (" in window.transcript()


# -- the client, without widgets ---------------------------------------------------------------


def _collect(client: Any) -> List[Any]:
    """The outcomes ``client`` delivers, in a list that grows as the GUI loop runs."""
    outcomes: List[Any] = []
    client.outcome.connect(outcomes.append)
    return outcomes


def test_outcomes_arrive_in_order_and_errors_read_by_class(
    clients: List[Any], local: LocalEngine
) -> None:
    engine = Scripted(local, [error for _, _, error, _, _ in ERROR_SCRIPT])
    client = qt_memory.MemoryClient(engine)
    clients.append(client)
    outcomes = _collect(client)
    ids = submit_error_script(client.submit_store, client.submit_recall)
    wait_for(lambda: len(outcomes) == len(ids), _process, "every outcome")
    check_error_script(outcomes, ids)
    assert client.alive, "no failure may end the worker thread"
    assert client.pending == 0
    assert client.close(WAIT)


def test_close_finishes_the_running_job_drops_the_rest_and_ends_the_thread(
    clients: List[Any], local: LocalEngine
) -> None:
    slow = Gated(local)
    client = qt_memory.MemoryClient(slow)
    clients.append(client)
    outcomes = _collect(client)
    client.submit_store("first")
    client.submit_store("second")
    client.submit_recall("third?")
    assert slow.entered.wait(WAIT)
    assert client.pending == 3
    released = threading.Event()

    def release() -> None:
        released.set()
        slow.release()

    opener = threading.Timer(0.1, release)
    opener.start()
    try:
        assert client.close(WAIT), "the thread ended"
    finally:
        opener.join(WAIT)
    assert released.is_set(), "close() waited for the call in flight"
    assert not client.alive
    assert slow.calls == ["store"], "jobs not yet started are dropped"
    assert client.pending == 0
    assert slow.closed
    # The outcome of the job that ran still arrives once the GUI loop runs.
    wait_for(lambda: len(outcomes) == 1, _process, "the finished job's outcome")
    assert outcomes[0].message.startswith("Remembered (")
    with pytest.raises(RuntimeError, match="closed"):
        client.submit_store("too late")
    assert client.close(WAIT), "closing twice is harmless"


def test_close_leaves_a_borrowed_engine_open(clients: List[Any], local: LocalEngine) -> None:
    engine = Gated(local, closed=False)
    client = qt_memory.MemoryClient(engine, close_engine=False)
    clients.append(client)
    outcomes = _collect(client)
    client.submit_store("kept")
    wait_for(lambda: len(outcomes) == 1, _process, "the outcome")
    assert outcomes[0].ok
    assert client.close(WAIT)
    assert not engine.closed
    assert local.health().state.value == "ok"


def test_deadline_reaches_engines_that_take_one(clients: List[Any], local: LocalEngine) -> None:
    engine = TakesDeadline(local)
    client = qt_memory.MemoryClient(engine, deadline=7.5)
    clients.append(client)
    outcomes = _collect(client)
    client.submit_store("bounded")
    client.submit_recall("bounded?")
    wait_for(lambda: len(outcomes) == 2, _process, "both outcomes")
    assert all(o.ok for o in outcomes)
    assert engine.deadlines == [7.5, 7.5]


# -- the program --------------------------------------------------------------------------------


def test_main_opens_the_window_and_quits_when_it_closes(tmp_path: os.PathLike[str]) -> None:
    """``python qt_memory.py PATH`` end to end in its own process: type, remember, recall, close."""
    database = os.path.join(str(tmp_path), "notes.sqlite3")
    driver = (
        "import sys\n"
        f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
        "from PySide6.QtCore import QTimer\n"
        "from PySide6.QtWidgets import QApplication\n"
        "import qt_memory\n"
        "app = QApplication(sys.argv[:1])\n"
        "def drive():\n"
        "    windows = app.topLevelWidgets()\n"
        "    window, = [w for w in windows if isinstance(w, qt_memory.MemoryWindow)]\n"
        "    def seen(outcome):\n"
        "        if outcome.action == 'store':\n"
        "            window.question.setText('When is the demo?')\n"
        "            window.ask.click()\n"
        "        else:\n"
        "            print(window.transcript(), end='')\n"
        "            window.close()\n"
        "    window.client.outcome.connect(seen)\n"
        "    window.note.setText('The demo is on Thursday.')\n"
        "    window.remember.click()\n"
        "QTimer.singleShot(0, drive)\n"
        "status = qt_memory.main([sys.argv[1]])\n"
        "print('exit', status)\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-c", driver, database],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[store ok] Remembered ("), done.stdout
    assert lines[1:] == [
        "? When is the demo?",
        "[recall ok] The demo is on Thursday.",
        "    cites: The demo is on Thursday.",
        "exit 0",
    ]
    with LocalEngine(database) as engine:  # the note outlived the process, on disk
        answer = engine.recall(RecallRequest.new("When is the demo?", 3))
    assert answer.answer == "The demo is on Thursday."

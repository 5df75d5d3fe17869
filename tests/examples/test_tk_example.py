"""The Tk GUI example (docs/examples/tk_memory.py): a worker thread keeps the window responsive.

Two modes, and every run says which one it took (in the test id, in a
``record_property`` and in a log line):

* **xvfb**: the machine has ``Xvfb`` and Tk. The test starts Xvfb on a display
  it picks with ``-displayfd``, builds the real window, types into it, presses
  its buttons and pumps ``update()``: the event loop must keep ticking while
  the engine call is held on the worker, and the outcomes must appear.
* **worker-only**: no Xvfb. The same scenario drives the worker logic the
  window uses (submit, poll, render) without a display; the caller's "event
  loop" (a polling loop) must keep ticking while the engine call is held.

Whatever the mode, the worker itself is tested directly: order of outcomes,
errors by class, close() joining the thread, the default local engine. With
Xvfb, a hint on the status line ("Type a note first.") must also outlive the
window's polls (it used to be overwritten by the next one, 50 ms later).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterator, List, Tuple

import pytest

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

EXAMPLE = EXAMPLES / "tk_memory.py"

log = logging.getLogger(__name__)

tk_memory = load_example("tk_memory")


def _tk_usable() -> bool:
    try:
        import tkinter  # noqa: F401
    except ImportError:
        return False
    return True


XVFB = shutil.which("Xvfb")
MODE = "xvfb" if XVFB is not None and _tk_usable() else "worker-only"
MODE_ID = "xvfb: the real window on a virtual display" if MODE == "xvfb" else (
    "worker-only: no Xvfb on this machine, the worker logic without a display"
)  # fmt: skip


@pytest.fixture
def local() -> Iterator[LocalEngine]:
    engine = LocalEngine(":memory:")
    yield engine
    engine.close()


def _drain(worker: Any, count: int) -> List[Any]:
    outcomes: List[Any] = []
    wait_for(lambda: len(outcomes) >= count, lambda: outcomes.extend(worker.poll()), "outcomes")
    return outcomes


# -- the scenario, in the mode this machine allows ---------------------------------------------


@pytest.mark.parametrize("mode", [MODE], ids=[MODE_ID])
def test_ui_stays_responsive_while_the_engine_is_slow(
    mode: str,
    record_property: Callable[[str, object], None],
    request: pytest.FixtureRequest,
    local: LocalEngine,
) -> None:
    record_property("tk_example_mode", mode)
    log.warning("tk example test mode: %s", MODE_ID)
    if mode == "xvfb":
        _scenario_on_xvfb(request.getfixturevalue("display"), local)
    else:
        _scenario_without_display(local)


def _scenario_without_display(local: LocalEngine) -> None:
    """The window's loop, minus Tk: submit, keep ticking while held, render the outcomes."""
    slow = Gated(local)
    worker = tk_memory.MemoryWorker(slow)
    ticks = 0
    transcript: List[str] = []

    def tick() -> None:  # what MemoryWindow._poll does every POLL_MS
        nonlocal ticks
        ticks += 1
        transcript.extend(tk_memory.render(o) for o in worker.poll())

    started = time.monotonic()
    worker.submit_store("The helix release ships on Friday.")
    worker.submit_recall("When does the helix release ship?")
    assert time.monotonic() - started < 1.0, "submitting must not wait for the engine"
    assert slow.entered.wait(WAIT), "the worker never called the engine"
    # The engine call is held: the caller's loop must go on ticking meanwhile.
    wait_for(lambda: ticks >= 50, tick, "50 ticks while the engine is held")
    assert transcript == []
    assert worker.pending == 2
    slow.release()
    wait_for(lambda: len(transcript) == 2, tick, "both outcomes")
    assert transcript[0].startswith("[store ok] Remembered (")
    assert transcript[1].startswith("[recall ok] The helix release ships on Friday.")
    assert "    cites: The helix release ships on Friday." in transcript[1]
    assert worker.close(WAIT)
    assert not worker.alive
    assert slow.closed


def _start_xvfb() -> Tuple[subprocess.Popen[bytes], str]:  # pragma: no cover - needs Xvfb
    assert XVFB is not None
    read_fd, write_fd = os.pipe()
    # -terminate: the server ends when its last client goes, so a test process that dies
    # (Tk's display connection closes with it) cannot leave an Xvfb behind.
    argv = [XVFB, "-displayfd", str(write_fd), "-screen", "0", "1024x768x24", "-nolisten", "tcp"]
    proc = subprocess.Popen(
        [*argv, "-terminate"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        number = pipe.readline().strip().decode()
    if not number:
        proc.kill()
        proc.wait()
        raise AssertionError("Xvfb did not report a display number")
    return proc, f":{number}"


@pytest.fixture(scope="session")
def display() -> Iterator[str]:  # pragma: no cover - needs Xvfb
    """One Xvfb display for every window of this process, as ``DISPLAY``.

    One per process, not per window or per module (xdist may run this module's
    tests in several stretches): Tk keeps its connection to a display open after
    the last window is destroyed, and once that server is gone the next window
    makes Xlib end the whole process.
    """
    proc, number = _start_xvfb()
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = number
    try:
        yield number
    finally:
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous
        proc.terminate()
        proc.wait(WAIT)


@contextlib.contextmanager
def _window_on(display: str, engine: Gated) -> Iterator[Any]:  # pragma: no cover - needs Xvfb
    """The example's real window over ``engine`` on ``display``; destroyed and collected after."""
    import tkinter as tk

    made: List[tk.Tk] = []  # the root, once built
    try:
        root = tk.Tk(screenName=display)
        made.append(root)
        yield tk_memory.run(engine, root=root)
    finally:
        engine.release()  # a failed run must not leave the worker waiting at the gate
        for leftover in made:
            with contextlib.suppress(tk.TclError):  # close() may have destroyed it already
                leftover.destroy()
        made.clear()
        # Tk widgets hold reference cycles, so the destroyed root outlives the
        # scenario until a collection. Collect here, on the thread that made it:
        # a collection on any other thread (a later test's worker) would free
        # the Tcl interpreter there, and Tcl aborts the process for that.
        gc.collect()


def _pump(window: Any, seconds: float) -> None:  # pragma: no cover - needs Xvfb
    """Run the window's event loop for ``seconds`` (its ``after()`` polls included)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        window.root.update()
        time.sleep(0.005)


def _scenario_on_xvfb(display: str, local: LocalEngine) -> None:  # pragma: no cover - needs Xvfb
    slow = Gated(local)
    with _window_on(display, slow) as window:
        root = window.root
        ticks = [0]

        def tick() -> None:
            ticks[0] += 1
            root.after(10, tick)

        root.after(10, tick)
        window.note.insert(0, "The helix release ships on Friday.")
        window.remember.invoke()
        assert window.note.get() == "", "the entry clears at once"
        assert slow.entered.wait(WAIT), "the worker never called the engine"
        held_at = ticks[0]
        wait_for(lambda: ticks[0] >= held_at + 20, root.update, "20 ticks while held")
        assert "Remembered" not in window.transcript()
        assert "Working on 1 job(s)" in window.status.get()
        slow.release()
        wait_for(lambda: "Remembered" in window.transcript(), root.update, "the store outcome")
        wait_for(lambda: window.status.get() == "Ready.", root.update, "the status back to Ready")
        window.question.insert(0, "When does the helix release ship?")
        window.ask.invoke()
        wait_for(lambda: "cites:" in window.transcript(), root.update, "the recall outcome")
        assert "[recall ok] The helix release ships on Friday." in window.transcript()
        worker = window.worker
        window.close()
        assert not worker.alive
        assert slow.closed


@pytest.mark.skipif(MODE != "xvfb", reason="needs Xvfb and Tk to build the real window")
def test_a_hint_stays_until_something_happens(display: str, local: LocalEngine) -> None:
    """A hint ("Type a note first.") outlives the window's polls; it was overwritten in 50 ms."""
    slow = Gated(local)
    with _window_on(display, slow) as window:
        window.remember.invoke()  # nothing typed
        assert window.status.get() == "Type a note first."
        _pump(window, 8 * window.POLL_MS / 1000)  # eight polls, at least
        assert window.status.get() == "Type a note first."
        window.ask.invoke()
        _pump(window, 4 * window.POLL_MS / 1000)
        assert window.status.get() == "Type a question first."
        # Something happening replaces the hint: a job in flight, then its outcome.
        window.note.insert(0, "Hints give way to news.")
        window.remember.invoke()
        assert window.status.get() == "Working on 1 job(s)..."
        slow.release()
        wait_for(lambda: window.status.get() == "Ready.", window.root.update, "the outcome")
        assert "[store ok] Remembered (" in window.transcript()
        window.close()


# -- the worker, directly (both modes) ------------------------------------------------------------


def test_outcomes_arrive_in_order_and_errors_read_by_class(local: LocalEngine) -> None:
    engine = Scripted(local, [error for _, _, error, _, _ in ERROR_SCRIPT])
    worker = tk_memory.MemoryWorker(engine)
    ids = submit_error_script(worker.submit_store, worker.submit_recall)
    outcomes = _drain(worker, len(ids))
    check_error_script(outcomes, ids)
    assert worker.alive, "no failure may end the worker"
    assert worker.pending == 0
    assert worker.close(WAIT)


def test_close_finishes_the_running_job_drops_the_rest_and_joins(local: LocalEngine) -> None:
    slow = Gated(local)
    worker = tk_memory.MemoryWorker(slow)
    worker.submit_store("first")
    worker.submit_store("second")
    worker.submit_recall("third?")
    assert slow.entered.wait(WAIT)
    closed: List[bool] = []
    closer = threading.Thread(target=lambda: closed.append(worker.close(WAIT)))
    closer.start()
    # close() waits for the call in flight: it has not returned while the gate is shut.
    closer.join(0.05)
    assert closer.is_alive()
    slow.release()
    closer.join(WAIT)
    assert closed == [True]
    assert not worker.alive
    assert slow.calls == ["store"], "jobs not yet started are dropped"
    assert [o.message.split(" (")[0] for o in worker.poll()] == ["Remembered"]
    assert worker.pending == 0
    assert slow.closed
    with pytest.raises(RuntimeError, match="closed"):
        worker.submit_store("too late")
    assert worker.close(WAIT), "closing twice is harmless"


def test_close_leaves_a_borrowed_engine_open(local: LocalEngine) -> None:
    engine = Gated(local, closed=False)
    worker = tk_memory.MemoryWorker(engine, close_engine=False)
    worker.submit_store("kept")
    assert _drain(worker, 1)[0].ok
    assert worker.close(WAIT)
    assert not engine.closed
    assert local.health().state.value == "ok"


def test_deadline_reaches_engines_that_take_one(local: LocalEngine) -> None:
    engine = TakesDeadline(local)
    worker = tk_memory.MemoryWorker(engine, deadline=7.5)
    worker.submit_store("bounded")
    worker.submit_recall("bounded?")
    assert all(o.ok for o in _drain(worker, 2))
    assert engine.deadlines == [7.5, 7.5]
    assert worker.close(WAIT)

    unbounded = TakesDeadline(LocalEngine(":memory:"))
    worker = tk_memory.MemoryWorker(unbounded, deadline=None)
    worker.submit_store("unbounded")
    assert _drain(worker, 1)[0].ok
    assert unbounded.deadlines == [None]
    assert worker.close(WAIT)


def test_the_default_engine_is_local_and_round_trips() -> None:
    engine = tk_memory.open_local_engine(":memory:")
    assert isinstance(engine, LocalEngine)
    worker = tk_memory.MemoryWorker(engine)
    worker.submit_store("Our standup moved to 9:30 on Tuesdays.")
    worker.submit_recall("When is the standup?")
    stored, recalled = _drain(worker, 2)
    assert stored.ok
    assert recalled.ok
    assert "9:30" in recalled.message
    assert recalled.citations == ("Our standup moved to 9:30 on Tuesdays.",)
    assert worker.close(WAIT)


def test_the_example_imports_no_tk_until_a_window_is_built() -> None:
    code = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
        f"spec = importlib.util.spec_from_file_location('ex', {str(EXAMPLE)!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['ex'] = m\n"
        "spec.loader.exec_module(m)\n"
        "print('tkinter' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"

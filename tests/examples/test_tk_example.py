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
errors by class, close() joining the thread, the default local engine.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator, List, Optional, Tuple

import pytest

from cortex_memory import (
    ConfigError,
    EngineError,
    InvalidRequestError,
    MemoryEngine,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    WaitFor,
)
from cortex_memory.contract import (
    EngineDescriptor,
    EngineHealth,
    FetchPage,
    FetchRequest,
    ForgetReport,
    ForgetTarget,
    ListPage,
    ListRequest,
    RecallAnswer,
    RecallRequest,
    StoreItem,
    StoreReceipt,
)
from cortex_memory.local import LocalEngine

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "tk_memory.py"
WAIT = 10.0  # generous: the machine is shared and noisy

log = logging.getLogger(__name__)


def _load_example() -> ModuleType:
    name = "tk_memory_example"
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


tk_memory = _load_example()


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


# -- engines for the tests ----------------------------------------------------------------


class Gated(MemoryEngine):
    """Wraps an engine; ``store`` and ``recall`` wait at a gate (closed or open).

    ``entered`` is set once a call is inside the gate; ``release()`` opens it for good.
    """

    def __init__(self, inner: MemoryEngine, *, closed: bool = True) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self._open = threading.Event()
        if not closed:
            self._open.set()
        self.closed = False
        self.calls: List[str] = []

    def release(self) -> None:
        self._open.set()

    def _gate(self, name: str) -> None:
        self.calls.append(name)
        self.entered.set()
        if not self._open.wait(WAIT):
            raise AssertionError("the test never opened the gate")

    def descriptor(self) -> EngineDescriptor:
        return self.inner.descriptor()

    def health(self) -> EngineHealth:
        return self.inner.health()

    def store(self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE) -> StoreReceipt:
        self._gate("store")
        return self.inner.store(item, wait=wait)

    def recall(self, request: RecallRequest) -> RecallAnswer:
        self._gate("recall")
        return self.inner.recall(request)

    def fetch(self, request: FetchRequest) -> FetchPage:
        return self.inner.fetch(request)

    def forget(self, target: ForgetTarget) -> ForgetReport:
        return self.inner.forget(target)

    def list(self, request: ListRequest) -> ListPage:
        return self.inner.list(request)

    def close(self) -> None:
        self.closed = True
        self.inner.close()


class Scripted(Gated):
    """Fails the n-th call with the error scripted for it (``None``: pass through)."""

    def __init__(self, inner: MemoryEngine, script: List[Optional[BaseException]]) -> None:
        super().__init__(inner, closed=False)
        self._script = list(script)

    def _gate(self, name: str) -> None:
        super()._gate(name)
        error = self._script.pop(0) if self._script else None
        if error is not None:
            raise error


class TakesDeadline(Gated):
    """An engine whose calls accept ``deadline=`` (as ``CortexEngine``'s do); records it."""

    def __init__(self, inner: MemoryEngine) -> None:
        super().__init__(inner, closed=False)
        self.deadlines: List[Optional[float]] = []

    def store(
        self, item: StoreItem, *, wait: WaitFor = WaitFor.VISIBLE, deadline: Optional[float] = None
    ) -> StoreReceipt:
        self.deadlines.append(deadline)
        return super().store(item, wait=wait)

    def recall(self, request: RecallRequest, *, deadline: Optional[float] = None) -> RecallAnswer:
        self.deadlines.append(deadline)
        return super().recall(request)


@pytest.fixture
def local() -> Iterator[LocalEngine]:
    engine = LocalEngine(":memory:")
    yield engine
    engine.close()


def _wait_for(condition: Callable[[], bool], tick: Callable[[], None], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        tick()
        time.sleep(0.002)


def _drain(worker: Any, count: int) -> List[Any]:
    outcomes: List[Any] = []
    _wait_for(lambda: len(outcomes) >= count, lambda: outcomes.extend(worker.poll()), "outcomes")
    return outcomes


# -- the scenario, in the mode this machine allows ---------------------------------------------


@pytest.mark.parametrize("mode", [MODE], ids=[MODE_ID])
def test_ui_stays_responsive_while_the_engine_is_slow(
    mode: str, record_property: Callable[[str, object], None], local: LocalEngine
) -> None:
    record_property("tk_example_mode", mode)
    log.warning("tk example test mode: %s", MODE_ID)
    if mode == "xvfb":
        try:
            _scenario_on_xvfb(local)
        finally:
            # Tk widgets hold reference cycles, so the destroyed root outlives the
            # scenario until a collection. Collect here, on the thread that made it:
            # a collection on any other thread (a later test's worker) would free
            # the Tcl interpreter there, and Tcl aborts the process for that.
            gc.collect()
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
        transcript.extend(tk_memory.MemoryWindow._render(o) for o in worker.poll())

    started = time.monotonic()
    worker.submit_store("The helix release ships on Friday.")
    worker.submit_recall("When does the helix release ship?")
    assert time.monotonic() - started < 1.0, "submitting must not wait for the engine"
    assert slow.entered.wait(WAIT), "the worker never called the engine"
    # The engine call is held: the caller's loop must go on ticking meanwhile.
    _wait_for(lambda: ticks >= 50, tick, "50 ticks while the engine is held")
    assert transcript == []
    assert worker.pending == 2
    slow.release()
    _wait_for(lambda: len(transcript) == 2, tick, "both outcomes")
    assert transcript[0].startswith("[store ok] Remembered (")
    assert transcript[1].startswith("[recall ok] The helix release ships on Friday.")
    assert "    cites: The helix release ships on Friday." in transcript[1]
    assert worker.close(WAIT)
    assert not worker.alive
    assert slow.closed


def _start_xvfb() -> Tuple[subprocess.Popen[bytes], str]:  # pragma: no cover - needs Xvfb
    assert XVFB is not None
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [XVFB, "-displayfd", str(write_fd), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
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


def _scenario_on_xvfb(local: LocalEngine) -> None:  # pragma: no cover - needs Xvfb
    import tkinter as tk

    proc, display = _start_xvfb()
    previous = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display
    made: List[tk.Tk] = []  # the root, once built; emptied when close() destroyed it
    slow = Gated(local)
    try:
        root = tk.Tk()
        made.append(root)
        window = tk_memory.run(slow, root=root)
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
        _wait_for(lambda: ticks[0] >= held_at + 20, root.update, "20 ticks while held")
        assert "Remembered" not in window.transcript()
        assert "Working on 1 job(s)" in window.status.get()
        slow.release()
        _wait_for(lambda: "Remembered" in window.transcript(), root.update, "the store outcome")
        window.question.insert(0, "When does the helix release ship?")
        window.ask.invoke()
        _wait_for(lambda: "cites:" in window.transcript(), root.update, "the recall outcome")
        assert "[recall ok] The helix release ships on Friday." in window.transcript()
        worker = window.worker
        window.close()
        made.clear()  # close() destroyed the root
        assert not worker.alive
        assert slow.closed
    finally:
        slow.release()  # a failed run must not leave the worker waiting at the gate
        for leftover in made:
            with contextlib.suppress(tk.TclError):
                leftover.destroy()
        if previous is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = previous
        proc.terminate()
        proc.wait(WAIT)


# -- the worker, directly (both modes) ------------------------------------------------------------


def test_outcomes_arrive_in_order_and_errors_read_by_class(local: LocalEngine) -> None:
    script: List[Optional[BaseException]] = [
        None,
        UnauthorizedError("the API key was refused"),
        EngineError("[USER_INSUFFICIENT_CREDITS] no credits", status=402,
                    code="USER_INSUFFICIENT_CREDITS"),
        UnavailableError("timed out"),
        None,
        InvalidRequestError("question must not be blank"),
        RuntimeError("a bug in a host's engine"),
        NotFoundError("pack expired"),
        ConfigError("no endpoint"),
        None,
    ]  # fmt: skip
    engine = Scripted(local, script)
    worker = tk_memory.MemoryWorker(engine)
    ids = [
        worker.submit_store("Ann prefers tea."),
        worker.submit_store("x"),
        worker.submit_store("y"),
        worker.submit_recall("what does Ann prefer?"),
        worker.submit_recall("what does Ann prefer?"),
        worker.submit_recall(" "),
        worker.submit_store("z"),
        worker.submit_recall("q"),
        worker.submit_recall("q"),
        worker.submit_store("Ann prefers tea."),
    ]
    outcomes = _drain(worker, len(ids))
    assert [o.job_id for o in outcomes] == ids
    assert [o.ok for o in outcomes] == [True, False, False, False, True, False, False, False,
                                        False, True]  # fmt: skip
    messages = [o.message for o in outcomes]
    assert messages[1].startswith("Sign in again")
    assert messages[2].startswith("Top up")
    assert messages[3] == "Retry later: the memory service is unavailable (timed out)."
    assert messages[4] == "Ann prefers tea."
    assert messages[5] == "Check your input: question must not be blank"
    assert messages[6] == "Unexpected error (RuntimeError); see the log."
    assert messages[7] == "Memory error: pack expired"
    assert messages[8] == "Check the settings: no endpoint"
    assert messages[9].startswith("Already remembered (")
    assert isinstance(outcomes[1].error, UnauthorizedError)
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
        f"spec = importlib.util.spec_from_file_location('ex', {str(EXAMPLE)!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['ex'] = m\n"
        "spec.loader.exec_module(m)\n"
        "print('tkinter' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"

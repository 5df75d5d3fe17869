"""What the GUI examples' tests share: loading an example, engines that hold or fail on cue."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, List, Optional, Sequence, Tuple

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
    DeadlineLike,
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

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
WAIT = 10.0  # generous: the machine is shared and noisy


def load_example(stem: str) -> ModuleType:
    """Import ``docs/examples/<stem>.py`` the way ``python docs/examples/<stem>.py`` sees it.

    The examples import their shared half (``memory_jobs``) from their own
    folder, which a script run has on ``sys.path``; so does this loader.
    """
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    name = f"{stem}_example"
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{stem}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def wait_for(condition: Callable[[], bool], tick: Callable[[], None], what: str) -> None:
    """Call ``tick`` until ``condition`` holds; fail after :data:`WAIT` seconds."""
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        tick()
        time.sleep(0.002)


class Gated(MemoryEngine):
    """Wraps an engine; ``store`` and ``recall`` wait at a gate (closed or open).

    ``entered`` is set once a call is inside the gate; ``release()`` opens it for
    good. ``threads`` records the thread each gated call ran on.
    """

    def __init__(self, inner: MemoryEngine, *, closed: bool = True) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self._open = threading.Event()
        if not closed:
            self._open.set()
        self.closed = False
        self.calls: List[str] = []
        self.threads: List[int] = []

    def release(self) -> None:
        self._open.set()

    def _gate(self, name: str) -> None:
        self.calls.append(name)
        self.threads.append(threading.get_ident())
        self.entered.set()
        if not self._open.wait(WAIT):
            raise AssertionError("the test never opened the gate")

    def descriptor(self) -> EngineDescriptor:
        return self.inner.descriptor()

    def health(self) -> EngineHealth:
        return self.inner.health()

    def store(
        self,
        item: StoreItem,
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        deadline: DeadlineLike = None,
    ) -> StoreReceipt:
        self._gate("store")
        return self.inner.store(item, replace=replace, wait=wait, deadline=deadline)

    def recall(self, request: RecallRequest, *, deadline: DeadlineLike = None) -> RecallAnswer:
        self._gate("recall")
        return self.inner.recall(request, deadline=deadline)

    def fetch(self, request: FetchRequest, *, deadline: DeadlineLike = None) -> FetchPage:
        return self.inner.fetch(request, deadline=deadline)

    def forget(self, target: ForgetTarget, *, deadline: DeadlineLike = None) -> ForgetReport:
        return self.inner.forget(target, deadline=deadline)

    def list(self, request: ListRequest, *, deadline: DeadlineLike = None) -> ListPage:
        return self.inner.list(request, deadline=deadline)

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
    """An open gate that records the ``deadline=`` each store and recall was given."""

    def __init__(self, inner: MemoryEngine) -> None:
        super().__init__(inner, closed=False)
        self.deadlines: List[Optional[float]] = []

    def store(
        self,
        item: StoreItem,
        *,
        replace: bool = False,
        wait: WaitFor = WaitFor.VISIBLE,
        deadline: DeadlineLike = None,
    ) -> StoreReceipt:
        self.deadlines.append(deadline)
        return super().store(item, replace=replace, wait=wait, deadline=deadline)

    def recall(self, request: RecallRequest, *, deadline: DeadlineLike = None) -> RecallAnswer:
        self.deadlines.append(deadline)
        return super().recall(request, deadline=deadline)


# Ten jobs against a Scripted engine: what each submits, the error its engine call
# raises (None: it goes through) and what the window must say (a prefix or the line).
ERROR_SCRIPT: List[Tuple[str, str, Optional[BaseException], bool, str]] = [
    ("store", "Ann prefers tea.", None, True, "Remembered ("),
    ("store", "x", UnauthorizedError("the API key was refused"), False, "Sign in again"),
    ("store", "y", EngineError("[USER_INSUFFICIENT_CREDITS] no credits", status=402,
                               code="USER_INSUFFICIENT_CREDITS"), False, "Top up"),
    ("recall", "what does Ann prefer?", UnavailableError("timed out"), False,
     "Retry later: the memory service is unavailable (timed out)."),
    ("recall", "what does Ann prefer?", None, True, "Ann prefers tea."),
    ("recall", " ", InvalidRequestError("question must not be blank"), False,
     "Check your input: question must not be blank"),
    ("store", "z", RuntimeError("a bug in a host's engine"), False,
     "Unexpected error (RuntimeError); see the log."),
    ("recall", "q", NotFoundError("pack expired"), False, "Memory error: pack expired"),
    ("recall", "q", ConfigError("no endpoint"), False, "Check the settings: no endpoint"),
    ("store", "Ann prefers tea.", None, True, "Already remembered ("),
]  # fmt: skip


def submit_error_script(store: Callable[[str], int], recall: Callable[[str], int]) -> List[int]:
    """Submit every job of :data:`ERROR_SCRIPT` through a worker's two calls; their ids."""
    submit = {"store": store, "recall": recall}
    return [submit[action](text) for action, text, _, _, _ in ERROR_SCRIPT]


def check_error_script(outcomes: Sequence[Any], ids: Sequence[int]) -> None:
    """The outcomes of :data:`ERROR_SCRIPT`'s jobs: in order, each failure read by its class."""
    assert [o.job_id for o in outcomes] == list(ids)
    assert [o.ok for o in outcomes] == [ok for _, _, _, ok, _ in ERROR_SCRIPT]
    for outcome, (_, _, _, _, said) in zip(outcomes, ERROR_SCRIPT):
        assert outcome.message.startswith(said), (outcome.message, said)
    assert outcomes[3].message == ERROR_SCRIPT[3][4]  # the whole line, not just its start
    assert isinstance(outcomes[1].error, type(ERROR_SCRIPT[1][2]))

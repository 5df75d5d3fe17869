"""The conformance harness: run identity, the session that calls the engine, cleanup.

A :class:`Run` names one pass of the suite (its nonce, workspaces and marker);
a :class:`Session` holds the engine under test and the name of the check in
progress, turns every engine ``Error`` on a call the engine must serve into a
:class:`CheckEngineFailure`, and pages through listings the strict way
(contract.md §9.1).
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Iterable,
    List,
    NoReturn,
    Optional,
    Sequence,
    Set,
    Tuple,
    Type,
    TypeVar,
)

from cortex_memory.contract._enum import quote
from cortex_memory.contract.conformance.errors import (
    CheckEngineFailure,
    CheckFailure,
    ConformanceError,
)
from cortex_memory.contract.conformance.report import brief, id_list
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.forget import ForgetFilter, ForgetIds
from cortex_memory.contract.items import Document, ItemId, StoreItem, StoreReceipt
from cortex_memory.contract.jsonfmt import format_f32
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.requests import ListRequest, WaitFor
from cortex_memory.contract.responses import Exported, ExportPage, Hit, ListPage
from cortex_memory.errors import Error, UnsupportedError

__all__ = [
    "CLEANUP",
    "LIST_PAGE",
    "MAX_PAGES",
    "WORKSPACE_PREFIX",
    "Run",
    "Session",
]

_log = logging.getLogger(__name__)

#: Workspace every run writes under (``tinymemory-conformance/<nonce>``).
WORKSPACE_PREFIX = "tinymemory-conformance"
#: Page size of the suite's listings: small on purpose, to exercise cursors.
LIST_PAGE = 2
#: A listing still going after this many pages "did not end".
MAX_PAGES = 10_000
#: The name failures of the closing cleanup report.
CLEANUP = "cleanup"

_T = TypeVar("_T")
# The nonce ends up in a namespace segment id (128 characters at most) next to
# a short prefix and suffix, so it stays well below that.
_NONCE = re.compile(r"[0-9A-Za-z]{1,64}")

# The process-wide part of every nonce, so two runs started in the same
# nanosecond (or on a coarse clock) still differ.
_counter_lock = threading.Lock()
_counter = itertools.count()


def _next_count() -> int:
    with _counter_lock:
        return next(_counter)


@dataclass(frozen=True)
class Run:
    """The identity of one pass of the suite: where it writes and the word it marks.

    ``workspace`` is ``tinymemory-conformance/<nonce>``; the probes live in
    ``<workspace>/probes``; every text the suite writes carries ``marker``
    (``tmconf<nonce>``), one word made of letters and digits.
    """

    nonce: str

    def __post_init__(self) -> None:
        if not isinstance(self.nonce, str):
            raise TypeError(f"Run.nonce must be a str, not {type(self.nonce).__name__}")
        if _NONCE.fullmatch(self.nonce) is None:
            raise ValueError("Run.nonce must be 1 to 64 ASCII letters and digits")

    @classmethod
    def fresh(cls) -> Run:
        """A new run: the nonce is hex nanoseconds since the epoch + hex of a counter."""
        return cls(format(time.time_ns(), "x") + format(_next_count(), "x"))

    @property
    def workspace(self) -> str:
        """``tinymemory-conformance/<nonce>``: the run's items live here."""
        return f"{WORKSPACE_PREFIX}/{self.nonce}"

    @property
    def probe_workspace(self) -> str:
        """``<workspace>/probes``: the metadata probes live here."""
        return f"{self.workspace}/probes"

    @property
    def marker(self) -> str:
        """``tmconf<nonce>``: a word every text of the run carries."""
        return f"tmconf{self.nonce}"

    def meta(self) -> MemoryMeta:
        """A default meta with only the run workspace set."""
        return MemoryMeta(workspace=self.workspace)

    def filter(self) -> MetaFilter:
        """The run workspace, exactly (so it leaves out the probes)."""
        return MetaFilter(workspace=self.workspace)

    def probe_filter(self) -> MetaFilter:
        """The probe workspace, exactly."""
        return MetaFilter(workspace=self.probe_workspace)

    def document(self, label: str, meta: Optional[MemoryMeta] = None) -> Document:
        """A text document ``"<marker> <label> note"`` with ``meta`` (the run meta by default)."""
        return StoreItem.document(
            f"{self.marker} {label} note", self.meta() if meta is None else meta
        )


# ------------------------------------------------------------------- session


class Session:
    """One engine under test within one :class:`Run`, and the check in progress.

    Not thread-safe: one suite pass drives it from one thread.
    """

    def __init__(self, engine: MemoryEngine, run: Run, check: str = "") -> None:
        if not isinstance(engine, MemoryEngine):
            raise TypeError(f"the suite runs on a MemoryEngine, not {type(engine).__name__}")
        self.engine = engine
        self.run = run
        self.check = check
        #: Checks that skipped themselves (the engine lacks an optional operation).
        self.skipped: List[str] = []
        # Items stored in service sandboxes: a filter forget without a reach
        # never reaches them, so cleanup forgets them by id.
        self._sandboxed: List[ItemId] = []

    # -- verdicts -------------------------------------------------------------

    def failure(self, detail: str, cause: Optional[BaseException] = None) -> CheckFailure:
        """A :class:`CheckFailure` of the current check (``__cause__`` set to ``cause``)."""
        failure = CheckFailure(self.check, detail)
        failure.__cause__ = cause
        return failure

    def fail(self, detail: str, cause: Optional[BaseException] = None) -> NoReturn:
        """Raise :class:`CheckFailure` for the current check."""
        raise self.failure(detail, cause)

    def expect(self, condition: bool, detail: str) -> None:
        """Fail with ``detail`` unless ``condition`` holds."""
        if not condition:
            self.fail(detail)

    def skip(self, reason: str) -> None:
        """Record that the current check skipped itself, and why."""
        self.skipped.append(self.check)
        _log.info("conformance check `%s` skipped: %s", self.check, reason)

    # -- calling the engine --------------------------------------------------

    def call(self, operation: str, fn: Callable[..., _T], *args: object, **kwargs: object) -> _T:
        """Call the engine; an ``Error`` becomes :class:`CheckEngineFailure`.

        Anything else (a ``TypeError``, say) is a programming error and propagates.
        """
        try:
            return fn(*args, **kwargs)
        except Error as exc:
            raise CheckEngineFailure(self.check, exc, operation) from exc

    def refused(
        self,
        operation: str,
        expected: Tuple[Type[Error], ...],
        fn: Callable[..., object],
        *args: object,
        **kwargs: object,
    ) -> Error:
        """Call the engine where it must refuse with one of ``expected``; return the error."""
        wanted = " or ".join(cls.__name__ for cls in expected)
        try:
            answer = fn(*args, **kwargs)
        except expected as exc:
            return exc
        except Error as exc:
            self.fail(f"{operation} raised `{exc}` where {wanted} was expected", exc)
        raise self.failure(
            f"{operation} answered {brief(answer)} instead of refusing with {wanted}"
        )

    def store(
        self, item: StoreItem, wait: WaitFor = WaitFor.VISIBLE, **kwargs: object
    ) -> StoreReceipt:
        """Store ``item`` (remembering sandboxed ids for cleanup); ``kwargs`` go to ``store``."""
        self._note_sandboxed([item])
        return self.call("store", self.engine.store, item, wait=wait, **kwargs)

    def store_many(self, items: Iterable[StoreItem], **kwargs: object) -> List[StoreReceipt]:
        """``store_many`` (remembering sandboxed ids for cleanup); ``kwargs`` go to it.

        ``items`` may be any iterable (a generator is passed on as it is).
        """
        if isinstance(items, Sequence):
            self._note_sandboxed(items)
        return self.call("store_many", self.engine.store_many, items, **kwargs)

    def _note_sandboxed(self, items: Sequence[StoreItem]) -> None:
        for item in items:
            if item.meta.namespace.has_service_below(0):
                self._sandboxed.append(item.fingerprint())

    # -- strict paging ---------------------------------------------------------

    def list_all(self, flt: MetaFilter) -> List[Hit]:
        """Every hit ``flt`` admits, listed 2 per page following the cursors.

        Fails on a listed score other than 0.0, a page longer than asked, a
        cursor that repeats, and a listing still going after 10 000 pages.
        """
        def page_at(cursor: Optional[str]) -> ListPage:
            return self.call("list", self.engine.list, ListRequest(flt, LIST_PAGE, cursor))

        def check(page: ListPage) -> None:
            for hit in page.items:
                if hit.score != 0.0:
                    self.fail(
                        f"list returned item `{hit.id}` with score {format_f32(hit.score)}; "
                        "a listing scores every hit 0.0"
                    )

        hits: List[Hit] = self._follow("list", page_at(None), page_at, check)
        return hits

    def list_ids(self, flt: MetaFilter) -> List[ItemId]:
        """The ids :meth:`list_all` gives, in listing order."""
        return [hit.id for hit in self.list_all(flt)]

    def export_all(self, flt: MetaFilter) -> Optional[List[Exported]]:
        """Every item ``flt`` admits, exported 2 per page; ``None`` when export is unsupported.

        Only the first page may answer ``UnsupportedError``. Fails on a page
        longer than asked, a non-empty ``incomplete``, a repeated cursor and an
        export that does not end.
        """
        try:
            first = self.engine.export(ListRequest(flt, LIST_PAGE))
        except UnsupportedError:
            return None
        except Error as exc:
            raise CheckEngineFailure(self.check, exc, "export") from exc

        def page_at(cursor: Optional[str]) -> ExportPage:
            return self.call("export", self.engine.export, ListRequest(flt, LIST_PAGE, cursor))

        def check(page: ExportPage) -> None:
            if page.incomplete:
                self.fail(f"export reported incomplete items {id_list(page.incomplete)}")

        items: List[Exported] = self._follow("export", first, page_at, check)
        return items

    def _follow(
        self,
        op: str,
        first: Any,
        page_at: Callable[[str], Any],
        check: Callable[[Any], None],
    ) -> List[Any]:
        """The items of every page of ``op`` from ``first``, following the cursors.

        Fails on a page longer than asked, a page ``check`` refuses, a cursor
        that repeats and a paging still going after :data:`MAX_PAGES` pages.
        """
        items: List[Any] = []
        cursor: Optional[str] = None
        seen: Set[str] = set()
        for _ in range(MAX_PAGES):
            page = first if cursor is None else page_at(cursor)
            if len(page.items) > LIST_PAGE:
                self.fail(f"{op} returned {len(page.items)} items for a limit of {LIST_PAGE}")
            check(page)
            items.extend(page.items)
            cursor = page.next_cursor
            if cursor is None:
                return items
            if cursor in seen:
                self.fail(f"{op} repeated the cursor {quote(cursor)}")
            seen.add(cursor)
        raise self.failure(f"{op} did not end after {MAX_PAGES} pages")

    # -- cleanup ---------------------------------------------------------------

    def cleanup(self) -> None:
        """Forget everything the run wrote, then check that nothing of it still lists.

        Runs under the check name ``cleanup``. Items stored before the run are
        left alone: only the run's workspaces (and the run's own sandboxed ids)
        are forgotten.
        """
        self.check = CLEANUP
        run = self.run
        if self._sandboxed:
            ids = list(dict.fromkeys(self._sandboxed))
            self.call("forget", self.engine.forget, ForgetIds(tuple(ids)))
        filters = (run.filter(), run.probe_filter())
        for flt in filters:
            self.call("forget", self.engine.forget, ForgetFilter(flt))
        for flt in filters:
            left = self.list_ids(flt)
            if left:
                self.fail(
                    f"{len(left)} items still list under workspace `{flt.workspace}` "
                    f"after forgetting it: {id_list(left)}"
                )


def run_then_clean(
    body: Callable[[], None], sessions: Sequence[Session], what: str, log: logging.Logger
) -> None:
    """Run ``body``, then clean up ``sessions`` in order, whatever happened.

    When ``body`` fails, its failure is the one raised: a cleanup failing
    after it is only logged to ``log`` (``"{what} cleanup after a failure also
    failed"``). When ``body`` passes, a cleanup failure is raised.
    """
    try:
        body()
    except BaseException:
        for session in sessions:
            try:
                session.cleanup()
            except ConformanceError as failure:
                log.warning("%s cleanup after a failure also failed: %s", what, failure)
        raise
    for session in sessions:
        session.cleanup()

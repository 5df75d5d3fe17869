"""Storing a stream of inputs in bounded batches, with a tally of what became of each.

``import`` and ``copy`` both turn their inputs (files, JSONL lines, another
engine's items) into a stream of :class:`Entry` values: an item to store, an
input skipped on purpose (a hidden file, an empty one) or an input that failed
before it could be stored (a malformed line). :class:`Transfer` stores the
items with ``store_many``, one bounded batch per call (at most 100 items and
about 8 MiB of text), so memory holds one batch and a capped list of what was
skipped or failed, however many inputs there are.

What happens on an error from the engine:

- ``InvalidRequestError`` means an item was refused: the items of the batch
  the error does not report as stored are sent again one by one, so exactly
  the refused item is counted as failed and no other is lost;
- any other ``cortex_memory.Error`` (unavailable, unauthorized, ...) stops
  the run: the receipts it carries are counted, and the command reports what
  was done and exits with the error's status. Ids are fingerprints, so running
  the command again replays what was stored and stores only the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from cortex_memory.cli._exits import EXIT_FAILURE, exit_code
from cortex_memory.cli._progress import Progress
from cortex_memory.cli._render import plural
from cortex_memory.contract.engine import MemoryEngine
from cortex_memory.contract.items import (
    Conversation,
    Document,
    Learning,
    StoreItem,
    StoreReceipt,
    TextBody,
)
from cortex_memory.contract.replacing import version_key
from cortex_memory.errors import Error, InvalidRequestError

__all__ = ["BATCH_BYTES", "BATCH_ITEMS", "SHOWN", "Entry", "Tally", "Transfer", "item_size"]

#: Most items per ``store_many`` call.
BATCH_ITEMS = 100
#: Text per ``store_many`` call, roughly (a batch holds at least one item).
BATCH_BYTES = 8 * 1024 * 1024
#: Skipped and failed inputs named one by one (on stderr and in the JSON
#: summary); past it they are counted only.
SHOWN = 50


@dataclass(frozen=True)
class Entry:
    """One input: an ``item`` to store, or the ``skipped`` reason, or the ``failed`` message.

    ``label`` is how the user knows the input (a path, ``FILE:LINE``, an id);
    ``status`` is the exit status a failure stands for.
    """

    label: str
    item: Optional[StoreItem] = None
    replace: bool = False
    skipped: Optional[str] = None
    failed: Optional[str] = None
    status: int = EXIT_FAILURE

    @classmethod
    def skip(cls, label: str, reason: str) -> Entry:
        """An input left out on purpose (not a failure)."""
        return cls(label, skipped=reason)

    @classmethod
    def fail(cls, label: str, message: str, status: int = EXIT_FAILURE) -> Entry:
        """An input that could not be turned into an item."""
        return cls(label, failed=message, status=status)


@dataclass
class Tally:
    """What became of the inputs; ``stopped`` is the error that ended the run early."""

    new: int = 0
    unchanged: int = 0
    updated: int = 0
    removed: int = 0
    skipped: int = 0
    failed: int = 0
    skips: List[Tuple[str, str]] = field(default_factory=list)
    failures: List[Tuple[str, str]] = field(default_factory=list)
    statuses: List[int] = field(default_factory=list)
    stopped: Optional[Error] = None

    @property
    def stored(self) -> int:
        """Items the engine holds from this run (new, updated or already held)."""
        return self.new + self.updated + self.unchanged

    def count(self, receipt: StoreReceipt) -> None:
        """Count one receipt."""
        self.removed += len(receipt.replaced)
        if receipt.replayed:
            self.unchanged += 1
        elif receipt.replaced:
            self.updated += 1
        else:
            self.new += 1

    def summary(self, verb: str) -> str:
        """One line: ``imported 12 items (9 new, 1 updated, 2 unchanged), replaced 1
        older version, skipped 3, failed 1``."""
        parts = [f"{self.new} new"]
        if self.updated:
            parts.append(f"{self.updated} updated")
        parts.append(f"{self.unchanged} unchanged")
        line = f"{verb} {plural(self.stored, 'item')} ({', '.join(parts)})"
        if self.removed:
            line += f", replaced {plural(self.removed, 'older version')}"
        if self.skipped:
            line += f", skipped {self.skipped}"
        if self.failed:
            line += f", failed {self.failed}"
        return line

    def to_json(self, verb: str) -> Dict[str, Any]:
        """The ``--json`` summary: counts, then the inputs named one by one (at most
        :data:`SHOWN` of each), then ``stopped`` when an error ended the run."""
        out: Dict[str, Any] = {
            verb: self.stored,
            "new": self.new,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "replaced": self.removed,
            "skipped": self.skipped,
            "failed": self.failed,
            "skipped_inputs": [{"input": i, "reason": r} for i, r in self.skips],
            "failed_inputs": [{"input": i, "error": e} for i, e in self.failures],
        }
        if self.stopped is not None:
            out["stopped"] = str(self.stopped)
        return out

    def status(self) -> int:
        """The exit status: 0, the stopping error's, the failures' common one, or 1."""
        if self.stopped is not None:
            return exit_code(self.stopped)
        if not self.failed:
            return 0
        distinct = set(self.statuses)
        return distinct.pop() if len(distinct) == 1 else EXIT_FAILURE


class Transfer:
    """Store a stream of :class:`Entry` values in ``engine``, counting and reporting each."""

    def __init__(self, engine: MemoryEngine, progress: Progress, tally: Tally) -> None:
        self.engine = engine
        self.progress = progress
        self.tally = tally
        self._batch: List[Entry] = []
        self._bytes = 0

    def run(self, entries: Iterable[Entry]) -> Tally:
        """Store every item of ``entries``; stop early only on an engine-wide error."""
        try:
            for entry in entries:
                if entry.item is None:
                    self._settle(entry)
                    continue
                problem = _check(entry)
                if problem is not None:
                    self._fail(entry.label, problem.message, exit_code(problem))
                    self.progress.advance()
                    continue
                if self._batch and (
                    entry.replace != self._batch[0].replace
                    or len(self._batch) >= BATCH_ITEMS
                    or self._bytes >= BATCH_BYTES
                ):
                    self._flush()
                self._batch.append(entry)
                self._bytes += item_size(entry.item)
            self._flush()
        except _Stop:
            pass
        return self.tally

    # -- inputs that are not items -------------------------------------------------

    def _settle(self, entry: Entry) -> None:
        if entry.skipped is not None:
            self.tally.skipped += 1
            if len(self.tally.skips) < SHOWN:
                self.tally.skips.append((entry.label, entry.skipped))
                self.progress.note(f"skipped {entry.label}: {entry.skipped}")
            elif len(self.tally.skips) == SHOWN and self.tally.skipped == SHOWN + 1:
                self.progress.note("more inputs skipped; the summary counts them")
        elif entry.failed is not None:
            self._fail(entry.label, entry.failed, entry.status)
        self.progress.advance()

    def _fail(self, label: str, message: str, status: int) -> None:
        self.tally.failed += 1
        if status not in self.tally.statuses:
            self.tally.statuses.append(status)
        if len(self.tally.failures) < SHOWN:
            self.tally.failures.append((label, message))
            self.progress.note(f"failed: {label}: {message}")
        elif self.tally.failed == SHOWN + 1:
            self.progress.note("more inputs failed; the summary counts them")

    # -- storing ---------------------------------------------------------------------

    def _flush(self) -> None:
        batch, self._batch, self._bytes = self._batch, [], 0
        if not batch:
            return
        try:
            self._stored(self._store(batch))
        except InvalidRequestError as err:
            # The engine refused an item, but which one is not always known: a
            # bulk write may apply some items before refusing one and report
            # none of them. Each item not reported is sent again on its own
            # (those applied are replays), which names exactly the one refused.
            self._stored(err.receipts)
            for entry in batch[len(err.receipts) :]:
                try:
                    self._stored(self._store([entry]))
                except InvalidRequestError as alone:
                    self._fail(entry.label, alone.message, exit_code(alone))
                    self.progress.advance()

    def _store(self, batch: List[Entry]) -> List[StoreReceipt]:
        items = [entry.item for entry in batch if entry.item is not None]
        try:
            return self.engine.store_many(items, replace=batch[0].replace)
        except InvalidRequestError:
            raise
        except Error as err:
            self._stored(err.receipts)
            self.tally.stopped = err
            raise _Stop() from err

    def _stored(self, receipts: Iterable[StoreReceipt]) -> None:
        count = 0
        for receipt in receipts:
            self.tally.count(receipt)
            count += 1
        if count:
            self.progress.advance(count)


class _Stop(Exception):
    """The run ends early (the tally holds the reason)."""


def _check(entry: Entry) -> Optional[Error]:
    """The problem the engine would refuse the item for, found before it is sent."""
    assert entry.item is not None
    try:
        entry.item.validate()
        if entry.replace:
            version_key(entry.item)
    except Error as err:
        return err
    return None


def item_size(item: StoreItem) -> int:
    """The item's text in characters (not bytes: a cheap measure, good enough to
    size a batch), counted without building its rendered text."""
    if isinstance(item, Document):
        body = item.body.text if isinstance(item.body, TextBody) else ""
        return len(body) + len(item.title or "")
    if isinstance(item, Learning):
        return len(item.text) + len(item.evidence or "")
    if isinstance(item, Conversation):
        return sum(len(turn.text) for turn in item.turns)
    return 0  # pragma: no cover - the three kinds are all there is

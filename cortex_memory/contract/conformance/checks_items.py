"""Checks on writing and reading items back: health, round_trip, export, replay,
store_many and store_with (contract.md §9.3, checks 1-4, 7 and 8)."""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Sequence

from cortex_memory.contract.conformance.fixtures import round_trip_items
from cortex_memory.contract.conformance.harness import Session
from cortex_memory.contract.conformance.report import difference, id_list, text
from cortex_memory.contract.items import Document, ItemId, StoreItem, StoreReceipt, TextBody
from cortex_memory.contract.limits import MAX_ITEM_BYTES
from cortex_memory.contract.requests import WaitFor
from cortex_memory.contract.responses import Hit
from cortex_memory.errors import InvalidRequestError

__all__ = [
    "check_export",
    "check_health",
    "check_replay",
    "check_round_trip",
    "check_store_many",
    "check_store_with",
    "hit_difference",
]


def hit_difference(hit: Hit, item: StoreItem) -> Optional[str]:
    """What in ``hit`` differs from the stored ``item`` (kind, meta, confidence, text)."""
    if hit.kind is not item.item_kind:
        return f"kind: expected {item.item_kind}, got {hit.kind}"
    if hit.meta != item.meta:
        return "meta differs: " + difference(item.meta.to_json(), hit.meta.to_json(), "meta.")
    if hit.confidence != item.item_confidence:
        return f"confidence: expected {item.item_confidence}, got {hit.confidence}"
    expected = item.render_text()
    if hit.text != expected:
        return f"text: expected {text(expected)}, got {text(hit.text)}"
    return None


def expect_id(s: Session, what: str, receipt: StoreReceipt, item: StoreItem) -> None:
    """Fail unless ``receipt.id`` is the item's fingerprint."""
    expected = item.fingerprint()
    s.expect(
        receipt.id == expected,
        f"{what} answered id `{receipt.id}`; the id must be the item's fingerprint `{expected}`",
    )


def check_health(s: Session) -> None:
    """1. The engine says it is serving."""
    health = s.call("health", s.engine.health)
    s.expect(health.is_serving(), f"health() is down: {text(health.reason or '')}")


def check_round_trip(s: Session) -> None:
    """2. Each kind stores fresh and lists back exactly as stored."""
    for item in round_trip_items(s.run):
        kind = item.item_kind
        receipt = s.store(item)
        s.expect(not receipt.replayed, f"the first store of the round-trip {kind} was a replay")
        expect_id(s, f"storing the round-trip {kind}", receipt, item)
        hits = s.list_all(replace(s.run.filter(), kinds=(kind,)))
        for hit in hits:
            s.expect(
                hit.kind is kind,
                f"listing kinds=[{kind}] returned `{hit.id}`, a {hit.kind}",
            )
        mine = [hit for hit in hits if hit.id == receipt.id]
        s.expect(
            len(mine) == 1,
            f"listing kinds=[{kind}] holds {len(mine)} hits with the stored id "
            f"`{receipt.id}`; expected exactly one",
        )
        problem = hit_difference(mine[0], item)
        s.expect(problem is None, f"the round-trip {kind} `{receipt.id}` lists wrongly: {problem}")


def check_export(s: Session) -> None:
    """3. Export gives every stored item back whole, once, under its fingerprint.

    Skipped when the first export page answers ``UnsupportedError``. That a
    re-store of an exported item is a replay is checked by its effect (the
    same id, and no second copy listed); the ``replayed`` flag itself is the
    ``replay`` check's business.
    """
    run = s.run
    items = round_trip_items(run)
    for item in items:
        expect_id(s, f"storing the round-trip {item.item_kind} again", s.store(item), item)
    exported = s.export_all(run.filter())
    if exported is None:
        s.skip("the engine does not export items")
        return
    found: Dict[ItemId, StoreItem] = {}
    for entry in exported:
        fingerprint = entry.item.fingerprint()
        s.expect(
            entry.id == fingerprint,
            f"export gave id `{entry.id}` to a {entry.item.item_kind} whose fingerprint "
            f"is `{fingerprint}`",
        )
        s.expect(entry.id not in found, f"export returned `{entry.id}` twice")
        found[entry.id] = entry.item
    for item in items:
        fingerprint = item.fingerprint()
        got = found.pop(fingerprint, None)
        if got is None:
            s.fail(f"export left out the round-trip {item.item_kind} `{fingerprint}`")
        s.expect(
            got == item,
            f"the exported {item.item_kind} `{fingerprint}` is not the stored item: "
            + difference(item.to_json(), got.to_json()),
        )
    s.expect(not found, f"export returned items the run never stored: {id_list([*found])}")
    for entry in exported:
        receipt = s.store(entry.item)
        s.expect(
            receipt.id == entry.id,
            f"re-storing exported item `{entry.id}` answered id `{receipt.id}`",
        )
    listed = s.list_ids(run.filter())
    expected = sorted(item.fingerprint() for item in items)
    s.expect(
        sorted(listed) == expected,
        f"after re-storing the exported items, {len(listed)} items list where "
        f"{len(expected)} were stored: {id_list(listed)}",
    )


def check_replay(s: Session) -> None:
    """4. Storing the same document twice gives one copy and a replay."""
    item = s.run.document("replay")
    first = s.store(item)
    s.expect(not first.replayed, "the first store of a new document was a replay")
    second = s.store(item)
    s.expect(second.replayed, "storing the same document again was not reported as a replay")
    s.expect(
        second.id == first.id,
        f"storing the same document again answered id `{second.id}`, not `{first.id}`",
    )
    copies = s.list_ids(s.run.filter()).count(first.id)
    s.expect(copies == 1, f"{copies} copies of the replayed document `{first.id}` list")


def _expect_receipts(
    s: Session, what: str, receipts: Sequence[StoreReceipt], items: Sequence[StoreItem],
    replayed: bool,
) -> None:
    s.expect(
        len(receipts) == len(items),
        f"{what} of {len(items)} items answered {len(receipts)} receipts",
    )
    for index, (receipt, item) in enumerate(zip(receipts, items)):
        s.expect(
            receipt.replayed is replayed,
            f"{what}: receipt {index} has replayed={receipt.replayed}, expected {replayed}",
        )
        expected = item.fingerprint()
        s.expect(
            receipt.id == expected,
            f"{what}: receipt {index} has id `{receipt.id}`; receipts come in item order, "
            f"so it must be the fingerprint of item {index}, `{expected}`",
        )


def check_store_many(s: Session) -> None:
    """7. A batch stores in order, lists on return, replays whole, and refuses empty;
    an item over the size limit is refused and nothing of it is stored."""
    items: List[StoreItem] = [s.run.document(f"bulk-{i}") for i in range(3)]
    _expect_receipts(s, "store_many", s.store_many(items), items, False)
    listed = set(s.list_ids(s.run.filter()))
    missing = [item.fingerprint() for item in items if item.fingerprint() not in listed]
    s.expect(not missing, f"items of a store_many batch do not list on return: {id_list(missing)}")
    _expect_receipts(s, "store_many sent again", s.store_many(items), items, True)
    s.refused("store_many([])", (InvalidRequestError,), s.engine.store_many, [])
    # One byte over: the title's marker and the body's padding make MAX_ITEM_BYTES + 1.
    before = set(s.list_ids(s.run.filter()))
    marker = s.run.document("oversized")
    title = marker.render_text()
    oversized = Document(
        TextBody("x" * (MAX_ITEM_BYTES + 1 - len(title.encode("utf-8")))), title, meta=marker.meta
    )
    s.refused("store(an item 1 byte over 16 MiB)", (InvalidRequestError,), s.engine.store,
              oversized)  # fmt: skip
    s.expect(
        set(s.list_ids(s.run.filter())) == before,
        "an item refused for its size was stored anyway",
    )


def check_store_with(s: Session) -> None:
    """8. A VISIBLE store lists on return and replays; an ACCEPTED one answers its id."""
    visible = s.run.document("visible")
    receipt = s.store(visible, WaitFor.VISIBLE)
    s.expect(not receipt.replayed, "the first VISIBLE store of a new document was a replay")
    expect_id(s, "a VISIBLE store", receipt, visible)
    s.expect(
        receipt.id in s.list_ids(s.run.filter()),
        f"the VISIBLE store `{receipt.id}` does not list on return",
    )
    again = s.store(visible, WaitFor.VISIBLE)
    s.expect(again.replayed, "storing the VISIBLE document again was not a replay")
    expect_id(s, "a VISIBLE store sent again", again, visible)
    accepted = s.run.document("accepted")
    expect_id(s, "an ACCEPTED store", s.store(accepted, WaitFor.ACCEPTED), accepted)

"""Replace on re-store, bulk store_many and deadlines on the CortexDB engines (issue 14
items 1-2, issue 15 item 2), through real sockets to the doubles of both wires."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

from cortex_memory import InvalidRequestError, UnavailableError
from cortex_memory.contract import (
    ListRequest,
    MetaFilter,
    Namespace,
    Source,
    SourceKind,
    StoreItem,
    StoreReceipt,
    WaitFor,
)
from cortex_memory.contract.conformance.checks_writes import past_deadline

HOME = "/home/ada/notes"
FLOWS = Path(__file__).resolve().parents[2] / "docs" / "flows.md"
REPLACE_HEAD = "| Store with `replace=True` (one document, `VISIBLE`) | Direct | Hosted |"


def listed(engine) -> List[str]:
    ids: List[str] = []
    cursor: Optional[str] = None
    while True:
        page = engine.list(ListRequest(MetaFilter(), 200, cursor))
        ids.extend(hit.id for hit in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return ids


def sent_anywhere(double, text: str) -> bool:
    with double.state.lock:
        lines = list(double.state.seen.requests)
        bodies = list(double.state.seen.bodies)
    return any(text in line for line in lines) or any(text.encode() in b for b in bodies)


def test_replace_by_file_path_forgets_the_old_version_and_nothing_else(kit, wire, make_double):
    double = make_double(wire)
    engine = double.engine()
    path = f"{HOME}/plan.md"
    v1, v2 = kit.document("plan, first draft", file_path=path), kit.document(
        "plan, second draft", file_path=path
    )
    kept = [
        kit.document("another note", file_path=f"{HOME}/other.md"),
        kit.document("plan, first draft", file_path=path, namespace=Namespace.parse("agent:bob")),
        kit.learning("plan facts", file_path=path),  # another kind
        kit.document("below it", file_path=f"{path}/appendix.md"),  # a prefix is not the path
    ]
    engine.store_many([v1, *kept])
    double.state.clear_seen()
    receipt = engine.store(v2, replace=True)
    assert receipt == StoreReceipt(v2.fingerprint(), False, (v1.fingerprint(),))
    lines = double.state.requests()
    # The store's own four requests, then one walk of the scope and one forget.
    assert len(lines) == 6, lines
    walk, forget = lines[4], lines[5]
    assert walk.startswith(("GET /v1/events?", "GET /memory/events?"))
    assert "labels" not in urllib.parse.parse_qs(walk.split("?", 1)[1])  # no label for a path
    assert forget in ("POST /v1/forget", "POST /memory/forget")
    assert not sent_anywhere(double, HOME)  # the path is matched by digest only
    assert sorted(listed(engine)) == sorted([v2.fingerprint(), *(k.fingerprint() for k in kept)])


def test_replace_by_source_id_narrows_its_walk_by_label(kit, wire, make_double):
    double = make_double(wire)
    engine = double.engine()
    source = Source(SourceKind.IMPORT, "crm-note-42")
    v1 = kit.document("customer called", source=source, file_path="a.md")
    v2 = kit.document("customer called twice", source=source, file_path="b.md")
    engine.store(v1)
    double.state.clear_seen()
    assert engine.store(v2, replace=True).replaced == (v1.fingerprint(),)
    walk = double.state.requests()[4]
    labels = urllib.parse.parse_qs(walk.split("?", 1)[1])["labels"]
    assert [label[:5] for label in labels] == ["tm:s:"]
    assert listed(engine) == [v2.fingerprint()]


def test_nothing_to_replace_costs_one_walk_and_no_forget(kit, wire, make_double):
    double = make_double(wire)
    engine = double.engine()
    note = kit.document("a new note", file_path="new.md")
    receipt = engine.store(note, replace=True)
    assert receipt == StoreReceipt(note.fingerprint(), False)
    assert len(double.state.requests()) == 5
    double.state.clear_seen()
    again = engine.store(note, replace=True)  # a replay: the lookup and the walk
    assert again == StoreReceipt(note.fingerprint(), True)
    assert len(double.state.requests()) == 2
    assert double.state.count("POST /v1/forget") + double.state.count("POST /memory/forget") == 0


def test_without_replace_nothing_more_is_sent(kit, wire, make_double):
    double = make_double(wire)
    engine = double.engine()
    engine.store(kit.document("v1", file_path="same.md"))
    double.state.clear_seen()
    engine.store(kit.document("v2", file_path="same.md"))
    assert len(double.state.requests()) == 4
    assert len(listed(engine)) == 2  # both versions: replace was not asked


def test_a_failed_forget_leaves_the_new_version_and_a_rerun_finishes(kit, wire, make_double):
    double = make_double(wire)
    engine = double.engine()
    v1, v2 = kit.document("draft one", file_path="doc.md"), kit.document(
        "draft two", file_path="doc.md"
    )
    engine.store(v1)
    double.state.rate_limit_forget = 5  # every forget attempt (hosted retries) is refused
    with pytest.raises(UnavailableError):
        engine.store(v2, replace=True)
    assert sorted(listed(engine)) == sorted([v1.fingerprint(), v2.fingerprint()])  # never none
    double.state.rate_limit_forget = 0
    again = engine.store(v2, replace=True)
    assert again == StoreReceipt(v2.fingerprint(), True, (v1.fingerprint(),))
    assert listed(engine) == [v2.fingerprint()]


def test_a_batch_writes_only_the_last_version_of_each_source(kit, direct):
    engine = direct.engine()
    old = kit.document("version zero", file_path="x.md")
    engine.store(old)
    v1, v2 = kit.document("version one", file_path="x.md"), kit.document(
        "version two", file_path="x.md"
    )
    y = kit.document("another file", file_path="y.md")
    direct.state.clear_seen()
    receipts = engine.store_many([v1, y, v2], replace=True)
    assert receipts == [
        StoreReceipt(v1.fingerprint(), False),
        StoreReceipt(y.fingerprint(), False),
        StoreReceipt(v2.fingerprint(), False, tuple(sorted([old.fingerprint(), v1.fingerprint()]))),
    ]
    with direct.state.lock:
        (bulk,) = direct.state.seen.writes
    texts = [event["content"]["text"] for event in bulk["items"]]
    assert texts == ["another file", "version two"]  # v1 is never written
    assert sorted(listed(engine)) == sorted([y.fingerprint(), v2.fingerprint()])


def test_replace_needs_a_source_identity_and_sends_nothing(kit, wire, make_double):
    double = make_double(wire)
    engine = double.engine()
    with pytest.raises(InvalidRequestError, match=r"neither meta\.source\.id nor meta\.file_path"):
        engine.store(kit.document("no identity"), replace=True)
    with pytest.raises(InvalidRequestError, match=r"meta\.file_path is blank"):
        engine.store_many([kit.document("blank path", file_path="  ")], replace=True)
    assert double.state.requests() == []


def replace_table() -> Dict[str, Tuple[int, int]]:
    """The replace request table of docs/flows.md: case -> (Direct, hosted)."""
    lines = FLOWS.read_text(encoding="utf-8").splitlines()
    rows: Dict[str, Tuple[int, int]] = {}
    for line in lines[lines.index(REPLACE_HEAD) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        direct, hosted = (int(re.match(r"\d+", cell).group()) for cell in cells[1:])  # type: ignore[union-attr]
        rows[cells[0]] = (direct, hosted)
    return rows


def test_replace_sends_what_flows_md_says(kit, wire, make_double):
    table = replace_table()
    column = 0 if wire == "direct" else 1
    assert set(table) == {
        "a new version, one older version held",
        "a new item, no other version held",
        "the held version stored again (a replay)",
    }
    double = make_double(wire)
    engine = double.engine()
    engine.store(kit.document("version one", file_path="t.md"))
    counts = {}
    for case, item in (
        ("a new version, one older version held", kit.document("version two", file_path="t.md")),
        ("the held version stored again (a replay)", kit.document("version two", file_path="t.md")),
        ("a new item, no other version held", kit.document("alone", file_path="u.md")),
    ):
        double.state.clear_seen()
        engine.store(item, replace=True)
        counts[case] = len(double.state.requests())
    assert counts == {case: cells[column] for case, cells in table.items()}


# ------------------------------------------------------------------------ bulk


def counted(items: List[StoreItem], taken: List[int]) -> Iterator[StoreItem]:
    for item in items:
        taken[0] += 1
        yield item


def test_a_generator_goes_in_batches_of_100_with_progress(kit, direct):
    engine = direct.engine()
    items = [kit.learning(f"fact number {i}") for i in range(205)]
    taken = [0]
    calls: List[Tuple[int, Optional[int], int]] = []
    receipts = engine.store_many(
        counted(items, taken), progress=lambda done, total: calls.append((done, total, taken[0]))
    )
    assert [r.id for r in receipts] == [item.fingerprint() for item in items]
    # One bulk per batch; the generator is read one batch (and one item) ahead at most.
    assert direct.state.count("POST /v1/experience/bulk") == 3
    assert [(done, total) for done, total, _ in calls] == [(100, None), (200, None), (205, None)]
    assert all(seen <= done + 1 for done, _, seen in calls)
    sized: List[Tuple[int, Optional[int]]] = []
    engine.store_many(items, progress=lambda done, total: sized.append((done, total)))
    assert sized == [(100, 205), (200, 205), (205, 205)]


def test_a_failure_part_way_reports_what_was_stored_and_a_rerun_sends_the_rest(kit, direct):
    engine = direct.engine()
    items = [kit.learning(f"row {i}") for i in range(250)]
    direct.state.fail_nth_experience = 101  # the first event of the second bulk is refused
    with pytest.raises(InvalidRequestError) as caught:
        engine.store_many(iter(items))
    assert [r.id for r in caught.value.receipts] == [item.fingerprint() for item in items[:100]]
    direct.state.fail_nth_experience = 0
    direct.state.clear_seen()
    receipts = engine.store_many(items)
    assert [r.replayed for r in receipts] == [True] * 100 + [False] * 150
    assert direct.state.count("POST /v1/experience/bulk") == 2  # batches 2 and 3 only


def test_a_progress_callback_may_stop_the_import_between_batches(kit, direct):
    engine = direct.engine()
    items = [kit.learning(f"line {i}") for i in range(150)]

    def cancel(done: int, total: Optional[int]) -> None:
        raise KeyboardInterrupt  # e.g. a GUI's cancel button, raised from the callback

    with pytest.raises(KeyboardInterrupt):
        engine.store_many(items, progress=cancel)
    assert len(listed(engine)) == 100  # the first batch, and nothing after it


# -------------------------------------------------------------------- deadline


@pytest.mark.parametrize("wait", [WaitFor.VISIBLE, WaitFor.ACCEPTED], ids=["visible", "accepted"])
def test_a_store_past_its_deadline_sends_nothing(kit, wire, make_double, wait):
    double = make_double(wire)
    engine = double.engine()
    with pytest.raises(UnavailableError, match="deadline exceeded"):
        engine.store(kit.document("too late"), wait=wait, deadline=past_deadline())
    with pytest.raises(UnavailableError, match="deadline exceeded"):
        engine.store_many([kit.document("too late")] * 3, deadline=past_deadline())
    with double.state.lock:
        assert double.state.seen.writes == []
    assert listed(engine) == []

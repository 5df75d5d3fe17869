"""What one store costs: the request table of docs/flows.md, and reads that do not grow with
the scope (engine.md §8.4, §9.4; issue 13 item 1).

The table is read from docs/flows.md itself, so the page and the engine cannot drift
apart. The scale tests store the same item into an empty scope and into one holding
hundreds of events that share its words: the requests must be the same, and every
answer they read must stay small.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest
import urllib3

from cortex_memory.contract import Document, MemoryMeta, StoreItem, TextBody, WaitFor
from cortex_memory.cortex.envelope import encode_checked, envelopes, experience_request
from cortex_memory.cortex.log.sizes import LISTED_LIMIT, SETTLE_EVENTS
from cortex_memory.cortex.log.visibility import is_listed
from cortex_memory.cortex.log.write import Written
from cortex_memory.cortex.timing import Deadline
from cortex_memory.testing import TEST_TOKEN

FLOWS = Path(__file__).resolve().parents[2] / "docs" / "flows.md"
TABLE_HEAD = (
    "| Item | Direct `VISIBLE` | Direct `ACCEPTED` | Hosted `VISIBLE` | Hosted `ACCEPTED` |"
)

# A long document: three pieces of about 240 KB (the chunk target is 256 KiB).
LONG_TEXT = "\n\n".join(f"Part {i}. " + ("alpha beta gamma delta " * 10_000) for i in range(3))


def _items(kit: Any) -> Dict[str, Callable[[], StoreItem]]:
    return {
        "a document": lambda: kit.document("the quarterly plan is due on friday"),
        "a long document (3 pieces)": lambda: Document(
            TextBody(LONG_TEXT), "Long", None, MemoryMeta()
        ),
        "a 3-turn conversation": lambda: kit.conversation(3, "which editor"),
        "a one-turn conversation": lambda: kit.conversation(1, "a logged turn"),
        "a learning": lambda: kit.learning("prefers helix"),
    }


def documented_table() -> Dict[str, Tuple[int, int, int, int]]:
    """The request table of docs/flows.md: item -> (Direct VISIBLE, ACCEPTED, hosted ...)."""
    lines = FLOWS.read_text(encoding="utf-8").splitlines()
    start = lines.index(TABLE_HEAD) + 2
    rows: Dict[str, Tuple[int, int, int, int]] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        numbers = tuple(int(re.match(r"\d+", cell).group()) for cell in cells[1:])  # type: ignore[union-attr]
        rows[cells[0]] = numbers  # type: ignore[assignment]
    return rows


def test_the_documented_table_names_every_case(kit) -> None:
    table = documented_table()
    assert set(table) == set(_items(kit)) | {"any item stored again (a replay)"}


@pytest.mark.parametrize("wait", [WaitFor.VISIBLE, WaitFor.ACCEPTED], ids=["visible", "accepted"])
def test_each_store_sends_what_flows_md_says(kit, wire, make_double, wait) -> None:
    table = documented_table()
    column = (0 if wire == "direct" else 2) + (0 if wait is WaitFor.VISIBLE else 1)
    replay_expected = table["any item stored again (a replay)"][column]
    for name, make in _items(kit).items():
        double = make_double(wire)
        engine = double.engine()
        item = make()
        assert engine.store(item, wait=wait).replayed is False
        fresh = double.state.requests()
        double.state.clear_seen()
        assert engine.store(item, wait=wait).replayed is True
        again = double.state.requests()
        assert (name, len(fresh)) == (name, table[name][column]), fresh
        assert (name, len(again)) == (name, replay_expected), again
        # The whoami lookup (Direct, once per engine family) is the only request not counted.
        assert double.state.counters["whoami_calls"] == (1 if wire == "direct" else 0)


# -- reads that do not grow with the scope ------------------------------------------


def _crowd(double: Any, count: int) -> None:
    """``count`` root documents sharing the words of the probe note, indexed at once."""
    state = double.state
    with state.lock:
        for index in range(count):
            item = StoreItem.document(f"Planning note {index}: the alpha launch timeline")
            for env in envelopes(item):
                body = experience_request(env, encode_checked(env)).to_json()
                state.log.append(
                    body, indexed_at=0.0, allowed_scope_types=None, size_counts_role_prefix=True
                )


PROBE = StoreItem.document("Planning note probe: the alpha launch timeline")


def _store_probe(double: Any) -> List[str]:
    double.state.clear_seen()
    double.engine().store(PROBE)
    return double.state.requests()


def _raw(double: Any, line: str) -> Any:
    method, target = line.split(" ", 1)
    with double.state.lock:
        recalls = list(double.state.seen.recalls)
    body = json.dumps(recalls[-1]).encode() if method == "POST" else None
    answer = urllib3.request(
        method,
        double.url + target,
        body=body,
        headers={"Authorization": f"Bearer {TEST_TOKEN}", "Content-Type": "application/json"},
    )
    data = json.loads(answer.data)
    return data["data"] if double.hosted else data


def test_a_store_reads_the_same_in_an_empty_and_a_crowded_scope(wire, make_double) -> None:
    empty = make_double(wire)
    crowded = make_double(wire)
    _crowd(crowded, 400)
    lines = _store_probe(empty)
    assert _store_probe(crowded) == lines  # the same four requests, byte for byte
    lookup, write, listed, settle = lines
    assert lookup.startswith(("GET /v1/events?", "GET /memory/events?"))
    assert "experience" in write
    query = urllib.parse.parse_qs(listed.split("?", 1)[1])
    assert query["limit"] == [str(LISTED_LIMIT)]
    assert query["labels"][0].startswith("tm:i:")
    assert settle.endswith("/recall")
    with crowded.state.lock:
        body = crowded.state.seen.recalls[-1]
    assert body["filters"] == {"metadata": {"labels": [query["labels"][0]]}}
    assert body["budgets"]["per_layer_limits"] == {"events": SETTLE_EVENTS}
    # What each read answers in the crowded scope: only the probe's own events,
    # although 400 events share every word of its text.
    assert len(_raw(crowded, lookup)["items"]) == 2  # listings show each event twice
    assert len(_raw(crowded, listed)["items"]) == 2
    assert [event["content"]["text"] for event in _raw(crowded, settle)["layers"]["events"]] == [
        PROBE.body.text  # type: ignore[union-attr]
    ]


def test_a_listed_wait_reads_on_when_newer_events_of_the_item_fill_its_first_page(
    wire, make_double
) -> None:
    double = make_double(wire)
    engine = double.engine()
    engine.store(PROBE)
    with double.state.lock:
        (first,) = double.state.log.events
        # A concurrent writer of the same item (another observed_at) adds three events.
        for n in range(3):
            copy = json.loads(json.dumps(first))
            copy["id"] = f"evt_other_{n}"
            double.state.log.events.append(copy)
    labels = first["context"]["labels"]
    written = Written(first["scope"], labels[0], "", labels, first["id"], False)
    log = engine.context.log
    double.state.clear_seen()
    assert is_listed(log, written, Deadline.of(5.0)) is True
    pages = double.state.requests()
    assert len(pages) == 2  # the first small page was full without it; the next held it
    assert f"limit={LISTED_LIMIT}" in pages[0]
    assert "limit=200" in pages[1]
    double.state.clear_seen()
    newest = written._replace(event_id="evt_other_2")
    assert is_listed(log, newest, Deadline.of(5.0)) is True
    assert len(double.state.requests()) == 1
    missing = written._replace(event_id="evt_missing")
    assert is_listed(log, missing, Deadline.of(5.0)) is False

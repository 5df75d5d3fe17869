"""B3: requests sent per ``store_many`` and per ``fetch``, against the minimum the wire allows.

Counts come from the double's own recording (``state.seen``: every request that
reached it; the Direct whoami lookup is not recorded there and is reported on its
own, since one lookup serves the engine family for its whole life). Both wires
run on in-process loopback doubles; nothing here is timed, so the figures are
exact and the same on every machine.

Cases (each on a fresh double):

* **store_many**: 100 single-event items across 3 scopes (34 root documents, 33
  root learnings, 33 documents at ``agent:x``), none held before, ``WaitFor.VISIBLE``.
* **fetch, reach**: 8 scopes known from the reach (``of(agent:a/agent:b/agent:c)``
  × documents and learnings), a page of 10.
* **fetch, discovered**: the same 8 scopes found by a scope listing (no reach).
* **fetch, conversations**: 8 scopes (4 nodes × conversations and learnings)
  whose page holds 4 two-turn conversations, one per node, to be assembled.
* **recall, reach**: the 8 scopes of the first fetch case, answered once.

The minimum of each case is derived from the wire alone, what the API needs to give
the contract's results, not what the engine's flow does (:data:`MINIMA` below; the
text is also written to the JSON). Where the engine sends more, :data:`FLOW_NOTES`
says why; the aim is to send exactly the minimum, so such a case is a miss.
Run: ``python bench/b3_requests.py``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, summary, write_result

from cortex_memory.contract.filter import MetaFilter
from cortex_memory.contract.items import ItemKind, LearningKind, Role, StoreItem, Turn
from cortex_memory.contract.meta import MemoryMeta
from cortex_memory.contract.namespace import Namespace, Reach
from cortex_memory.contract.requests import FetchMode, FetchRequest, RecallRequest
from cortex_memory.testing import DirectDouble, HostedDouble

NODES = ["", "agent:a", "agent:a/agent:b", "agent:a/agent:b/agent:c"]
DEEPEST = Namespace.parse(NODES[-1])
DOCS_AND_LEARNINGS = (ItemKind.DOCUMENT, ItemKind.LEARNING)

# (wire, case) -> (minimum, derivation). Each minimum is what the API itself needs to
# give the contract's results, derived from the routes and from what the wire may do,
# not from the engine's flow: a listing or a lookup (GET events) names one scope; a bulk
# write takes events of any scopes (<= 1000); the hosted API has no bulk and no wait;
# recall packs are per scope (spec decision 5: view "granular", no server-side
# traversal). Replay detection needs one lookup per scope: an item's identity (its
# fingerprint) leaves out observed_at and the body key covers the whole body and lives
# 24 h, so the server alone cannot answer a replay (docs/flows.md).
# Read-after-write (WaitFor.VISIBLE): the wire may answer a listing without an event
# that a ?wait=indexed write already returned (doubles.md models it on both wires with
# hide_listing_for and arm_after_write; engine.md §8.4 "Listed" is fatal), so only a
# listing of each written scope proves an item readable: one per scope, narrowed to
# its last item. Ranked visibility (engine.md §8.4 "Settled") can only be observed
# through a recall; one probe for the batch's last item is the least that observes it.
# Trusting ?wait=indexed alone (4 requests on Direct) would give up the listed
# guarantee the wire does not make.
MINIMA: Dict[Tuple[str, str], Tuple[int, str]] = {
    ("direct", "store_many"): (
        8,
        "3 replay lookups (GET events names one scope; each lookup holds the <= 34 "
        "item labels of its scope) + 1 bulk write with ?wait=indexed (any scopes, <= 1000 "
        "events) + 3 listings (a listing may lag an indexed write: one per scope proves "
        "its items readable) + 1 ranked probe (only recall shows ranked visibility)",
    ),
    ("hosted", "store_many"): (
        107,
        "3 replay lookups + 100 writes (one event per request, no bulk) + 3 listings "
        "(no ?wait on this API: the last write of each scope must be seen listed) + 1 "
        "ranked probe (only recall shows ranked visibility)",
    ),
    ("direct", "fetch, reach"): (8, "1 recall pack per scope (granular, one scope each)"),
    ("hosted", "fetch, reach"): (8, "1 recall pack per scope (granular, one scope each)"),
    ("direct", "fetch, discovered"): (
        9, "1 scope listing (which of the 8 scopes exist) + 8 packs"
    ),
    ("hosted", "fetch, discovered"): (
        9, "1 scope listing (which of the 8 scopes exist) + 8 packs"
    ),
    ("direct", "fetch, conversations"): (
        12,
        "8 packs + 4 lookups (a pack holds the turns that rank, a hit is the whole "
        "conversation: one GET events per scope holding one, all its labels at once)",
    ),
    ("hosted", "fetch, conversations"): (
        12,
        "8 packs + 4 lookups (a pack holds the turns that rank, a hit is the whole "
        "conversation: one GET events per scope holding one, all its labels at once)",
    ),
    ("direct", "recall, reach"): (9, "8 packs + 1 answer"),
    ("hosted", "recall, reach"): (9, "8 packs + 1 answer"),
}  # fmt: skip

# What the engine's flow sends when it differs from the wire minimum, and why.
FLOW_NOTES: Dict[Tuple[str, str], str] = {
    ("direct", "store_many"): (
        "the engine batches every item into one bulk (engine.md §9.4's one write per "
        "item would send 107) and checks each scope once, for its last item"
    ),
}


def _store_items() -> List[StoreItem]:
    agent = MemoryMeta(namespace=Namespace.parse("agent:x"))
    out: List[StoreItem] = []
    for i in range(100):
        if i % 3 == 0:
            out.append(StoreItem.document(f"root document {i} about alpha"))
        elif i % 3 == 1:
            out.append(StoreItem.learning(f"root fact {i} about alpha", LearningKind.FACT, 0.5))
        else:
            out.append(StoreItem.document(f"agent document {i} about alpha", agent))
    return out


def _read_items() -> List[StoreItem]:
    out: List[StoreItem] = []
    for node in NODES:
        meta = MemoryMeta(namespace=Namespace.parse(node))
        out.append(StoreItem.document(f"alpha document at {node or 'root'}", meta))
        fact = f"alpha fact at {node or 'root'}"
        out.append(StoreItem.learning(fact, LearningKind.FACT, 0.5, meta))
        out.append(
            StoreItem.conversation(
                [Turn(Role.USER, "alpha question"), Turn(Role.ASSISTANT, "alpha answer")], meta
            )
        )
    return out


def _fetch(flt: MetaFilter) -> Callable[[Any], object]:
    return lambda engine: engine.fetch(FetchRequest("alpha", FetchMode.HYBRID, 10, flt))


CASES: List[Tuple[str, bool, Callable[[Any], object]]] = [
    ("store_many", False, lambda engine: engine.store_many(_store_items())),
    ("fetch, reach", True, _fetch(MetaFilter(reach=Reach.of(DEEPEST), kinds=DOCS_AND_LEARNINGS))),
    ("fetch, discovered", True, _fetch(MetaFilter(kinds=DOCS_AND_LEARNINGS))),
    (
        "fetch, conversations",
        True,
        _fetch(
            MetaFilter(reach=Reach.of(DEEPEST), kinds=(ItemKind.CONVERSATION, ItemKind.LEARNING))
        ),
    ),
    (
        "recall, reach",
        True,
        lambda engine: engine.recall(
            RecallRequest("alpha", 5, MetaFilter(reach=Reach.of(DEEPEST), kinds=DOCS_AND_LEARNINGS))
        ),
    ),
]


def _double(wire: str) -> Any:
    return DirectDouble() if wire == "direct" else HostedDouble(rate_limit_requests=None)


def count(wire: str, seeded: bool, operation: Callable[[Any], object]) -> Dict[str, Any]:
    """Run ``operation`` on a fresh double (seeded first when asked); its request counts."""
    with _double(wire) as double:
        engine = double.engine()
        if seeded:
            engine.store_many(_read_items())
        double.state.clear_seen()
        whoami_before = double.state.counters.get("whoami_calls", 0)
        operation(engine)
        lines = double.state.requests()
        routes = Counter(line.split("?", 1)[0] for line in lines)
        return {
            "requests": len(lines),
            "by_route": dict(sorted(routes.items())),
            "whoami": double.state.counters.get("whoami_calls", 0) - whoami_before,
        }


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="accepted; B3 is always quick")
    parser.parse_args(argv)
    rows = []
    figures: Dict[str, Any] = {}
    misses = []
    for wire in ("direct", "hosted"):
        for case, seeded, operation in CASES:
            found = count(wire, seeded, operation)
            minimum, derivation = MINIMA[(wire, case)]
            key = f"{wire} {case}"
            figures[key] = {
                **found,
                "wire_minimum": minimum,
                "derivation": derivation,
                "flow": FLOW_NOTES.get((wire, case)),
            }
            if found["requests"] != minimum:
                misses.append(f"{key} {found['requests']} vs {minimum}")
            rows.append((wire, case, found["requests"], minimum, found["whoami"]))
    print_table(
        "B3: requests sent (state.seen) vs the wire minimum",
        ("wire", "case", "sent", "minimum", "whoami"),
        rows,
    )
    for (wire, case), note in FLOW_NOTES.items():
        print(f"  {wire} {case}: {note}")
    figure = ", ".join(
        f"{wire[0].upper()} {case.split(',')[0]} {figures[f'{wire} {case}']['requests']}"
        for wire in ("direct", "hosted")
        for case in ("store_many", "fetch, reach")
    )
    row = summary(
        figure,
        "= the wire minimum",
        "miss" if misses else "pass",
        detail="; ".join(misses) if misses else None,
    )
    write_result("b3_requests", {"figures": figures, "summary": row})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

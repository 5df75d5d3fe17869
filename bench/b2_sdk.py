"""B2: client CPU per operation, CortexEngine vs the official SDK's ``V1Client``.

One Direct double (``python -m cortex_memory.testing serve --wire direct``) runs
in its own process; both clients talk to it over loopback HTTP/1.1 keep-alive,
with the same bearer and the same ``X-Cortex-Actor`` (``user:local``). Two
operations, each the lowest-level honest path of each side:

**experience write** (the turn-logging hot path)

* ours: ``engine.store(conversation of one user turn, wait=WaitFor.ACCEPTED)``.
  It validates the item, fingerprints it (SHA-256 of its identity JSON), builds
  the v3 envelope (labels ``tm:i:``, ``tm:k:``, ``kind:conversation`` and the
  ``tm:e:`` part label), derives the body idempotency key (``tm3:`` + 56 hex),
  skips the replay lookup (Direct, accepted, one one-turn conversation: engine.md
  §9.4 step 4) and sends one ``POST /v1/experience`` through the transport (pause
  check, bearer, cached actor, watchdog, capped read, JSON parse, receipt check).
* SDK: ``V1Client.experience(scope, text=, role="user", labels=,
  modality="conversation", idempotency_key=)``: the same scope, text, role,
  modality, **the same four labels and a key of the same shape, computed before
  the clock starts** (the SDK has no envelope of its own, so it is handed ours
  for free); it builds its envelope dict (current time as ``observed_at``),
  checks the content size and sends it with ``requests`` (``json=``), then
  parses the answer.

**events page** (20 learnings in one scope; the double, like CortexDB 0.10,
sends every event twice in a row, so the page carries 40 events)

* ours: ``engine.list(ListRequest(learnings at the root, exact reach, limit
  20))``: one ``GET /v1/events?scope=…&limit=200`` (no discovery: an exact reach
  names its one scope), then every event decoded (v3 labels and part), kept by
  the filter, the consecutive copies skipped, each item rebuilt into a contract
  ``Hit``.
* SDK: ``V1Client.events(scope, limit=200)``: the same GET (plus the SDK's
  ``view=local``), ``response.json()``. Raw dicts, nothing decoded.

For context (no aim, not in the verdict), the same GET one layer down in our
stack, **raw events**: ``engine.context.log.page(scope, ...)`` returns the 40
event dicts as the SDK does (one GET through the transport, the JSON parsed,
nothing decoded). It separates what the transport costs from what decoding,
checking and rebuilding 20 items cost. (``list_preview`` would read the same
page: learnings are single-event items.)

For context, a **floor** runs too: the leanest urllib3 loop (the double's pool
looked up once, ``urlopen`` on it) sending the same request (the POST body the
engine sends, prebuilt; the same GET) and parsing the JSON answer, nothing else.
No urllib3-based client can spend less, so ``floor / SDK`` bounds from below what
``ours / SDK`` can reach here.

The figure is ours / SDK client CPU per operation (``time.process_time``: all
threads of this process), paired round by round (the cases take turns every
``BLOCK`` operations inside a round, so a round's ratio compares the same moments).
Aims (issue 13): write ≤ 0.5 and page ≤ 0.6 **in every round**: the verdict takes
each operation's worst round, and the table also shows the median.
Run: ``python bench/b2_sdk.py`` (``--quick`` for a short run). Skipped, saying
so, where the ``cortexdb`` SDK is not installed (it needs Python 3.10+).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List
from urllib.parse import quote

import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    double_argv,
    measure,
    paired_ratio,
    print_table,
    round_ratios,
    serve,
    skip,
    summary,
    write_result,
)

NAME = "b2_sdk"
TOKEN = "tiny_live_test"  # the doubles' test bearer, not a secret
ACTOR = "user:local"
PAGE_ITEMS = 20
AIMS = {"write": 0.5, "page": 0.6}
"""ours / SDK, per operation (issue 13), to be met in every round, not only the median."""
BLOCK = 10


def _iterate(values: List[Any]) -> Iterator[Any]:
    """Cycle through prebuilt inputs (the lists are longer than any run needs)."""
    while True:
        yield from values


def sdk_labels(text: str, key_seed: str) -> Dict[str, Any]:
    """Labels and a key shaped like the engine's for one one-turn conversation."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    part = json.dumps(
        {
            "v": 3,
            "id": digest[:40],
            "kind": "conversation",
            "text": "",
            "meta": {"source": {"kind": "agent"}},
            "turn": {"index": 0, "count": 1, "role": "user"},
        },
        separators=(",", ":"),
    )
    return {
        "labels": [f"tm:i:{digest[:16]}", f"tm:k:{digest[16:32]}", "kind:conversation",
                   f"tm:e:00:{part}"],
        "idempotency_key": "tm3:" + hashlib.sha256(key_seed.encode()).hexdigest()[:56],
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer operations per round")
    parser.add_argument("-n", type=int, default=None, help="operations per round and case")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--block", type=int, default=BLOCK, help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        from cortexdb import V1Client
    except ImportError as exc:
        return skip(NAME, f"the cortexdb SDK is not installed on Python "
                          f"{sys.version_info[0]}.{sys.version_info[1]} ({exc})")  # fmt: skip

    from cortex_memory.contract import (
        ItemKind,
        LearningKind,
        ListRequest,
        MetaFilter,
        Namespace,
        Reach,
        Role,
        StoreItem,
        Turn,
        WaitFor,
    )
    from cortex_memory.cortex import EngineCredential
    from cortex_memory.cortex.engine.core import CortexEngine
    from cortex_memory.cortex.envelope.scopes import scope_path
    from cortex_memory.cortex.timing import Deadline

    n = args.n or (100 if args.quick else 300)
    rounds = args.rounds or (5 if args.quick else 15)
    warmup = 100
    total = warmup + n * rounds + 10

    knobs = {"whoami_caller": ACTOR, "rate_limit_requests": None}
    with serve(double_argv("direct", **knobs)) as url:
        engine = CortexEngine.direct(url, EngineCredential.static(TOKEN))
        sdk = V1Client(url, actor=ACTOR, bearer=TOKEN)
        learnings = scope_path(Namespace.root(), ItemKind.LEARNING)
        conversations = scope_path(Namespace.root(), ItemKind.CONVERSATION)

        # The page both sides read: PAGE_ITEMS learnings, visible before timing starts.
        engine.store_many(
            [
                StoreItem.learning(f"prefers helix, setting {i}", LearningKind.PREFERENCE, 0.8)
                for i in range(PAGE_ITEMS)
            ],
            wait=WaitFor.VISIBLE,
        )
        page_request = ListRequest.new(
            MetaFilter.for_kinds([ItemKind.LEARNING]).with_reach(Reach.exact(Namespace.root())),
            PAGE_ITEMS,
        )

        # Distinct inputs, built before any clock runs, so every write is new.
        turns = _iterate(
            [
                StoreItem.conversation([Turn(Role.USER, f"we agreed to ship on day {i}")])
                for i in range(total)
            ]
        )
        sdk_writes = _iterate(
            [
                (f"we agreed to ship on sdk day {i}", sdk_labels(f"sdk day {i}", f"sdk {i}"))
                for i in range(total)
            ]
        )

        def ours_write() -> object:
            return engine.store(next(turns), wait=WaitFor.ACCEPTED)

        def sdk_write() -> object:
            text, extra = next(sdk_writes)
            return sdk.experience(
                conversations,
                text=text,
                role="user",
                modality="conversation",
                labels=extra["labels"],
                idempotency_key=extra["idempotency_key"],
            )

        def ours_page() -> object:
            return engine.list(page_request)

        log = engine.context.log
        unbounded = Deadline.of(None)

        def ours_events() -> object:
            return log.page(learnings, None, None, 200, unbounded)

        def sdk_page() -> object:
            return sdk.events(learnings, limit=200)

        floor = urllib3.PoolManager(maxsize=8, block=False)
        pool = floor.connection_from_url(url)
        no_retry = urllib3.Retry(total=False, redirect=False, raise_on_redirect=False)
        headers = {"Authorization": f"Bearer {TOKEN}", "Accept-Encoding": "identity",
                   "X-Cortex-Actor": ACTOR}  # fmt: skip
        post_headers = dict(headers, **{"Content-Type": "application/json"})
        floor_bodies = _iterate(
            [
                json.dumps(
                    {"scope": conversations, "modality": "conversation",
                     "content": {"kind": "message", "role": "user", "text": text},
                     "context": {"labels": extra["labels"]},
                     "idempotency_key": extra["idempotency_key"]},
                    sort_keys=True, separators=(",", ":"),
                ).encode()
                for text, extra in (
                    (f"we agreed to ship on floor day {i}",
                     sdk_labels(f"floor day {i}", f"floor {i}"))
                    for i in range(total)
                )
            ]
        )  # fmt: skip
        page_target = f"/v1/events?scope={quote(learnings, safe='')}&limit=200"

        def floor_write() -> object:
            answer = pool.urlopen(
                "POST", "/v1/experience", body=next(floor_bodies), headers=post_headers,
                retries=no_retry, redirect=False,
            )  # fmt: skip
            return json.loads(answer.data)

        def floor_page() -> object:
            answer = pool.urlopen(
                "GET", page_target, headers=headers, retries=no_retry, redirect=False
            )
            return json.loads(answer.data)

        # Both sides do what they claim before anything is timed.
        receipt: Any = ours_write()
        answer: Any = sdk_write()
        listed: Any = ours_page()
        events: Any = sdk_page()
        if receipt.replayed or not isinstance(answer.get("event_id"), str):
            raise RuntimeError(f"a write did not land: {receipt!r}, {answer!r}")
        if len(listed.items) != PAGE_ITEMS:
            raise RuntimeError(f"our page holds {len(listed.items)} items")
        # The double sends every event twice in a row (a CortexDB quirk it keeps).
        if len(events.get("items", ())) != 2 * PAGE_ITEMS:
            raise RuntimeError(f"the SDK's page holds {len(events.get('items', ()))} events")
        if len(ours_events().items) != 2 * PAGE_ITEMS:  # type: ignore[attr-defined]
            raise RuntimeError("our raw events page differs")

        floor_answer: Any = floor_write()
        if not isinstance(floor_answer.get("event_id"), str):
            raise RuntimeError(f"the floor's write did not land: {floor_answer!r}")
        if len(floor_page()["items"]) != 2 * PAGE_ITEMS:  # type: ignore[index]
            raise RuntimeError("the floor's page differs")

        cases: Dict[str, Callable[[], object]] = {
            "ours write": ours_write,
            "sdk write": sdk_write,
            "floor write": floor_write,
            "ours page": ours_page,
            "sdk page": sdk_page,
            "floor page": floor_page,
            "ours events": ours_events,
        }
        results = measure(cases, n=n, rounds=rounds, warmup=warmup, block=args.block or None)
        engine.close()
        sdk.close()
        floor.clear()

    def us(name: str) -> float:
        return float(results[name]["median_s"]) * 1e6

    ratios = {op: paired_ratio(results, f"ours {op}", f"sdk {op}") for op in ("write", "page")}
    floors = {op: paired_ratio(results, f"floor {op}", f"sdk {op}") for op in ("write", "page")}
    events_ratio = paired_ratio(results, "ours events", "sdk page")
    each = {op: round_ratios(results, f"ours {op}", f"sdk {op}") for op in ("write", "page")}
    worst = {op: max(values) for op, values in each.items()}
    for op, values in each.items():
        print(f"{op}, ours/SDK by round: " + " ".join(f"{r:.2f}" for r in values))
    rows = [
        (op, f"{us('sdk ' + op):.1f}", f"{us('ours ' + op):.1f}", f"{us('floor ' + op):.1f}",
         f"{ratio:.3f}", f"{worst[op]:.3f}", f"{floors[op]:.3f}")
        for op, ratio in ratios.items()
    ]  # fmt: skip
    rows.append(
        ("raw events (info)", f"{us('sdk page'):.1f}", f"{us('ours events'):.1f}",
         f"{us('floor page'):.1f}", f"{events_ratio:.3f}", "-", f"{floors['page']:.3f}")
    )  # fmt: skip
    print_table(
        f"B2 client CPU per operation (medians of {rounds} interleaved rounds x {n} ops)",
        ("operation", "SDK us", "ours us", "urllib3 floor us", "ours/SDK", "worst round",
         "floor/SDK"),
        rows,
    )
    verdict = "pass" if all(worst[op] <= AIMS[op] for op in AIMS) else "miss"
    row = summary(
        ", ".join(f"{op} {r:.2f}x (worst round {worst[op]:.2f}x)" for op, r in ratios.items())
        + " (lean urllib3: "
        + ", ".join(f"{r:.2f}x" for r in floors.values())
        + f"; raw events page {events_ratio:.2f}x)",
        ", ".join(f"{op} <= {aim}x" for op, aim in AIMS.items()) + " the SDK, every round",
        verdict,
    )
    path = write_result(
        NAME,
        {
            "summary": row,
            "ops_per_round": n,
            "rounds": rounds,
            "page_items": PAGE_ITEMS,
            "aim_ratio": AIMS,
            "ratio": ratios,
            "round_ratios": each,
            "worst_round_ratio": worst,
            "floor_ratio": floors,
            "raw_events_ratio": events_ratio,
            "cpu_per_op_us": {name: us(name) for name in results},
            "samples_s": {name: results[name]["samples_s"] for name in results},
        },
    )
    print(f"verdict: {verdict}; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

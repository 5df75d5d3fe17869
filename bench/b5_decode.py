"""B5: decode throughput of listing pages (events/s) for 10 000 events, v3 and v2.

Every read decodes every event of every listing page it walks, so this is the CPU a
list, get or forget spends per event before any filtering. The events are a mix a
host writes (learnings, short documents with file and workspace metadata, conversation
turns with times and tool calls), encoded as the engine writes them (v3: text plus
labels and ``tm:e:`` parts) and as the v2 fallback (the envelope JSON as the text).
They are served as 50 listing pages of 200 events, each page the JSON bytes a server
sends.

Cases, per format:

* ``page``: parse the page JSON, then ``decode_event`` every event (what a read does);
* ``decode``: ``decode_event`` over pre-parsed pages (the envelope layer alone);
* ``json floor``: only parsing the page JSON (context: the share the parser takes).

Aim (issue 13): at least 50 000 events/s for ``page`` (parse and decode, what a read
pays) in both formats; the other cases are for context, and every run also lands in
the JSON history. Run: ``python bench/b5_decode.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import measure, print_table, summary, write_result

from cortex_memory.contract.items import (
    Document,
    LearningKind,
    Role,
    StoreItem,
    TextBody,
    Turn,
)
from cortex_memory.contract.meta import MemoryMeta, Source, SourceKind, ToolCallRef
from cortex_memory.contract.namespace import Namespace
from cortex_memory.cortex.envelope import (
    Envelope,
    decode_event,
    encode,
    encode_checked,
    envelopes,
    lookup_labels,
)

AIM = 50_000
"""Events per second a listing page must reach (parse and decode), v3 and v2."""
EVENTS = 10_000
PAGE = 200
WORDS = [
    "the",
    "plan",
    "has",
    "three",
    "steps",
    "and",
    "we",
    "agreed",
    "to",
    "ship",
    "the",
    "helix",
    "release",
    "on",
    "friday",
]


def sample_items(rng: random.Random) -> List[StoreItem]:
    """Items whose events add up to at least EVENTS."""
    base = datetime(2025, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
    ns = [Namespace.root(), Namespace.parse("team:acme/agent:writer"), Namespace.parse("user:ann")]
    out: List[StoreItem] = []
    events = 0
    n = 0
    while events < EVENTS:
        n += 1
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 60)))
        meta = MemoryMeta(
            namespace=rng.choice(ns),
            workspace=rng.choice(["team-handbook", "/Users/ann/work", None]),
            language=rng.choice(["en", None]),
            thread_id=f"thread-{n:08x}-0000-4000-8000-000000000000" if n % 3 == 0 else None,
            agent_id=rng.choice(["writer", None]),
            source=Source(rng.choice(list(SourceKind)), rng.choice(["src_1", None])),
            tags=tuple(rng.sample(["plan", "release", "notes", "x"], rng.randint(0, 2))),
            observed_at=base + timedelta(seconds=n),
        )
        pick = n % 10
        if pick < 4:
            item: StoreItem = StoreItem.learning(
                words, rng.choice(list(LearningKind)), rng.random(), meta
            )
        elif pick < 7:
            item = Document(
                TextBody(words * rng.randint(1, 4)),
                f"Note {n}",
                "text/markdown",
                MemoryMeta(**{**meta.__dict__, "file_path": f"/Users/ann/notes/n{n}.md"}),
            )
        else:
            turns = [
                Turn(
                    rng.choice([Role.USER, Role.ASSISTANT]),
                    words,
                    base + timedelta(seconds=n, milliseconds=t),
                    (ToolCallRef("grep", f"call-{t}"),) if t % 2 else (),
                )
                for t in range(rng.randint(2, 6))
            ]
            item = StoreItem.conversation(turns, meta)
        out.append(item)
        events += len(envelopes(item))
    return out


def event_json(n: int, text: str, labels: List[str], env: Envelope) -> Dict[str, Any]:
    observed = env.meta.observed_at
    return {
        "id": f"evt_{n}",
        "scope": "app:tinymemory/app:documents",
        "content": {"kind": "message", "role": "user", "text": text},
        "context": {
            "labels": labels,
            "observed_at": observed.isoformat() if observed is not None else None,
        },
    }


def pages(items: List[StoreItem], version: int) -> List[bytes]:
    events: List[Dict[str, Any]] = []
    for item in items:
        for env in envelopes(item):
            if version == 3:
                text, labels = encode_checked(env)
                labels = list(labels)
            else:
                text, labels = encode(env), lookup_labels(env.id, env.meta)
            events.append(event_json(len(events), text, labels, env))
    events = events[:EVENTS]
    if version == 3:
        assert all(
            any(label.startswith("tm:e:") for label in e["context"]["labels"]) for e in events
        )
    return [
        json.dumps(
            {"items": events[at : at + PAGE], "has_more": True, "next_cursor": f"c{at}"}
        ).encode("utf-8")
        for at in range(0, len(events), PAGE)
    ]


def read_pages(bodies: List[bytes]) -> Callable[[], int]:
    def run() -> int:
        decoded = 0
        for body in bodies:
            for event in json.loads(body)["items"]:
                if decode_event(event) is not None:
                    decoded += 1
        return decoded

    return run


def decode_only(bodies: List[bytes]) -> Callable[[], int]:
    parsed = [json.loads(body)["items"] for body in bodies]

    def run() -> int:
        decoded = 0
        for items in parsed:
            for event in items:
                if decode_event(event) is not None:
                    decoded += 1
        return decoded

    return run


def parse_only(bodies: List[bytes]) -> Callable[[], int]:
    def run() -> int:
        return sum(len(json.loads(body)["items"]) for body in bodies)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    items = sample_items(random.Random(5))
    corpus = {3: pages(items, 3), 2: pages(items, 2)}
    cases: Dict[str, Callable[[], int]] = {}
    for version, bodies in corpus.items():
        assert read_pages(bodies)() == EVENTS, "every event must decode"
        cases[f"v{version} page"] = read_pages(bodies)
        cases[f"v{version} decode"] = decode_only(bodies)
        cases[f"v{version} json floor"] = parse_only(bodies)
    rounds = 3 if args.quick else 7
    results = measure(cases, n=1, rounds=rounds, warmup=1)
    rows = []
    figures: Dict[str, Any] = {}
    for name, result in results.items():
        seconds = result["median_s"]
        rate = EVENTS / seconds
        rows.append([name, f"{rate:,.0f}", f"{seconds * 1e6 / EVENTS:.1f}"])
        figures[name] = {"events_per_s": round(rate), "us_per_event": seconds * 1e6 / EVENTS}
    page_bytes = {f"v{v}": sum(len(b) for b in bodies) for v, bodies in corpus.items()}
    print_table(
        f"B5: decode throughput, {EVENTS} events in pages of {PAGE} (CPU, median of {rounds})",
        ["case", "events/s", "µs/event"],
        rows,
    )
    print(f"page bytes: {page_bytes}")
    paged = {case: figures[case]["events_per_s"] for case in ("v3 page", "v2 page")}
    verdict = "pass" if all(rate >= AIM for rate in paged.values()) else "miss"
    row = summary(
        ", ".join(f"{case.split()[0]} {rate:,} ev/s" for case, rate in paged.items()),
        f">= {AIM:,} events/s (page: parse + decode)",
        verdict,
    )
    path = write_result(
        "b5_decode",
        {"events": EVENTS, "page": PAGE, "rounds": rounds, "bytes": page_bytes,
         "figures": figures, "aim_events_per_s": AIM, "summary": row},
    )  # fmt: skip
    print(f"verdict: {verdict}; wrote {path}")


if __name__ == "__main__":
    main()

"""B9: what one default ``store()`` costs as its scope grows: 100, 1000 and 10 000 events.

A GUI saving one note must not pay for every note already in the scope. This
benchmark stores one new document with the defaults (``WaitFor.VISIBLE``: the
replay lookup, the write, the listed wait and the settle probe; docs/flows.md)
into scopes already holding 100, 1000 and 10 000 documents, on both wires, and
measures per store:

* **requests** sent and **bytes received** (status lines, headers and bodies),
  counted by a relay (``bench/_relay.py``) in its own process between the
  engine and the double, so counting costs the client nothing;
* **client CPU** (``time.process_time``: every thread of this process).

Setup. One double per wire (``python -m cortex_memory.testing serve``, its own
process, the hosted rate window off) behind the relay. Three scopes, one per
size (documents at ``agent:b9-100``, ``agent:b9-1000``, ``agent:b9-10000``),
are seeded through the double's own write API with the exact events the
engine writes: documents sharing their vocabulary with the measured note, so a
visibility check that read by words instead of by the item would read them
all. The measured stores go round-robin over the three sizes, round after
round (so the three sizes see the same machine load), and each round's notes
are forgotten afterwards (not measured), so a scope stays at its size.

Figure: for each metric and wire, the **growth exponent**, the least-squares
slope of log(cost per store) against log(events in the scope) over the three
sizes: 0 means flat, 1 means proportional. Aim: <= 0.05 for all three metrics
on both wires (a cost 26 % higher at 10 000 than at 100 events would be 0.05).
Bytes and requests are exact; CPU is a median over rounds of paired figures.

Run: ``python bench/b9_store_scale.py`` (``--quick``: fewer rounds).
"""

from __future__ import annotations

import argparse
import math
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import double_argv, print_table, python, serve, summary, write_result
from _relay import counts

from cortex_memory import ForgetTarget, MemoryMeta, Namespace, StoreItem
from cortex_memory.cortex import CortexEngine, EngineCredential, StaticBearer
from cortex_memory.cortex.engine.store import plan_item

HERE = Path(__file__).resolve().parent
NAME = "b9_store_scale"
TOKEN = "tiny_live_test"  # the doubles' test bearer, not a secret
SIZES = (100, 1000, 10_000)
AIM = 0.05
METRICS = ("requests", "bytes_received", "cpu_s")
_SEED_BULK = 1000


def note_text(tag: str) -> str:
    """A note sharing most of its words with every other note of the benchmark."""
    return (
        f"Planning note {tag}: the team agreed on the alpha launch timeline, the budget "
        f"for the quarterly review and who owns the customer follow-up."
    )


def namespace(size: int) -> Namespace:
    return Namespace.parse(f"agent:b9-{size}")


def _seed(http: urllib3.PoolManager, url: str, wire: str, size: int) -> None:
    """Write ``size`` documents into the scope of ``size`` through the double's API."""
    meta = MemoryMeta(namespace=namespace(size))
    bodies = []
    for index in range(size):
        plan = plan_item(StoreItem.document(note_text(f"s{size}-{index}"), meta))
        bodies += [request.to_json() for _, request in plan.events]
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    if wire == "direct":
        for start in range(0, len(bodies), _SEED_BULK):
            chunk = bodies[start : start + _SEED_BULK]
            answer = http.request(
                "POST",
                f"{url}/v1/experience/bulk",
                json={"items": chunk, "ordering": "strict_temporal"},
                headers=headers,
            )
            assert answer.status == 200, answer.status
        return
    for body in bodies:  # the hosted API has no bulk route: one event per request
        claimed = {**headers, "Idempotency-Key": f"b9-{secrets.token_hex(8)}"}
        answer = http.request("POST", f"{url}/memory/experience", json=body, headers=claimed)
        assert answer.status == 202, answer.status


def _engine(wire: str, url: str) -> CortexEngine:
    if wire == "direct":
        return CortexEngine.direct(url, EngineCredential.static(TOKEN))
    return CortexEngine.tinyhumans(url, StaticBearer(TOKEN))


def _round(engine: CortexEngine, relay: str, size: int, tag: str, n: int) -> Dict[str, float]:
    """Store ``n`` new notes into the scope of ``size``; the cost per store."""
    meta = MemoryMeta(namespace=namespace(size))
    items = [StoreItem.document(note_text(f"{tag}-{i}"), meta) for i in range(n)]
    before = counts(relay)
    start = time.process_time()
    for item in items:
        receipt = engine.store(item)
        assert not receipt.replayed
    cpu = time.process_time() - start
    after = counts(relay)
    engine.forget(ForgetTarget.ids([item.fingerprint() for item in items]))
    return {
        "requests": (after["requests"] - before["requests"]) / n,
        "bytes_received": (after["bytes_received"] - before["bytes_received"]) / n,
        "cpu_s": cpu / n,
    }


def exponent(sizes: Sequence[int], values: Sequence[float]) -> float:
    """The least-squares slope of log(value) against log(size)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(v, 1e-12)) for v in values]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    den = sum((x - mx) ** 2 for x in xs)
    return num / den


def run_wire(wire: str, rounds: int, per_round: int) -> Dict[str, Any]:
    """Seed the three scopes on a fresh double, then measure the rounds."""
    knobs: Dict[str, Any] = {"rate_limit_requests": None} if wire == "hosted" else {}
    with serve(double_argv(wire, **knobs)) as upstream, serve(
        [python(), str(HERE / "_relay.py"), upstream]
    ) as relay:
        http = urllib3.PoolManager(retries=False)
        seeded = time.monotonic()
        for size in SIZES:
            _seed(http, upstream, wire, size)
        seed_s = time.monotonic() - seeded
        engine = _engine(wire, relay)
        for size in SIZES:  # warm-up: the actor lookup, connections, first imports
            _round(engine, relay, size, f"warm-{size}", 2)
        samples: Dict[int, List[Dict[str, float]]] = {size: [] for size in SIZES}
        for r in range(rounds):
            for size in SIZES:
                samples[size].append(_round(engine, relay, size, f"r{r}-{size}", per_round))
        engine.close()
        http.clear()
    per_size: Dict[str, Dict[str, float]] = {}
    for size in SIZES:
        per_size[str(size)] = {
            metric: statistics.median(s[metric] for s in samples[size]) for metric in METRICS
        }
    # CPU is paired round by round (each round sees one machine load), then the median.
    cpu_exponents = [
        exponent(SIZES, [samples[size][r]["cpu_s"] for size in SIZES]) for r in range(rounds)
    ]
    exponents = {
        "requests": exponent(SIZES, [per_size[str(s)]["requests"] for s in SIZES]),
        "bytes_received": exponent(SIZES, [per_size[str(s)]["bytes_received"] for s in SIZES]),
        "cpu_s": statistics.median(cpu_exponents),
    }
    return {
        "per_size": per_size,
        "exponents": exponents,
        "cpu_exponent_per_round": cpu_exponents,
        "seed_s": seed_s,
    }


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args(argv)
    rounds, per_round = (3, 10) if args.quick else (7, 30)
    figures: Dict[str, Any] = {}
    rows: List[Tuple[Any, ...]] = []
    misses: List[str] = []
    for wire in ("direct", "hosted"):
        found = run_wire(wire, rounds, per_round)
        figures[wire] = found
        for size in SIZES:
            cell = found["per_size"][str(size)]
            rows.append(
                (
                    wire,
                    size,
                    f"{cell['requests']:.2f}",
                    f"{cell['bytes_received']:.0f}",
                    f"{cell['cpu_s'] * 1000:.2f}",
                )
            )
        exps = found["exponents"]
        rows.append(
            (
                wire,
                "exponent",
                f"{exps['requests']:.3f}",
                f"{exps['bytes_received']:.3f}",
                f"{exps['cpu_s']:.3f}",
            )
        )
        for metric in METRICS:
            if exps[metric] > AIM:
                misses.append(f"{wire} {metric} {exps[metric]:.3f}")
    print_table(
        "B9: one default store() against the events already in its scope",
        ("wire", "events", "requests/store", "bytes received/store", "client CPU ms/store"),
        rows,
    )
    worst = max(figures[w]["exponents"][m] for w in figures for m in METRICS)
    figure = "growth exponent " + ", ".join(
        f"{w[0].upper()} req {figures[w]['exponents']['requests']:.2f} "
        f"bytes {figures[w]['exponents']['bytes_received']:.2f} "
        f"cpu {figures[w]['exponents']['cpu_s']:.2f}"
        for w in ("direct", "hosted")
    )
    verdict = "miss" if misses else "pass"
    payload = {
        "sizes": list(SIZES),
        "rounds": rounds,
        "stores_per_round": per_round,
        "aim": f"growth exponent <= {AIM} for requests, bytes received and client CPU, both wires",
        "worst_exponent": worst,
        "wires": figures,
        "misses": misses,
        "summary": summary(
            figure,
            f"<= {AIM} each",
            verdict,
            detail="; ".join(misses) if misses else None,
        ),
    }
    path = write_result(NAME, payload)
    print(f"verdict: {verdict} (worst exponent {worst:.3f}); figures in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

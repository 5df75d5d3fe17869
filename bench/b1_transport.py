"""B1: client CPU per request through cortex_memory's transport vs. a bare urllib3 loop.

A small JSON server runs in its own process. The same small JSON GET (an
events page) and POST (an experience write) are sent through

* the **floor**: the leanest urllib3 loop sending the same requests: the
  server's pool looked up once (``PoolManager.connection_from_url``), then
  ``urlopen`` on that pool with the request target, the same headers
  (``Authorization``, ``Accept-Encoding: identity``, ``X-Cortex-Actor``, and
  ``Content-Type`` on the POST), the body serialized as the transport serializes
  it, no retries, the answer read whole and parsed with ``json.loads`` (before
  issue 13 the floor was ``PoolManager.request``, which parses the URL again on
  every call: an easier floor), and
* **ours**: ``HttpClient.retry_transient("GET", ...)`` and
  ``HttpClient.once("POST", ...)`` on the Direct wire, with everything they do
  per attempt (pause check, credential resolution, the cached actor header,
  the watchdog, capped body reading, JSON parsing, failure mapping).

The figure is the ratio of client CPU per request (ours / floor); the aim is
≤ 1.15. Run: ``python bench/b1_transport.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import measure, paired_ratio, print_table, python, serve, summary, write_result

from cortex_memory.cortex import CortexWire, EngineCredential
from cortex_memory.cortex.transport import HttpClient

AIM = 1.15
BLOCK = 25
"""Requests of one case before the next case takes its turn (see ``measure``)."""
TOKEN = "ctx_bench_token"  # a benchmark value, not a secret
ACTOR = "user:local"
EVENTS_ROUTE = "v1/events?scope=app%3Atinymemory%2Fapp%3Adocuments&limit=200"
PAGE = {
    "items": [
        {
            "id": f"evt_{i}",
            "content": {"text": f"note {i}"},
            "context": {"labels": ["tm:i:0123456789abcdef"], "observed_at": None},
        }
        for i in range(3)
    ],
    "has_more": False,
    "next_cursor": None,
}
RECEIPT = {"event_id": "evt_1", "replayed_from_idempotency": False}
EXPERIENCE = {
    "scope": "app:tinymemory/app:documents",
    "modality": "observation",
    "content": {"kind": "message", "role": "user", "text": "prefers helix"},
    "context": {"labels": ["tm:i:0123456789abcdef", "kind:learning"]},
    "idempotency_key": "tm3:" + "0" * 56,
}


def run_server() -> None:
    """Serve the benchmark routes until terminated (the ``--serve`` mode)."""
    from cortex_memory.testing.hostile import LoopbackServer, RawRequest

    page = json.dumps(PAGE).encode()
    receipt = json.dumps(RECEIPT).encode()
    whoami = json.dumps({"caller": ACTOR}).encode()
    json_type = {"Content-Type": "application/json"}

    def handler(request: RawRequest) -> tuple:  # type: ignore[type-arg]
        if request.path == "/v1/auth/whoami":
            return 200, json_type, whoami
        if request.method == "POST":
            return 200, json_type, receipt
        return 200, json_type, page

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with LoopbackServer(handler) as server:
        print(f"READY {server.url}", flush=True)
        stop.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="fewer requests per round")
    parser.add_argument("-n", type=int, default=None, help="requests per round and case")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--block", type=int, default=BLOCK, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        run_server()
        return 0
    n = args.n or (200 if args.quick else 500)
    rounds = args.rounds or (5 if args.quick else 25)

    with serve([python(), str(Path(__file__).resolve()), "--serve"]) as url:
        # The floor: the leanest urllib3 loop that sends the same requests. The pool
        # of the one origin is looked up once (as the transport does), the retry
        # policy is built once, and each request goes straight to the pool's
        # urlopen with its target, the same headers and, for the POST, the body
        # serialized as the transport serializes it; the answer is read whole and
        # parsed with json.loads.
        floor = urllib3.PoolManager(maxsize=8, block=False)
        pool = floor.connection_from_url(url)
        no_retry = urllib3.Retry(total=False, redirect=False, raise_on_redirect=False)
        get_headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Accept-Encoding": "identity",
            "X-Cortex-Actor": ACTOR,
        }
        post_headers = dict(get_headers, **{"Content-Type": "application/json"})
        events_target = f"/{EVENTS_ROUTE}"
        experience_target = "/v1/experience"

        def floor_get() -> object:
            answer = pool.urlopen(
                "GET", events_target, headers=get_headers, retries=no_retry, redirect=False
            )
            return json.loads(answer.data)

        def floor_post() -> object:
            body = json.dumps(EXPERIENCE, sort_keys=True, separators=(",", ":")).encode()
            answer = pool.urlopen(
                "POST", experience_target, body=body, headers=post_headers, retries=no_retry,
                redirect=False,
            )  # fmt: skip
            return json.loads(answer.data)

        client = HttpClient(CortexWire.DIRECT, url, EngineCredential.static(TOKEN))

        def ours_get() -> object:
            return client.retry_transient("GET", EVENTS_ROUTE).data

        def ours_post() -> object:
            return client.once("POST", "v1/experience", EXPERIENCE).data

        assert ours_get() == floor_get() == PAGE
        assert ours_post() == floor_post() == RECEIPT
        results = measure(
            {
                "floor GET": floor_get,
                "ours GET": ours_get,
                "floor POST": floor_post,
                "ours POST": ours_post,
            },
            n=n,
            rounds=rounds,
            block=args.block or None,
        )
        client.close()
        floor.clear()

    def us(name: str) -> float:
        return float(results[name]["median_s"]) * 1e6

    ratios = {
        "GET": paired_ratio(results, "ours GET", "floor GET"),
        "POST": paired_ratio(results, "ours POST", "floor POST"),
    }
    rows = [
        (verb, f"{us('floor ' + verb):.1f}", f"{us('ours ' + verb):.1f}", f"{ratio:.3f}")
        for verb, ratio in ratios.items()
    ]
    print_table(
        f"B1 client CPU per request (medians of {rounds} interleaved rounds x {n} requests)",
        ("request", "floor us", "ours us", "ratio (paired median)"),
        rows,
    )
    verdict = "pass" if all(ratio <= AIM for ratio in ratios.values()) else "miss"
    row = summary(
        ", ".join(f"{verb} {ratio:.3f}x" for verb, ratio in ratios.items())
        + " the lean urllib3 loop",
        f"<= {AIM}x the lean urllib3 loop",
        verdict,
    )
    path = write_result(
        "b1_transport",
        {
            "summary": row,
            "requests_per_round": n,
            "rounds": rounds,
            "aim_ratio": AIM,
            "ratio": ratios,
            "cpu_per_request_us": {name: us(name) for name in results},
            "samples_s": {name: results[name]["samples_s"] for name in results},
        },
    )
    print(f"verdict: {verdict}; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One of N processes racing to create and write one new file (run as a script).

    python _race_child.py KIND FOLDER ROUNDS NAME

For each round ``r`` it prints ``ready r``, waits until ``FOLDER/go-r`` exists,
then opens ``FOLDER/r.sqlite3`` as KIND (``engine``, ``store``, ``sidecar`` or
``ledger``), writes one thing named after NAME, closes it, and prints ``ok r``
or ``fail r <error type>: <message>``. Every round runs even when one fails.
"""

from __future__ import annotations

import os
import sys
import time


def write_once(kind: str, path: str, name: str) -> None:
    if kind == "engine":
        from cortex_memory import LocalEngine, StoreItem

        engine = LocalEngine(path)
        try:
            engine.store(StoreItem.document(f"written by {name}"))
        finally:
            engine.close()
    elif kind == "store":
        from cortex_memory.tools import LocalMemoryStore

        store = LocalMemoryStore(path)
        try:
            store.put(f"note from {name}")
        finally:
            store.close()
    elif kind == "sidecar":
        from cortex_memory.tools.memory.sidecar import Sidecar

        sidecar = Sidecar(path)
        try:
            sidecar.start((name, 1), 0)
        finally:
            sidecar.close()
    elif kind == "ledger":
        from cortex_memory.tools.mcp import Ledger

        ledger = Ledger(path)
        try:
            ledger.start_session(name)
        finally:
            ledger.close()
    else:  # pragma: no cover - a typo in the test
        raise SystemExit(f"unknown kind {kind}")


def main() -> None:
    kind, folder, rounds, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    write_once(kind, os.path.join(folder, "warm-up", f"{name}.sqlite3"), name)  # imports done
    for r in range(rounds):
        print(f"ready {r}", flush=True)
        go = os.path.join(folder, f"go-{r}")
        while not os.path.exists(go):
            time.sleep(0.0005)
        try:
            write_once(kind, os.path.join(folder, f"{r}.sqlite3"), name)
        except Exception as exc:  # reported to the parent, which fails the test
            print(f"fail {r} {type(exc).__name__}: {exc}", flush=True)
        else:
            print(f"ok {r}", flush=True)


if __name__ == "__main__":
    main()

"""``python -m cortex_memory``: the ``cortex-memory`` command (see :mod:`cortex_memory.cli`)."""

from __future__ import annotations

from cortex_memory.cli import main

if __name__ == "__main__":
    raise SystemExit(main())

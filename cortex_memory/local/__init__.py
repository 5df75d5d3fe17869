"""The local engine: the whole memory contract on stdlib ``sqlite3``, no server.

``LocalEngine(path)`` keeps memory in one SQLite file (or ``":memory:"``),
ranks with FTS5 where the SQLite build has it, hashed trigram vectors and a
hybrid of both, answers recall extractively with citations, and distils
beliefs on demand. See ``docs/local.md``.
"""

from __future__ import annotations

from cortex_memory.local.engine import LOCAL_ENGINE_ID, LocalEngine, local_descriptor

__all__ = ["LOCAL_ENGINE_ID", "LocalEngine", "local_descriptor"]

"""The local engine: the whole memory contract on stdlib ``sqlite3``, no server.

``LocalEngine(path)`` keeps memory in one SQLite file (or ``":memory:"``),
ranks keywords with FTS5 over stemmed words (BM25) where the SQLite build
has it, vectors from an :class:`Embedder` (built in: character n-gram
similarity; ``[semantic]`` extra: an offline semantic model) and a
rank fusion of both, answers recall extractively with citations, and
distils beliefs on demand. See ``docs/local.md``.
"""

from __future__ import annotations

from cortex_memory.local.embedders import Embedder, NgramEmbedder
from cortex_memory.local.engine import LOCAL_ENGINE_ID, LocalEngine, local_descriptor
from cortex_memory.local.files import InsecureFileWarning

__all__ = [
    "Embedder",
    "InsecureFileWarning",
    "LOCAL_ENGINE_ID",
    "LocalEngine",
    "NgramEmbedder",
    "local_descriptor",
]

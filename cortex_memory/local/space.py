"""The local engine's embedder, as the engine uses it: settings, vector spaces, queries.

One :class:`Vectors` per engine holds what the engine needs of its embedder:
the hit floor and fusion weight, whether it stores vectors, the key of its
model in the file (known once the file is ready), and the NumPy indexes,
one per corpus, built on first use and shared by every call.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any, Dict, List, Optional, Sequence, Union

from cortex_memory.contract import FetchMode, StoreItem
from cortex_memory.errors import InvalidRequestError
from cortex_memory.local.corpus import BELIEFS, ITEMS, Corpus
from cortex_memory.local.embedders import (
    Embedder,
    NgramEmbedder,
    as_embedder,
    embed_all,
    fusion_weight_of,
    min_similarity_of,
    stores_vectors,
)
from cortex_memory.local.plainrows import prepare_all
from cortex_memory.local.search import Query, VectorSpace
from cortex_memory.local.store import Prepared
from cortex_memory.local.vectors import VectorIndex, model_key, numpy_or_none, reembed

__all__ = ["VECTOR_BACKENDS", "Vectors"]

#: How vector search may run: with NumPy when importable, with it, or without.
VECTOR_BACKENDS = ("auto", "numpy", "python")


class Vectors:
    """An engine's embedder and where its vectors are searched (thread-safe)."""

    def __init__(self, embedder: Union[Embedder, str, None], backend: str, tenant: str) -> None:
        if backend not in VECTOR_BACKENDS:
            raise InvalidRequestError(
                f"vector_backend must be one of {', '.join(VECTOR_BACKENDS)}, not {backend!r}"
            )
        if backend == "numpy" and numpy_or_none() is None:
            raise InvalidRequestError("vector_backend `numpy` needs NumPy, which is not installed")
        self.embedder: Embedder = NgramEmbedder() if embedder is None else as_embedder(embedder)
        self.floor = min_similarity_of(self.embedder)
        self.weight = fusion_weight_of(self.embedder)
        self.stored = stores_vectors(self.embedder)
        # The NumPy index searches stored vectors; an embedder that stores none
        # is always searched over the bounded candidates.
        self.numpy = backend != "python" and numpy_or_none() is not None and self.stored
        self._tenant = tenant
        self._lock = threading.Lock()
        self._indexes: Dict[str, VectorIndex] = {}
        self._model = 0

    def ready(self, conn: sqlite3.Connection, writer: Any) -> None:
        """Register the model in the file and bring every vector to it (once, at set-up)."""
        with writer(conn):
            model = model_key(conn, self.embedder)
        with self._lock:
            self._model = model
        for corpus in (ITEMS, BELIEFS):
            reembed(conn, corpus, self.embedder, model, writer)

    @property
    def model(self) -> int:
        """The key of the embedder's model in the file."""
        with self._lock:
            return self._model

    @property
    def writer(self) -> Optional[Embedder]:
        """The embedder whose vectors writes store, or None when it stores none."""
        return self.embedder if self.stored else None

    def space(self, corpus: Corpus) -> VectorSpace:
        """Where ``corpus``'s vectors of this engine's tenant and model are searched."""
        index: Optional[VectorIndex] = None
        with self._lock:
            if self.numpy:
                index = self._indexes.get(corpus.name)
                if index is None:
                    index = VectorIndex(corpus, self._tenant, self._model, self.embedder.dimension)
                    self._indexes[corpus.name] = index
            model = self._model
        live = None if self.stored else self.embedder
        return VectorSpace(model, self.floor, index, self.weight, live)

    def query(self, text: str, mode: FetchMode) -> Query:
        """``text`` ready to rank, embedded when ``mode`` has a vector part."""
        if mode is FetchMode.KEYWORD:
            return Query.of(text)
        return Query.of(text, embed_all(self.embedder, [text])[0])

    def prepare(self, items: Sequence[StoreItem]) -> List[Prepared]:
        """The items made ready to write, with vectors when the embedder stores them."""
        return prepare_all(items, self.writer)

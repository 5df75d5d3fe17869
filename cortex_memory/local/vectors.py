"""Stored vectors: which model wrote them, re-embedding, and nearest-neighbour search.

Every item (and belief) has one row in its corpus's vector table:
``(seq, model, vec)``, ``vec`` being the float32 vector the embedder made and
``model`` a small key into ``embedders`` (``model_id``, ``dimension``). Only
rows of the engine's current model are ever compared, so a file opened with
another embedder never mixes two vector spaces: :func:`reembed` brings every
row to the current model first, in short write transactions.

Search comes in two kinds:

- :class:`VectorIndex` (when NumPy can be imported): one matrix per corpus,
  tenant and model, kept in memory by the engine and refreshed
  incrementally: new rows (a higher ``seq``) are appended as they appear, and
  a change that removes or rewrites vectors bumps the file's
  ``vector_epoch``, which makes the next search reload. A search is one
  matrix product over every row: exact, and a few milliseconds at 100 000
  rows.
- :func:`scan_candidates` (no NumPy): the cosine of the query with a
  bounded set of candidates the caller chose (the keyword candidates and the
  newest rows), computed in Python. Its cost does not grow with the file.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from cortex_memory.local.corpus import Corpus
from cortex_memory.local.embedders import (
    Embedder,
    cosine,
    cosines,
    embed_all,
    stores_vectors,
    unpack,
)

__all__ = [
    "VectorIndex",
    "bump_epoch",
    "delete_vectors",
    "live_candidates",
    "model_key",
    "numpy_or_none",
    "reembed",
    "scan_candidates",
    "write_vectors",
]

_log = logging.getLogger(__name__)

#: Rows re-embedded per write transaction.
REEMBED_BATCH = 256
#: Blocks of rows an index keeps before merging them into one.
_MAX_BLOCKS = 8

_NUMPY_LOCK = threading.Lock()
_NUMPY: List[Any] = []  # [module or None] once looked up


def numpy_or_none() -> Any:
    """The ``numpy`` module, or None when it cannot be imported (looked up once)."""
    with _NUMPY_LOCK:
        if not _NUMPY:
            try:
                import numpy
            except ImportError:
                _NUMPY.append(None)
            else:
                _NUMPY.append(numpy)
        return _NUMPY[0]


#: Stored with every model id: the rules of ``embedders.embedding_text``. A
#: change to what is embedded is a change of vector space too.
TEXT_RULES = "text-1"


def model_key(conn: sqlite3.Connection, embedder: Embedder) -> int:
    """The key of ``embedder``'s model in ``embedders``, adding it when new (in a write)."""
    model_id, dimension = f"{embedder.model_id}#{TEXT_RULES}", embedder.dimension
    row = conn.execute(
        "SELECT key, dimension FROM embedders WHERE model_id = ?", (model_id,)
    ).fetchone()
    if row is not None:
        if int(row[1]) != dimension:
            # Same name, other shape: the old rows are of no use to this model.
            conn.execute("UPDATE embedders SET dimension = ? WHERE key = ?", (dimension, row[0]))
            for table in ("item_vectors", "belief_vectors"):
                conn.execute(f"DELETE FROM {table} WHERE model = ?", (row[0],))
            bump_epoch(conn)
        return int(row[0])
    cursor = conn.execute(
        "INSERT INTO embedders (model_id, dimension) VALUES (?, ?)", (model_id, dimension)
    )
    return int(cursor.lastrowid or 0)


def bump_epoch(conn: sqlite3.Connection) -> None:
    """Tell every index (in every process) that vectors went or changed: reload."""
    conn.execute("UPDATE stats SET value = value + 1 WHERE key = 'vector_epoch'")


def write_vectors(
    conn: sqlite3.Connection, corpus: Corpus, key: int, rows: Iterable[Tuple[int, bytes]]
) -> None:
    """Store ``(seq, vec)`` rows of model ``key`` (inside the caller's write)."""
    conn.executemany(
        f"INSERT OR REPLACE INTO {corpus.vectors} (seq, model, vec) VALUES (?, ?, ?)",
        [(seq, key, vec) for seq, vec in rows],
    )


def delete_vectors(conn: sqlite3.Connection, corpus: Corpus, seqs: Sequence[object]) -> None:
    """Drop the vectors of rows ``seqs`` (inside the caller's write)."""
    marks = ", ".join("?" * len(seqs))
    conn.execute(f"DELETE FROM {corpus.vectors} WHERE seq IN ({marks})", seqs)


def _stale_rows(
    conn: sqlite3.Connection, corpus: Corpus, key: int, after: int
) -> List[Tuple[int, str]]:
    return [
        (int(seq), str(text))
        for seq, text in conn.execute(
            f"SELECT {corpus.alias}.seq, {corpus.text} FROM {corpus.table} {corpus.alias} "
            f"LEFT JOIN {corpus.vectors} v ON v.seq = {corpus.alias}.seq "
            f"WHERE {corpus.alias}.seq > ? AND (v.seq IS NULL OR v.model != ?) "
            f"ORDER BY {corpus.alias}.seq LIMIT ?",
            (after, key, REEMBED_BATCH),
        )
    ]


def reembed(
    conn: sqlite3.Connection, corpus: Corpus, embedder: Embedder, key: int, writer: Any
) -> int:
    """Give every row of ``corpus`` a vector of model ``key``; the number embedded.

    Rows are read and embedded outside any write lock, then written in one
    short write transaction per batch (``writer`` is the transaction context
    manager), so other writers keep going. A row deleted meanwhile gets no
    vector. Rows of other models are dropped at the end.
    """
    if not stores_vectors(embedder):
        # Its vectors are made at query time: none is kept, of any model.
        with writer(conn):
            if conn.execute(f"SELECT 1 FROM {corpus.vectors} LIMIT 1").fetchone():
                conn.execute(f"DELETE FROM {corpus.vectors}")
                bump_epoch(conn)
        return 0
    done = 0
    after = 0
    while True:
        rows = _stale_rows(conn, corpus, key, after)
        if not rows:
            break
        vectors = embed_all(embedder, [text for _seq, text in rows])
        with writer(conn):
            conn.executemany(
                f"INSERT OR REPLACE INTO {corpus.vectors} (seq, model, vec) "
                f"SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM {corpus.table} WHERE seq = ?)",
                [(seq, key, vec, seq) for (seq, _text), vec in zip(rows, vectors)],
            )
            bump_epoch(conn)
        done += len(rows)
        after = rows[-1][0]
    with writer(conn):
        if conn.execute(
            f"SELECT 1 FROM {corpus.vectors} WHERE model != ? LIMIT 1", (key,)
        ).fetchone():
            conn.execute(f"DELETE FROM {corpus.vectors} WHERE model != ?", (key,))
            bump_epoch(conn)
    if done:
        _log.info("embedded %d %s with %s", done, corpus.name, embedder.model_id)
    return done


def live_candidates(
    embedder: Embedder, query: bytes, texts: Dict[int, str]
) -> Dict[int, float]:
    """The cosine of ``query`` with each candidate, its vector made now from its text."""
    seqs = list(texts)
    return dict(zip(seqs, cosines(embedder, query, [texts[seq] for seq in seqs])))


def scan_candidates(
    conn: sqlite3.Connection,
    corpus: Corpus,
    key: int,
    query: bytes,
    seqs: Sequence[int],
) -> Dict[int, float]:
    """The cosine of ``query`` with each candidate row's vector (pure Python)."""
    wanted = list(dict.fromkeys(seqs))
    q = unpack(query)
    out: Dict[int, float] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for seq, blob in conn.execute(
            f"SELECT seq, vec FROM {corpus.vectors} WHERE model = ? AND seq IN ({marks})",
            (key, *chunk),
        ):
            out[int(seq)] = cosine(q, unpack(blob))
    return out


class VectorIndex:
    """One corpus's vectors of one tenant and model as NumPy blocks, kept current.

    Thread-safe: :meth:`search` refreshes under the index's lock and
    computes on the blocks it read, which later refreshes never modify.
    """

    def __init__(self, corpus: Corpus, tenant: str, key: int, dimension: int) -> None:
        self._corpus = corpus
        self._tenant = tenant
        self._key = key
        self._dimension = dimension
        self._lock = threading.Lock()
        self._epoch: Optional[int] = None
        self._last = 0
        self._blocks: List[Tuple[Any, Any]] = []  # (seqs int64, matrix float32)

    def _load(self, conn: sqlite3.Connection, after: int) -> Optional[Tuple[Any, Any]]:
        np = numpy_or_none()
        c = self._corpus
        rows = conn.execute(
            f"SELECT v.seq, v.vec FROM {c.vectors} v JOIN {c.table} {c.alias} "
            f"ON {c.alias}.seq = v.seq WHERE {c.alias}.tenant = ? AND v.model = ? "
            "AND v.seq > ? ORDER BY v.seq",
            (self._tenant, self._key, after),
        ).fetchall()
        if not rows:
            return None
        seqs = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        flat = np.frombuffer(b"".join(row[1] for row in rows), dtype="<f4")
        matrix = flat.reshape(len(rows), self._dimension).astype(np.float32)
        # Rows are kept at unit length, so a product with a unit query is a cosine.
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0.0] = 1.0
        return seqs, matrix / norms

    def refresh(self, conn: sqlite3.Connection) -> List[Tuple[Any, Any]]:
        """Bring the blocks up to date with what ``conn`` sees; the blocks to search."""
        np = numpy_or_none()
        epoch = int(
            conn.execute("SELECT value FROM stats WHERE key = 'vector_epoch'").fetchone()[0]
        )
        with self._lock:
            if epoch != self._epoch:
                self._blocks, self._last, self._epoch = [], 0, epoch
            block = self._load(conn, self._last)
            if block is not None:
                self._blocks.append(block)
                self._last = int(block[0][-1])
                if len(self._blocks) > _MAX_BLOCKS:
                    seqs = np.concatenate([b[0] for b in self._blocks])
                    matrix = np.concatenate([b[1] for b in self._blocks])
                    self._blocks = [(seqs, matrix)]
            return list(self._blocks)

    def search(
        self,
        conn: sqlite3.Connection,
        query: bytes,
        allowed: Optional[Any],
        count: int,
        floor: float,
    ) -> List[Tuple[int, float]]:
        """The ``count`` best ``(seq, cosine)`` at or above ``floor``, best first.

        ``allowed`` (a sorted int64 array of seqs, or None for every row)
        restricts the search to the rows a filter admits.
        """
        np = numpy_or_none()
        q = np.frombuffer(query, dtype="<f4").astype(np.float32)
        length = float(np.linalg.norm(q))
        if length == 0.0:
            return []
        q = q / length
        seqs_parts: List[Any] = []
        score_parts: List[Any] = []
        for seqs, matrix in self.refresh(conn):
            scores = matrix @ q
            keep = scores >= floor
            if allowed is not None:
                keep &= np.isin(seqs, allowed, assume_unique=True)
            if keep.any():
                seqs_parts.append(seqs[keep])
                score_parts.append(scores[keep])
        if not seqs_parts:
            return []
        seqs = np.concatenate(seqs_parts)
        scores = np.concatenate(score_parts)
        if len(scores) > count:
            top = np.argpartition(-scores, count - 1)[:count]
            seqs, scores = seqs[top], scores[top]
        # Best first; equal scores go to the older row (lower seq).
        order = np.lexsort((seqs, -scores))
        return [(int(seqs[i]), float(scores[i])) for i in order]

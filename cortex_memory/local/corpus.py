"""The two ranked tables of the local database, described once for every ranking module.

Items and beliefs are ranked the same way (keyword index, vectors, fusion);
a :class:`Corpus` names the tables and columns each one keeps that in.

BM25 needs the corpus statistics: how many rows the keyword index holds and
how many words they have in all. The FTS5 index keeps both itself, in step
with every insert and delete (its *averages record*, row 1 of its ``_data``
table: SQLite varints, the row count then each column's token total), so the
engine keeps no counters of its own and a write counts no words:
:func:`read_stats` decodes that record. Without FTS5 the fallback ranking
reads every row anyway and counts them as it goes.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import List

__all__ = ["BELIEFS", "ITEMS", "Corpus", "Stats", "decode_varints", "read_stats"]


@dataclass(frozen=True)
class Corpus:
    """A ranked table: its rows, where their text is, its FTS5 index and vectors."""

    name: str  # "items" or "beliefs"
    table: str
    alias: str
    text: str  # the SQL expression of a row's text (a column of the row)
    fts: str  # the FTS5 table (when the build has FTS5)
    vocab: str  # its fts5vocab table (terms and document counts)
    vectors: str  # (seq, model, vec) rows
    observed: bool  # rows have ``observed_us`` (time hints apply)

    @property
    def fts_data(self) -> str:
        """The FTS5 index's own ``_data`` table (its averages record is row 1)."""
        return f"{self.fts}_data"


ITEMS = Corpus("items", "items", "c", "c.text", "items_fts", "items_vocab", "item_vectors", True)
BELIEFS = Corpus(
    "beliefs", "beliefs", "b", "b.text", "beliefs_fts", "beliefs_vocab", "belief_vectors", False
)


@dataclass(frozen=True)
class Stats:
    """Rows and words of a corpus (all tenants: the keyword index is shared)."""

    docs: int
    words: int

    @property
    def average_length(self) -> float:
        """Words per row (1.0 for an empty corpus, so nothing divides by zero)."""
        return self.words / self.docs if self.docs > 0 and self.words > 0 else 1.0


def decode_varints(blob: bytes) -> List[int]:
    """The SQLite varints of ``blob`` in order (big-endian 7-bit groups, the
    ninth byte whole); a truncated last one is left out."""
    out: List[int] = []
    i, size = 0, len(blob)
    while i < size:
        value = 0
        for k in range(9):
            if i >= size:
                return out
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def read_stats(conn: sqlite3.Connection, corpus: Corpus) -> Stats:
    """The statistics of ``corpus`` as its FTS5 index counts them (committed writes)."""
    row = conn.execute(f"SELECT block FROM {corpus.fts_data} WHERE id = 1").fetchone()
    values = decode_varints(bytes(row[0])) if row is not None and row[0] is not None else []
    if len(values) < 2:
        return Stats(0, 0)  # an index never written to
    return Stats(values[0], values[1])

"""The two ranked tables of the local database, described once for every ranking module.

Items and beliefs are ranked the same way (keyword index, vectors, fusion);
a :class:`Corpus` names the tables and columns each one keeps that in.

BM25 needs the corpus statistics: how many rows the keyword index holds and
how many words they have in all. The FTS5 index keeps both itself, in step
with every insert and delete (its *averages record*, row 1 of its ``_data``
table: SQLite varints, the row count then each column's token total), so the
engine keeps no counters of its own and a write counts no words:
:func:`read_stats` decodes that record. The few item rows a one-item store
left for the index to take in bulk (:mod:`cortex_memory.local.pending`) are
counted by the read that meets them. Without FTS5 the fallback ranking
reads every row anyway and counts them as it goes.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

__all__ = [
    "BELIEFS",
    "ITEMS",
    "TEXT_COLUMN",
    "THREAD_COLUMNS",
    "Corpus",
    "Row",
    "Stats",
    "decode_varints",
    "read_stats",
    "stats_of",
]

#: A row of :attr:`Corpus.columns`.
Row = Tuple[Any, ...]


@dataclass(frozen=True)
class Corpus:
    """A ranked table: its rows, where their text is, its FTS5 index and vectors."""

    name: str  # "items" or "beliefs"
    table: str
    alias: str
    text: str  # the SQL expression of a row's text (a column of the row)
    columns: str  # what a ranked read returns of a row: seq first, the text fourth
    fts: str  # the FTS5 table (when the build has FTS5)
    vocab: str  # its fts5vocab table (terms and document counts)
    vectors: str  # (seq, model, vec) rows
    observed: bool  # rows have ``observed_us`` (time hints apply)
    # The table of rows not yet in the FTS5 index (``local/pending.py``), for
    # the corpus whose one-row writes wait to be indexed in bulk (items).
    pending: Optional[str] = None

    @property
    def cjk(self) -> str:
        """The table of the rows' texts as the keyword index reads them, for the
        rows whose text holds CJK characters (see ``text.index_text``)."""
        return f"{self.name}_cjk"

    @property
    def indexed(self) -> str:
        """The view of every row's text as the keyword index reads it (its content)."""
        return f"{self.name}_fts_text"

    @property
    def fts_data(self) -> str:
        """The FTS5 index's own ``_data`` table (its averages record is row 1)."""
        return f"{self.fts}_data"


#: Where :attr:`Corpus.columns` has a row's text.
TEXT_COLUMN = 3

#: Where ``ITEMS.columns`` has a row's thread and first and last turn.
THREAD_COLUMNS = slice(6, 9)

ITEMS = Corpus(
    "items", "items", "c", "c.text",
    "c.seq, c.id, c.kind, c.text, c.confidence, c.item_json, c.thread_id, c.turns_first, "
    "c.turns_last",
    "items_fts", "items_vocab", "item_vectors", True, "items_pending",
)  # fmt: skip
BELIEFS = Corpus(
    "beliefs", "beliefs", "b", "b.text", "b.seq, b.id, b.namespace, b.text, b.miss",
    "beliefs_fts", "beliefs_vocab", "belief_vectors", False,
)  # fmt: skip


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


#: The averages record :func:`stats_of` decoded last, and its statistics.
_last_stats: Tuple[bytes, Stats] = (b"", Stats(0, 0))


def stats_of(block: object) -> Stats:
    """The statistics an FTS5 averages record (a ``bytes`` value, or None) holds.

    The record decoded last is remembered: every ranked read decodes the
    record, and it stays the same from one write to the next (it is compared
    whole, so a record that changed is decoded; the pair is replaced at once,
    so threads never see a record with another's statistics).
    """
    global _last_stats
    if not isinstance(block, bytes):
        return Stats(0, 0)
    seen, stats = _last_stats
    if block == seen:
        return stats
    values = decode_varints(block)
    # Fewer than two values: an index never written to.
    stats = Stats(values[0], values[1]) if len(values) >= 2 else Stats(0, 0)
    _last_stats = (block, stats)
    return stats


def read_stats(conn: sqlite3.Connection, corpus: Corpus) -> Stats:
    """The statistics of ``corpus`` as its FTS5 index counts them (committed writes)."""
    row = conn.execute(f"SELECT block FROM {corpus.fts_data} WHERE id = 1").fetchone()
    return stats_of(None if row is None else row[0])

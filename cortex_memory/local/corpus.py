"""The two ranked tables of the local database, described once for every ranking module.

Items and beliefs are ranked the same way (keyword index, vectors, fusion);
a :class:`Corpus` names the tables and columns each one keeps that in, and
the corpus statistics (how many rows the keyword index holds and how many
words they have in all) that BM25 needs.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

__all__ = ["BELIEFS", "ITEMS", "Corpus", "Stats", "add_stats", "read_stats"]


@dataclass(frozen=True)
class Corpus:
    """A ranked table: its rows, where their text is, its FTS5 index and vectors."""

    name: str  # "items" or "beliefs": the prefix of its statistics keys
    table: str
    alias: str
    text: str  # the SQL expression of a row's text
    text_join: str  # the join that brings ``text`` in ("" when in the row)
    fts: str  # the FTS5 table (when the build has FTS5)
    vocab: str  # its fts5vocab table (terms and document counts)
    vectors: str  # (seq, model, vec) rows
    observed: bool  # rows have ``observed_us`` (time hints apply)

    @property
    def docs_key(self) -> str:
        """Statistics key: rows with text in this corpus."""
        return f"{self.name}_docs"

    @property
    def words_key(self) -> str:
        """Statistics key: words in all those rows."""
        return f"{self.name}_words"


ITEMS = Corpus(
    "items", "items", "c", "w.text", "JOIN item_bodies w ON w.seq = c.seq",
    "items_fts", "items_vocab", "item_vectors", True,
)  # fmt: skip
BELIEFS = Corpus(
    "beliefs", "beliefs", "b", "b.text", "", "beliefs_fts", "beliefs_vocab", "belief_vectors",
    False,
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


def read_stats(conn: sqlite3.Connection, corpus: Corpus) -> Stats:
    """The current statistics of ``corpus``."""
    values = dict(
        conn.execute(
            "SELECT key, value FROM stats WHERE key IN (?, ?)", (corpus.docs_key, corpus.words_key)
        ).fetchall()
    )
    return Stats(int(values.get(corpus.docs_key, 0)), int(values.get(corpus.words_key, 0)))


def add_stats(conn: sqlite3.Connection, corpus: Corpus, docs: int, words: int) -> None:
    """Add (or, negative, take away) rows and words, inside the caller's write."""
    if docs == 0 and words == 0:
        return
    # The rows exist from the file's creation on (schema.py makes them).
    conn.executemany(
        "UPDATE stats SET value = max(0, value + ?) WHERE key = ?",
        ((docs, corpus.docs_key), (words, corpus.words_key)),
    )

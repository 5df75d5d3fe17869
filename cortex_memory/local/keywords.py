"""Writes to the keyword index of a corpus: the texts it reads, and its FTS5 rows.

The FTS5 index of a corpus reads each row's text through the view
``<corpus>_fts_text`` (see :mod:`cortex_memory.local.schema`): the row's own
text, or, when the text holds CJK characters, the text with a space around
each of them, kept in ``<corpus>_cjk`` (``text.index_text``). These helpers
keep that table in step with the rows (with or without FTS5, so a rebuild
reads the right text) and write the FTS5 rows, inside the caller's write
transaction. A text with no CJK character (any ASCII text: one ``isascii``
check) costs nothing more than before.
"""

# SQL text here is assembled from fixed fragments only; every value is bound as a
# parameter, never formatted into the text.
from __future__ import annotations

import sqlite3
from typing import List, Sequence, Tuple

from cortex_memory.local import pending
from cortex_memory.local.corpus import Corpus
from cortex_memory.local.pending import PENDING_CHARS
from cortex_memory.local.text import has_cjk, index_chunks, index_size, index_text

__all__ = ["add_long", "add_one", "add_short", "drop"]


def add_short(
    conn: sqlite3.Connection, corpus: Corpus, rows: Sequence[Tuple[int, str]], *, fts: bool
) -> None:
    """Index ``(seq, text)`` rows just written: their CJK texts, and their FTS5 rows
    when ``fts``.

    Short texts are bound: an ``INSERT … SELECT`` into a virtual table goes
    through a temporary table, which costs a one-item store about as much as
    its index entry.
    """
    indexed: List[Tuple[int, str]] = []
    segmented: List[Tuple[int, str]] = []
    for seq, text in rows:
        spaced = index_text(text)
        if spaced is None:
            indexed.append((seq, text))
        else:
            indexed.append((seq, spaced))
            segmented.append((seq, spaced))
    if segmented:
        conn.executemany(f"INSERT INTO {corpus.cjk} (seq, text) VALUES (?, ?)", segmented)
    if fts:
        conn.executemany(f"INSERT INTO {corpus.fts} (rowid, text) VALUES (?, ?)", indexed)


def add_one(
    cursor: sqlite3.Cursor, corpus: Corpus, seq: int, text: str, *, fts: bool
) -> None:
    """Index one short ``(seq, text)`` row just written: :func:`add_short` of one row,
    through the caller's cursor (a one-item store's statements share it).

    With ``fts``, a text under :data:`~cortex_memory.local.pending.PENDING_CHARS`
    characters of a corpus that keeps pending rows is left for the index to
    take in bulk (:func:`~cortex_memory.local.pending.defer`).
    """
    spaced = index_text(text)
    if spaced is not None:
        cursor.execute(f"INSERT INTO {corpus.cjk} (seq, text) VALUES (?, ?)", (seq, spaced))
        text = spaced
    if not fts:
        return
    if corpus.pending is not None and len(text) < PENDING_CHARS:
        pending.defer(cursor, corpus, seq, text)
    else:
        cursor.execute(f"INSERT INTO {corpus.fts} (rowid, text) VALUES (?, ?)", (seq, text))


def add_long(
    conn: sqlite3.Connection,
    corpus: Corpus,
    rows: Sequence[Tuple[int, str]],
    first: int,
    last: int,
    *,
    fts: bool,
) -> None:
    """Index the ``(seq, text)`` rows just written, ``first`` … ``last - 1``, some
    of them long; the FTS5 rows (when ``fts``) read the texts the table holds.

    Binding a long text again would make SQLite copy it once more (and keep
    the last one bound), so the index reads the texts the rows hold. A CJK
    text's spaced form is streamed into ``<corpus>_cjk`` a piece at a time
    (Python 3.11+: ``blobopen``; before, it is built whole, bound, then
    unbound), so neither Python nor SQLite holds a copy of it whole until
    the index reads it.
    """
    bound = False
    for seq, text in rows:
        if has_cjk(text):
            bound = _add_spaced(conn, corpus, seq, text) or bound
    if bound:  # inserts nothing, unbinds
        conn.execute(_bound_insert(corpus), (None, None, 0))
    if fts:
        conn.execute(
            f"INSERT INTO {corpus.fts} (rowid, text) "
            f"SELECT seq, text FROM {corpus.indexed} WHERE seq >= ? AND seq < ?",
            (first, last),
        )


def _bound_insert(corpus: Corpus) -> str:
    # The last parameter says whether to insert: run again with 0, the
    # statement lets go of the copy SQLite kept of the text.
    return f"INSERT INTO {corpus.cjk} (seq, text) SELECT ?, CAST(? AS TEXT) WHERE ?"


def _add_spaced(conn: sqlite3.Connection, corpus: Corpus, seq: int, text: str) -> bool:
    """Write the CJK row of ``seq``; True when its text was bound (not streamed)."""
    opener = getattr(conn, "blobopen", None)  # Python 3.11+
    if opener is None:
        spaced = bytearray()
        for piece in index_chunks(text):
            spaced += piece
        conn.execute(_bound_insert(corpus), (seq, spaced, 1))
        return True
    # Room first, then the text streamed into it a piece at a time: no copy of
    # it whole in Python or in SQLite. The value stays a BLOB of UTF-8 (the
    # view reads it as TEXT).
    conn.execute(
        f"INSERT INTO {corpus.cjk} (seq, text) VALUES (?, zeroblob(?))", (seq, index_size(text))
    )
    with opener(corpus.cjk, "text", seq) as blob:
        for piece in index_chunks(text):
            blob.write(piece)
    return False


def drop(conn: sqlite3.Connection, corpus: Corpus, seqs: Sequence[object], marks: str, *,
         fts: bool) -> List[int]:  # fmt: skip
    """Take the rows ``seqs`` (``marks``: as many ``?``) out of the keyword index;
    the ``seq`` of those that exist.

    Deleting from an external-content FTS5 index needs the text exactly as it
    was indexed: read from the view, before its CJK row goes. A row still
    pending (:mod:`~cortex_memory.local.pending`) leaves the pending rows.
    """
    # A pending row is not in the index: it only leaves the pending rows (an
    # external-content index must never be asked to delete a row it lacks).
    waiting = set() if corpus.pending is None else pending.discard(conn, corpus, seqs, marks)
    if fts:
        rows = conn.execute(
            f"SELECT seq, text FROM {corpus.indexed} WHERE seq IN ({marks})", seqs
        ).fetchall()
        conn.executemany(
            f"INSERT INTO {corpus.fts} ({corpus.fts}, rowid, text) VALUES ('delete', ?, ?)",
            [row for row in rows if row[0] not in waiting] if waiting else rows,
        )
        found = [int(row[0]) for row in rows]
        # Only a text with CJK characters has a row there (most deletes: none).
        if not any(has_cjk(str(row[1])) for row in rows):
            return found
    else:
        found = [
            int(seq)
            for (seq,) in conn.execute(
                f"SELECT seq FROM {corpus.table} WHERE seq IN ({marks})", seqs
            )
        ]
    if found:
        conn.execute(f"DELETE FROM {corpus.cjk} WHERE seq IN ({marks})", seqs)
    return found

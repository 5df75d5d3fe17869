"""Splitting a long document into contiguous pieces (engine.md §7.5).

The split is reproduced exactly: a re-store finds the pieces already written by their
index, and a different boundary would mix two splittings of one item. Sizes are
JSON-escaped UTF-8 bytes (what the piece costs inside an envelope), not characters.

Positions are Python string indexes (code points); the boundaries fall on the same
characters as the byte offsets of the Rust implementation this matches.
"""

from __future__ import annotations

import json.encoder
import re
from dataclasses import dataclass
from itertools import chain
from typing import Callable, Iterator, List, Optional, Tuple

from cortex_memory.contract.text import is_blank, trim

__all__ = [
    "MIN_ROOM",
    "PAGE_BREAK",
    "SECTION_TITLE_CHARS",
    "Piece",
    "Unit",
    "escaped_len",
    "heading",
    "page_count",
    "parts",
    "split",
    "units",
]

PAGE_BREAK = "\f"
"""A form feed starts a new page."""

SECTION_TITLE_CHARS = 120
"""A section title keeps at most this many characters."""

MIN_ROOM = 6
"""The least room a piece needs: one character escapes to at most 6 bytes."""

# 1 to 6 '#' after at most 3 spaces, then a space; the rest of the line is the title.
_HEADING = re.compile(r" {0,3}#{1,6} ([^\n]*)")
_BREAKS = re.compile(r"[\n\f]")
_ESCAPED_SHORT = frozenset('"\\\n\r\t\b\f')
# json.dumps(s, ensure_ascii=False) for a str is exactly this C encoder (quotes included).
_ESCAPE: Callable[[str], str] = json.encoder.encode_basestring
# Characters escaped at once when measuring a long range: the size of a 16 MiB
# text is taken without a whole escaped (and encoded) copy of it.
_WINDOW = 1 << 16


@dataclass(frozen=True)
class Unit:
    """A run of the text that starts a page or a section: ``text[start:end]``."""

    start: int
    end: int
    page: int
    section: Optional[str]


@dataclass(frozen=True)
class Piece:
    """One piece of a split document: ``text[start:end]``, with its location.

    ``pages`` is ``(first, last)`` (1-based, inclusive) only when the text holds a page
    break; ``section`` is the title of the section in force where the piece starts.
    """

    start: int
    end: int
    pages: Optional[Tuple[int, int]]
    section: Optional[str]


def escaped_len(text: str) -> int:
    """Size in bytes of ``text`` as a JSON string body (without the quotes), UTF-8 encoded.

    2 bytes for each ``"``, ``\\``, LF, CR, TAB, backspace and form feed, 6 for any
    other character below U+0020, otherwise the UTF-8 length. Additive over slices.
    """
    # The C encoder escapes exactly this set (and nothing else with ensure_ascii=False).
    return _range_len(text, 0, len(text))


def _range_len(text: str, start: int, end: int) -> int:
    """:func:`escaped_len` of ``text[start:end]``, measured a window at a time."""
    size = 0
    for at in range(start, end, _WINDOW):
        escaped = _ESCAPE(text[at : min(at + _WINDOW, end)])
        if escaped.isascii():
            size += len(escaped) - 2
        else:
            size += len(escaped.encode("utf-8", "surrogatepass")) - 2
    return size


def _char_len(char: str) -> int:
    code = ord(char)
    if code < 0x80:
        if char in _ESCAPED_SHORT:
            return 2
        return 6 if code < 0x20 else 1
    if code < 0x800:
        return 2
    return 3 if code < 0x10000 else 4


def page_count(text: str) -> int:
    """Form feeds plus one."""
    return text.count(PAGE_BREAK) + 1


def heading(rest: str) -> Optional[str]:
    """The markdown heading title on the first line of ``rest``, or None.

    Up to 3 leading spaces, 1 to 6 ``#`` and a space; the title is the rest of the line
    trimmed, trailing ``#`` removed, trimmed again, cut to 120 characters.
    """
    return _heading_at(rest, 0)


def _heading_at(text: str, at: int) -> Optional[str]:
    match = _HEADING.match(text, at)
    if match is None:
        return None
    title = trim(trim(match.group(1)).rstrip("#"))
    if not title:
        return None
    return title[:SECTION_TITLE_CHARS]


def units(text: str) -> Iterator[Unit]:
    """The units of ``text``: runs that start at a page break or a heading line.

    A break opens a new unit only when the current one holds more than blank text
    (form feeds and Unicode White_Space); a blank tail joins the last unit.
    """
    length = len(text)
    page = 1
    section: Optional[str] = None
    start = 0
    start_page = 1
    pending: Optional[Unit] = None
    # text[start:blank_to] is known blank; `filled` records a non-blank character seen
    # since `start`. Each character is examined at most once per unit, so the scan is
    # linear even for text made of many breaks.
    blank_to = 0
    filled = False

    def holds_text(end: int) -> bool:
        nonlocal blank_to, filled
        if not filled:
            if is_blank(text[blank_to:end]):
                blank_to = end
            else:
                filled = True
        return filled

    # Only line starts (headings) and form feeds can act; visit just those positions,
    # and the end of the text as if a line break followed it (without copying it).
    line_start = 0
    for at in chain((match.start() for match in _BREAKS.finditer(text)), (length,)):
        if line_start < at and text[line_start] in " #":
            title = _heading_at(text, line_start)
            if title is not None:
                if holds_text(line_start):
                    if pending is not None:
                        yield pending
                    pending = Unit(start, line_start, start_page, section)
                    start = blank_to = line_start
                    start_page = page
                    filled = False
                section = title
        if at < length and text[at] == PAGE_BREAK:
            if holds_text(at):
                if pending is not None:
                    yield pending
                pending = Unit(start, at, start_page, section)
                start = blank_to = at
                filled = False
            # Either a unit was just closed (and the new one is empty so far) or the
            # current one is blank: both ways it starts on the page after the break.
            page += 1
            start_page = page
        line_start = at + 1
    if start < length:
        if pending is not None and is_blank(text[start:]):
            pending = Unit(pending.start, length, pending.page, pending.section)
        else:
            if pending is not None:
                yield pending
            pending = Unit(start, length, start_page, section)
    if pending is not None:
        yield pending


def parts(text: str, start: int, end: int, cap: int) -> List[Tuple[int, int]]:
    """Sub-ranges of ``text[start:end]``, each of escaped size at most ``cap`` where possible.

    Cut after paragraph breaks, then after line breaks, then between characters,
    merging adjacent results greedily while they fit.
    """
    return [(s, e) for s, e, _ in _parts(text, start, end, cap)]


def _parts(text: str, start: int, end: int, cap: int) -> List[Tuple[int, int, int]]:
    size = _range_len(text, start, end)
    if size <= cap:
        return [(start, end, size)]
    for sep in ("\n\n", "\n"):
        bounds = _bounds(text, start, end, sep)
        if bounds is not None:
            out: List[Tuple[int, int, int]] = []
            s = start
            for e in bounds:
                for sub in _parts(text, s, e, cap):
                    if out and out[-1][2] + sub[2] <= cap:
                        last = out[-1]
                        out[-1] = (last[0], sub[1], last[2] + sub[2])
                    else:
                        out.append(sub)
                s = e
            return out
    return _cut_chars(text, start, end, cap)


def _bounds(text: str, start: int, end: int, sep: str) -> Optional[Iterator[int]]:
    """The ends of the ranges cut just after each (non-overlapping) ``sep`` in the range,
    then ``end``; None when no cut falls before ``end``. Found as they are used, so
    a range of a million lines holds no list of them."""
    first = _next_cut(text, start, end, sep)
    if first is None:
        return None
    return _bounds_from(text, first, end, sep)


def _bounds_from(text: str, cut: int, end: int, sep: str) -> Iterator[int]:
    at: Optional[int] = cut
    while at is not None:
        yield at
        at = _next_cut(text, at, end, sep)
    yield end


def _next_cut(text: str, start: int, end: int, sep: str) -> Optional[int]:
    at = text.find(sep, start, end)
    if at == -1 or at + len(sep) >= end:
        return None
    return at + len(sep)


def _cut_chars(text: str, start: int, end: int, cap: int) -> List[Tuple[int, int, int]]:
    """Greedy character cuts: each range is the longest prefix whose escaped size fits."""
    out: List[Tuple[int, int, int]] = []
    at = start
    while at < end:
        # Every character costs at least one byte, so a range never holds more than
        # `cap` characters; find the longest fitting prefix by bisection over sizes
        # the C encoder computes, instead of a Python loop per character.
        hi = min(end, at + cap)
        size = _range_len(text, at, hi)
        if size > cap:
            lo = at  # text[at:lo] fits; text[at:hi] does not
            lo_size = 0
            while hi - lo > 1:
                mid = (lo + hi) // 2
                mid_size = _range_len(text, at, mid)
                if mid_size <= cap:
                    lo, lo_size = mid, mid_size
                else:
                    hi = mid
            if lo == at:
                # A lone character larger than the cap still makes a (non-empty) range.
                lo, lo_size = at + 1, _char_len(text[at])
            hi, size = lo, lo_size
        out.append((at, hi, size))
        at = hi
    return out


def split(text: str, overhead: int, target: int, limit: int) -> Optional[List[Piece]]:
    """Split ``text`` into pieces that fit an envelope of ``overhead`` bytes (§7.5).

    ``target`` is the wanted envelope size (0: every sub-range is its own piece) and
    ``limit`` the largest allowed. None when not even the smallest piece has room.
    """
    room = limit - overhead
    if room < MIN_ROOM:
        return None
    if target == 0:
        pack = room
    elif target - overhead >= MIN_ROOM:
        pack = min(target - overhead, room)
    else:
        pack = room
    paged = PAGE_BREAK in text
    if target != 0 and escaped_len(text) <= pack:
        first = next(units(text), None)
        return [
            Piece(
                0,
                len(text),
                (1, page_count(text)) if paged else None,
                first.section if first is not None else None,
            )
        ]
    pieces: List[Piece] = []
    # The open piece: start, end, first page, last page, section, size.
    open_: Optional[Tuple[int, int, int, int, Optional[str], int]] = None
    for unit in units(text):
        for s, e, size in _parts(text, unit.start, unit.end, pack):
            if open_ is not None and target != 0 and open_[5] + size <= pack:
                open_ = (open_[0], e, open_[2], unit.page, open_[4], open_[5] + size)
                continue
            if open_ is not None:
                pieces.append(_piece(open_, paged))
            open_ = (s, e, unit.page, unit.page, unit.section, size)
    if open_ is not None:
        pieces.append(_piece(open_, paged))
    return pieces


def _piece(open_: Tuple[int, int, int, int, Optional[str], int], paged: bool) -> Piece:
    start, end, first, last, section, _ = open_
    return Piece(start, end, (first, last) if paged else None, section)

"""Chunking long documents (engine.md §7.5): sizes, units, parts and pinned splits.

The pinned vectors use small sizes so every boundary can be checked by hand against
the spec (the review is written next to each). A literal, character-by-character
transcription of the spec's algorithm runs beside the optimized one under hypothesis.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract.text import is_blank, trim
from cortex_memory.cortex.envelope.chunks import (
    Piece,
    Unit,
    escaped_len,
    heading,
    page_count,
    parts,
    split,
    units,
)

# --------------------------------------------------------------- reference model


def ref_char_len(ch: str) -> int:
    if ch in '"\\\n\r\t\b\f':
        return 2
    if ord(ch) < 0x20:
        return 6
    return len(ch.encode("utf-8", "surrogatepass"))


def ref_escaped_len(text: str) -> int:
    return sum(ref_char_len(ch) for ch in text)


def ref_heading(rest: str) -> Optional[str]:
    line = rest.split("\n", 1)[0]
    spaces = len(line) - len(line.lstrip(" "))
    if spaces > 3:
        return None
    line = line[spaces:]
    hashes = len(line) - len(line.lstrip("#"))
    if not 1 <= hashes <= 6 or line[hashes : hashes + 1] != " ":
        return None
    title = trim(trim(line[hashes + 1 :]).rstrip("#"))
    return title[:120] if title else None


def ref_units(text: str) -> List[Tuple[int, int, int, Optional[str]]]:
    """The spec's loop, one character at a time."""
    out: List[Tuple[int, int, int, Optional[str]]] = []
    page, section, start, start_page, line_start = 1, None, 0, 1, 0
    for i, ch in enumerate(text):
        title = ref_heading(text[i:]) if i == line_start else None
        if (ch == "\f" or title is not None) and not is_blank(text[start:i]):
            out.append((start, i, start_page, section))
            start, start_page = i, page
        if ch == "\f":
            page += 1
            if is_blank(text[start:i]):
                start_page = page
        if title is not None:
            section = title
        if ch in "\n\f":
            line_start = i + 1
    if start < len(text):
        if out and is_blank(text[start:]):
            s, _, p, sec = out[-1]
            out[-1] = (s, len(text), p, sec)
        else:
            out.append((start, len(text), start_page, section))
    return out


def ref_parts(text: str, s: int, e: int, cap: int) -> List[Tuple[int, int]]:
    if ref_escaped_len(text[s:e]) <= cap:
        return [(s, e)]
    for sep in ("\n\n", "\n"):
        cuts = []
        at = text.find(sep, s, e)
        while at != -1 and at + len(sep) < e:
            cuts.append(at + len(sep))
            at = text.find(sep, at + len(sep), e)
        if cuts:
            bounds = [s, *cuts, e]
            flat = [r for a, b in zip(bounds, bounds[1:]) for r in ref_parts(text, a, b, cap)]
            merged = [flat[0]]
            for a, b in flat[1:]:
                if ref_escaped_len(text[merged[-1][0] : b]) <= cap:
                    merged[-1] = (merged[-1][0], b)
                else:
                    merged.append((a, b))
            return merged
    out = []
    begin, size = s, 0
    for i in range(s, e):
        n = ref_char_len(text[i])
        if size + n > cap and i > begin:
            out.append((begin, i))
            begin, size = i, 0
        size += n
    out.append((begin, e))
    return out


# ------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("", 0),
        ("abc", 3),
        ('"', 2),
        ("\\", 2),
        ("\n\r\t\b\f", 10),
        ("\x00\x01\x1f", 18),
        ("/\x7f", 2),  # neither is escaped
        ("\u2028", 3),  # not escaped either: its UTF-8 length
        ("é", 2),
        ("€", 3),
        ("😀", 4),
    ],
)
def test_escaped_len_vectors(text: str, size: int) -> None:
    assert escaped_len(text) == size


@given(st.text())
def test_escaped_len_is_the_per_character_sum(text: str) -> None:
    assert escaped_len(text) == ref_escaped_len(text)


def test_page_count() -> None:
    assert page_count("") == 1
    assert page_count("a\fb\f") == 3


# ----------------------------------------------------------------- headings


@pytest.mark.parametrize(
    ("rest", "title"),
    [
        ("# Intro", "Intro"),
        ("###### Six", "Six"),
        ("####### Seven", None),  # more than 6 '#'
        ("   ## Indented ##  \nnext line", "Indented"),  # trailing '#'s and spaces go
        ("    # Code", None),  # 4 spaces: a code block
        ("#nospace", None),
        ("#", None),
        ("# ", None),
        ("# ##", None),  # nothing left after the trailing '#'s
        ("#\tTab", None),  # only a space follows the '#'s
        ("# a # b #", "a # b"),
        ("# \u3000Wide\u3000", "Wide"),  # Unicode White_Space is trimmed
        ("# " + "x" * 130, "x" * 120),
        ("# T\r\nbody", "T"),
    ],
)
def test_heading(rest: str, title: Optional[str]) -> None:
    assert heading(rest) == title
    assert ref_heading(rest) == title


# ------------------------------------------------------------------- units


def test_units_plain_text_is_one_unit() -> None:
    assert list(units("a\nb\n\nc")) == [Unit(0, 6, 1, None)]


def test_units_empty_text_has_none() -> None:
    assert list(units("")) == []


def test_units_pages() -> None:
    # one | \fpage two | \f\ffour\f : the blank "\f" before "four" does not open a
    # unit, and the unit after it starts on page 4; the blank tail joins the last unit.
    text = "one\fpage two\f\ffour\f"
    assert list(units(text)) == [Unit(0, 3, 1, None), Unit(3, 12, 2, None), Unit(12, 19, 4, None)]


def test_units_sections() -> None:
    text = "lead\n# Intro\nhello\n   ## Details ##\nmore\n#nope\n    # code\n####### seven\n"
    assert list(units(text)) == [
        Unit(0, 5, 1, None),
        Unit(5, 19, 1, "Intro"),
        Unit(19, 72, 1, "Details"),
    ]


def test_units_heading_first_sets_the_first_section() -> None:
    # At position 0 the text before is empty (blank): no unit closes, the section starts.
    assert list(units("# Title\nbody")) == [Unit(0, 12, 1, "Title")]


def test_units_blank_text_is_one_unit() -> None:
    assert list(units(" \f\n")) == [Unit(0, 3, 2, None)]


_doc_chars = st.sampled_from(list("ab #\n\f \u3000\x1fé\t"))


@given(st.text(_doc_chars, max_size=80))
def test_units_match_the_literal_algorithm(text: str) -> None:
    got = [(u.start, u.end, u.page, u.section) for u in units(text)]
    assert got == ref_units(text)
    if text:
        assert got[0][0] == 0
        assert got[-1][1] == len(text)
        assert all(a[1] == b[0] for a, b in zip(got, got[1:]))


@given(st.text(st.sampled_from(list("#  ab\n\f")), max_size=60))
def test_units_with_many_headings_match(text: str) -> None:
    assert [(u.start, u.end, u.page, u.section) for u in units(text)] == ref_units(text)


# ------------------------------------------------------------------- parts


def test_parts_fitting_range_is_whole() -> None:
    assert parts("abc\n\ndef", 0, 8, 10) == [(0, 8)]


def test_parts_cut_after_paragraphs_then_merge() -> None:
    text = "aa\n\nbb\n\ncc"
    # cuts after each "\n\n": [0,4) [4,8) [8,10); merged greedily within 8 bytes:
    # "aa\n\n" is 6 bytes, + "bb\n\n" would be 12 > 8; "bb\n\n" + "cc" = 8.
    assert parts(text, 0, 10, 8) == [(0, 4), (4, 10)]


def test_parts_lines_then_characters() -> None:
    text = "abcdefghij\nxy"
    # No "\n\n"; "\n" cuts at 11: [0,11) is 12 bytes > 6 and is cut by characters
    # into "abcdef" (6) and "ghij\n" (4 + the LF's 2); "xy" (2) does not fit beside it.
    assert parts(text, 0, 13, 6) == [(0, 6), (6, 11), (11, 13)]


def test_parts_separator_at_the_end_is_not_a_cut() -> None:
    # The only "\n\n" ends the range: it cannot cut, so "\n" is tried next.
    assert parts("abcd\n\n", 0, 6, 4) == [(0, 4), (4, 6)]


@given(
    st.text(st.sampled_from(list('ab\n\n"é\x01😀')), max_size=60),
    st.integers(min_value=6, max_value=30),
)
def test_parts_match_the_literal_algorithm(text: str, cap: int) -> None:
    got = parts(text, 0, len(text), cap)
    assert got == ref_parts(text, 0, len(text), cap)
    assert "".join(text[a:b] for a, b in got) == text
    assert all(escaped_len(text[a:b]) <= cap for a, b in got)


def test_character_cuts_of_a_long_line_use_the_cap_exactly() -> None:
    text = "x" * 1000 + "é" * 700 + '"' * 300
    got = parts(text, 0, len(text), 257)
    assert got == ref_parts(text, 0, len(text), 257)


# -------------------------------------------------------------- pinned splits


def pieces(text: str, overhead: int, target: int, limit: int) -> List[Tuple[str, object, object]]:
    got = split(text, overhead, target, limit)
    assert got is not None
    assert "".join(text[p.start : p.end] for p in got) == text
    assert all(a.end == b.start for a, b in zip(got, got[1:]))
    return [(text[p.start : p.end], p.pages, p.section) for p in got]


def test_split_plain() -> None:
    text = "Alpha beta.\n\nGamma delta epsilon.\n\nZeta.\nEta theta iota.\n"
    # pack = target - overhead = 20. One unit. "\n\n" cuts give "Alpha beta.\n\n" (15),
    # "Gamma delta epsilon.\n\n" (24: cut by "\n" into the 20-byte sentence and its two
    # LFs), "Zeta.\nEta theta iota.\n" (24: cut by "\n" into 7 + 17). Greedy merge
    # joins the two LFs with "Zeta.\n" (4 + 7 = 11); 11 + 17 > 20.
    assert pieces(text, 0, 20, 40) == [
        ("Alpha beta.\n\n", None, None),
        ("Gamma delta epsilon.", None, None),
        ("\n\nZeta.\n", None, None),
        ("Eta theta iota.\n", None, None),
    ]


def test_split_paged() -> None:
    text = "one\fpage two\f\ffour\f"
    # Units: "one" (page 1), "\fpage two" (page 2), "\f\ffour\f" (page 4). pack = 8:
    # "\fpage two" is 10 bytes → character cuts "\fpage t" (8) + "wo"; "\f\ffour\f" is
    # 10 → "\f\ffour" (8) + "\f". No two neighbours fit together in 8 bytes.
    assert pieces(text, 0, 8, 100) == [
        ("one", (1, 1), None),
        ("\fpage t", (2, 2), None),
        ("wo", (2, 2), None),
        ("\f\ffour", (4, 4), None),
        ("\f", (4, 4), None),
    ]


def test_split_paged_pieces_span_pages() -> None:
    text = "a\fb\fc"
    # Units "a" (1), "\fb" (2), "\fc" (3): 1 + 3 + 3 bytes; pack 6 merges the first two.
    assert pieces(text, 0, 6, 100) == [("a\fb", (1, 2), None), ("\fc", (3, 3), None)]


def test_split_headed() -> None:
    text = "lead\n# Intro\nhello\n   ## Details ##\nmore\n#nope\n    # code\n####### seven\n"
    # pack = 12. Units: "lead\n" | "# Intro\nhello\n" (Intro) | the rest (Details).
    # Line cuts: "# Intro\n" (9) and "hello\n" (7) do not fit together; in the last
    # unit "   ## Details ##\n" (18) is cut by characters into 12 + "s ##\n" (6),
    # which merges with "more\n" (6); "####### seven\n" (15) → 12 + "n\n".
    assert pieces(text, 0, 12, 100) == [
        ("lead\n", None, None),
        ("# Intro\n", None, "Intro"),
        ("hello\n", None, "Intro"),
        ("   ## Detail", None, "Details"),
        ("s ##\nmore\n", None, "Details"),
        ("#nope\n", None, "Details"),
        ("    # code\n", None, "Details"),
        ("####### seve", None, "Details"),
        ("n\n", None, "Details"),
    ]


def test_split_oversized_paragraph_cuts_characters_by_escaped_size() -> None:
    text = "x" * 10 + '"\\' + "é" * 4 + "\x01" + "y" * 5
    # Escaped sizes: x 1, '"' 2, '\\' 2, é 2, \x01 6, y 1; pack 8.
    assert pieces(text, 0, 8, 8) == [
        ("x" * 8, None, None),
        ('xx"\\é', None, None),
        ("ééé", None, None),  # + \x01 would be 12
        ("\x01yy", None, None),
        ("yyy", None, None),
    ]


def test_split_small_text_is_one_piece_with_its_location() -> None:
    assert split("# T\nbody", 10, 100, 1000) == [Piece(0, 8, None, "T")]
    assert split("a\fb", 10, 100, 1000) == [Piece(0, 3, (1, 2), None)]


def test_split_without_room_is_none() -> None:
    assert split("abc", 95, 100, 100) is None  # room 5 < 6
    assert split("abc", 101, 100, 100) is None  # negative room


def test_split_pack_rules() -> None:
    text = "abcdefghij"
    # target - overhead < 6: pack = room (limit - overhead) = 10 → one piece.
    assert pieces(text, 96, 100, 106) == [(text, None, None)]
    # target - overhead capped at room: room 7.
    assert [p[0] for p in pieces(text, 3, 100, 10)] == ["abcdefg", "hij"]


def test_split_target_zero_makes_every_sub_range_a_piece() -> None:
    text = "aa\n\nbb\n\ncc"
    # pack = room = 8; the whole text (12 bytes) does not fit; parts gives
    # [0,4) and [4,10), each its own piece (no merging at target 0).
    assert pieces(text, 0, 0, 8) == [("aa\n\n", None, None), ("bb\n\ncc", None, None)]
    assert split("", 0, 0, 8) == []


@settings(max_examples=60)
@given(
    st.text(st.sampled_from(list('ab #\n\f é"')), max_size=120),
    st.integers(min_value=6, max_value=40),
)
def test_split_pieces_are_contiguous_and_fit(text: str, pack: int) -> None:
    got = split(text, 0, pack, 1000)
    assert got is not None
    assert "".join(text[p.start : p.end] for p in got) == text
    assert all(p.start < p.end for p in got) or got == [Piece(0, 0, None, None)]
    assert all(escaped_len(text[p.start : p.end]) <= pack for p in got)
    paged = "\f" in text
    assert all((p.pages is not None) == paged for p in got)


def test_character_cuts_below_the_smallest_room_still_advance() -> None:
    # A cap smaller than one character's escaped size (only possible when calling
    # parts directly): each such character becomes its own range.
    assert parts("\x01\x02a", 0, 3, 3) == [(0, 1), (1, 2), (2, 3)]
    assert parts("\x01\x02a", 0, 3, 3) == ref_parts("\x01\x02a", 0, 3, 3)


def test_long_ranges_are_measured_in_windows_with_the_same_sizes() -> None:
    import json

    from cortex_memory.cortex.envelope import chunks

    # Escapes, 2-4 byte characters and lone surrogates on both sides of window edges.
    unit = 'ab"\\\n\x01é中😀\ud800 '
    text = (unit * (3 * chunks._WINDOW // len(unit) + 3))[: 3 * chunks._WINDOW + 7]
    whole = len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2
    assert escaped_len(text) == whole == ref_escaped_len(text)
    for start, end in ((1, chunks._WINDOW + 1), (chunks._WINDOW - 3, 2 * chunks._WINDOW + 5)):
        assert chunks._range_len(text, start, end) == ref_escaped_len(text[start:end])


def test_a_long_text_of_many_lines_splits_as_the_literal_algorithm() -> None:
    lines = "".join(f"line {i} \"quoted\" é\n" + ("\n" if i % 7 == 0 else "") for i in range(9000))
    assert parts(lines, 0, len(lines), 4096) == ref_parts(lines, 0, len(lines), 4096)
    assert [(u.start, u.end, u.page, u.section) for u in units(lines + "\f# Tail\nend")] == (
        ref_units(lines + "\f# Tail\nend")
    )

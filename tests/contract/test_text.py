"""Blank and trim follow Unicode White_Space, not str.isspace()."""

from __future__ import annotations

import sys

import pytest

from cortex_memory.contract.text import WHITE_SPACE, is_blank, trim


def test_white_space_is_isspace_without_the_information_separators() -> None:
    spaces = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert set(WHITE_SPACE) == spaces - {"\x1c", "\x1d", "\x1e", "\x1f"}


@pytest.mark.parametrize(
    "text", ["", " ", "\t\n\r\x0b\x0c", "\u00a0\u3000\u2028\u2029\u202f\u205f\u1680\x85"]
)
def test_blank(text: str) -> None:
    assert is_blank(text)
    assert trim(text) == ""


@pytest.mark.parametrize("text", ["x", " x ", "\x1c", " \x1f ", "\u200b", "\x00"])
def test_not_blank(text: str) -> None:
    assert not is_blank(text)
    assert trim(text) != ""


def test_trim_keeps_inner_whitespace_and_separators() -> None:
    assert trim("\u3000 a b \n") == "a b"
    assert trim("\x1fa\x1f") == "\x1fa\x1f"

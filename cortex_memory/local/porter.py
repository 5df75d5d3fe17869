"""The Porter stemmer exactly as SQLite's FTS5 ``porter`` tokenizer applies it.

The keyword index stems every word with SQLite's built-in ``porter``
tokenizer; Python needs the same stems to look terms up in the index's
vocabulary, to score sentences for recall and to tell an exact form from a
stemmed one. This module reproduces that tokenizer's variant of M. F.
Porter's 1980 algorithm step for step, including its limits:

- a token shorter than 3 or longer than 64 **bytes** (UTF-8) is left as it is;
- the steps work on the token's UTF-8 bytes, where only ``a e i o u`` (and
  ``y`` after a consonant) are vowels, so letters outside ASCII count as
  consonants and are never removed.

``tests/local/test_porter.py`` holds the two to each other by feeding a word
list through SQLite's tokenizer (``fts5vocab``) and through :func:`stem`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Optional, Sequence, Tuple

__all__ = ["MAX_TOKEN", "stem"]

#: Tokens longer than this many bytes are not stemmed (FTS5_PORTER_MAX_TOKEN).
MAX_TOKEN = 64

_VOWELS = frozenset(b"aeiou")
_Y = ord("y")


def _is_vowel(ch: int, y_is_vowel: bool) -> bool:
    return ch in _VOWELS or (y_is_vowel and ch == _Y)


def _gobble_vc(word: bytes, start: int, end: int, prev_consonant: bool) -> int:
    """Skip to the end of the first vowel-then-consonant run in ``word[start:end]``.

    Returns the offset (relative to ``start``) just past that consonant, or 0
    when the slice holds no such run. ``y`` is a vowel after a consonant.
    """
    consonant = prev_consonant
    i = start
    while i < end:
        consonant = not _is_vowel(word[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < end:
        consonant = not _is_vowel(word[i], consonant)
        if consonant:
            return i + 1 - start
        i += 1
    return 0


def _m_gt0(word: bytes, n: int) -> bool:
    return _gobble_vc(word, 0, n, False) != 0


def _m_gt1(word: bytes, n: int) -> bool:
    first = _gobble_vc(word, 0, n, False)
    return first != 0 and _gobble_vc(word, first, n, True) != 0


def _m_eq1(word: bytes, n: int) -> bool:
    first = _gobble_vc(word, 0, n, False)
    return first != 0 and _gobble_vc(word, first, n, True) == 0


def _o_star(word: bytes, n: int) -> bool:
    """consonant-vowel-consonant at the end, the last not ``w``, ``x`` or ``y``."""
    if word[n - 1] in b"wxy":
        return False
    mask = 0
    consonant = False
    for i in range(n):
        consonant = not _is_vowel(word[i], consonant)
        mask = (mask << 1) + int(consonant)
    return (mask & 0x7) == 0x5


def _m_gt1_s_or_t(word: bytes, n: int) -> bool:
    return word[n - 1] in b"st" and _m_gt1(word, n)


def _has_vowel(word: bytes, n: int) -> bool:
    return any(_is_vowel(word[i], i > 0) for i in range(n))


_Cond = Callable[[bytes, int], bool]
#: (suffix, condition on the stem before it, replacement); the first rule whose
#: suffix matches is the only one tried, as in SQLite (grouped by the
#: suffix's second-to-last letter there, which gives the same first match).
_Rule = Tuple[bytes, _Cond, bytes]

_STEP2: Sequence[_Rule] = (
    (b"ational", _m_gt0, b"ate"), (b"tional", _m_gt0, b"tion"),
    (b"enci", _m_gt0, b"ence"), (b"anci", _m_gt0, b"ance"),
    (b"izer", _m_gt0, b"ize"),
    (b"logi", _m_gt0, b"log"),
    (b"bli", _m_gt0, b"ble"), (b"alli", _m_gt0, b"al"), (b"entli", _m_gt0, b"ent"),
    (b"eli", _m_gt0, b"e"), (b"ousli", _m_gt0, b"ous"),
    (b"ization", _m_gt0, b"ize"), (b"ation", _m_gt0, b"ate"), (b"ator", _m_gt0, b"ate"),
    (b"alism", _m_gt0, b"al"), (b"iveness", _m_gt0, b"ive"), (b"fulness", _m_gt0, b"ful"),
    (b"ousness", _m_gt0, b"ous"),
    (b"aliti", _m_gt0, b"al"), (b"iviti", _m_gt0, b"ive"), (b"biliti", _m_gt0, b"ble"),
)  # fmt: skip
_STEP3: Sequence[_Rule] = (
    (b"ical", _m_gt0, b"ic"), (b"ness", _m_gt0, b""), (b"icate", _m_gt0, b"ic"),
    (b"iciti", _m_gt0, b"ic"), (b"ful", _m_gt0, b""), (b"ative", _m_gt0, b""),
    (b"alize", _m_gt0, b"al"),
)  # fmt: skip
_STEP4: Sequence[_Rule] = (
    (b"al", _m_gt1, b""), (b"ance", _m_gt1, b""), (b"ence", _m_gt1, b""),
    (b"er", _m_gt1, b""), (b"ic", _m_gt1, b""), (b"able", _m_gt1, b""),
    (b"ible", _m_gt1, b""), (b"ant", _m_gt1, b""), (b"ement", _m_gt1, b""),
    (b"ment", _m_gt1, b""), (b"ent", _m_gt1, b""), (b"ion", _m_gt1_s_or_t, b""),
    (b"ou", _m_gt1, b""), (b"ism", _m_gt1, b""), (b"ate", _m_gt1, b""),
    (b"iti", _m_gt1, b""), (b"ous", _m_gt1, b""), (b"ive", _m_gt1, b""),
    (b"ize", _m_gt1, b""),
)  # fmt: skip


def _by_second_last(rules: Sequence[_Rule]) -> dict[int, Tuple[_Rule, ...]]:
    # SQLite dispatches on the second-to-last letter of the word and tries that
    # group's suffixes in order; a suffix's own second-to-last letter is the
    # word's when it matches, so grouping the rules the same way is exact.
    groups: dict[int, list[_Rule]] = {}
    for rule in rules:
        groups.setdefault(rule[0][-2], []).append(rule)
    return {key: tuple(value) for key, value in groups.items()}


_STEP2_BY = _by_second_last(_STEP2)
_STEP3_BY = _by_second_last(_STEP3)
_STEP4_BY = _by_second_last(_STEP4)


def _apply(word: bytearray, groups: dict[int, Tuple[_Rule, ...]]) -> None:
    n = len(word)
    if n < 2:
        return
    for suffix, cond, replacement in groups.get(word[n - 2], ()):
        size = len(suffix)
        if n > size and word[n - size :] == suffix:
            if cond(bytes(word), n - size):
                word[n - size :] = replacement
            return


def _step1a(word: bytearray) -> None:
    n = len(word)
    if word[n - 1] != ord("s"):
        return
    if word[n - 2] == ord("e"):
        if (n > 4 and word[n - 4] == ord("s") and word[n - 3] == ord("s")) or (
            n > 3 and word[n - 3] == ord("i")
        ):
            del word[n - 2 :]
        else:
            del word[n - 1 :]
    elif word[n - 2] != ord("s"):
        del word[n - 1 :]


def _step1b(word: bytearray) -> bool:
    """The ``eed`` / ``ed`` / ``ing`` rules; True when ``ed`` or ``ing`` went."""
    n = len(word)
    if word[n - 2] == ord("e"):
        if n > 3 and word[n - 3 :] == b"eed":
            if _m_gt0(bytes(word), n - 3):
                del word[n - 1 :]
            return False
        if n > 2 and word[n - 2 :] == b"ed" and _has_vowel(bytes(word), n - 2):
            del word[n - 2 :]
            return True
    elif (
        word[n - 2] == ord("n") and n > 3 and word[n - 3 :] == b"ing"
        and _has_vowel(bytes(word), n - 3)
    ):
        del word[n - 3 :]
        return True
    return False


def _step1b2(word: bytearray) -> bool:
    n = len(word)
    if n > 2 and bytes(word[n - 2 :]) in (b"at", b"bl", b"iz"):
        word.append(ord("e"))
        return True
    return False


def _stem_bytes(token: bytes) -> bytes:
    word = bytearray(token)
    _step1a(word)
    if _step1b(word) and not _step1b2(word):
        n = len(word)
        last = word[n - 1]
        if not _is_vowel(last, False) and last not in b"lsz" and last == word[n - 2]:
            del word[n - 1 :]
        elif _m_eq1(bytes(word), n) and _o_star(bytes(word), n):
            word.append(ord("e"))
    n = len(word)
    if word[n - 1] == _Y and _has_vowel(bytes(word), n - 1):
        word[n - 1] = ord("i")
    _apply(word, _STEP2_BY)
    _apply(word, _STEP3_BY)
    _apply(word, _STEP4_BY)
    n = len(word)
    if word[n - 1] == ord("e"):
        frozen = bytes(word)
        if _m_gt1(frozen, n - 1) or (_m_eq1(frozen, n - 1) and not _o_star(frozen, n - 1)):
            del word[n - 1 :]
    n = len(word)
    if n > 1 and word[n - 1] == ord("l") and word[n - 2] == ord("l") and _m_gt1(bytes(word), n - 1):
        del word[n - 1 :]
    return bytes(word)


def stem(token: str) -> str:
    """The stem SQLite's ``porter`` tokenizer gives the (already folded) ``token``.

    Cached: words repeat across texts far more than they vary.
    """
    if not "a" <= token[-1:] <= "z":
        # Every rule removes or replaces an ASCII letter suffix: a token that
        # ends otherwise (a number, "v2", a word ending in "é") stays as it is,
        # and the cache (a lookup into a large table) is left for the others.
        return token
    return _stem(token)


@lru_cache(maxsize=131072)
def _stem(token: str) -> str:
    """:func:`stem` of a token ending in an ASCII letter."""
    raw = token.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_TOKEN or len(raw) < 3:
        return token
    out = _stem_bytes(raw)
    if out == raw:
        return token
    return _decode(out) or token


def _decode(raw: bytes) -> Optional[str]:
    # Only ASCII letters are ever removed or added, so the bytes stay UTF-8.
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # pragma: no cover - see the comment above
        return None

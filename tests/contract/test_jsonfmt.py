"""jsonfmt: float32 rounding and printing, timestamps, and the JSON writer."""

from __future__ import annotations

import json
import math
import random
import struct
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_memory.contract import ItemKind
from cortex_memory.contract.jsonfmt import (
    F32,
    c_dumps,
    dumps,
    format_f32,
    format_f64,
    format_timestamp,
    format_timestamp_offset,
    parse_timestamp,
    to_f32,
)
from cortex_memory.errors import InvalidRequestError

# ----------------------------------------------------------------- float32


def test_to_f32_rounds_like_a_rust_cast() -> None:
    assert to_f32(1.00000001) == 1.0
    assert to_f32(0.9) == struct.unpack("<f", struct.pack("<f", 0.9))[0]
    assert to_f32(0.9) != 0.9
    assert to_f32(1e39) == math.inf
    assert to_f32(-1e39) == -math.inf
    assert to_f32(10**400) == math.inf
    assert to_f32(-(10**400)) == -math.inf
    assert math.isnan(to_f32(math.nan))
    assert to_f32(3) == 3.0
    with pytest.raises(TypeError):
        to_f32("0.5")  # type: ignore[arg-type]


def test_f32_is_a_rounded_float() -> None:
    value = F32(0.9)
    assert isinstance(value, float)
    assert value == to_f32(0.9)
    assert str(value) == "0.9"
    assert repr(value) == "F32(0.9)"
    assert F32() == 0.0


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (0.9, "0.9"),
        (0.75, "0.75"),
        (0.33, "0.33"),
        (0.1, "0.1"),
        (0.8, "0.8"),
        (0.5, "0.5"),
        (-0.5, "-0.5"),
        (0.123456789, "0.12345679"),
        (1e-6, "0.000001"),
        (2.5e-6, "0.0000025"),
        (1e-7, "1e-7"),
        (9.9e-7, "9.9e-7"),
        (1.5e-7, "1.5e-7"),
        (1234e7, "12340000000.0"),
        (123456789.0, "123456790.0"),
        (12.34, "12.34"),
        (1e13, "1e13"),
        (1e12, "1000000000000.0"),
        (1e30, "1e30"),
        (2.0**-96, "1.2621775e-29"),
        (3.4028234663852886e38, "3.4028235e38"),
        (1.401298464324817e-45, "1e-45"),
        (math.inf, "null"),
        (-math.inf, "null"),
        (math.nan, "null"),
        (1e39, "null"),
    ],
)
def test_format_f32_table(value: float, text: str) -> None:
    assert format_f32(value) == text


def _f32_round_exact(x: Fraction) -> float:
    """Round an exact rational to float32 (nearest, ties to even), independently."""
    guess = to_f32(float(x))
    if math.isinf(guess):
        return guess
    bits = struct.unpack("<I", struct.pack("<f", abs(guess)))[0]
    sign = -1 if guess < 0 or (guess == 0 and x < 0) else 1
    candidates = []
    for b in (bits - 1, bits, bits + 1):
        if 0 <= b < 0x7F800000:
            candidates.append((b, sign * struct.unpack("<f", struct.pack("<I", b))[0]))
    best = min(candidates, key=lambda c: (abs(Fraction(c[1]) - x), c[0] % 2))
    return best[1]


def _decimal_fraction(text: str) -> Fraction:
    return Fraction(Decimal(text))


def _sig_digits(text: str) -> int:
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
    return max(len(mantissa), 1)


def _neighbours_at(v: float, digits: int) -> list[Fraction]:
    """The p-digit decimals just below and just above ``v`` (exactly)."""
    exact = Fraction(v)
    magnitude = math.floor(math.log10(abs(v)))
    # log10 may be off by one next to a power of ten: settle it exactly.
    while Fraction(10) ** magnitude > abs(exact):
        magnitude -= 1
    while Fraction(10) ** (magnitude + 1) <= abs(exact):
        magnitude += 1
    unit = Fraction(10) ** (magnitude - (digits - 1))
    low = (exact / unit).__floor__() * unit
    return [low, low + unit]


finite_f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=400, deadline=None)
@given(finite_f32)
def test_format_f32_round_trips_and_is_shortest(value: float) -> None:
    text = format_f32(value)
    if value == 0.0:
        assert text == ("-0.0" if math.copysign(1.0, value) < 0 else "0.0")
        return
    assert _f32_round_exact(_decimal_fraction(text.replace("e", "E"))) == value
    # No decimal with fewer significant digits rounds back to the same float32.
    for shorter in range(1, _sig_digits(text)):
        for candidate in _neighbours_at(value, shorter):
            if candidate != 0:
                assert _f32_round_exact(candidate) != value, (text, shorter, candidate)
    # The ryu layout: no '+' and no zero padding in an exponent.
    assert "+" not in text
    assert "e0" not in text
    assert "e-0" not in text


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_f64_round_trips(value: float) -> None:
    text = format_f64(value)
    assert float(text) == value
    assert "+" not in text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (1e-6, "1e-6"),
        (1e-4, "0.0001"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e16"),
        (123.0, "123.0"),
        (-2.5, "-2.5"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (math.nan, "null"),
    ],
)
def test_format_f64_table(value: float, text: str) -> None:
    assert format_f64(value) == text


# -------------------------------------------------------------- timestamps


def _at(micro: int = 0, tz: Optional[timezone] = timezone.utc) -> datetime:
    return datetime(2023, 11, 14, 22, 13, 20, micro, tzinfo=tz)


@pytest.mark.parametrize(
    ("micro", "text"),
    [
        (0, "2023-11-14T22:13:20Z"),
        (120000, "2023-11-14T22:13:20.120Z"),
        (1000, "2023-11-14T22:13:20.001Z"),
        (123456, "2023-11-14T22:13:20.123456Z"),
        (100, "2023-11-14T22:13:20.000100Z"),
    ],
)
def test_format_timestamp_fraction_rule(micro: int, text: str) -> None:
    assert format_timestamp(_at(micro)) == text
    assert format_timestamp_offset(_at(micro)) == text[:-1] + "+00:00"


def test_format_timestamp_converts_to_utc_and_refuses_naive() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert format_timestamp(_at(0, plus_two)) == "2023-11-14T20:13:20Z"
    assert format_timestamp(datetime(5, 1, 2, 3, 4, 5, tzinfo=timezone.utc)) == (
        "0005-01-02T03:04:05Z"
    )
    with pytest.raises(TypeError):
        format_timestamp(datetime(2023, 1, 1))
    with pytest.raises(TypeError):
        format_timestamp_offset(datetime(2023, 1, 1))
    with pytest.raises(TypeError):
        format_timestamp("2023-01-01T00:00:00Z")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-11-14T22:13:20Z", _at()),
        ("2023-11-14t22:13:20z", _at()),
        ("2023-11-14T22:13:20.1Z", _at(100000)),
        ("2023-11-14T22:13:20.120Z", _at(120000)),
        ("2023-11-14T22:13:20.123456Z", _at(123456)),
        ("2023-11-14T22:13:20.123456000Z", _at(123456)),
        ("2023-11-14T22:13:20.000000000Z", _at()),
        ("2023-11-15T00:13:20+02:00", _at()),
        ("2023-11-14T17:43:20-04:30", _at()),
        ("2023-11-14T22:13:20-00:00", _at()),
        ("2023-11-14T22:13:20.5+00:00", _at(500000)),
    ],
)
def test_parse_timestamp_accepts(text: str, expected: datetime) -> None:
    parsed = parse_timestamp(text)
    assert parsed == expected
    assert parsed.tzinfo is timezone.utc


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2023-11-14",
        "2023-11-14T22:13:20",
        "2023-11-14 22:13:20Z",
        "2023-11-14T22:13:20.Z",
        "2023-11-14T22:13:20.1234567891Z",
        "2023-13-14T22:13:20Z",
        "2023-02-30T22:13:20Z",
        "2023-11-14T24:00:00Z",
        "2023-11-14T22:13:60Z",
        "2023-11-14T22:13:20+24:00",
        "2023-11-14T22:13:20+02:60",
        "2023-11-14T22:13:20+0200",
        "\u0662\u0660\u0662\u0663-11-14T22:13:20Z",
        " 2023-11-14T22:13:20Z",
        "0001-01-01T00:00:00+01:00",
    ],
)
def test_parse_timestamp_refuses(text: str) -> None:
    with pytest.raises(InvalidRequestError):
        parse_timestamp(text)


def test_parse_timestamp_refuses_sub_microsecond_digits_unless_truncating() -> None:
    with pytest.raises(InvalidRequestError, match="sub-microsecond"):
        parse_timestamp("2023-11-14T22:13:20.123456789Z")
    with pytest.raises(InvalidRequestError):
        parse_timestamp("2023-11-14T22:13:20.0000001Z")
    assert parse_timestamp("2023-11-14T22:13:20.123456789Z", truncate=True) == _at(123456)


def test_parse_timestamp_refuses_non_strings() -> None:
    with pytest.raises(InvalidRequestError):
        parse_timestamp(12)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.just(timezone.utc),
    )
)
def test_timestamps_round_trip(value: datetime) -> None:
    text = format_timestamp(value)
    assert parse_timestamp(text) == value
    assert parse_timestamp(format_timestamp_offset(value)) == value
    fraction = text[20:-1] if "." in text else ""
    assert len(fraction) in (0, 3, 6)


# ------------------------------------------------------------------ writer


def _reference(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_dumps_is_compact_and_keeps_member_order() -> None:
    value = {"z": 1, "a": [True, False, None], "m": {"y": "x", "b": []}, "e": {}}
    assert dumps(value) == '{"z":1,"a":[true,false,null],"m":{"y":"x","b":[]},"e":{}}'


def test_dumps_writes_strings_like_serde_json() -> None:
    text = 'Ünïcode "q" back\\slash\t\n\r\b\f ctl\x01\x1f del\x7f 😀 </script> \u2028'
    assert dumps(text) == _reference(text)
    assert dumps({text: text}) == _reference({text: text})
    assert "\\u0001" in dumps(text)
    assert "\\u001f" in dumps(text)
    assert "\x7f" in dumps(text)
    assert "/" in dumps(text)


def test_dumps_formats_float32_and_float64() -> None:
    assert dumps({"c": F32(0.9), "s": [F32(1e-6), F32(0.0)]}) == '{"c":0.9,"s":[0.000001,0.0]}'
    assert dumps(0.1) == "0.1"
    assert dumps(1e-6) == "1e-6"
    assert dumps(F32(math.inf)) == "null"


def test_dumps_accepts_tuples_enums_and_subclasses() -> None:
    class Text(str):
        pass

    class Number(int):
        pass

    assert dumps((1, "a")) == '[1,"a"]'
    assert dumps({"kind": ItemKind.DOCUMENT}) == '{"kind":"document"}'
    assert dumps({ItemKind.LEARNING: Text("x")}) == '{"learning":"x"}'
    assert dumps(Number(7)) == "7"
    assert dumps(-12) == "-12"
    assert dumps(2**70) == str(2**70)


@pytest.mark.parametrize("bad", [{1: "x"}, {"a": {1, 2}}, [b"bytes"], object()])
def test_dumps_refuses_what_json_cannot_hold(bad: Any) -> None:
    with pytest.raises(TypeError):
        dumps(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_dumps_matches_json_dumps_without_floats(value: Any) -> None:
    assert dumps(value) == _reference(value)


def _spec_format_f32(x: float) -> str:
    """contract.md §5.3 written literally with Fraction (slow, obviously right)."""
    v = to_f32(x)
    if v == 0.0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    a = abs(v)
    bits = struct.unpack("<I", struct.pack("<f", a))[0]
    lower = Fraction(struct.unpack("<f", struct.pack("<I", bits - 1))[0])
    upper = (
        Fraction(2**128)
        if bits + 1 == 0x7F800000
        else Fraction(struct.unpack("<f", struct.pack("<I", bits + 1))[0])
    )
    exact = Fraction(a)
    lo, hi = (exact + lower) / 2, (exact + upper) / 2

    def fits(c: Fraction) -> bool:
        return lo < c < hi or (bits % 2 == 0 and c in (lo, hi))

    for p in range(1, 10):
        m, e = format(a, f".{p - 1}e").split("e")
        d, k = int(m.replace(".", "")), int(e) - (p - 1)
        if fits(d * Fraction(10) ** k):
            break
        if d * Fraction(10) ** k < exact and fits((d + 1) * Fraction(10) ** k):
            d += 1
            break
    while d % 10 == 0:
        d, k = d // 10, k + 1
    digits = str(d)
    n, kk = len(digits), len(digits) + k
    if k >= 0 and kk <= 13:
        text = digits + "0" * k + ".0"
    elif 0 < kk <= 13:
        text = digits[:kk] + "." + digits[kk:]
    elif -6 < kk <= 0:
        text = "0." + "0" * -kk + digits
    elif n == 1:
        text = f"{digits}e{kk - 1}"
    else:
        text = f"{digits[0]}.{digits[1:]}e{kk - 1}"
    return ("-" if v < 0 else "") + text


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=0x7F7FFFFF), st.booleans())
def test_format_f32_matches_the_spec_algorithm(bits: int, negative: bool) -> None:
    value = struct.unpack("<f", struct.pack("<I", bits))[0]
    value = -value if negative else value
    assert format_f32(value) == _spec_format_f32(value)


def test_format_f32_matches_the_spec_on_powers_of_two() -> None:
    # Powers of two are where the gap below is half the gap above (the d + 1 case).
    for exponent in range(-149, 128):
        value = 2.0**exponent
        assert format_f32(value) == _spec_format_f32(value), exponent


def test_format_f32_matches_the_spec_on_a_sweep_of_bit_patterns() -> None:
    # A deterministic sweep across every binade (and the subnormals), checking
    # the fast path and the bisection against the literal algorithm.
    rng = random.Random(20240607)
    for _ in range(3000):
        bits = rng.randrange(1, 0x7F800000)
        value = struct.unpack("<f", struct.pack("<I", bits))[0]
        assert format_f32(value) == _spec_format_f32(value), bits


def test_format_f32_settles_halfway_candidates_exactly() -> None:
    # Above 2**25 the float32 gap is 4, so short decimals land exactly on the
    # halfway points between neighbours: the exact (integer) path decides.
    for value in [*range(2**25, 2**25 + 4000, 4), *range(2**26 - 4000, 2**26, 4)]:
        assert format_f32(float(value)) == _spec_format_f32(float(value)), value
    assert format_f32(33554452.0) == "33554452.0"
    top = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
    assert format_f32(top) == _spec_format_f32(top) == "3.4028235e38"


def test_dumps_accepts_mapping_and_sequence_subclasses() -> None:
    from collections import OrderedDict

    class Items(list):  # type: ignore[type-arg]
        pass

    class Score(F32):
        pass

    ordered = OrderedDict([("b", Items([1, Score(0.5)])), ("a", None)])
    assert dumps(ordered) == '{"b":[1,0.5],"a":null}'
    assert dumps([ordered, (F32(0.25),)]) == '[{"b":[1,0.5],"a":null},[0.25]]'


_float_free = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4)
    | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_float_free)
def test_c_dumps_writes_the_contract_bytes_of_float_free_values(value: Any) -> None:
    assert c_dumps(value) == dumps(value)


def test_c_dumps_writes_enums_and_floats_readably_and_refuses_other_types() -> None:
    value = {"kind": ItemKind.DOCUMENT, "n": 3}
    assert c_dumps(value) == dumps(value) == '{"kind":"document","n":3}'
    assert json.loads(c_dumps({"x": 0.1, "y": [1e300]})) == {"x": 0.1, "y": [1e300]}
    with pytest.raises(TypeError):
        c_dumps({"x": object()})

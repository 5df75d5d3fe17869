"""Float32 values and the serde_json float layout of contract JSON.

Contract scores and confidences are float32 (:class:`F32`, :func:`to_f32`):
written as their shortest round-tripping decimal, in the layout Rust's
``serde_json`` (ryu) gives (:func:`format_f32`); a plain float64 handed to the
writer is laid out the same way (:func:`format_f64`). :mod:`.jsonfmt`, the
writer, re-exports these names.
"""

from __future__ import annotations

import math
import struct
from functools import lru_cache
from typing import Optional, Tuple

__all__ = ["F32", "format_f32", "format_f64", "to_f32"]

_F32_STRUCT = struct.Struct("<f")
_U32_STRUCT = struct.Struct("<I")
_F32_INF_BITS = 0x7F800000



def to_f32(x: float) -> float:
    """Round ``x`` to the nearest float32 (half to even), as Rust's ``as f32`` does.

    A value past the float32 range becomes an infinity of the same sign; NaN
    stays NaN.
    """
    try:
        result: float = _F32_STRUCT.unpack(_F32_STRUCT.pack(x))[0]
    except OverflowError:
        return math.inf if x > 0 else -math.inf
    except struct.error:
        # struct refuses an int too large for a double, and non-numbers.
        if isinstance(x, int):
            return math.inf if x > 0 else -math.inf
        raise TypeError(f"a float32 value must be a number, not {type(x).__name__}") from None
    return result


class F32(float):
    """A float32 value: :func:`dumps` writes it by :func:`format_f32`.

    ``to_json()`` wraps float32 fields (confidence, scores) in this type; it is a
    ``float``, so it compares and computes like one (arithmetic gives plain floats).
    """

    __slots__ = ()

    def __new__(cls, value: float = 0.0) -> F32:
        """Round ``value`` to float32."""
        return float.__new__(cls, to_f32(value))

    def __repr__(self) -> str:
        return f"F32({format_f32(self)})"

    def __str__(self) -> str:
        return format_f32(self)


def _f32_bits_value(bits: int) -> float:
    value: float = _F32_STRUCT.unpack(_U32_STRUCT.pack(bits))[0]
    return value


def _less(an: int, ad: int, bn: int, bd: int) -> bool:
    """Exact ``an/ad < bn/bd`` for positive denominators."""
    return an * bd < bn * ad


class _Exact:
    """Exact rational bounds of the decimals that round to one float32 ``v``.

    Built only for the rare candidates the fast float test cannot decide.
    """

    __slots__ = ("hi_d", "hi_n", "lo_d", "lo_n", "ties_ok", "vd", "vn")

    def __init__(self, v: float, bits: int) -> None:
        self.vn, self.vd = v.as_integer_ratio()
        bn, bd = _f32_bits_value(bits - 1).as_integer_ratio()  # bits >= 1: v > 0
        if bits + 1 == _F32_INF_BITS:
            an, ad = 2**128, 1  # the neighbour above the largest float32
        else:
            an, ad = _f32_bits_value(bits + 1).as_integer_ratio()
        # Halfway points to the neighbours, as exact fractions.
        self.lo_n, self.lo_d = self.vn * bd + bn * self.vd, 2 * self.vd * bd
        self.hi_n, self.hi_d = self.vn * ad + an * self.vd, 2 * self.vd * ad
        self.ties_ok = bits % 2 == 0  # round half to even keeps v on a halfway point

    def rounds_back(self, cn: int, cd: int) -> bool:
        if _less(self.lo_n, self.lo_d, cn, cd) and _less(cn, cd, self.hi_n, self.hi_d):
            return True
        if not self.ties_ok:
            return False
        return cn * self.lo_d == self.lo_n * cd or cn * self.hi_d == self.hi_n * cd


def _fraction(d: int, k: int) -> Tuple[int, int]:
    return (d * 10**k, 1) if k >= 0 else (d, 10**-k)


@lru_cache(maxsize=4096)
def _shortest_f32(v: float) -> Tuple[str, int]:
    """Digits and exponent of the shortest decimal that rounds back to float32 ``v``.

    ``v`` is positive and finite. The halfway points to ``v``'s neighbours are
    doubles, and rounding a decimal ``c`` to the nearest double ``x`` is
    monotone, so ``x`` strictly inside (or outside) the halfway points puts
    ``c`` strictly inside (or outside) too. Only when ``x`` lands exactly on a
    halfway point, or on ``v`` itself when the side matters, is the answer
    settled with exact integer arithmetic: the decimal is never rounded twice.
    (Integers in [2**25, 2**26), whose float32 gap is 4, land on halfway points.)
    """
    bits: int = _U32_STRUCT.unpack(_F32_STRUCT.pack(v))[0]
    above = 2.0**128 if bits + 1 == _F32_INF_BITS else _f32_bits_value(bits + 1)
    low = (v + _f32_bits_value(bits - 1)) / 2  # exact: adjacent float32s, halved
    high = (v + above) / 2
    exact: Optional[_Exact] = None

    def rounds_back(x: float, d: int, k: int) -> bool:
        nonlocal exact
        if low < x < high:
            return True
        if x != low and x != high:
            return False
        exact = exact or _Exact(v, bits)
        return exact.rounds_back(*_fraction(d, k))

    def attempt(p: int) -> Optional[Tuple[int, int]]:
        """The spec's step for ``p`` digits: ``d``, else ``d + 1`` when ``d·10^k < v``."""
        text = f"{v:.{p - 1}e}"  # correctly rounded: a float32 is exact as a float64
        mark = text.index("e")
        d = int(text[0] + text[2:mark]) if p > 1 else int(text[0])
        k = int(text[mark + 1 :]) - (p - 1)
        x = float(text)
        if rounds_back(x, d, k):
            return d, k
        # The gap above a power of two is twice the gap below, so the nearest
        # p-digit decimal can miss while the next one up fits. (x == v cannot
        # reach here: v lies strictly between its halfway points, so x < v
        # means exactly d·10^k < v.)
        if x > v:
            return None
        if rounds_back(float(f"{d + 1}e{k}"), d + 1, k):
            return d + 1, k
        return None

    # If some p-digit decimal rounds back, so does one with p + 1 digits (the
    # gap above v is never narrower than the gap below), so the first p that
    # works can be found by bisection; 9 digits always work for a float32.
    low_p, high_p = 1, 9
    found: Optional[Tuple[int, int]] = None
    while low_p < high_p:
        mid = (low_p + high_p) // 2
        result = attempt(mid)
        if result is None:
            low_p = mid + 1
        else:
            high_p, found = mid, result
    if found is None:
        found = attempt(9)  # the one p bisection never tries; it always works
    if found is not None:
        d, k = found
        while d % 10 == 0:
            d //= 10
            k += 1
        return str(d), k
    raise AssertionError(f"no float32 decimal found for {v!r}")  # pragma: no cover


def _layout(digits: str, k: int, max_kk: int, min_kk: int) -> str:
    """Place the decimal point as ryu's pretty printer does (``digits·10^k``)."""
    n = len(digits)
    kk = n + k
    if k >= 0 and kk <= max_kk:
        return digits + "0" * k + ".0"
    if 0 < kk <= max_kk:
        return digits[:kk] + "." + digits[kk:]
    if min_kk < kk <= 0:
        return "0." + "0" * -kk + digits
    if n == 1:
        return f"{digits}e{kk - 1}"
    return f"{digits[0]}.{digits[1:]}e{kk - 1}"


def format_f32(x: float) -> str:
    """Write ``x`` as the shortest decimal that round-trips its float32 value.

    The layout is ryu's (serde_json's) for ``f32``: ``0.9``, ``1.0``,
    ``0.000001``, ``1e-7``, ``12340000000.0``, ``1e13``, ``1.2621775e-29``.
    A non-finite value is written ``null``.
    """
    v = to_f32(x)
    if v != v or v in (math.inf, -math.inf):
        return "null"
    if v == 0.0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    if v < 0:
        digits, k = _shortest_f32(-v)
        return "-" + _layout(digits, k, 13, -6)
    digits, k = _shortest_f32(v)
    return _layout(digits, k, 13, -6)


def format_f64(x: float) -> str:
    """Write a float64 as serde_json does: shortest round-trip digits, ryu layout.

    Contract values are float32 (:class:`F32`); this covers a plain ``float``
    handed to :func:`dumps`. A non-finite value is written ``null``.
    """
    if x != x or x in (math.inf, -math.inf):
        return "null"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    text = repr(abs(x))  # shortest digits that round-trip the float64
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    k = (int(exp) if exp else 0) - len(frac)
    stripped = digits.rstrip("0")
    k += len(digits) - len(stripped)
    body = _layout(stripped, k, 16, -5)
    return "-" + body if x < 0 else body

"""Generate ``fp8_table.csv``: Triton's GPU conversion rules between float32 and its five fp8 formats.

    python tests/conformance/data/make_fp8_table.py      # rewrites fp8_table.csv next to this file

This is an independent model of each format, written from the format definitions with exact rational
arithmetic (``fractions.Fraction``): no bit tricks, no NumPy, nothing shared with the interpreter's or the
compiler's conversions, which ``tests/conformance/test_fp8_table.py`` checks against the table.

The rules, and where Triton's GPU lowering does them (read at the commits recorded in ``SOURCES``):

- ``float8e4nv`` (OCP E4M3FN: bias 7, 3 mantissa bits, no infinity, NaN = S.1111.111) and ``float8e5``
  (OCP E5M2: bias 15, 2 mantissa bits, IEEE-style infinity and NaNs). float32 -> fp8 is PTX
  ``cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32``: round to nearest even; finite values beyond the largest finite
  value and +-infinity saturate to +-max (448, 57344); NaN gives the canonical NaN 0x7F.
  ``fp_downcast_rounding="rtz"`` exists for float8e5 only: float32 -> float16 toward zero
  (``cvt.rz.f16.f32``), then the float16's high byte (``Fp16_to_Fp8E5M2_RTZ``): truncation; finite
  overflow gives +-57344, +-infinity stays +-infinity, NaN gives 0x7F (the canonical float16 NaN's byte).
- ``float8e4b15`` (bias 15, 3 mantissa bits, every code finite: 0x7F is 1.875): Triton converts it in
  software (``convert_custom_float8_sm80``): float32 -> float16 toward zero, then |x| clamped to 1.75
  (``min.f16x2``, which also maps NaN to 1.75), then rounded half away from zero (``mad.lo.u32 a, a, 2,
  0x00800080`` keeps the high byte); the sign bit is the float16's (a float32 NaN becomes the positive
  canonical float16 NaN, so +1.75). ``fp_downcast_rounding`` is ignored for this format.
- ``float8e4b8`` (E4M3FNUZ: bias 8) and ``float8e5b16`` (E5M2FNUZ: bias 16): the AMD backend's
  ``downcastToFp8rtneOneValue``: round to nearest even, finite overflow saturates to +-max (240, 57344),
  +-infinity and NaN give the only NaN 0x80, and there is no negative zero (a result of zero is 0x00).
- fp8 -> float32 is exact for every code that is a number; NaN codes give NaN (the table says ``nan``;
  NaN payloads and signs differ between Triton's lowerings, so only NaN-ness is compared).

Rows (hexadecimal): ``encode,<float32 bits>,<code per (format, rounding) of COLUMNS>`` and
``decode,<format>,<code>,<float32 bits or nan>``; ``#`` lines are comments (the sources, the columns).
"""

from __future__ import annotations

import bisect
import math
import random
import struct
from fractions import Fraction
from pathlib import Path

SOURCES = [
    ("triton-lang/triton", "third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/ElementwiseOpToLLVM.cpp",
     "0043a8d80d60f9a791d43161189aa13e0db00353", "FpToFpOpConversion: e4m3/e5m2 via cvt.rn.satfinite, e5m2 rtz"),
    ("triton-lang/triton", "third_party/amd/lib/TritonAMDGPUToLLVM/ConvertFpCastOpToLLVM.cpp",
     "01d980fcd2b594846681c45c1fc1675c2ddd6b4c", "downcastToFp8rtneOneValue: E4M3FNUZ/E5M2FNUZ"),
    ("triton 3.9.0 wheel", "triton/language/extra/cuda/utils.py", "pip triton==3.9.0",
     "convert_custom_float8 / convert_float16_to_fp8e4b15 / convert_fp8e4b15_to_float16"),
    ("triton 3.9.0 wheel", "triton/language/semantic.py", "pip triton==3.9.0",
     "cast: fp8e4b15 through convert_custom_types, other fp8 through create_fp_to_fp"),
]


class Format:
    def __init__(self, name: str, mbits: int, bias: int, kind: str):
        self.name, self.mbits, self.bias, self.kind = name, mbits, bias, kind  # kind: ocp_e4 ocp_e5 b15 fnuz
        self.ebits = 7 - mbits

    def decode(self, code: int) -> Fraction | float:
        """The value of an fp8 code: a Fraction, or -0.0 / +-inf / nan as floats."""
        sign = -1 if code & 0x80 else 1
        e = (code >> self.mbits) & ((1 << self.ebits) - 1)
        m = code & ((1 << self.mbits) - 1)
        top = (1 << self.ebits) - 1
        if self.kind == "fnuz" and code == 0x80:
            return math.nan
        if self.kind == "ocp_e4" and e == top and m == (1 << self.mbits) - 1:
            return math.nan
        if self.kind == "ocp_e5" and e == top:
            return math.nan if m else sign * math.inf
        if e == 0:
            mag = Fraction(m, 1 << self.mbits) * Fraction(2) ** (1 - self.bias)
        else:
            mag = (1 + Fraction(m, 1 << self.mbits)) * Fraction(2) ** (e - self.bias)
        return -0.0 if sign < 0 and mag == 0 else sign * mag

    def finite_magnitudes(self) -> list[tuple[Fraction, int]]:
        """(value, code) of every non-negative finite code, ascending."""
        if not hasattr(self, "_grid"):
            self._grid = sorted((v, code) for code in range(0x80) if isinstance(v := self.decode(code), Fraction))
        return self._grid


FORMATS = {
    "float8e4nv": Format("float8e4nv", 3, 7, "ocp_e4"),
    "float8e5": Format("float8e5", 2, 15, "ocp_e5"),
    "float8e4b15": Format("float8e4b15", 3, 15, "b15"),
    "float8e4b8": Format("float8e4b8", 3, 8, "fnuz"),
    "float8e5b16": Format("float8e5b16", 2, 16, "fnuz"),
}
# (format, rounding) columns of the encode rows
COLUMNS = [("float8e4nv", "rtne"), ("float8e5", "rtne"), ("float8e5", "rtz"), ("float8e4b15", "rtne"),
           ("float8e4b15", "rtz"), ("float8e4b8", "rtne"), ("float8e5b16", "rtne")]


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _round(x: Fraction, grid: list[tuple[Fraction, int]], mode: str) -> int:
    """The code of non-negative ``x`` on ``grid`` (ascending (value, code)), assuming x <= the grid's max."""
    i = bisect.bisect_right(grid, (x, 256)) - 1
    below = grid[i]
    if below[0] == x or mode == "rtz":
        return below[1]
    above = grid[i + 1]
    mid = (below[0] + above[0]) / 2
    if x < mid:
        return below[1]
    if x > mid:
        return above[1]
    if mode == "half_up":
        return above[1]
    return below[1] if below[1] % 2 == 0 else above[1]  # ties to the even code (even mantissa)


def _f16_toward_zero(x: Fraction) -> Fraction:
    """float16 rounding toward zero of a non-negative value (float16 subnormals kept, no overflow to inf)."""
    if x == 0:
        return x
    e = math.floor(math.log2(x))
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    q = Fraction(2) ** (max(e, -14) - 10)  # float16 quantum at that exponent
    return min(math.floor(x / q) * q, Fraction(65504))


def encode(fmt: Format, bits: int, rounding: str) -> int:
    """Triton's GPU conversion of the float32 with ``bits`` to ``fmt`` (see the module docstring)."""
    x = f32_value(bits)
    neg = bool(bits >> 31)
    grid = fmt.finite_magnitudes()
    vmax, cmax = grid[-1]
    sign = 0x80 if neg else 0
    if fmt.kind == "b15":
        vmax, cmax = Fraction(7, 4), 0x7E  # clamped to 1.75 before rounding
        if math.isnan(x):
            return cmax  # the canonical float16 NaN is positive
        if math.isinf(x):
            return sign | cmax
        mag = min(_f16_toward_zero(abs(Fraction(x))), vmax)
        return sign | _round(mag, grid, "half_up")
    if math.isnan(x):
        return 0x80 if fmt.kind == "fnuz" else 0x7F
    if math.isinf(x):
        if fmt.kind == "fnuz":
            return 0x80
        if rounding == "rtz":  # float8e5: float16 infinity's high byte
            return sign | 0x7C
        return sign | cmax
    mag = abs(Fraction(x))
    code = cmax if mag >= vmax else _round(mag, grid, rounding)
    if fmt.kind == "fnuz" and code == 0:
        return 0
    return sign | code


def sweep() -> list[int]:
    """float32 bit patterns: every fp8 value, the midpoints between neighbours and their float32 neighbours,
    subnormal and overflow boundaries, zeros, infinities, NaNs, and seeded random values."""
    values: set[int] = set()

    def add(v: float | Fraction) -> None:
        f = float(v)
        if abs(f) < 3.5e38:
            b = f32_bits(f)
            for d in (-1, 0, 1):
                if 0 <= (b & 0x7FFFFFFF) + d < 0x7F800000:
                    values.add(((b & 0x7FFFFFFF) + d) | (b & 0x80000000))
                    values.add(((b & 0x7FFFFFFF) + d) | (b & 0x80000000) ^ 0x80000000)

    for fmt in FORMATS.values():
        grid = fmt.finite_magnitudes()
        for (v, _), (w, _) in zip(grid, grid[1:]):
            add(v)
            add((v + w) / 2)
        vmax = grid[-1][0]
        step = grid[-1][0] - grid[-2][0]
        for k in (Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), 1, 2, 4):
            add(vmax + k * step)
        add(grid[1][0] / 2)
        add(grid[1][0] / 4)
        add(Fraction(7, 4))  # e4b15's clamp
        add(Fraction(15, 8))
    add(Fraction(65504))
    add(Fraction(65520))
    for b in (0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0x7F800001,
              0x7FC00000, 0x7FFFFFFF, 0x7FA00000):
        values.add(b)
        values.add(b | 0x80000000)
    rng = random.Random(20261203)
    for _ in range(1500):  # log-uniform magnitudes from 2^-30 to 2^20, both signs
        add(rng.choice((-1, 1)) * 2.0 ** rng.uniform(-30, 20))
    return sorted(values)


def write(path: Path) -> None:
    lines = ["# Triton 3.9's GPU conversions between float32 and fp8 (generated by make_fp8_table.py; do not edit)"]
    for repo, file, commit, what in SOURCES:
        lines.append(f"# source: {repo} {file} @ {commit}: {what}")
    lines.append("# encode,<float32 bits>," + ",".join(f"{f}:{r}" for f, r in COLUMNS))
    lines.append("# decode,<format>,<code>,<float32 bits or nan>")
    for bits in sweep():
        codes = [encode(FORMATS[f], bits, r) for f, r in COLUMNS]
        lines.append(f"encode,{bits:08x}," + ",".join(f"{c:02x}" for c in codes))
    for name, fmt in FORMATS.items():
        for code in range(256):
            v = fmt.decode(code)
            out = "nan" if isinstance(v, float) and math.isnan(v) else f"{f32_bits(float(v)):08x}"
            lines.append(f"decode,{name},{code:02x},{out}")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    write(Path(__file__).with_name("fp8_table.csv"))

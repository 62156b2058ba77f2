"""libdevice's directed-rounding arithmetic and conversions, bit-exact on every path against exact rational
references (Python fractions and integers: a third implementation, independent of the MSL and of the
interpreter)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from paths import run_on_all_paths

from . import libdevice_kernels as lk

MODES = ("rn", "rz", "rd", "ru")
F32 = np.float32
MAX = Fraction(float(np.finfo(F32).max))
RNG = np.random.default_rng(18)


def _f32_bits(x: float) -> int:
    return int(np.array([x], F32).view(np.uint32)[0])


def _round(sign_vs, approx: float, mode: str) -> float:
    """The float32 in ``mode`` of an exact value v given by ``sign_vs(q)`` = sign(v - q) for rationals q, and a
    float approximation of v."""
    if sign_vs(Fraction(0)) == 0:
        return 0.0
    fmax = F32(np.finfo(F32).max)
    if sign_vs(MAX) > 0:
        lo, hi = fmax, F32(np.inf)
    elif sign_vs(-MAX) < 0:
        lo, hi = F32(-np.inf), -fmax
    else:
        lo = F32(min(max(approx, -float(fmax)), float(fmax)))
        while sign_vs(Fraction(float(lo))) < 0:
            lo = np.nextafter(lo, F32(-np.inf))
        while lo < fmax and sign_vs(Fraction(float(np.nextafter(lo, F32(np.inf))))) >= 0:
            lo = np.nextafter(lo, F32(np.inf))
        hi = lo if sign_vs(Fraction(float(lo))) == 0 else np.nextafter(lo, F32(np.inf))
    if lo == hi:
        return float(lo)
    positive = sign_vs(Fraction(0)) > 0
    if mode == "rd" or (mode == "rz" and positive):
        return float(lo) if np.isfinite(lo) else -math.inf
    if mode == "ru" or mode == "rz":
        return float(hi)
    # to nearest: compare with the midpoint (beyond FLT_MAX the midpoint is FLT_MAX + half an ulp)
    if not np.isfinite(lo):
        top = -MAX - Fraction(2) ** 103
    elif not np.isfinite(hi):
        top = MAX + Fraction(2) ** 103
    else:
        top = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    s = sign_vs(top)
    if s > 0:
        return float(hi)
    if s < 0:
        return float(lo)
    return float(lo) if _f32_bits(float(lo)) % 2 == 0 else float(hi)


def _exact(op: str, args: tuple[float, ...], mode: str) -> float:
    """The reference result of libdevice.<op>_<mode> on float32 arguments."""
    a = args
    if not all(math.isfinite(v) for v in a):
        with np.errstate(all="ignore"):
            f = {"add": lambda: F32(a[0]) + F32(a[1]), "sub": lambda: F32(a[0]) - F32(a[1]),
                 "mul": lambda: F32(a[0]) * F32(a[1]), "div": lambda: F32(a[0]) / F32(a[1]),
                 "rcp": lambda: F32(1) / F32(a[0]), "sqrt": lambda: np.sqrt(F32(a[0])),
                 "fma": lambda: F32(a[0] * a[1] + a[2])}[op]
            return float(f())
    fr = [Fraction(v) for v in a]
    zero_sign = None
    if op in ("add", "sub", "fma"):
        x, y = (fr[0], fr[1] if op == "add" else -fr[1]) if op != "fma" else (fr[0] * fr[1], fr[2])
        sx = math.copysign(1, a[0]) < 0 if op != "fma" else (math.copysign(1, a[0]) < 0) != (math.copysign(1, a[1]) < 0)
        sy = (math.copysign(1, a[1]) < 0) != (op == "sub") if op != "fma" else math.copysign(1, a[2]) < 0
        v = x + y
        zero_sign = (sx and sy) or (sx != sy and mode == "rd")
    elif op == "mul":
        v = fr[0] * fr[1]
        zero_sign = (math.copysign(1, a[0]) < 0) != (math.copysign(1, a[1]) < 0)
    elif op in ("div", "rcp"):
        num, den = (fr[0], fr[1]) if op == "div" else (Fraction(1), fr[0])
        nums, dens = (a[0], a[1]) if op == "div" else (1.0, a[0])
        if den == 0:
            with np.errstate(all="ignore"):
                return float(F32(nums) / F32(dens))
        v = num / den
        zero_sign = (math.copysign(1, nums) < 0) != (math.copysign(1, dens) < 0)
    else:  # sqrt
        if a[0] < 0:
            return math.nan
        if a[0] == 0:
            return a[0]
        r = _round(lambda q: (fr[0] > q * q) - (fr[0] < q * q) if q >= 0 else 1, math.sqrt(a[0]), mode)
        return r
    if v == 0:
        return -0.0 if zero_sign else 0.0
    r = _round(lambda q: (v > q) - (v < q), float(v), mode)
    return math.copysign(0.0, float(v)) if r == 0 else r


def _inputs(n: int, arity: int) -> list[np.ndarray]:
    """float32 values across the range: ordinary, near ties and cancellations, subnormals, extremes, specials."""
    cols = []
    for k in range(arity):
        x = (RNG.standard_normal(n) * np.exp2(RNG.integers(-30, 30, n))).astype(F32)
        x[: n // 8] = (RNG.standard_normal(n // 8) * 1e-39).astype(F32)  # subnormals
        x[n // 8: n // 4] = F32(1.0) + (RNG.integers(0, 4, n // 8) * np.finfo(F32).eps / 2).astype(F32)
        x[n // 4: n // 4 + 8] = [3e38, -3e38, np.inf, -np.inf, np.nan, 0.0, -0.0, 1.4e-45]
        RNG.shuffle(x) if k else None
        cols.append(x)
    for c in cols:  # any bit pattern: huge exponent gaps, overflowing products, subnormal results, NaN payloads
        k = n // 4
        c[-2 * k:-k] = RNG.integers(0, 2**32, k, dtype=np.uint64).astype(np.uint32).view(F32)
    if arity >= 2:  # cancellations: y close to -x
        m = n // 8
        cols[1][-m:] = -(cols[0][-m:] * (F32(1) + RNG.integers(-3, 4, m).astype(F32) * np.finfo(F32).eps)).astype(F32)
    return cols


def _bits_equal(got: np.ndarray, want: np.ndarray, what: str, args: list[np.ndarray]) -> None:
    g, w = got.view(np.uint32), want.view(np.uint32)
    same = (g == w) | (np.isnan(got) & np.isnan(want))
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        raise AssertionError(f"{what}: {int((~same).sum())} results differ; first at {i}: inputs "
                             f"{[float(a[i]) for a in args]} gave {float(got[i])!r} ({g[i]:#010x}), "
                             f"want {float(want[i])!r} ({w[i]:#010x})")


ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "fma": 3, "rcp": 1, "sqrt": 1}
KERNELS = {1: lk.ld1_kernel, 2: lk.ld2_kernel, 3: lk.ld3_kernel}


ROUNDED = ["add_rn", "add_rz", "add_rd", "add_ru", "sub_rn", "sub_rz", "sub_rd", "sub_ru", "mul_rn", "mul_rz",
           "mul_rd", "mul_ru", "div_rn", "div_rz", "div_rd", "div_ru", "fma_rn", "fma_rz", "fma_rd", "fma_ru",
           "rcp_rn", "rcp_rz", "rcp_rd", "rcp_ru", "sqrt_rn", "sqrt_rz", "sqrt_rd", "sqrt_ru"]


@pytest.mark.parametrize("name", ROUNDED)
def test_directed_rounding_is_exact(name):
    op, mode = name.split("_")
    n, arity = 512, ARITY[op]
    cols = _inputs(n, arity)
    if op == "sqrt":
        cols[0] = np.abs(cols[0])
        cols[0][:4] = [-1.0, -0.0, np.inf, 2.0]
    want = np.array([_exact(op, tuple(float(c[i]) for c in cols), mode) for i in range(n)], F32)
    kernel = KERNELS[arity]

    def check(args, expected, path):
        _bits_equal(np.asarray(args[arity]), want, f"{op}_{mode} on the {path} path", cols)

    run_on_all_paths(kernel, (2,), lambda: (*[c.copy() for c in cols], np.zeros(n, F32), n),
                     lambda *a: {arity: want}, check=check, constexprs={"OP": name, "BLOCK": 256})


def _int_reference(x: float, mode: str, lo: int, hi: int) -> int:
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    f = Fraction(x)
    r = {"rz": int(f), "rd": math.floor(f), "ru": math.ceil(f), "rn": round(f)}[mode]  # round(): half to even
    return min(max(r, lo), hi)


CONVERT = {"float2int": (np.int32, -2**31, 2**31 - 1, np.int32), "float2uint": (np.int32, 0, 2**32 - 1, np.uint32),
           "float2ll": (np.int64, -2**63, 2**63 - 1, np.int64), "float2ull": (np.int64, 0, 2**64 - 1, np.uint64)}


TO_INT = ["float2int_rn", "float2int_rz", "float2int_rd", "float2int_ru", "float2uint_rn", "float2uint_rz",
          "float2uint_rd", "float2uint_ru", "float2ll_rn", "float2ll_rz", "float2ll_rd", "float2ll_ru",
          "float2ull_rn", "float2ull_rz", "float2ull_rd", "float2ull_ru"]


@pytest.mark.parametrize("name", TO_INT)
def test_float_to_integer_with_a_rounding_mode(name):
    conv, mode = name.split("_")
    out_t, lo, hi, value_t = CONVERT[conv]
    x = np.concatenate([RNG.uniform(-10, 10, 200), np.arange(-4, 4.5, 0.5),
                        [2.5, -2.5, 1e10, -1e10, 3e9, 5e9, 1e19, 2e19, -1e19, 1e30, -1e30, np.inf, -np.inf, np.nan,
                         -0.0, 0.49999997, 2147483520.0, -2147483648.0, 9.2233715e18]]).astype(F32)
    want = np.array([_int_reference(float(v), mode, lo, hi) for v in x], dtype=object)
    want = np.array([int(w) for w in want], dtype=value_t).view(out_t)
    run_on_all_paths(lk.ld1_kernel, (2,), lambda: (x.copy(), np.zeros(x.size, out_t), x.size),
                     lambda *a: {1: want}, constexprs={"OP": name, "BLOCK": 128})


INT_SOURCES = {"int2float": np.int32, "uint2float": np.uint32, "ll2float": np.int64, "ull2float": np.uint64}


FROM_INT = ["int2float_rn", "int2float_rz", "int2float_rd", "int2float_ru", "uint2float_rn", "uint2float_rz",
            "uint2float_rd", "uint2float_ru", "ll2float_rn", "ll2float_rz", "ll2float_rd", "ll2float_ru",
            "ull2float_rn", "ull2float_rz", "ull2float_rd", "ull2float_ru"]


@pytest.mark.parametrize("name", FROM_INT)
def test_integer_to_float_with_a_rounding_mode(name):
    conv, mode = name.split("_")
    t = INT_SOURCES[conv]
    info = np.iinfo(t)
    v = np.concatenate([RNG.integers(info.min, info.max, 200, dtype=t, endpoint=True),
                        np.array([0, 1, info.max, info.min, (1 << 24) + 1, (1 << 25) + 3, (1 << 24) + 2,
                                  info.max - 1], dtype=object).astype(t)]).astype(t)
    if info.min < 0:
        v = np.concatenate([v, np.array([-(1 << 24) - 1, -(1 << 25) - 3, -7], t)])
    want = np.array([_round(lambda q, n=int(n): (n > q) - (n < q), float(int(n)), mode) for n in v], F32)
    run_on_all_paths(lk.ld1_kernel, (2,), lambda: (v.copy(), np.zeros(v.size, F32), v.size),
                     lambda *a: {1: want}, constexprs={"OP": name, "BLOCK": 128},
                     check=lambda args, e, path: _bits_equal(np.asarray(args[1]), want, f"{conv}_{mode} ({path})",
                                                             [v]))


def test_fma_at_the_overflow_threshold():
    # a*b == FLT_MAX + half an ulp exactly (2^128 - 2^103 = 18631 * 2^52 * 1801 * 2^51); c decides the side
    a = np.full(6, 18631 * 2.0**52, F32)
    b = np.full(6, 1801 * 2.0**51, F32)
    c = np.array([-1.0, 0.0, 1.0, -1.0, 0.0, 1.0], F32)
    a[3:] = -a[3:]
    fmax = float(np.finfo(F32).max)
    want = np.array([fmax, np.inf, np.inf, -np.inf, -np.inf, -fmax], F32)  # ties go to even: inf
    run_on_all_paths(lk.ld3_kernel, (1,), lambda: (a.copy(), b.copy(), c.copy(), np.zeros(6, F32), 6),
                     lambda *x: {3: want}, constexprs={"OP": "fma_rn", "BLOCK": 8},
                     check=lambda args, e, path: _bits_equal(np.asarray(args[3]), want, f"fma_rn ({path})", [a, b, c]))
    assert [_exact("fma", (float(x), float(y), float(z)), "rn") for x, y, z in zip(a, b, c)] == list(want)

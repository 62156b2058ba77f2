"""``libdevice`` functions with rounding modes, conversions and bit functions, on NumPy.

Written independently of the compiler's MSL (which works on integer significands): a directed rounding here is
the float32 result rounded to nearest, moved one step when the exact result lies on the other side of it.
Which side is decided exactly in float64: the sum's error by the TwoSum transformation, the product exactly,
the quotient and root from the sign of an exact residual (``a - q*b``, ``a - q*q``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..language import dtypes as D
from .ops import OPS, op
from .tensor import Tile, to_tile

F32, I32, U32, I64, U64 = "fp32", "int32", "uint32", "int64", "uint64"
_INF = np.float32(np.inf)


def _args(name: str, args: tuple, forms: list[tuple[tuple[str, ...], str]]) -> tuple[list[np.ndarray], str]:
    tiles = []
    for a in args:
        t = to_tile(a, D.float32 if isinstance(a, float) else None)
        tiles.append(t)
    have = tuple(t.dtype.name for t in tiles)
    for want, result in forms:  # noqa: B007 (result: the match)
        if have == want:
            break
    else:
        expected = " or ".join("(" + ", ".join(w) + ")" for w, _ in forms)
        raise TypeError(f"libdevice.{name} expects {expected}, got ({', '.join(have)})")
    arrays = np.broadcast_arrays(*(t.data for t in tiles))
    return [np.array(a) for a in arrays], result


def _register(name: str, forms: list[tuple[tuple[str, ...], str]], fn: Any) -> None:
    def run(*args: Any) -> Tile:
        arrays, result = _args(name, args, forms)
        ty = D.dtype(result)
        with np.errstate(all="ignore"):
            return Tile(np.asarray(fn(*arrays)).astype(ty.to_numpy()), ty)

    run.__name__ = name
    op(name)(run)


# --- directed rounding ------------------------------------------------------------------------------------------

def _directed(c: np.ndarray, side: np.ndarray, mode: str) -> np.ndarray:
    """The float32 result in ``mode`` from ``c`` (the result rounded to nearest) and ``side``: the sign of
    (exact result - c) in float64 (0 when c is exact)."""
    c = c.astype(np.float32)
    if mode == "rn":
        return c
    down = np.where(side < 0, np.nextafter(c, -_INF), c)
    up = np.where(side > 0, np.nextafter(c, _INF), c)
    if mode == "rd":
        return down
    if mode == "ru":
        return up
    positive = (c > 0) | ((c == 0) & (side > 0))
    return np.where(positive, down, up)


def _finite(*xs: np.ndarray) -> np.ndarray:
    return np.logical_and.reduce([np.isfinite(x) for x in xs])


def _sum(a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    s = a64 + b64  # TwoSum: s + e == a + b exactly
    bb = s - a64
    e = (a64 - (s - bb)) + (b64 - bb)
    c = (a + b).astype(np.float32)  # IEEE float32 addition: rounded to nearest even
    side = (s - c.astype(np.float64)) + e
    r = _directed(c, np.where(_finite(a, b), side, 0.0), mode)  # c = inf on overflow: side = -inf
    if mode == "rd":  # an exact zero sum of opposite signs is -0 when rounding down
        r = np.where((r == 0) & (side == 0) & ~(np.signbit(a) & np.signbit(b)) & ((a != 0) | (b != 0) |
                     (np.signbit(a) != np.signbit(b))), np.float32(-0.0), r)
    return r


def _mul(a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    p = a.astype(np.float64) * b.astype(np.float64)  # exact: 24 + 24 bits
    c = (a * b).astype(np.float32)
    return _directed(c, np.where(_finite(a, b), p - c.astype(np.float64), 0.0), mode)


def _div(a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    c = (a.astype(np.float64) / b.astype(np.float64)).astype(np.float32)  # 53 >= 2*24 + 2: rounded once
    residual = (a.astype(np.float64) - c.astype(np.float64) * b.astype(np.float64)) * np.sign(b)
    ok = _finite(a, b) & (b != 0) & (a != 0)
    return _directed(c, np.where(ok, residual, 0.0), mode)


def _sqrt(a: np.ndarray, mode: str) -> np.ndarray:
    c = np.sqrt(a.astype(np.float64)).astype(np.float32)
    residual = a.astype(np.float64) - c.astype(np.float64) * c.astype(np.float64)
    return _directed(c, np.where(_finite(a) & (a > 0) & np.isfinite(c), residual, 0.0), mode)


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str) -> np.ndarray:
    p = a.astype(np.float64) * b.astype(np.float64)  # exact
    c64 = c.astype(np.float64)
    s = p + c64
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)  # s + e == a*b + c exactly
    r = s.astype(np.float32)
    # float64 -> float32 can round twice: a tie of s broken by e goes e's way
    r64 = r.astype(np.float64)
    gap = s - r64
    ulp = np.abs(np.nextafter(r, _INF).astype(np.float64) - r64)
    tie = (np.abs(gap) * 2 == ulp) & (e != 0) & np.isfinite(r)  # (an overflow to inf is no tie)
    r = np.where(tie & (np.sign(gap) == np.sign(e)), np.nextafter(r, np.where(gap > 0, _INF, -_INF)), r)
    # s exactly halfway between +-FLT_MAX and the overflow threshold rounds to inf; below it (e against s), FLT_MAX
    fmax = np.float64(np.finfo(np.float32).max)
    edge = (np.abs(s) == fmax + 2.0**103) & (np.sign(e) == -np.sign(s))
    r = np.where(edge, np.copysign(np.float32(fmax), s), r)
    r = r.astype(np.float32)
    side = (s - r.astype(np.float64)) + e
    ok = _finite(a, b, c)
    out = _directed(r, np.where(ok, side, 0.0), mode)
    special = ~_finite(a, b, c)
    if special.any():
        out = np.where(special, (p + c64).astype(np.float32), out)
    zero = ok & (out == 0) & (side == 0)
    if mode == "rd":
        out = np.where(zero & ~(np.signbit(p) & np.signbit(c64)), np.float32(-0.0), out)
    else:
        out = np.where(zero & (np.signbit(p) != np.signbit(c64)), np.float32(0.0), out)
    return out


for _m in ("rn", "rz", "rd", "ru"):
    _register(f"add_{_m}", [((F32, F32), F32)], lambda a, b, m=_m: _sum(a, b, m))
    _register(f"sub_{_m}", [((F32, F32), F32)], lambda a, b, m=_m: _sum(a, -b, m))
    _register(f"mul_{_m}", [((F32, F32), F32)], lambda a, b, m=_m: _mul(a, b, m))
    _register(f"div_{_m}", [((F32, F32), F32)], lambda a, b, m=_m: _div(a, b, m))
    _register(f"rcp_{_m}", [((F32,), F32)], lambda a, m=_m: _div(np.ones_like(a), a, m))
    _register(f"sqrt_{_m}", [((F32,), F32)], lambda a, m=_m: _sqrt(a, m))
    _register(f"fma_{_m}", [((F32, F32, F32), F32)], lambda a, b, c, m=_m: _fma(a, b, c, m))


# --- conversions -----------------------------------------------------------------------------------------------

_ROUND = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}


def _to_int(x: np.ndarray, mode: str, lo: float, hi: float, np_type: Any, out_type: Any) -> np.ndarray:
    """Round with ``mode``, saturate to [lo, hi], NaN to 0 (as CUDA's conversions); reinterpret as ``out_type``."""
    r = _ROUND[mode](x.astype(np.float64))
    r = np.where(np.isnan(r), 0.0, np.clip(r, lo, hi))
    if np_type in (np.int64, np.uint64):  # float64 cannot hold 2^63 - 1: saturate in integers
        big = r >= hi
        v = np.where(big, 0, r).astype(np_type)
        v = np.where(big, np.iinfo(np_type).max, v).astype(np_type)
    else:
        v = r.astype(np_type)
    return v.view(out_type) if np.dtype(np_type).itemsize == np.dtype(out_type).itemsize else v.astype(out_type)


def _from_int(v: np.ndarray, mode: str) -> np.ndarray:
    """An integer rounded to float32 with ``mode``: in float64 where it holds the integer exactly (one rounding),
    with Python integers otherwise (64-bit values of more than 53 significant bits)."""
    wide = v.astype(np.float64)
    c = wide.astype(np.float32)
    out = _directed(c, wide - c.astype(np.float64), mode)
    big = np.abs(wide) >= 2.0**53
    if big.any():
        flat, res = v.reshape(-1), out.reshape(-1)
        for i in np.flatnonzero(big.reshape(-1)):
            n = int(flat[i])
            c1 = _nearest_f32(n, np.float32(float(n)))  # float(n) rounds to 53 bits: settle the last step exactly
            side = n - int(c1) if math.isfinite(c1) else (-1 if n > 0 else 1)
            res[i] = _directed(np.array([c1], np.float32), np.array([float(np.sign(side))]), mode)[0]
        out = res.reshape(v.shape)
    return out


def _nearest_f32(n: int, c: np.float32) -> np.float32:
    """The float32 nearest to the integer n (ties to even), from a candidate within one step."""
    best = c
    for cand in (np.nextafter(c, -_INF), np.nextafter(c, _INF)):
        if not math.isfinite(cand):
            continue
        d_best, d_cand = abs(n - int(best)), abs(n - int(cand))
        if d_cand < d_best or (d_cand == d_best and int(cand.view(np.uint32)) % 2 == 0):
            best = cand
    return np.float32(best)


for _m in ("rn", "rz", "rd", "ru"):
    _register(f"float2int_{_m}", [((F32,), I32)], lambda x, m=_m: _to_int(x, m, -2.0**31, 2.0**31 - 1, np.int32, np.int32))
    _register(f"float2uint_{_m}", [((F32,), I32)], lambda x, m=_m: _to_int(x, m, 0.0, 2.0**32 - 1, np.uint32, np.int32))
    _register(f"float2ll_{_m}", [((F32,), I64)], lambda x, m=_m: _to_int(x, m, -2.0**63, 2.0**63, np.int64, np.int64))
    _register(f"float2ull_{_m}", [((F32,), I64)], lambda x, m=_m: _to_int(x, m, 0.0, 2.0**64, np.uint64, np.int64))
    for _t, _a in (("int", I32), ("uint", U32), ("ll", I64), ("ull", U64)):
        _register(f"{_t}2float_{_m}", [((_a,), F32)], lambda v, m=_m: _from_int(v, m))
_register("llrint", [((F32,), I64)], lambda x: _to_int(x, "rn", -2.0**63, 2.0**63, np.int64, np.int64))
_register("llround", [((F32,), I64)], lambda x: _to_int(np.copysign(np.floor(np.abs(x.astype(np.float64)) + 0.5), x),
                                                         "rz", -2.0**63, 2.0**63, np.int64, np.int64))

# --- bits ------------------------------------------------------------------------------------------------------


def _bits(v: np.ndarray) -> tuple[np.ndarray, int]:
    width = v.dtype.itemsize * 8
    return v.view(np.uint32 if width == 32 else np.uint64), width


def _bit_length(u: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros(u.shape, np.int32)
    one = u.dtype.type(1)
    for b in range(width):
        out = np.where((u >> u.dtype.type(b)) & one, b + 1, out)
    return out


def _clz(v: np.ndarray) -> np.ndarray:
    u, width = _bits(v)
    return (width - _bit_length(u, width)).astype(np.int32)


def _popc(v: np.ndarray) -> np.ndarray:
    u, _ = _bits(v)
    return np.bitwise_count(u).astype(np.int32)


def _ffs(v: np.ndarray) -> np.ndarray:
    u, width = _bits(v)
    return _bit_length(u & (~u + u.dtype.type(1)), width)  # the lowest set bit alone


_REVERSED_BYTES = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], np.uint64)


def _brev(v: np.ndarray) -> np.ndarray:
    u, width = _bits(v)
    w = u.astype(np.uint64)
    out = np.zeros(u.shape, np.uint64)
    for i in range(width // 8):  # byte i, its bits reversed, to byte (width/8 - 1 - i)
        byte = (w >> np.uint64(8 * i)) & np.uint64(0xFF)
        out |= _REVERSED_BYTES[byte.astype(np.intp)] << np.uint64(width - 8 - 8 * i)
    return out.astype(u.dtype).view(v.dtype)


def _mulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    width = a.dtype.itemsize * 8
    if width == 32:  # the full product fits 64 bits
        wide = np.int64 if a.dtype == np.int32 else np.uint64
        return ((a.astype(wide) * b.astype(wide)) >> wide(32)).astype(a.dtype)
    out = [(int(x) * int(y)) >> 64 for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())]
    return np.array([o & (2**64 - 1) for o in out], np.uint64).view(a.dtype).reshape(a.shape)


def _mul24(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == np.int32:  # the low 24 bits, sign-extended
        x = (a.astype(np.int64) << np.int64(40)) >> np.int64(40)
        y = (b.astype(np.int64) << np.int64(40)) >> np.int64(40)
    else:
        x, y = a.astype(np.int64) & 0xFFFFFF, b.astype(np.int64) & 0xFFFFFF
    return ((x * y) & 0xFFFFFFFF).astype(np.uint32).view(a.dtype)


def _sad(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    d = np.abs(a.astype(np.int64) - b.astype(np.int64))
    return ((d + c.astype(np.int64)) & 0xFFFFFFFF).astype(np.uint32).view(a.dtype)


def _byte_perm(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    src = (y.view(np.uint32).astype(np.uint64) << np.uint64(32)) | x.view(np.uint32).astype(np.uint64)
    sel = s.view(np.uint32).astype(np.uint64)
    out = np.zeros(x.shape, np.uint64)
    for i in range(4):
        pick = (sel >> np.uint64(4 * i)) & np.uint64(7)
        out |= ((src >> (np.uint64(8) * pick)) & np.uint64(0xFF)) << np.uint64(8 * i)
    return out.astype(np.uint32).view(np.int32)


_INTS2 = [((I32, I32), I32), ((U32, U32), U32)]
_register("clz", [((I32,), I32), ((I64,), I32)], _clz)
_register("popc", [((I32,), I32), ((I64,), I32)], _popc)
_register("ffs", [((I32,), I32), ((I64,), I32)], _ffs)
_register("brev", [((I32,), I32), ((I64,), I64)], _brev)
_register("mulhi", _INTS2 + [((I64, I64), I64), ((U64, U64), U64)], _mulhi)
_register("mul24", _INTS2, _mul24)
_register("hadd", _INTS2, lambda a, b: (a.astype(np.int64) + b.astype(np.int64)) >> 1)
_register("rhadd", _INTS2, lambda a, b: (a.astype(np.int64) + b.astype(np.int64) + 1) >> 1)
_register("sad", [((I32, I32, U32), I32), ((U32, U32, U32), U32)], _sad)
_register("byte_perm", [((I32, I32, I32), I32)], _byte_perm)
for _n, (_s, _d) in {"float_as_int": (np.float32, np.int32), "float_as_uint": (np.float32, np.int32),
                     "int_as_float": (np.int32, np.float32), "uint_as_float": (np.uint32, np.float32)}.items():
    _register(_n, [(({np.float32: F32, np.int32: I32, np.uint32: U32}[_s],),
                    {np.float32: F32, np.int32: I32}[_d])], lambda v, d=_d: v.view(d))

# --- float functions -------------------------------------------------------------------------------------------


def _remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = []
    for a, b in zip(x.astype(np.float64).reshape(-1).tolist(), y.astype(np.float64).reshape(-1).tolist()):
        try:
            out.append(math.remainder(a, b))
        except ValueError:
            out.append(math.nan)
    return np.array(out, np.float32).reshape(x.shape)


def _ldexp(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    # float64 holds x * 2^n exactly for float32 x and |n| <= 300; the conversion rounds once
    return np.ldexp(x.astype(np.float64), np.clip(n, -400, 400).astype(np.int32)).astype(np.float32)


def _ilogb(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(x.astype(np.float64))
    out = (e - 1).astype(np.int64)
    out = np.where((x == 0) | np.isnan(x), -(2**31), out)
    return np.where(np.isinf(x), 2**31 - 1, out).astype(np.int32)


def _logb(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(x.astype(np.float64))
    out = (e - 1).astype(np.float32)
    out = np.where(x == 0, -_INF, out)
    return np.where(np.isinf(x), _INF, np.where(np.isnan(x), x, out)).astype(np.float32)


def _sinpi(x: np.ndarray) -> np.ndarray:
    r = np.fmod(x.astype(np.float64), 2.0)
    return np.where(r == 0, x * np.float32(0), np.sin(np.pi * r)).astype(np.float32)


def _cospi(x: np.ndarray) -> np.ndarray:
    r = np.abs(np.fmod(x.astype(np.float64), 2.0))
    return np.where(r == 0.5, 0.0, np.where(r == 1.5, 0.0, np.cos(np.pi * r))).astype(np.float32)


def _norm(*xs: np.ndarray) -> np.ndarray:
    return np.sqrt(sum(x.astype(np.float64) ** 2 for x in xs)).astype(np.float32)


_F1 = [((F32,), F32)]
_F2 = [((F32, F32), F32)]
_register("nextafter", _F2, np.nextafter)
_register("remainder", _F2, _remainder)
_register("fdim", _F2, lambda x, y: np.where(np.isnan(x) | np.isnan(y), x + y, np.where(x > y, x - y, np.float32(0))))
_register("ldexp", [((F32, I32), F32)], _ldexp)
_register("scalbn", [((F32, I32), F32)], _ldexp)
_register("ilogb", [((F32,), I32)], _ilogb)
_register("logb", _F1, _logb)
_register("saturatef", _F1, lambda x: np.where(np.isnan(x), np.float32(0), np.clip(x, 0, 1)))
_register("finitef", [((F32,), I32)], lambda x: np.isfinite(x).astype(np.int32))
_register("sinpi", _F1, _sinpi)
_register("cospi", _F1, _cospi)
_register("rcbrt", _F1, lambda x: (1.0 / np.cbrt(x.astype(np.float64))))
_register("rhypot", _F2, lambda x, y: (1.0 / np.hypot(x.astype(np.float64), y.astype(np.float64))))
_register("norm3d", [((F32,) * 3, F32)], _norm)
_register("norm4d", [((F32,) * 4, F32)], _norm)
_register("rnorm3d", [((F32,) * 3, F32)], lambda *xs: 1.0 / _norm(*xs).astype(np.float64))
_register("rnorm4d", [((F32,) * 4, F32)], lambda *xs: 1.0 / _norm(*xs).astype(np.float64))

def _each(fn: Any) -> Any:
    """An elementwise function of float64 Python scalars, over an array, rounded to float32."""
    def run(x: np.ndarray) -> np.ndarray:
        return np.array([fn(float(v)) for v in x.reshape(-1)], np.float64).astype(np.float32).reshape(x.shape)

    return run


def _rsqrt_rn(a: float) -> float:
    if math.isnan(a) or a < 0:
        return math.nan
    if a == 0:
        return math.copysign(math.inf, a)
    if math.isinf(a):
        return 0.0
    c = np.float32(1 / math.sqrt(a))  # within an ulp; settle it with exact midpoints
    exact_a = Fraction(a)
    for _ in range(4):
        up, down = np.nextafter(c, _INF), np.nextafter(c, -_INF)
        if (Fraction(float(c)) + Fraction(float(up))) ** 2 / 4 * exact_a < 1:
            c = up
        elif (Fraction(float(c)) + Fraction(float(down))) ** 2 / 4 * exact_a > 1:
            c = down
        else:
            break
    return float(c)


def _erfcx(x: float) -> float:
    if x < 25:
        return math.exp(x * x) * math.erfc(x) if x > -26.7 else math.inf
    # the asymptotic series (its terms shrink fast here)
    s, term = 1.0, 1.0
    for k in range(1, 8):
        term *= -(2 * k - 1) / (2 * x * x)
        s += term
    return s / (x * math.sqrt(math.pi))


def _erfcinv(z: float) -> float:
    if math.isnan(z) or z < 0 or z > 2:
        return math.nan
    if z == 0:
        return math.inf
    if z == 2:
        return -math.inf
    if z > 0.5:
        return _erfinv(1 - z)  # exact: 1 - z
    lo, hi = 0.0, 11.0  # erfc decreases: bisection on float64
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erfc(mid) > z:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _erfinv(y: float) -> float:
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if abs(y) >= 0.5:
        return math.copysign(_erfcinv(1 - abs(y)), y)
    lo, hi = -1.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erf(mid) < y:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _tgamma(x: float) -> float:
    if math.isnan(x) or x == math.inf:
        return x
    if x == 0:
        return math.copysign(math.inf, x)
    if x < 0 and (math.isinf(x) or x == math.floor(x)):
        return math.nan
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf


def _lgamma(x: float) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    return math.lgamma(x)


def _bessel_i(n: int) -> Any:
    def f(x: float) -> float:
        if math.isnan(x):
            return x
        q, term = x * x / 4, (1.0 if n == 0 else x / 2)
        total, k = term, 0
        while abs(term) > abs(total) * 1e-17 or k < 5:
            k += 1
            term *= q / (k * (k + n))
            total += term
            if math.isinf(total):
                break
        return total

    return f


def _bessel_j(n: int, x: float) -> float:
    """J_n(x) = (1/2pi) * integral over a period of cos(n t - x sin t): the trapezoidal rule is exact to rounding
    for a periodic analytic integrand once it has more points than x + n + a margin."""
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 0.0
    m = int(abs(x) + abs(n)) + 64
    t = np.arange(m) * (2 * np.pi / m)
    return float(np.mean(np.cos(n * t - x * np.sin(t))))


def _bessel_y01(x: float) -> tuple[float, float]:
    """Y0 and Y1 in float64: their power series to x = 25, Hankel's asymptotic series above."""
    if x <= 25:
        q, lg = x * x / 4, math.log(x / 2) + 0.5772156649015329
        j0 = j1 = y0s = y1s = 0.0
        term0, term1, h = 1.0, x / 2, 0.0  # (-q)^k / (k!)^2, (x/2) (-q)^k / (k! (k+1)!)
        for k in range(0, 200):
            if k:
                term0 *= -q / (k * k)
                term1 *= -q / (k * (k + 1))
                h += 1 / k
            j0 += term0
            j1 += term1
            y0s += -h * term0  # sum (-1)^(k+1) H_k q^k / (k!)^2
            y1s += (h + h + 1 / (k + 1)) * term1
            if k > 2 * x + 10 and abs(term0) < 1e-300:
                break
        y0 = (2 / math.pi) * (lg * j0 + y0s)
        y1 = (2 / math.pi) * (lg * j1) - 2 / (math.pi * x) - y1s / math.pi
        return y0, y1
    out = []
    for nu in (0, 1):
        mu, z = 4.0 * nu * nu, 8.0 * x
        p, qq, a = 1.0, 0.0, 1.0
        for k in range(1, 16):
            a *= (mu - (2 * k - 1) ** 2) / (k * z)
            if k % 2:
                qq += -a if ((k - 1) // 2) % 2 else a
            else:
                p += -a if (k // 2) % 2 else a
        chi = x - (nu / 2 + 0.25) * math.pi
        out.append(math.sqrt(2 / (math.pi * x)) * (p * math.sin(chi) + qq * math.cos(chi)))
    return out[0], out[1]


def _bessel_y(n: int, x: float) -> float:
    if math.isnan(x):
        return x
    if x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    if math.isinf(x):
        return 0.0
    sign = -1.0 if n < 0 and n % 2 else 1.0
    n = abs(n)
    a, b = _bessel_y01(x)
    if n == 0:
        return a
    for k in range(1, n):
        a, b = b, (2 * k / x) * b - a
        if math.isinf(b):
            break
    return sign * b


def _ints_floats(fn: Any) -> Any:
    def run(n: np.ndarray, x: np.ndarray) -> np.ndarray:
        return np.array([fn(int(k), float(v)) for k, v in zip(n.reshape(-1), x.reshape(-1))],
                        np.float64).astype(np.float32).reshape(x.shape)

    return run


_register("j0", _F1, _each(lambda x: _bessel_j(0, x)))
_register("j1", _F1, _each(lambda x: _bessel_j(1, x)))
_register("jn", [((I32, F32), F32)], _ints_floats(_bessel_j))
_register("y0", _F1, _each(lambda x: _bessel_y(0, x)))
_register("y1", _F1, _each(lambda x: _bessel_y(1, x)))
_register("yn", [((I32, F32), F32)], _ints_floats(_bessel_y))
def _rsqrt_rn_array(a: np.ndarray) -> np.ndarray:
    """float64 1/sqrt rounded to float32 (correct unless it lands next to a float32 midpoint: those go exact)."""
    with np.errstate(all="ignore"):
        c64 = 1.0 / np.sqrt(a.astype(np.float64))
        c = c64.astype(np.float32)
        mids = [(c.astype(np.float64) + np.nextafter(c, d).astype(np.float64)) / 2 for d in (_INF, -_INF)]
        risky = np.isfinite(c64) & (a > 0) & np.logical_or.reduce([np.abs(c64 - m) <= 1e-15 * c64 for m in mids])
    out = np.where(a == 0, np.copysign(_INF, a), c).astype(np.float32)
    for i in np.flatnonzero(risky.reshape(-1)):
        out.reshape(-1)[i] = _rsqrt_rn(float(a.reshape(-1)[i]))
    return out


_register("rsqrt_rn", _F1, _rsqrt_rn_array)
_register("erfcx", _F1, _each(_erfcx))
_register("erfinv", _F1, _each(_erfinv))
_register("erfcinv", _F1, _each(_erfcinv))
_register("normcdf", _F1, _each(lambda x: 0.5 * math.erfc(-x / math.sqrt(2)) if not math.isnan(x) else x))
_register("normcdfinv", _F1, _each(lambda p: -math.sqrt(2) * _erfcinv(2 * p) if not math.isnan(p) else p))
_register("tgamma", _F1, _each(_tgamma))
_register("lgamma", _F1, _each(_lgamma))
_register("cyl_bessel_i0", _F1, _each(_bessel_i(0)))
_register("cyl_bessel_i1", _F1, _each(_bessel_i(1)))

# fast_* compute the precise functions (as the compiled path does)
for _fast, _precise in {"fast_sinf": "sin", "fast_cosf": "cos", "fast_tanf": "tan", "fast_expf": "exp",
                        "fast_exp10f": "exp10", "fast_logf": "log", "fast_log2f": "log2", "fast_log10f": "log10",
                        "fast_tanhf": "tanh", "fast_powf": "pow", "fast_dividef": "fdiv"}.items():
    def _fast_op(*args: Any, _p: str = _precise, _n: str = _fast) -> Any:
        for a in args:
            if isinstance(a, Tile) and not a.dtype.is_fp32():
                raise TypeError(f"libdevice.{_n} expects fp32 arguments, got {a.dtype}")
        return OPS[_p](*args)

    _fast_op.__name__ = _fast
    op(_fast)(_fast_op)

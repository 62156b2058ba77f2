"""fp8 conversions of the interpreter, on bit patterns (fp8 tiles hold their codes as uint8).

Triton's GPU rules (the table ``tests/conformance/data/fp8_table.csv`` records them and their source):
float32 -> fp8 rounds to nearest even and saturates finite overflow; float8e5 with ``rtz`` truncates and
keeps infinities; float8e4b15 clamps |x| to 1.75 and rounds half away from zero (Triton's software
conversion); the fnuz formats (float8e4b8, float8e5b16) map infinities and NaN to their only NaN, 0x80,
and have no negative zero. fp8 -> float32 is exact. Written independently of the compiler's MSL version.
"""

from __future__ import annotations

import numpy as np

from ..language.dtypes import dtype

# name -> (mantissa bits, exponent bias, largest finite code, NaN code out, kind)
_FORMATS = {
    "fp8e4nv": (3, 7, 0x7E, 0x7F, "ocp"),
    "fp8e5": (2, 15, 0x7B, 0x7F, "ocp"),
    "fp8e4b15": (3, 15, 0x7E, 0x7E, "b15"),
    "fp8e4b8": (3, 8, 0x7F, 0x80, "fnuz"),
    "fp8e5b16": (2, 16, 0x7F, 0x80, "fnuz"),
}


def is_fp8(ty: object) -> bool:
    return isinstance(ty, dtype) and ty.name in _FORMATS


def _decode_table(name: str) -> np.ndarray:
    """float32 value of each of the 256 codes."""
    mbits, bias, _, _, kind = _FORMATS[name]
    codes = np.arange(256, dtype=np.int64)
    e = (codes >> mbits) & ((1 << (7 - mbits)) - 1)
    m = codes & ((1 << mbits) - 1)
    mag = np.where(e == 0, m * 2.0 ** (1 - bias - mbits), (m + (1 << mbits)) * 2.0 ** (e - bias - mbits))
    out = np.where(codes & 0x80, -mag, mag)
    top = (1 << (7 - mbits)) - 1
    if name == "fp8e4nv":
        out = np.where((codes & 0x7F) == 0x7F, np.nan, out)
    elif name == "fp8e5":
        out = np.where(e == top, np.where(m == 0, np.copysign(np.inf, out), np.nan), out)
    elif kind == "fnuz":
        out = np.where(codes == 0x80, np.nan, out)
    return out.astype(np.float32)


_DECODE = {name: _decode_table(name) for name in _FORMATS}


def to_float32(codes: np.ndarray, ty: dtype) -> np.ndarray:
    """The float32 values of an array of ``ty`` codes (exact)."""
    return _DECODE[ty.name][np.asarray(codes).astype(np.uint8)]


def from_float32(x: np.ndarray, ty: dtype, rounding: str | None = None) -> np.ndarray:
    """The ``ty`` codes of float32 values, by Triton's GPU rules (``rounding`` None or 'rtne', or 'rtz')."""
    mbits, bias, cmax, nan_code, kind = _FORMATS[ty.name]
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    sign = (bits >> 31) << 7
    a = bits & 0x7FFFFFFF
    exp = (a >> 23) - 127
    mant = (a & 0x7FFFFF) | 0x800000
    emin = 1 - bias
    te = np.maximum(exp, emin)  # the fp8 exponent the value lands in (the subnormal one below emin)
    shift = np.minimum(23 + te - mbits - exp, 40)  # float32 significand bits below the fp8 quantum
    units = mant >> shift
    rem = mant & ((np.int64(1) << shift) - 1)
    half = np.int64(1) << (shift - 1)
    if kind == "b15":
        units = units + (rem >= half)  # half away from zero (|x| is clamped below)
    elif rounding != "rtz":
        units = units + ((rem > half) | ((rem == half) & (units & 1 == 1)))
    code = ((te + bias - 1) << mbits) + units  # a carry out of the mantissa moves to the next exponent
    code = np.where(a < 0x00800000, 0, np.minimum(code, cmax))  # float32 subnormals are far below every fp8 value
    if kind == "fnuz":
        out = np.where(code == 0, 0, sign | code)
        out = np.where(a >= 0x7F800000, nan_code, out)
    elif kind == "b15":
        out = np.where(a > 0x7F800000, nan_code, sign | code)
    else:
        inf_code = 0x7C if rounding == "rtz" else cmax  # rtz: float16 toward zero keeps infinities
        out = np.where(a == 0x7F800000, sign | inf_code, sign | code)
        out = np.where(a > 0x7F800000, nan_code, out)
    return out.astype(np.uint8)


# tl builtins that move or convert fp8 codes without computing on them; the others refuse fp8 tiles
MOVES = frozenset({"abs", "load", "store", "cast", "where", "reshape", "view", "ravel", "trans", "permute", "broadcast",
                   "broadcast_to", "expand_dims", "squeeze", "unsqueeze", "join", "split", "cat", "interleave",
                   "zeros_like", "full_like", "full", "zeros", "dot", "dot_scaled", "multiple_of", "max_contiguous",
                   "max_constancy", "static_print", "static_assert", "gather", "flip", "load_tensor_descriptor",
                   "store_tensor_descriptor", "make_tensor_descriptor"})


def refuse_compute(ty: object, what: str) -> None:
    """Refuse computing on fp8 values: Apple GPUs have no fp8 arithmetic (the compiler refuses the same)."""
    if is_fp8(ty):
        raise TypeError(f"{what} on {ty!r} values: Apple GPUs have no fp8 arithmetic, so fp8 is a storage type "
                        f"(loads, stores, casts, tl.dot); convert first: x.to(tl.float16) or x.to(tl.float32), and "
                        f".to({ty!r}) the result back")


def guard(name: str, fn):
    """``fn`` (the interpreter's tl.<name>), refusing fp8 tile arguments unless it only moves them."""
    if name in MOVES:
        return fn

    def run(*args, **kwargs):
        for a in (*args, *kwargs.values()):
            ty = getattr(a, "dtype", None)
            if is_fp8(ty):
                refuse_compute(ty, f"tl.{name}")
        return fn(*args, **kwargs)

    run.__name__ = getattr(fn, "__name__", name)
    run.__wrapped__ = fn
    return run

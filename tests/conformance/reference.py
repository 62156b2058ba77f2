"""NumPy references written from Triton's documented rules (TRITON_SEMANTICS.md), independently of
``enceladus.language.dtypes``: promotion, C integer division, shifts, and dtype helpers."""

from __future__ import annotations

import numpy as np

import enceladus.language as tl
from enceladus.language.dtypes import bfloat16_numpy

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "bfloat16", "float32")
KIND = {"int1": 0, **dict.fromkeys(INTS, 1), **dict.fromkeys(FLOATS, 2)}
BITS = {"int1": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32,
        "uint64": 64, "float16": 16, "bfloat16": 16, "float32": 32}


def npd(name: str) -> np.dtype:
    return bfloat16_numpy() if name == "bfloat16" else np.dtype("bool" if name == "int1" else name)


def tld(name: str):
    return getattr(tl, name)


def promote(a: str, b: str, div_or_mod: bool = False) -> str:
    """Triton's computation type of two tiles (the rules of TRITON_SEMANTICS.md, in order)."""
    if div_or_mod and "float32" in (a, b) or div_or_mod and (KIND[a] == 2 or KIND[b] == 2):
        return "float32"
    if "float32" in (a, b):
        return "float32"
    if "float16" in (a, b):
        return "float16"
    if "bfloat16" in (a, b):
        return "bfloat16" if a == b else "float32"
    if a == "int1":
        return b
    if b == "int1":
        return a
    if BITS[a] != BITS[b]:
        return a if BITS[a] > BITS[b] else b
    return a if a.startswith("u") else b


def c_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C integer division (toward zero)."""
    q = np.abs(x.astype(object)) // np.abs(y.astype(object))
    return np.where((x < 0) != (y < 0), -q, q).astype(x.dtype)


def c_mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C remainder (sign of the dividend)."""
    xo, yo = x.astype(object), y.astype(object)
    return (xo - c_div(x, y).astype(object) * yo).astype(x.dtype)


def as_float32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


def sample(name: str, n: int, rng: np.random.Generator, nonzero: bool = False) -> np.ndarray:
    """Values that exercise a dtype: extremes, small values of both signs, zeros (unless ``nonzero``)."""
    d = npd(name)
    if name == "int1":
        return rng.random(n) < 0.5
    if d.kind in "iu":
        info = np.iinfo(d)
        edge = np.array([info.min, info.max, 0, 1, info.max // 2, info.min // 2 + 1], dtype=object)
        v = np.concatenate([edge, rng.integers(-100 if d.kind == "i" else 0, 101, n - edge.size)]).astype(d)
        v = np.where(rng.random(n) < 0.3, rng.integers(info.min, info.max, n, dtype=d, endpoint=True), v)
    else:
        v = np.concatenate([np.array([0.0, -0.0, 1.0, -1.0, 0.5, 3.0], np.float32),
                            rng.uniform(-8, 8, n - 6).astype(np.float32)]).astype(d)
    if nonzero:
        v = np.where(v == 0, np.ones(1, d), v)
        if d.kind == "i":  # INT_MIN / -1 overflows
            v = np.where(v == -1, np.full(1, 3, d), v)
    return v

"""``enceladus.language.extra.libdevice`` on NumPy: float math computed in float32 (float64 for the functions
NumPy lacks in float32 form), rounded to the input's dtype."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..language import dtypes as D
from .ops import _float_math, op, operands
from .tensor import Tile, to_tile

_erfc = np.frompyfunc(math.erfc, 1, 1)

for _n, _f in {
    "tanh": np.tanh, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "log10": np.log10,
    "log1p": np.log1p, "expm1": np.expm1, "exp10": lambda v: np.power(np.float32(10), v), "cbrt": np.cbrt,
    "erfc": lambda v: _erfc(v).astype(v.dtype), "trunc": np.trunc, "round": lambda v: np.copysign(
        np.floor(np.abs(v) + np.float32(0.5)), v), "rint": np.rint, "nearbyint": np.rint, "fabs": np.abs,
}.items():
    _float_math(_n, _f)


def _float2(name: str, fn: Any) -> None:
    def run(x: Any, y: Any) -> Tile:
        a, b, ty, _ = operands(x, y)
        if not ty.is_floating():
            raise TypeError(f"{name} expects floating-point inputs, got {ty}")
        with np.errstate(all="ignore"):
            r = fn(a.astype(np.float32), b.astype(np.float32))
        return Tile(r.astype(ty.to_numpy()), ty)

    run.__name__ = name
    op(name)(run)


for _n, _f in {"pow": np.power, "atan2": np.arctan2, "copysign": np.copysign, "hypot": np.hypot,
               "fmin": np.fmin, "fmax": np.fmax}.items():
    _float2(_n, _f)


@op("fmod")
def fmod(x: Any, y: Any) -> Tile:
    a, b, ty, _ = operands(x, y)
    with np.errstate(all="ignore"):
        return Tile(np.fmod(a, b).astype(ty.to_numpy()), ty)


def _predicate(name: str, fn: Any) -> None:
    def run(x: Any) -> Tile:
        t = to_tile(x)
        if not t.dtype.is_floating():
            raise TypeError(f"{name} expects a floating-point input, got {t.dtype}")
        return Tile(fn(t.data.astype(np.float32)), D.int1)

    run.__name__ = name
    op(name)(run)


for _n, _f in {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit}.items():
    _predicate(_n, _f)

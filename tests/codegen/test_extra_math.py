"""libdevice-style math (enceladus.language.extra.libdevice) on every path vs NumPy (float64 references)."""

import math

import numpy as np
import pytest

from paths import run_on_all_paths

from . import math_kernels as mk

RNG = np.random.default_rng(9)
UNARY = {
    "tanh": (np.tanh, -5, 5), "tan": (np.tan, -1.2, 1.2), "asin": (np.arcsin, -1, 1), "acos": (np.arccos, -1, 1),
    "atan": (np.arctan, -10, 10), "sinh": (np.sinh, -5, 5), "cosh": (np.cosh, -5, 5), "asinh": (np.arcsinh, -10, 10),
    "acosh": (np.arccosh, 1, 10), "atanh": (np.arctanh, -0.99, 0.99), "log10": (np.log10, 0.01, 100),
    "log1p": (np.log1p, -0.5, 1e-3), "expm1": (np.expm1, -1e-3, 2), "exp10": (lambda v: 10.0 ** v, -3, 3),
    "cbrt": (np.cbrt, -100, 100), "erfc": (np.vectorize(math.erfc), -3, 8), "trunc": (np.trunc, -10, 10),
    "rint": (np.rint, -10, 10), "fabs": (np.abs, -10, 10),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    fn, lo, hi = UNARY[op]
    n = 500
    x = RNG.uniform(lo, hi, n).astype(np.float32)
    if op in ("log1p", "expm1"):
        x[:50] = RNG.uniform(-1e-6, 1e-6, 50).astype(np.float32)  # where the naive formulas lose everything
    run_on_all_paths(mk.unary_extra_kernel, (1,), lambda: (x, np.zeros_like(x), n),
                     lambda x, o, n: {1: fn(x.astype(np.float64)).astype(np.float32)},
                     # erfc(x) for large x is exp(-x*x...) in float32: relative error grows to ~5e-6 at x = 8
                     constexprs={"OP": op, "BLOCK": 512}, rtol=1e-5 if op == "erfc" else 3e-6,
                     atol=1e-30 if op == "erfc" else 1e-7)


@pytest.mark.parametrize("op,fn", [("pow", np.power), ("atan2", np.arctan2), ("copysign", np.copysign),
                                   ("hypot", np.hypot), ("fmin", np.fmin), ("fmax", np.fmax)])
def test_binary(op, fn):
    n = 300
    x = RNG.uniform(0.1 if op == "pow" else -5, 5, n).astype(np.float32)
    y = RNG.uniform(-3, 3, n).astype(np.float32)
    run_on_all_paths(mk.binary_extra_kernel, (1,), lambda: (x, y, np.zeros_like(x), n),
                     lambda x, y, o, n: {2: fn(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)},
                     constexprs={"OP": op, "BLOCK": 512}, rtol=3e-6, atol=1e-7)


def test_nan_propagation_and_predicates():
    x = np.array([1.0, np.nan, -np.inf, -0.0, 2.0, np.inf, -3.0, np.nan], np.float32)
    y = np.array([np.nan, 1.0, 0.0, 1.0, 3.0, 1.0, np.nan, np.nan], np.float32)
    want = np.where(np.isnan(x) | np.isnan(y), np.nan, np.maximum(x, y)).astype(np.float32)
    flags = (np.isnan(x) + 2 * np.isinf(x) + 4 * np.signbit(x) + 8 * np.isfinite(x)).astype(np.int32)
    run_on_all_paths(mk.nan_kernel, (1,), lambda: (x, y, np.zeros_like(x), np.zeros(8, np.int32)),
                     lambda *a: {2: want, 3: flags}, constexprs={"BLOCK": 8})

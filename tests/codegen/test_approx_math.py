"""Approximate math where Triton is approximate, and only where Apple's bound is no looser (docs/floating_point.md):
of exp, exp2, log, log2, sqrt, rsqrt, sin, cos and fp32 division only rsqrt qualifies, as a guarded fast::rsqrt;
the others stay precise. The precise forms stay reachable (tl.math.div_rn, tl.math.sqrt_rn, libdevice.rsqrt_rn)."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.language.extra import libdevice
from paths import needs_cpu, run_on_all_paths

pytestmark = needs_cpu


@enceladus.jit
def unary(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(x)
    elif OP == "log2":
        r = tl.log2(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "sqrt_rn":
        r = tl.math.sqrt_rn(x)
    elif OP == "rsqrt":
        r = tl.rsqrt(x)
    elif OP == "rsqrt_rn":
        r = libdevice.rsqrt_rn(x)
    elif OP == "sin":
        r = tl.sin(x)
    elif OP == "cos":
        r = tl.cos(x)
    elif OP == "div":
        r = 1.0 / x
    else:
        r = tl.math.div_rn(1.0, x)
    tl.store(out_ptr + offs, r, mask=m)


# the function, and the call the MSL must contain for it (every decision of docs/floating_point.md's table)
EMITTED = {"exp": "precise::exp(", "exp2": "precise::exp2(", "log": "precise::log(", "log2": "precise::log2(",
           "sqrt": "precise::sqrt(", "sqrt_rn": "enc_ld_sqrt(", "rsqrt": "enc_rsqrt(", "rsqrt_rn": "enc_ld_rsqrt_rn(",
           "sin": "precise::sin(", "cos": "precise::cos(", "div": " / v", "div_rn": "enc_ld_div("}  # IEEE division; exact emulation


def _msl(op: str) -> str:
    return enceladus.compile(unary, signature="*fp32,*fp32,i32", constexprs={"OP": op, "BLOCK": 64}).asm["msl"]


@pytest.mark.parametrize("op", list(EMITTED))
def test_each_function_takes_the_documented_form(op):
    msl = _msl(op)
    body = msl[msl.index("kernel void"):]
    assert EMITTED[op] in body, body
    # fast:: appears only through the guarded rsqrt helper; no fast math mode anywhere
    assert "fast::" not in body and "math_mode(fast)" not in msl
    if op == "rsqrt":
        helper = msl[msl.index("static inline float enc_rsqrt"):]
        helper = helper[:helper.index("}")]
        assert "fast::rsqrt(x)" in helper and "precise::rsqrt(x)" in helper and "x >= 1.17549435e-38f" in helper


def test_rsqrt_is_within_two_ulp_and_exact_on_special_values():
    x = np.concatenate([np.geomspace(1.2e-38, 3e38, 57), [0.0, -0.0, np.inf, -1.0, -np.inf, np.nan, 4.0, 0.25]])
    x = x.astype(np.float32)
    n = x.size
    with np.errstate(all="ignore"):
        exact = 1 / np.sqrt(x.astype(np.float64))

    def check(args, expected, path):
        got, expected = np.asarray(args[1]), expected[1]
        special = ~np.isfinite(exact) | (exact == 0) | ~np.isfinite(x) | (x <= 0)
        np.testing.assert_array_equal(got[special], expected[special].astype(np.float32), err_msg=path)
        np.testing.assert_allclose(got[~special], expected[~special], rtol=2 * 2.0**-23, atol=0, err_msg=path)

    with np.errstate(all="ignore"):
        run_on_all_paths(unary, (1,), make_args=lambda: (x.copy(), np.zeros_like(x), n),
                         reference=lambda *a: {1: exact}, check=check, constexprs={"OP": "rsqrt", "BLOCK": 128})


@pytest.mark.parametrize("op", ["rsqrt_rn", "sqrt_rn", "div_rn"])
def test_precise_forms_are_correctly_rounded(op):
    x = np.geomspace(1e-30, 1e30, 1000).astype(np.float32)
    wide = x.astype(np.float64)
    exact = {"rsqrt_rn": 1 / np.sqrt(wide), "sqrt_rn": np.sqrt(wide), "div_rn": 1 / wide}[op].astype(np.float32)

    def check(args, expected, path):
        np.testing.assert_array_equal(np.asarray(args[1]), expected[1], err_msg=path)

    run_on_all_paths(unary, (1,), make_args=lambda: (x.copy(), np.zeros_like(x), x.size),
                     reference=lambda *a: {1: exact}, check=check, constexprs={"OP": op, "BLOCK": 1024})

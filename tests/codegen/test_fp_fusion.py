"""Floating-point fusion (Triton's enable_fp_fusion): the compiler writes fma where a multiply's only use is an
add or a subtract, the MSL forbids Metal from contracting anything else, and the cpu backend rounds fma once.

References are exact: the fused value x*y+z is computed in rational arithmetic and rounded once to the output
type, so the compiled results must match to the bit.
"""

from fractions import Fraction

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.runtime.jit import JITFunction
from paths import needs_cpu

pytestmark = needs_cpu


@enceladus.jit
def mul_add(x_ptr, y_ptr, z_ptr, out_ptr, n, FORM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    if FORM == 0:
        r = x * y + z
    elif FORM == 1:
        r = z + x * y
    elif FORM == 2:
        r = x * y - z
    else:
        r = z - x * y
    tl.store(out_ptr + offs, r, mask=m)


@enceladus.jit
def product_used_twice(x_ptr, y_ptr, z_ptr, out_ptr, prod_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    p = tl.load(x_ptr + offs, mask=m) * tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, p + tl.load(z_ptr + offs, mask=m), mask=m)
    tl.store(prod_ptr + offs, p, mask=m)


@enceladus.jit
def explicit_fma(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    r = tl.fma(tl.load(x_ptr + offs, mask=m), tl.load(y_ptr + offs, mask=m), tl.load(z_ptr + offs, mask=m))
    tl.store(out_ptr + offs, r, mask=m)


SIGNS = {0: (1, 1, 1), 1: (1, 1, 1), 2: (1, 1, -1), 3: (-1, 1, 1)}  # FORM -> signs of x, y, z in sx*x*y + sz*z


def round_once(value: Fraction, dtype: np.dtype) -> np.generic:
    """``value`` rounded to nearest (ties to even) in ``dtype``, in one rounding."""
    guess = dtype.type(float(value))
    cands = {guess, np.nextafter(guess, dtype.type(np.inf)), np.nextafter(guess, dtype.type(-np.inf))}
    cands = [c for c in cands if np.isfinite(c)]
    best = min(abs(Fraction(float(c)) - value) for c in cands)
    ties = [c for c in cands if abs(Fraction(float(c)) - value) == best]
    if len(ties) == 1:
        return ties[0]
    bits = {np.float32: np.uint32, np.float16: np.uint16}[dtype.type]
    return next(c for c in ties if int(np.array(c).view(bits)) % 2 == 0)


def exact_fma(x, y, z, form, dtype):
    sx, _, sz = SIGNS[form]
    return np.array([round_once(sx * Fraction(float(a)) * Fraction(float(b)) + sz * Fraction(float(c)), dtype)
                     for a, b, c in zip(x, y, z)], dtype=dtype)


def inputs(dtype, n=300, seed=0):
    rng = np.random.default_rng(seed)
    x, y, z = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    z[: n // 3] = -(x[: n // 3].astype(np.float64) * y[: n // 3]).astype(dtype)  # cancellation: fusion shows
    return x, y, z


def launch(kernel, form, dtype, args, **options):
    x, y, z = args
    out = np.zeros_like(x)
    kernel[(1,)](x, y, z, out, x.size, FORM=form, BLOCK=512, **options)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("form", [0, 1, 2, 3])
def test_fused_forms_round_once(dtype, form):
    args = inputs(dtype)
    got = launch(JITFunction(mul_add.fn), form, dtype, args)
    want = exact_fma(*args, form, np.dtype(dtype))
    np.testing.assert_array_equal(got.view(np.uint16 if dtype == np.float16 else np.uint32),
                                  want.view(np.uint16 if dtype == np.float16 else np.uint32))


@pytest.mark.parametrize("form", [0, 2])
def test_unfused_when_disabled_and_in_the_interpreter(form):
    args = inputs(np.float32)
    x, y, z = args
    sx, _, sz = SIGNS[form]
    want = (x * y + z) if form == 0 else (x * y - z)  # NumPy: the product rounded, then the sum rounded
    compiled = launch(JITFunction(mul_add.fn), form, np.float32, args, enable_fp_fusion=False)
    interpreted = launch(JITFunction(mul_add.fn, interpret=True), form, np.float32, args)
    np.testing.assert_array_equal(compiled, want)
    np.testing.assert_array_equal(interpreted, want)
    fused = launch(JITFunction(mul_add.fn), form, np.float32, args)
    assert (fused != want).any(), "the cancelling inputs must show that the default launch fused"


def test_fusion_changes_the_result_where_rounding_twice_differs():
    one_ulp = np.float32(1 + 2.0**-23)
    x = np.full(4, one_ulp, np.float32)
    z = np.full(4, -1.0, np.float32)
    fused = launch(JITFunction(mul_add.fn), 0, np.float32, (x, x.copy(), z))
    unfused = launch(JITFunction(mul_add.fn), 0, np.float32, (x, x.copy(), z), enable_fp_fusion=False)
    assert fused[0] == np.float32(2.0**-22 + 2.0**-46) and unfused[0] == np.float32(2.0**-22)


def test_msl_states_contract_off_and_fuses_only_single_use_products():
    k = enceladus.compile(mul_add, signature="*fp32,*fp32,*fp32,*fp32,i32", constexprs={"FORM": 0, "BLOCK": 128})
    msl = k.asm["msl"]
    assert "#pragma METAL fp contract(off)" in msl and "fma(" in msl
    assert "fma" not in enceladus.compile(mul_add, signature="*fp32,*fp32,*fp32,*fp32,i32",
                                          constexprs={"FORM": 0, "BLOCK": 128}, enable_fp_fusion=False).asm["ir"]
    twice = enceladus.compile(product_used_twice, signature="*fp32,*fp32,*fp32,*fp32,*fp32,i32",
                              constexprs={"BLOCK": 128})
    assert "fma" not in twice.asm["ir"] and " mul " in twice.asm["ir"]
    ints = enceladus.compile(mul_add, signature="*i32,*i32,*i32,*i32,i32", constexprs={"FORM": 0, "BLOCK": 128})
    assert "fma" not in ints.asm["ir"]
    bf16 = enceladus.compile(mul_add, signature="*bf16,*bf16,*bf16,*bf16,i32", constexprs={"FORM": 0, "BLOCK": 128})
    assert "fma" not in bf16.asm["ir"]


def test_half_fma_rounds_once_where_rounding_through_float_would_not():
    # x*y = 1.5 + 3*2^-11 lies halfway between two halves; z = -2^-24 decides: down. Through float the sum
    # rounds back to the halfway point (a tie in float) and then ties to even in half: up, one ulp off.
    x = np.full(4, 1 + 2.0**-10, np.float16)
    y = np.full(4, 1.5, np.float16)
    z = np.full(4, -(2.0**-24), np.float16)
    out = np.zeros_like(x)
    JITFunction(explicit_fma.fn)[(1,)](x, y, z, out, 4, BLOCK=4)
    assert out[0] == np.float16(1.5 + 2.0**-10)


def test_enable_fp_fusion_must_be_a_bool():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="enable_fp_fusion"):
        JITFunction(mul_add.fn)[(1,)](x, x, x, x.copy(), 4, FORM=0, BLOCK=4, enable_fp_fusion="yes")
    with pytest.raises(TypeError, match="enable_fp_fusion"):
        enceladus.compile(mul_add, signature="*fp32,*fp32,*fp32,*fp32,i32", constexprs={"FORM": 0, "BLOCK": 4},
                          enable_fp_fusion=1)


def test_config_carries_the_option():
    cfg = enceladus.Config({"BLOCK": 64}, enable_fp_fusion=False)
    assert cfg.all_kwargs()["enable_fp_fusion"] is False
    assert "enable_fp_fusion: False" in str(cfg)

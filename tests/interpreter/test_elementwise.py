"""Elementwise semantics on every path (interpreter and cpu backend) against NumPy references."""

import numpy as np
import pytest

from paths import on_path, run_on_all_paths

from .kernels import (
    add_kernel,
    binary_kernel,
    cast_kernel,
    grid_2d_kernel,
    int_arg_kernel,
    literal_kernel,
    nested_kernel,
    unary_kernel,
    where_fma_kernel,
)

RNG = np.random.default_rng(7)
N = 1000


def c_div(a, b):
    """C division: truncation toward zero (x // 0 is 0 in Enceladus)."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    q = np.abs(a64) // np.abs(safe) * np.sign(a64) * np.sign(safe)
    return np.where(b64 == 0, 0, q).astype(a.dtype)


def c_mod(a, b):
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, safe)).astype(a.dtype)


def test_vector_add() -> None:
    x = RNG.standard_normal(N, dtype=np.float32)
    y = RNG.standard_normal(N, dtype=np.float32)
    run_on_all_paths(add_kernel, (4,), lambda: (x, y, np.zeros(N, np.float32), N),
                     lambda x, y, out, n: {2: x + y}, constexprs={"BLOCK": 256})


INT_OPS = ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "max", "min"]


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.uint8, np.uint32, np.int64])
@pytest.mark.parametrize("op", INT_OPS)
def test_integer_ops(dt, op) -> None:
    info = np.iinfo(dt)
    x = RNG.integers(max(info.min, -1000), min(info.max, 1000), N).astype(dt)
    y = RNG.integers(max(info.min, -50), min(info.max, 50), N).astype(dt)
    if op in ("<<", ">>"):
        y = RNG.integers(0, 8 * x.itemsize - 1, N).astype(dt)
    y[:5] = 0
    with np.errstate(all="ignore"):
        ref = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": c_div, "%": c_mod, "&": np.bitwise_and,
               "|": np.bitwise_or, "^": np.bitwise_xor, "<<": np.left_shift, ">>": np.right_shift,
               "max": np.maximum, "min": np.minimum}[op](x, y)
    # The cpu path compiles one kernel per case: cover it on two dtypes, the interpreter on all.
    paths = ("interpreter", "cpu") if dt in (np.int32, np.uint8) else ("interpreter",)
    run_on_all_paths(binary_kernel, (4,), lambda: (x, y, np.zeros(N, dt), N),
                     lambda *a: {2: np.asarray(ref).astype(dt)}, constexprs={"OP": op, "BLOCK": 256}, paths=paths)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%", "max", "min", "<"])
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_float_ops(op, dt) -> None:
    x = RNG.standard_normal(N).astype(dt)
    y = (RNG.standard_normal(N) + 3).astype(dt)
    f = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "%": np.fmod, "max": np.fmax,
         "min": np.fmin, "<": np.less}[op]
    ref = f(x.astype(np.float32), y.astype(np.float32))
    out_dt = np.bool_ if op == "<" else dt
    tol = 2e-3 if dt == np.float16 else 1e-6
    run_on_all_paths(binary_kernel, (4,), lambda: (x, y, np.zeros(N, out_dt), N),
                     lambda *a: {2: ref.astype(out_dt)}, constexprs={"OP": op, "BLOCK": 256}, rtol=tol, atol=tol)


def test_c_semantics_of_signed_division() -> None:
    x = np.array([-7, 7, -7, 7, -8, 0, 5, -2**31], np.int32)
    y = np.array([2, -2, -2, 2, 3, 5, 0, -1], np.int32)
    for op, want in (("//", [-3, -3, 3, 3, -2, 0, 0, -2**31]), ("%", [-1, 1, -1, 1, -2, 0, 0, 0])):
        out = np.zeros(8, np.int32)
        on_path(binary_kernel, "interpreter")[(1,)](x, y, out, 8, OP=op, BLOCK=8)
        np.testing.assert_array_equal(out, np.array(want, np.int32))


@pytest.mark.parametrize(("dt", "value", "ref"), [
    (np.uint8, 250, lambda x: (x + 250).astype(np.uint8)),  # the literal takes the tensor's type and wraps
    (np.int8, -100, lambda x: (x - 100).astype(np.int8)),
    (np.uint32, 0x9E3779B9, lambda x: (x + np.uint32(0x9E3779B9)).astype(np.uint32)),
    (np.float16, 0.5, lambda x: (x + np.float16(0.5)).astype(np.float16)),
    (np.int32, 1.5, lambda x: (x + np.float32(1.5)).astype(np.float32)),  # a float literal promotes ints
])
def test_literal_promotion(dt, value, ref) -> None:
    x = np.arange(64).astype(dt)
    out_dt = np.asarray(ref(x)).dtype
    out = np.zeros(64, out_dt)
    on_path(literal_kernel, "interpreter")[(1,)](x, out, 64, VALUE=value, BLOCK=64)
    np.testing.assert_array_equal(out, ref(x))


@pytest.mark.parametrize(("dt", "value", "message"), [
    (np.uint8, 300, "Scalar 300 is out of range for type uint8"),
    (np.int8, 128, "Scalar 128 is out of range for type int8"),
    (np.uint8, -1, "unsigned tensor and a negative scalar"),
    (np.int32, 0x9E3779B9, "out of range for type int32"),
])
def test_literal_out_of_range(dt, value, message) -> None:
    x = np.zeros(64, dt)
    with pytest.raises(ValueError, match=message):
        on_path(literal_kernel, "interpreter")[(1,)](x, x.copy(), 64, VALUE=value, BLOCK=64)


def test_mixed_signedness_division_is_refused() -> None:
    x, y = np.ones(8, np.int32), np.ones(8, np.uint32)
    with pytest.raises(TypeError, match="different signedness"):
        on_path(binary_kernel, "interpreter")[(1,)](x, y, np.zeros(8, np.int32), 8, OP="//", BLOCK=8)


def test_promotion_table() -> None:
    from enceladus.interpreter.tensor import computation_type
    from enceladus.language import dtypes as D

    cases = [((D.int8, D.uint8), D.uint8), ((D.int16, D.int32), D.int32), ((D.uint32, D.int32), D.uint32),
             ((D.uint8, D.int32), D.int32), ((D.int32, D.float16), D.float16), ((D.float16, D.bfloat16), D.float16),
             ((D.bfloat16, D.bfloat16), D.bfloat16), ((D.bfloat16, D.int8), D.float32),
             ((D.float16, D.float32), D.float32), ((D.float64, D.float16), D.float64)]
    for (a, b), want in cases:
        assert computation_type(a, False, b, False, False) == want, (a, b)
    assert computation_type(D.float16, False, D.float16, False, True) == D.float32  # / and % upcast halves
    assert computation_type(D.uint8, False, D.int32, True, False) == D.uint8  # literals take the tile's type
    assert computation_type(D.int32, False, D.float32, True, False) == D.float32


@pytest.mark.parametrize(("src", "dst", "bitcast"), [
    (np.float32, np.int32, False), (np.float32, np.uint8, False), (np.int32, np.float16, False),
    (np.float32, np.float16, False), (np.int32, np.int8, False), (np.float32, np.int32, True),
    (np.int8, np.uint8, True), (np.float16, np.float32, False), (np.bool_, np.int32, False),
])
def test_casts(src, dst, bitcast) -> None:
    if src == np.bool_:
        x = RNG.integers(0, 2, N).astype(bool)
    elif np.issubdtype(src, np.integer):
        x = RNG.integers(-100, 100, N).astype(src)
    else:
        x = (RNG.standard_normal(N) * (5 if dst == np.uint8 else 100)).astype(src)
        if dst == np.uint8:
            x = np.abs(x)
    with np.errstate(all="ignore"):
        ref = x.view(dst) if bitcast else (np.trunc(x).astype(dst) if np.issubdtype(dst, np.integer) and
                                            np.issubdtype(src, np.floating) else x.astype(dst))
    run_on_all_paths(cast_kernel, (4,), lambda: (x, np.zeros(N, dst), N), lambda *a: {1: ref},
                     constexprs={"BITCAST": bitcast, "BLOCK": 256})


def test_bitcast_width_mismatch() -> None:
    with pytest.raises(ValueError, match="Cannot bitcast"):
        on_path(cast_kernel, "interpreter")[(1,)](np.ones(8, np.float32), np.zeros(8, np.int16), 8,
                                                  BITCAST=True, BLOCK=8)


def test_bfloat16_arithmetic() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = RNG.standard_normal(64).astype(ml_dtypes.bfloat16)
    y = RNG.standard_normal(64).astype(ml_dtypes.bfloat16)
    out = np.zeros(64, ml_dtypes.bfloat16)
    on_path(binary_kernel, "interpreter")[(1,)](x, y, out, 64, OP="*", BLOCK=64)
    np.testing.assert_array_equal(out, (x.astype(np.float32) * y.astype(np.float32)).astype(ml_dtypes.bfloat16))


MATH = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v), "sin": np.sin,
        "cos": np.cos, "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "floor": np.floor, "abs": np.abs,
        "neg": np.negative, "exp2": np.exp2}


@pytest.mark.parametrize("fn", sorted(MATH) + ["erf"])
def test_math(fn) -> None:
    import math

    x = (RNG.random(N) * 4 + 0.1).astype(np.float32)
    if fn in ("abs", "neg", "sin", "cos", "floor", "erf", "sigmoid"):
        x = (x - 2).astype(np.float32)
    ref = np.vectorize(math.erf)(x.astype(np.float64)) if fn == "erf" else MATH[fn](x.astype(np.float64))
    run_on_all_paths(unary_kernel, (4,), lambda: (x, np.zeros(N, np.float32), N),
                     lambda *a: {1: ref.astype(np.float32)}, constexprs={"FN": fn, "BLOCK": 256},
                     rtol=2e-6, atol=2e-6)


def test_math_refuses_integers() -> None:
    x = np.ones(8, np.int32)
    with pytest.raises(ValueError, match="Expected dtype"):
        on_path(unary_kernel, "interpreter")[(1,)](x, np.zeros(8, np.float32), 8, FN="exp", BLOCK=8)


def test_where_fma_clamp() -> None:
    x = RNG.standard_normal(N).astype(np.float32)
    y = RNG.standard_normal(N).astype(np.float32)
    ref = np.where(x > 0, (x.astype(np.float64) * y + 1).astype(np.float32), np.clip(y, -0.5, 0.5))
    run_on_all_paths(where_fma_kernel, (4,), lambda: (x, y, np.zeros(N, np.float32), N),
                     lambda *a: {2: ref}, constexprs={"BLOCK": 256})


def test_grid_2d_and_broadcasting() -> None:
    out_shape = (64, 96)
    ref = np.arange(64)[:, None] * 1000 + np.arange(96)[None, :]
    run_on_all_paths(grid_2d_kernel, (4, 3), lambda: (np.zeros(out_shape, np.int32), 96),
                     lambda *a: {0: ref.astype(np.int32)}, constexprs={"BLOCK_M": 16, "BLOCK_N": 32})


def test_nested_jit_and_static_range() -> None:
    x = RNG.standard_normal(N).astype(np.float32)
    run_on_all_paths(nested_kernel, (4,), lambda: (x, np.zeros(N, np.float32), N), lambda *a: {1: x * 6},
                     constexprs={"BLOCK": 256})


def test_scalar_arguments() -> None:
    ref = (np.float32(3 + 4) * np.float32(0.5) + np.arange(4)).astype(np.float32)
    run_on_all_paths(int_arg_kernel, (1,), lambda: (np.zeros(4, np.float32), 3, 4, 0.5), lambda *a: {0: ref})

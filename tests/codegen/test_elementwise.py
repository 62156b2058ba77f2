"""Elementwise ops over dtypes and odd sizes: compiled MSL run on the cpu backend vs NumPy."""

import numpy as np
import pytest

import enceladus

from .kernels import (
    binary_kernel,
    cast_kernel,
    creation_kernel,
    divmod_chain_kernel,
    fma_clamp_kernel,
    nested_call_kernel,
    program_ids_kernel,
    scalar_kernel,
    static_loop_kernel,
    unary_kernel,
)

RNG = np.random.default_rng(1234)


def c_div(a, b):
    """C-style integer division (truncation), with Enceladus's x // 0 == 0."""
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    q = np.abs(a64) // np.abs(safe) * np.sign(a64) * np.sign(safe)
    return np.where(b64 == 0, 0, q).astype(a.dtype)


def c_mod(a, b):
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, 0, np.fmod(a, safe)).astype(a.dtype)


def make(dtype, n, low=-50, high=50, nonzero=False):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        x = RNG.uniform(low, high, n).astype(dtype)
    elif dtype.kind == "u":
        x = RNG.integers(0, high, n).astype(dtype)
    else:
        x = RNG.integers(low, high, n).astype(dtype)
    if nonzero:
        x[x == 0] = 1
    return x


BINARY_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "floordiv": c_div, "mod": c_mod,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "maximum": np.maximum, "minimum": np.minimum,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal,
    "where": lambda x, y: np.where(x > y, x, y),
}
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float16", "float32"]


def launch_binary(op, x, y, out_dtype, block=128):
    n = x.size
    out = np.zeros(n, dtype=out_dtype)
    binary_kernel[(enceladus.cdiv(n, block),)](x, y, out, n, OP=op, BLOCK=block)
    return out


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "lt", "eq", "where"])
def test_binary_common(op, dtype):
    n = 1000  # not a multiple of the block
    x, y = make(dtype, n), make(dtype, n)
    ref = BINARY_REF[op](x, y)
    out = launch_binary(op, x, y, ref.dtype)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(out, ref, rtol=1e-3 if dtype == "float16" else 1e-6)
    else:
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
@pytest.mark.parametrize("op", ["floordiv", "mod", "and", "or", "xor", "sub", "minimum", "le", "gt", "ge", "ne"])
def test_binary_integers(op, dtype):
    n = 777
    x, y = make(dtype, n, nonzero=False), make(dtype, n, nonzero=True)
    x[:4] = np.array([-7, 7, -7, 0]).astype(dtype) if np.dtype(dtype).kind == "i" else x[:4]
    y[:4] = np.array([2, -2, -2, 3]).astype(dtype) if np.dtype(dtype).kind == "i" else y[:4]
    ref = BINARY_REF[op](x, y)
    out = launch_binary(op, x, y, ref.dtype)
    np.testing.assert_array_equal(out, ref)


def test_c_semantics_of_integer_division():
    x = np.array([-7, 7, -7, 7, -8, 5, 3, -2147483648], dtype=np.int32)
    y = np.array([2, -2, -2, 2, 3, 0, 0, -1], dtype=np.int32)
    q = launch_binary("floordiv", x, y, np.int32)
    r = launch_binary("mod", x, y, np.int32)
    np.testing.assert_array_equal(q, [-3, -3, 3, 3, -2, 0, 0, -2147483648])
    np.testing.assert_array_equal(r, [-1, 1, -1, 1, -2, 0, 0, 0])


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int8", "int64"])
def test_shifts(dtype):
    n = 300
    x = make(dtype, n, low=-100, high=100)
    y = RNG.integers(0, 7, n).astype(dtype)
    np.testing.assert_array_equal(launch_binary("shl", x, y, dtype), np.left_shift(x, y))
    np.testing.assert_array_equal(launch_binary("shr", x, y, dtype), np.right_shift(x, y))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_float_division_and_mod(dtype):
    n = 513
    x, y = make(dtype, n), make(dtype, n, nonzero=True)
    out = launch_binary("truediv", x, y, np.float32)  # / on half computes in fp32 (Triton's rule)
    np.testing.assert_allclose(out, x.astype(np.float32) / y.astype(np.float32), rtol=1e-6)
    out = launch_binary("mod", x, y, np.float32)
    np.testing.assert_allclose(out, np.fmod(x.astype(np.float32), y.astype(np.float32)), rtol=1e-5, atol=1e-5)


def test_int_true_division_gives_float32():
    x, y = make("int32", 200), make("int32", 200, nonzero=True)
    out = launch_binary("truediv", x, y, np.float32)
    np.testing.assert_allclose(out, x.astype(np.float32) / y.astype(np.float32), rtol=1e-6)


def test_umulhi():
    x = RNG.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32)
    y = RNG.integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32)
    ref = ((x.astype(np.uint64) * y.astype(np.uint64)) >> 32).astype(np.uint32)
    np.testing.assert_array_equal(launch_binary("umulhi", x, y, np.uint32), ref)


def test_mixed_dtype_promotion():
    x = make("int8", 100)
    y = make("float16", 100)
    out = launch_binary("add", x, y, np.float16)  # int8 + fp16 -> fp16
    np.testing.assert_allclose(out, (x.astype(np.float16) + y), rtol=1e-3)
    a, b = make("int8", 100), make("uint8", 100)
    out = launch_binary("add", a, b, np.uint8)  # same width: unsigned wins
    np.testing.assert_array_equal(out, (a.astype(np.uint8) + b))


UNARY_REF = {"neg": np.negative, "invert": np.invert, "exp": np.exp, "exp2": np.exp2, "log": np.log,
             "log2": np.log2, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
             "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
             "math_exp": np.exp}


def erf_ref(x):
    import math

    return np.array([math.erf(float(v)) for v in x.ravel()], dtype=np.float64).reshape(x.shape)


@pytest.mark.parametrize("op", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "abs", "floor",
                                "ceil", "erf", "sigmoid", "neg", "math_exp"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_unary_float(op, dtype):
    n = 1003
    positive = op in ("log", "log2", "sqrt", "rsqrt")
    x = make(dtype, n, low=0.1 if positive else -4, high=4)
    ref = erf_ref(x.astype(np.float64)) if op == "erf" else UNARY_REF[op](x.astype(np.float64))
    out = np.zeros(n, dtype=dtype)
    unary_kernel[(enceladus.cdiv(n, 256),)](x, out, n, OP=op, BLOCK=256)
    tol = 2e-3 if dtype == "float16" else 2e-6
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=tol, atol=tol)


def test_erf_accuracy_fp32():
    x = np.linspace(-6, 6, 4096, dtype=np.float32)
    out = np.zeros_like(x)
    unary_kernel[(4,)](x, out, x.size, OP="erf", BLOCK=1024)
    np.testing.assert_allclose(out, erf_ref(x.astype(np.float64)), rtol=5e-7, atol=1e-7)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint16", "int64"])
@pytest.mark.parametrize("op", ["neg", "invert", "abs"])
def test_unary_int(op, dtype):
    x = make(dtype, 300)
    out = np.zeros_like(x)
    unary_kernel[(2,)](x, out, x.size, OP=op, BLOCK=256)
    ref = x if (op == "abs" and np.dtype(dtype).kind == "u") else UNARY_REF[op](x)
    np.testing.assert_array_equal(out, ref.astype(dtype))


CASTS = [("float32", "int32"), ("float32", "float16"), ("float16", "float32"), ("int32", "float32"),
         ("int8", "int32"), ("int32", "int8"), ("uint8", "float32"), ("float32", "uint8"), ("int64", "int32"),
         ("float32", "bool"), ("int32", "bool"), ("bool", "float32"), ("float16", "int16"), ("uint32", "int64"),
         ("int32", "uint64")]


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast(src, dst):
    n = 333
    x = make(src, n, low=-100, high=100) if src != "bool" else RNG.integers(0, 2, n).astype(bool)
    if dst in ("uint8",) and src.startswith("float"):
        x = np.abs(x)
    out = np.zeros(n, dtype=dst)
    cast_kernel[(2,)](x, out, n, BITCAST=False, BLOCK=256)
    if src.startswith("float") and dst.startswith(("int", "uint")):
        ref = np.trunc(x).astype(dst)  # truncation toward zero
    else:
        ref = x.astype(dst)
    np.testing.assert_array_equal(out, ref)


def test_cast_rounds_to_nearest_even():
    x = np.array([1.0 + 2**-11, 1.0 + 3 * 2**-11, 65519.0, 1e-8], dtype=np.float32)
    out = np.zeros(4, dtype=np.float16)
    cast_kernel[(1,)](x, out, 4, BITCAST=False, BLOCK=4)
    np.testing.assert_array_equal(out, x.astype(np.float16))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"), ("float16", "int16"),
                                     ("uint32", "float32")])
def test_bitcast(src, dst):
    x = make(src, 100)
    out = np.zeros(100, dtype=dst)
    cast_kernel[(1,)](x, out, 100, BITCAST=True, BLOCK=128)
    np.testing.assert_array_equal(out, x.view(dst))


def test_bfloat16_roundtrip():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = make("float32", 300)
    out = np.zeros(300, dtype=ml_dtypes.bfloat16)
    cast_kernel[(2,)](x, out, 300, BITCAST=False, BLOCK=256)
    np.testing.assert_array_equal(out, x.astype(ml_dtypes.bfloat16))
    y = np.zeros(300, dtype=np.float32)
    cast_kernel[(2,)](out, y, 300, BITCAST=False, BLOCK=256)
    np.testing.assert_array_equal(y, out.astype(np.float32))
    a = out
    b = make("float32", 300).astype(ml_dtypes.bfloat16)
    s = launch_binary("add", a, b, ml_dtypes.bfloat16, block=256)
    np.testing.assert_array_equal(s, (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16))


@pytest.mark.parametrize("n", [1, 5, 64, 1000, 4097])
def test_odd_sizes_and_small_grids(n):
    x, y = make("float32", n), make("float32", n)
    np.testing.assert_allclose(launch_binary("add", x, y, np.float32, block=64), x + y)


def test_fma_and_clamp():
    n = 500
    x, y, z = (make("float32", n) for _ in range(3))
    out = np.zeros(n, np.float32)
    fma_clamp_kernel[(2,)](x, y, z, out, n, -100.0, 100.0, BLOCK=256)
    # fma rounds once: the reference is the exact product-sum (float64) rounded to float32; x * y + z in float32
    # rounds twice and can differ wildly when the sum cancels
    exact = (x.astype(np.float64) * y + z).astype(np.float32)
    np.testing.assert_allclose(out, np.clip(exact, -100, 100), rtol=1e-6, atol=1e-30)


def test_creation_ops():
    a, b, c = np.zeros(64, np.int32), np.zeros(64, np.float32), np.zeros(64, np.float32)
    creation_kernel[(1,)](a, b, c, BLOCK=64)
    np.testing.assert_array_equal(a, 7 + np.arange(64))
    np.testing.assert_array_equal(b, 0.5)
    np.testing.assert_array_equal(c, -1.5)


def test_program_ids_3d_grid():
    grid = (3, 2, 4)
    out = np.full(3 * 2 * 4 * 4, -1, np.int32)
    program_ids_kernel[grid](out)
    out = out.reshape(4, 2, 3, 4)
    for z in range(4):
        for y in range(2):
            for x in range(3):
                np.testing.assert_array_equal(out[z, y, x], [x, y, z, 24])


def test_divmod_chain_regression():
    n = 70000
    out = np.zeros(n, np.int32)
    divmod_chain_kernel[(enceladus.cdiv(n, 1024),)](out, n, BLOCK=1024)
    idx = np.arange(n, dtype=np.int64) * 4099
    np.testing.assert_array_equal(out, ((idx // 65536) % 6 + (idx % 65536) // 4096).astype(np.int32))


def test_scalar_args_and_scalar_pointer_load_store():
    x = np.array([3.0], np.float32)
    out = np.zeros(1, np.float32)
    scalar_kernel[(1,)](x, out, 2.5, True, 2**40)
    np.testing.assert_allclose(out, [3.0 * 2.5 + 2.0**40])
    scalar_kernel[(1,)](x, out, 2.5, False, -3)
    np.testing.assert_allclose(out, [-7.5 - 3])


def test_nested_jit_function_is_inlined():
    x = make("float32", 300)
    out = np.zeros_like(x)
    nested_call_kernel[(2,)](x, out, 300, BLOCK=256)
    np.testing.assert_allclose(out, np.where(x > 0, x, np.float32(0.1) * x), rtol=1e-6)


def test_static_range_unrolls():
    x = make("float32", 4 * 128)
    out = np.zeros(128, np.float32)
    static_loop_kernel[(1,)](x, out, BLOCK=128, REPS=4)
    np.testing.assert_allclose(out, x.reshape(4, 128).sum(0), rtol=1e-5)

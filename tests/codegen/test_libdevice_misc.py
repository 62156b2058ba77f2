"""libdevice bit functions, float helpers, fast_* and bit reinterpretations on every path vs NumPy/Python."""

from __future__ import annotations

import math

import numpy as np
import pytest

from paths import run_on_all_paths

from . import libdevice_kernels as lk

RNG = np.random.default_rng(181)
I32 = np.array([0, 1, -1, 2**31 - 1, -2**31, 0x00F0F000, 12345678, -99], np.int32)
I32 = np.concatenate([I32, RNG.integers(-2**31, 2**31, 120, dtype=np.int64).astype(np.int32)])
I64 = np.concatenate([np.array([0, 1, -1, 2**63 - 1, -2**63, 1 << 40], np.int64),
                      RNG.integers(-2**63, 2**63 - 1, 120, dtype=np.int64)])


def _u(v: int, bits: int) -> int:
    return v & ((1 << bits) - 1)


def _s(v: int, bits: int) -> int:
    v = _u(v, bits)
    return v - (1 << bits) if v >> (bits - 1) else v


INT_UNARY = {
    "clz": lambda v, b: b - _u(v, b).bit_length(),
    "popc": lambda v, b: bin(_u(v, b)).count("1"),
    "ffs": lambda v, b: (_u(v, b) & -_u(v, b)).bit_length(),
    "brev": lambda v, b: _s(int(format(_u(v, b), f"0{b}b")[::-1], 2), b),
}


@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("op", sorted(INT_UNARY))
def test_bit_functions(op, width):
    x = I32 if width == 32 else I64
    out_t = x.dtype if op == "brev" else np.int32
    want = np.array([INT_UNARY[op](int(v), width) for v in x], out_t)
    run_on_all_paths(lk.ld1_kernel, (1,), lambda: (x.copy(), np.zeros(x.size, out_t), x.size),
                     lambda *a: {1: want}, constexprs={"OP": op, "BLOCK": 128})


INT_BINARY = {
    "mulhi": lambda a, b, s: (a * b) >> 32,
    "mul24": lambda a, b, s: ((_s(a, 24) if s else _u(a, 24)) * (_s(b, 24) if s else _u(b, 24))),
    "hadd": lambda a, b, s: (a + b) >> 1,
    "rhadd": lambda a, b, s: (a + b + 1) >> 1,
}


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_integer_pairs(op, signed):
    t = np.int32 if signed else np.uint32
    x = I32.astype(t)
    y = np.roll(I32, 3).astype(t)
    bits = lambda r: _s(r, 32) if signed else _u(r, 32)  # noqa: E731
    want = np.array([bits(INT_BINARY[op](int(a), int(b), signed)) for a, b in zip(x, y)], t)
    run_on_all_paths(lk.ld2_kernel, (1,), lambda: (x.copy(), y.copy(), np.zeros(x.size, t), x.size),
                     lambda *a: {2: want}, constexprs={"OP": op, "BLOCK": 128})


def test_mulhi_64_sad_and_byte_perm():
    y = np.roll(I64, 5)
    want = np.array([(int(a) * int(b)) >> 64 for a, b in zip(I64, y)], np.int64)
    run_on_all_paths(lk.ld2_kernel, (1,), lambda: (I64.copy(), y.copy(), np.zeros(I64.size, np.int64), I64.size),
                     lambda *a: {2: want}, constexprs={"OP": "mulhi", "BLOCK": 128})
    a, b = I32, np.roll(I32, 7)
    c = RNG.integers(0, 2**32, I32.size, dtype=np.uint64).astype(np.uint32)
    sad = np.array([_s(abs(int(p) - int(q)) + int(r), 32) for p, q, r in zip(a, b, c)], np.int32)
    run_on_all_paths(lk.ld3_kernel, (1,), lambda: (a.copy(), b.copy(), c.copy(), np.zeros(a.size, np.int32), a.size),
                     lambda *args: {3: sad}, constexprs={"OP": "sad", "BLOCK": 128})
    s = RNG.integers(0, 1 << 16, I32.size).astype(np.int32)

    def perm(x: int, y: int, sel: int) -> int:
        both = (_u(y, 32) << 32) | _u(x, 32)
        return _s(sum(((both >> (8 * ((sel >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4)), 32)

    bp = np.array([perm(int(p), int(q), int(r)) for p, q, r in zip(a, b, s)], np.int32)
    run_on_all_paths(lk.ld3_kernel, (1,), lambda: (a.copy(), b.copy(), s.copy(), np.zeros(a.size, np.int32), a.size),
                     lambda *args: {3: bp}, constexprs={"OP": "byte_perm", "BLOCK": 128})


F = np.concatenate([RNG.standard_normal(100) * 10, [0.0, -0.0, 1.5, -2.5, 3.0, 1e-40, -1e-40, 3e38, np.inf, -np.inf,
                                                      np.nan, 0.5, 1.0, 7.0, -4.0]]).astype(np.float32)
G = np.concatenate([RNG.standard_normal(100) * 3, [1.0, -1.0, 2.0, 2.0, 2.0, 1.0, 0.0, -1.0, 1.0, 2.0, 1.0, 0.25,
                                                     -0.0, 2.0, 3.0]]).astype(np.float32)


def _remainder(a: float, b: float) -> float:
    try:
        return math.remainder(a, b)
    except ValueError:
        return math.nan


FLOAT_BINARY = {
    "nextafter": lambda x, y: np.nextafter(x, y),
    "remainder": lambda x, y: np.array([_remainder(float(a), float(b)) for a, b in zip(x, y)], np.float32),
    "fdim": lambda x, y: np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0)).astype(np.float32),
    "rhypot": lambda x, y: (1 / np.hypot(x.astype(np.float64), y.astype(np.float64))).astype(np.float32),
    "fast_powf": lambda x, y: np.power(np.abs(x).astype(np.float64), y.astype(np.float64)).astype(np.float32),
    "fast_dividef": lambda x, y: (x.astype(np.float64) / y).astype(np.float32),
    "fmod": lambda x, y: np.fmod(x, y),
}
EXACT = {"nextafter", "remainder", "fdim", "fmod"}


@pytest.mark.parametrize("op", sorted(FLOAT_BINARY))
def test_float_pairs(op):
    x = np.abs(F) if op == "fast_powf" else F
    with np.errstate(all="ignore"):
        want = FLOAT_BINARY[op](x, G).astype(np.float32)
    tol = {"rtol": 0, "atol": 0} if op in EXACT else {"rtol": 3e-6, "atol": 1e-38}
    run_on_all_paths(lk.ld2_kernel, (1,), lambda: (x.copy(), G.copy(), np.zeros(x.size, np.float32), x.size),
                     lambda *a: {2: want}, constexprs={"OP": op, "BLOCK": 128}, **tol)


FLOAT_UNARY = {
    "ilogb": lambda x: np.array([-2**31 if (v == 0 or np.isnan(v)) else (2**31 - 1 if np.isinf(v)
                                 else math.frexp(float(v))[1] - 1) for v in x], np.int32),
    "logb": lambda x: np.array([(math.nan if np.isnan(v) else math.inf if np.isinf(v) else -math.inf if v == 0
                                 else math.frexp(float(v))[1] - 1) for v in x], np.float32),
    "saturatef": lambda x: np.where(np.isnan(x), 0, np.clip(x, 0, 1)).astype(np.float32),
    "finitef": lambda x: np.isfinite(x).astype(np.int32),
    "llrint": lambda x: np.array([0 if np.isnan(v) else int(np.clip(np.rint(np.float64(v)), -2**63, 2**63 - 1))
                                  if abs(v) < 9e18 else (2**63 - 1 if v > 0 else -2**63) for v in x], np.int64),
    "llround": lambda x: np.array([0 if np.isnan(v) else (int(math.copysign(math.floor(abs(float(v)) + 0.5), v))
                                   if abs(v) < 9e18 else (2**63 - 1 if v > 0 else -2**63)) for v in x], np.int64),
    "sinpi": lambda x: np.sin(np.pi * np.fmod(x.astype(np.float64), 2)).astype(np.float32),
    "cospi": lambda x: np.cos(np.pi * np.fmod(x.astype(np.float64), 2)).astype(np.float32),
    "rcbrt": lambda x: (1 / np.cbrt(x.astype(np.float64))).astype(np.float32),
    "nearbyint": lambda x: np.rint(x), "round": lambda x: np.copysign(np.floor(np.abs(x) + np.float32(0.5)), x),
    "float_as_int": lambda x: x.view(np.int32), "float_as_uint": lambda x: x.view(np.int32),
    **{name: (lambda x, f=f: f(x.astype(np.float64)).astype(np.float32)) for name, f in
       (("fast_sinf", np.sin), ("fast_cosf", np.cos), ("fast_tanf", np.tan), ("fast_expf", np.exp),
        ("fast_exp10f", lambda v: 10.0 ** v), ("fast_logf", np.log), ("fast_log2f", np.log2),
        ("fast_log10f", np.log10), ("fast_tanhf", np.tanh))},
}
EXACT_UNARY = {"ilogb", "logb", "saturatef", "finitef", "llrint", "llround", "nearbyint", "round", "float_as_int",
               "float_as_uint"}


@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
def test_float_functions(op):
    x = F.copy()
    if op.startswith("fast_") or op in ("sinpi", "cospi", "rcbrt"):
        x = x[np.isfinite(x) & (np.abs(x) < 30) & (np.abs(x) > 1e-30)]
        if op in ("fast_logf", "fast_log2f", "fast_log10f"):
            x = np.abs(x)
    with np.errstate(all="ignore"):
        want = FLOAT_UNARY[op](x)
    tol = {"rtol": 0, "atol": 0} if op in EXACT_UNARY else {"rtol": 3e-6, "atol": 2e-7}
    run_on_all_paths(lk.ld1_kernel, (1,), lambda: (x.copy(), np.zeros(x.size, want.dtype), x.size),
                     lambda *a: {1: want}, constexprs={"OP": op, "BLOCK": 128}, **tol)


def test_int_and_uint_as_float_ldexp_scalbn_and_norms():
    bits = I32
    run_on_all_paths(lk.ld1_kernel, (1,), lambda: (bits.copy(), np.zeros(bits.size, np.float32), bits.size),
                     lambda *a: {1: bits.view(np.float32)}, constexprs={"OP": "int_as_float", "BLOCK": 128},
                     check=lambda args, e, p: np.testing.assert_array_equal(np.asarray(args[1]).view(np.int32), bits))
    ub = bits.view(np.uint32)
    run_on_all_paths(lk.ld1_kernel, (1,), lambda: (ub.copy(), np.zeros(ub.size, np.float32), ub.size),
                     lambda *a: {1: ub.view(np.float32)}, constexprs={"OP": "uint_as_float", "BLOCK": 128},
                     check=lambda args, e, p: np.testing.assert_array_equal(np.asarray(args[1]).view(np.uint32), ub))
    n = RNG.integers(-160, 160, F.size).astype(np.int32)
    with np.errstate(all="ignore"):
        want = np.ldexp(F.astype(np.float64), n).astype(np.float32)
    for op in ("ldexp", "scalbn"):
        run_on_all_paths(lk.ld2_kernel, (1,), lambda: (F.copy(), n.copy(), np.zeros(F.size, np.float32), F.size),
                         lambda *a: {2: want}, constexprs={"OP": op, "BLOCK": 128}, rtol=0, atol=0)
    a, b, c, d = (RNG.standard_normal(64).astype(np.float32) * 1e20 for _ in range(4))
    n3 = np.sqrt(a.astype(np.float64) ** 2 + b.astype(np.float64) ** 2 + c.astype(np.float64) ** 2)
    n4 = np.sqrt(n3 ** 2 + d.astype(np.float64) ** 2)
    for op, want, k in (("norm3d", n3, 3), ("rnorm3d", 1 / n3, 3), ("norm4d", n4, 4), ("rnorm4d", 1 / n4, 4)):
        args = (a, b, c, d)[:k]
        kern = lk.ld3_kernel if k == 3 else lk.ld4_kernel
        run_on_all_paths(kern, (1,), lambda args=args: (*[v.copy() for v in args], np.zeros(64, np.float32), 64),
                         lambda *x, w=want, k=k: {k: w.astype(np.float32)}, constexprs={"OP": op, "BLOCK": 64},
                         rtol=3e-6, atol=0)


def test_libdevice_fma_is_tl_fma_and_types_are_checked():
    import enceladus
    import enceladus.language as tl
    from enceladus import CompilationError
    from enceladus.language.extra import libdevice

    assert libdevice.fma is tl.fma
    with pytest.raises(CompilationError) as info:
        enceladus.compile(lk.ld1_kernel, signature="*fp16,*fp32,i32", constexprs={"OP": "sqrt_rz", "BLOCK": 16})
    assert "libdevice.sqrt_rz expects (fp32), got (fp16)" in info.value.message and "float32" in info.value.fix

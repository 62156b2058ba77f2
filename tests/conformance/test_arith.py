"""Conformance: binary ops over dtype pairs (with Triton's promotion), unary ops, casts, bitcasts, literals.

Every check runs on the interpreter and the cpu backend (run_on_all_paths) against NumPy references
written from TRITON_SEMANTICS.md (reference.py), not from Enceladus's own typing code.
"""

from __future__ import annotations

import numpy as np
import pytest

from paths import run_on_all_paths

from . import kernels as K
from .reference import BITS, FLOATS, INTS, c_div, c_mod, npd, promote, sample, tld

RNG = np.random.default_rng(2024)
BLOCK = 64
PAIRS = [("int8", "int8"), ("int8", "uint8"), ("int16", "int32"), ("int32", "int64"), ("uint16", "uint16"),
         ("uint32", "uint64"), ("int64", "uint32"), ("uint64", "uint64"), ("int1", "int32"),
         ("float16", "float16"), ("bfloat16", "bfloat16"), ("float16", "bfloat16"), ("float32", "float16"),
         ("int32", "float32"), ("bfloat16", "int8")]
NAMES = ["add", "sub", "mul", "cmp", "max", "min", "div", "fdiv", "mod", "and", "or", "xor", "shl", "shr"]


def binary_reference(x: np.ndarray, y: np.ndarray, a: str, b: str) -> dict[str, np.ndarray]:
    res = promote(a, b)
    xs, ys = x.astype(npd(res)), y.astype(npd(res))
    with np.errstate(all="ignore"):
        out = {"add": xs + ys, "sub": xs - ys, "mul": xs * ys, "max": np.maximum(xs, ys), "min": np.minimum(xs, ys)}
        out["cmp"] = sum((op(xs, ys).astype(np.int32) << i) for i, op in
                         enumerate([np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal]))
        if res in INTS or res == "int1":
            out["div"] = (xs.astype(np.float32) / ys.astype(np.float32)).astype(np.float32)
            out["fdiv"], out["mod"] = c_div(xs, ys), c_mod(xs, ys)
            m = BITS[res] - 1
            # Triton's >> is arithmetic when the left operand's own type is signed, even in an unsigned common type
            left = xs.view(f"i{xs.itemsize}") if a.startswith("int") and xs.dtype.kind == "u" else xs
            shr = (left >> (ys & m).astype(left.dtype)).view(xs.dtype)
            out.update({"and": xs & ys, "or": xs | ys, "xor": xs ^ ys, "shl": xs << (ys & m), "shr": shr})
        else:
            xf, yf = x.astype(np.float32), y.astype(np.float32)
            out["div"], out["mod"] = xf / yf, np.fmod(xf, yf)
    return out


def divides(a: str, b: str) -> bool:
    """`/`, `//`, `%` are defined unless both are integers of different signedness (or a bool is involved)."""
    if "int1" in (a, b):
        return False
    if a in FLOATS or b in FLOATS:
        return True
    return a.startswith("u") == b.startswith("u")


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_binary_ops_over_dtype_pairs(a, b):
    x = sample(a, BLOCK, RNG)
    y = sample(b, BLOCK, RNG, nonzero=True)
    res = promote(a, b)
    is_int = res in INTS
    dt = {n: npd(res) for n in ("add", "sub", "mul", "max", "min", "fdiv", "and", "or", "xor", "shl", "shr")}
    dt.update(cmp=np.dtype(np.int32), div=np.dtype(np.float32), mod=npd(res) if is_int else np.dtype(np.float32))
    if res == "int1":  # bool + bool is not a pair we test
        pytest.skip("no bool-bool pair")
    expected = binary_reference(x, y, a, b)
    checked = [n for n in NAMES if n in expected and (divides(a, b) or n not in ("div", "fdiv", "mod"))]

    def make_args():
        return [x.copy(), y.copy(), *[np.zeros(BLOCK, dt[n]) for n in NAMES]]

    def check(args, _expected, path):
        for n in checked:
            got, want = args[2 + NAMES.index(n)], expected[n].astype(dt[n])
            if dt[n].kind == "f" or dt[n].name == "bfloat16":
                # exactly rounded on both sides; int64 -> fp32 for `/` may round once more in NumPy: 1 ulp
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 ** -22 if
                                           dt[n] == np.float32 else 0, atol=0, err_msg=f"{path}: {a} {n} {b}")
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{path}: {a} {n} {b}")

    run_on_all_paths(K.binary_ops, (1,), make_args, lambda *args: {}, check=check,
                     constexprs={"BLOCK": BLOCK, "RES": tld(res), "IS_INT": is_int, "DIVIDE": divides(a, b),
                                     "SHIFT_MASK": BITS[res] - 1})


TOL = {"float32": (4e-6, 1e-6), "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2)}


@pytest.mark.parametrize("t", FLOATS)
def test_unary_float_ops(t):
    x = sample(t, BLOCK, RNG)
    xf = x.astype(np.float64)
    a = np.abs(xf)
    from math import erf

    refs = [-xf, a, np.exp(xf), np.exp2(xf), np.log(a + 1), np.log2(a + 1), np.sqrt(a), 1 / np.sqrt(a + 1),
            np.sin(xf), np.cos(xf), np.floor(xf), np.ceil(xf), 1 / (1 + np.exp(-xf)),
            np.vectorize(erf)(xf), xf * xf + xf]
    # each result is the exact value rounded to the dtype, within the tolerances of the dtype's math
    want = np.concatenate([r.astype(np.float32).astype(npd(t)) for r in refs])
    rtol, atol = TOL[t]
    run_on_all_paths(K.unary_float, (1,), lambda: [x.copy(), np.zeros(len(refs) * BLOCK, npd(t))],
                     lambda *args: {1: want}, constexprs={"BLOCK": BLOCK}, rtol=rtol, atol=atol)


@pytest.mark.parametrize("t", ["int8", "uint16", "int32", "uint64"])
def test_unary_int_ops(t):
    x = sample(t, BLOCK, RNG)
    with np.errstate(all="ignore"):
        neg = (-x.astype(object)).astype(object) % (1 << BITS[t])
        neg = np.array([v if v < (1 << (BITS[t] - 1)) or t.startswith("u") else v - (1 << BITS[t]) for v in neg],
                       dtype=object).astype(npd(t))
        absx = np.where(x < 0, neg, x) if not t.startswith("u") else x
    run_on_all_paths(K.unary_int, (1,), lambda: [x.copy(), *[np.zeros(BLOCK, npd(t)) for _ in range(3)]],
                     lambda *args: {1: neg, 2: ~x, 3: absx.astype(npd(t))}, constexprs={"BLOCK": BLOCK})


CAST_TARGETS = ["int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                "bfloat16", "float32"]


def cast_reference(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if dst == "int1":
        return x != 0
    if src in FLOATS and dst in INTS:
        return np.trunc(x.astype(np.float64)).astype(npd(dst))  # toward zero (values are in range)
    if src in INTS + ("int1",) and dst in INTS:
        return x.astype(npd(dst))  # two's complement wrap / sign or zero extension
    if src in INTS and dst in FLOATS:
        with np.errstate(over="ignore"):  # wide integers overflow fp16 to inf, as the kernel does
            return (x.astype(np.float64).astype(np.float32).astype(npd(dst)) if dst != "float32"
                    else x.astype(np.float32))
    return x.astype(np.float32).astype(npd(dst)) if src != "float32" else x.astype(npd(dst))


@pytest.mark.parametrize("src", ["int1", "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
                                 "bfloat16", "float32"])
def test_casts_to_every_dtype(src):
    if src in FLOATS:
        # in range of every integer target (C leaves out-of-range float->int conversions undefined)
        x = np.concatenate([[0.0, 0.5, 1.5, 2.5, 126.9, 127.0],
                            RNG.uniform(0, 127, BLOCK - 6)]).astype(npd(src))
    else:
        x = sample(src, BLOCK, RNG)
    wants = [cast_reference(x, src, d) for d in CAST_TARGETS]

    def check(args, _expected, path):
        for d, got, want in zip(CAST_TARGETS, args[1:], wants):
            if d in FLOATS and src in ("int64", "uint64", "uint32", "int32"):
                # a wide integer may be rounded twice (via fp32/fp64) by either side: 1 ulp
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 * TOL[d][0] / 4,
                                           err_msg=f"{path}: {src} -> {d}")
            else:
                np.testing.assert_array_equal(np.asarray(got).astype(np.float64) if d in FLOATS else got,
                                              want.astype(np.float64) if d in FLOATS else want,
                                              err_msg=f"{path}: {src} -> {d}")

    run_on_all_paths(K.cast_all, (1,), lambda: [x.copy(), *[np.zeros(BLOCK, npd(d)) for d in CAST_TARGETS]],
                     lambda *a: {}, check=check, constexprs={"BLOCK": BLOCK})


def test_fp32_to_half_rounds_to_nearest_even():
    # halfway cases between two fp16 (and bf16) values round to the even one
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, 2048 + 1, 2048 + 3, 65519.0, 65520.0, -1 - 2**-11, 1e-8] * 8,
                 np.float32)
    with np.errstate(over="ignore"):  # 65520 rounds up past fp16's largest finite value to inf, by design
        want_half = x.astype(np.float16)
    run_on_all_paths(K.cast_all, (1,), lambda: [x.copy(), *[np.zeros(BLOCK, npd(d)) for d in CAST_TARGETS]],
                     lambda *a: {10: want_half, 11: x.astype(npd("bfloat16"))},
                     constexprs={"BLOCK": BLOCK}, rtol=0, atol=0)


BITCASTS = [("float32", "int32"), ("int32", "float32"), ("uint16", "float16"), ("float16", "int16"),
            ("bfloat16", "uint16"), ("int64", "uint64")]


@pytest.mark.parametrize("src,dst", BITCASTS, ids=[f"{a}-{b}" for a, b in BITCASTS])
def test_bitcast_keeps_the_bits(src, dst):
    x = sample(src, BLOCK, RNG)

    def check(args, _e, path):
        assert args[1].tobytes() == x.view(npd(dst)).tobytes(), f"{path}: bitcast {src} -> {dst}"

    run_on_all_paths(K.bitcast, (1,), lambda: [x.copy(), np.zeros(BLOCK, npd(dst))], lambda *a: {}, check=check,
                     constexprs={"BLOCK": BLOCK, "TO": tld(dst)})


def test_literals_take_the_tile_type():
    x = np.arange(BLOCK, dtype=np.uint8) * 4
    with np.errstate(over="ignore"):
        want_d = ((x.astype(np.uint32) * np.uint32(0x9E3779B9)) >> 7).astype(np.uint32)
    run_on_all_paths(K.literals_u8, (1,),
                     lambda: [x.copy(), np.zeros(BLOCK, np.uint8), np.zeros(BLOCK, np.uint8),
                              np.zeros(BLOCK, np.float32), np.zeros(BLOCK, np.uint32)],
                     lambda *a: {1: (255 - x).astype(np.uint8), 2: (x + np.uint8(250)).astype(np.uint8),
                                 3: x.astype(np.float32) * 2.5, 4: want_d},
                     constexprs={"BLOCK": BLOCK})

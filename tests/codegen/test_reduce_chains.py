"""Reductions inside a thread (codegen_msl/movement.py, ``reduce_tree``): a thread's registers along the
reduced dimension are combined as four chains over consecutive runs, then a pairwise tree over the runs, so
the dependent combines are about pt/4 + 2 long instead of pt - 1. Neighbours stay in order: where a thread's
registers hold consecutive elements (one 16-byte vector: 4 int32, 8 int16, 16 int8), an associative combine
function that is not commutative gets the left-to-right answer on every path. (Where a thread holds several
runs of a row — 1024 int32 on one SIMD group — the compiled paths combine the runs in the layout's order, as
before this change and as Triton does: such a combine function must be commutative there.)"""

import re

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import run_on_all_paths


@enceladus.jit
def compose(a1, b1, a2, b2):
    """Composition of affine maps on int32 (wrapping): x -> a1*x + b1, then x -> a2*x + b2. Associative, not
    commutative."""
    return a1 * a2, b1 * a2 + b2


@enceladus.jit
def compose_kernel(A, B, OA, OB, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b = tl.reduce((tl.load(A + offs), tl.load(B + offs)), 0, compose)
    tl.store(OA, a)
    tl.store(OB, b)


@enceladus.jit
def sum_rows_kernel(X, Y, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(Y + rm, tl.sum(tl.load(X + rm[:, None] * BN + rn[None, :]), axis=1))


def composed(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maps applied left to right, wrapping to the arrays' integer width at every step."""
    bits = a.dtype.itemsize * 8

    def wrap(v: int) -> int:
        return (v + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
    ra, rb = int(a[0]), int(b[0])
    for x, y in zip(a[1:].tolist(), b[1:].tolist()):
        ra, rb = wrap(ra * x), wrap(rb * x + y)
    return np.array([ra], a.dtype), np.array([rb], a.dtype)


def maps(dtype, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n affine maps with odd multipliers (so products do not collapse to 0 modulo 2^bits)."""
    rng = np.random.default_rng(seed)
    hi = 2 ** (np.dtype(dtype).itemsize * 8 - 2)
    return (rng.integers(-hi, hi, n) * 2 + 1).astype(dtype), rng.integers(-hi, hi, n).astype(dtype)


@pytest.mark.parametrize("dtype,block,num_warps", [(np.int32, 64, 1), (np.int32, 128, 1), (np.int16, 256, 1),
                                                    (np.int8, 512, 1), (np.int8, 2048, 4), (np.int16, 2048, 8),
                                                    (np.int8, 1024, 2)])
def test_non_commutative_combine_keeps_order(dtype, block, num_warps):
    """Per thread 2 int32 (a plain pair), 4 int32 (a pure tree), 8 int16 (four runs of 2), 16 int8 (four runs
    of 4), each thread's registers consecutive elements; then 4, 8 and 2 SIMD groups, whose partial results
    are combined the same way (a tree over 4, chains of 2 then a tree over 8, a pair)."""
    a, b = maps(dtype, block, block + num_warps)
    want_a, want_b = composed(a, b)
    run_on_all_paths(compose_kernel, (1,), lambda: (a, b, np.zeros(1, dtype), np.zeros(1, dtype)),
                     lambda *args: {2: want_a, 3: want_b}, constexprs={"BLOCK": block}, num_warps=num_warps,
                     rtol=0, atol=0)


def test_swapped_runs_would_be_caught():
    """The reference distinguishes orders: composing two halves the other way round gives another answer."""
    for dtype in (np.int32, np.int16, np.int8):
        a, b = maps(dtype, 16, 5)
        swapped = np.concatenate([a[8:], a[:8]]), np.concatenate([b[8:], b[:8]])
        assert composed(a, b)[1][0] != composed(*swapped)[1][0]


def test_float_sum_rows():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 1024)).astype(np.float32)
    run_on_all_paths(sum_rows_kernel, (1,), lambda: (x, np.zeros(4, np.float32)),
                     lambda x, y: {1: x.astype(np.float64).sum(1).astype(np.float32)}, constexprs={"BM": 4, "BN": 1024},
                     num_warps=4, rtol=1e-5, atol=1e-4)


def test_msl_chains_then_tree():
    """32 registers per thread along the row: seven combines per run of 8, then two tree levels (depth 9,
    not 31), and no left-to-right chain over all 32."""
    x = np.zeros(1024, np.int32)
    msl = compose_kernel.warmup(x, x, x[:1], x[:1], BLOCK=1024, num_warps=1).asm["msl"]
    assert re.search(r"for \(int j = 1; j < 8; \+\+j\) for \(int k = 0; k < 32; k \+= 8\) enc_combine\d+\(", msl)
    assert re.search(r"for \(int k = 0; k < 32; k \+= 16\) enc_combine\d+\(\w+\[k\], \w+\[k\], \w+\[k \+ 8\]", msl)
    assert re.search(r"for \(int k = 0; k < 32; k \+= 32\) enc_combine\d+\(\w+\[k\], \w+\[k\], \w+\[k \+ 16\]", msl)
    assert "for (int k = 1; k < 32; ++k)" not in msl


def test_msl_simd_groups_combined_as_a_tree():
    """8 SIMD groups' partial results: chains of 2, then a tree (depth 3, not 7)."""
    x = np.zeros(2048, np.int16)
    msl = compose_kernel.warmup(x, x, x[:1], x[:1], BLOCK=2048, num_warps=8).asm["msl"]
    assert re.search(r"for \(int k = 0; k < 8; \+\+k\) \{ (r\d+)_w\[k\] = enc_smem\d+\[k \* 1 \+ row\];", msl), msl
    assert re.search(r"for \(int k = 0; k < 8; k \+= 8\) enc_combine\d+\(r\d+_w\[k\], r\d+_w\[k\], r\d+_w\[k \+ 4\]", msl)
    assert "for (int w = 1; w < 8; ++w)" not in msl

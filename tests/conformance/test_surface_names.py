"""The small tl builtins, each in a kernel on every path against NumPy (for the name list of issue #18)."""

import numpy as np

from paths import run_on_all_paths

from . import surface_kernels as sk

RNG = np.random.default_rng(1808)


def test_hints_casts_shape_helpers_and_namespaces():
    n = 200
    x = RNG.uniform(-5, 5, n).astype(np.float32)
    want = (2 + np.trunc(x) + 2 * x + np.tanh(x.astype(np.float64))).astype(np.float32)
    run_on_all_paths(sk.surface_kernel, (1,), lambda: (x.copy(), np.zeros(n, np.float32), n), lambda *a: {1: want},
                     constexprs={"BLOCK": 256}, rtol=1e-6, atol=1e-6)


def test_bitwise_atomics_under_contention():
    vals = RNG.integers(-2**31, 2**31, 97, dtype=np.int64).astype(np.int32)
    start = np.array([-1], np.int32), np.array([0x10], np.int32), np.array([0x5A5A5A5A], np.int32)
    want_and = np.bitwise_and.reduce(np.concatenate([start[0], vals]))
    want_or = np.bitwise_or.reduce(np.concatenate([start[1], vals]))
    want_xor = np.bitwise_xor.reduce(np.concatenate([start[2], vals]))
    run_on_all_paths(sk.bitwise_atomics_kernel, (vals.size,), lambda: (*[s.copy() for s in start], vals.copy()),
                     lambda *a: {0: np.array([want_and]), 1: np.array([want_or]), 2: np.array([want_xor])})


def _swizzle(i: int, j: int, size_i: int, size_j: int, size_g: int) -> tuple[int, int]:
    ij = i * size_j + j
    group = ij // (size_g * size_j)
    first = group * size_g
    rows = min(size_i - first, size_g)
    ij %= size_g * size_j
    return first + ij % rows, ij // rows


def test_swizzle2d():
    for size_i, size_j, size_g in ((8, 5, 3), (6, 4, 2), (7, 7, 4)):
        want = np.zeros(2 * 64, np.int32)
        for ij in range(size_i * size_j):
            want[2 * ij:2 * ij + 2] = _swizzle(ij // size_j, ij % size_j, size_i, size_j, size_g)
        run_on_all_paths(sk.swizzle_kernel, (1,),
                         lambda a=size_i, b=size_j, c=size_g: (np.zeros(2 * 64, np.int32), a, b, c),
                         lambda *a, w=want: {0: w}, constexprs={"BLOCK": 64})

"""Atomics on the compiled path (genuinely concurrent threadgroups) and the interpreter."""

import numpy as np
import pytest

from paths import on_path

from . import atomic_kernels as ak

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("kind,dtype", [("add", "int32"), ("add", "float32"), ("max", "int32"), ("max", "float32"),
                                        ("min", "uint32"), ("min", "float32"), ("and", "int32"), ("or", "uint32"),
                                        ("xor", "int32"), ("xchg", "int32"), ("xchg", "float32")])
@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_atomic_ops(kind, dtype, path):
    n = 3000
    if kind == "add":
        vals = RNG.integers(1, 50, n).astype(dtype)  # positive: the running totals strictly increase (exact in fp32)
    elif dtype == "float32":
        vals = RNG.integers(-50, 50, n).astype(np.float32)
    else:
        vals = RNG.integers(0 if dtype == "uint32" else -50, 50, n).astype(dtype)
    init = {"add": 0, "max": -100, "min": 100, "and": -1, "or": 0, "xor": 0, "xchg": 0}[kind]
    mem = np.full(4, init, dtype)
    old = np.zeros(n, dtype)
    on_path(ak.atomic_kernel, path)[(3,)](mem, vals, old, n, KIND=kind, BLOCK=1024)
    for slot in range(4):
        v = vals[slot::4]
        if kind == "add":
            assert mem[slot] == v.sum()
            # the old values are the running totals of some order of the additions: consecutive totals differ by
            # exactly the added values
            steps = np.diff(np.append(np.sort(old[slot::4]), mem[slot]))
            np.testing.assert_array_equal(np.sort(steps), np.sort(v))
        elif kind in ("max", "min"):
            assert mem[slot] == (max(v.max(), init) if kind == "max" else min(v.min(), init))
        elif kind == "and":
            assert mem[slot] == np.bitwise_and.reduce(v) & init
        elif kind == "or":
            assert mem[slot] == np.bitwise_or.reduce(v)
        elif kind == "xor":
            assert mem[slot] == np.bitwise_xor.reduce(v)
        else:  # xchg: every value went through the slot exactly once; the old values plus the last are a permutation
            seen = np.sort(np.concatenate([old[slot::4], mem[slot:slot + 1]]))
            np.testing.assert_array_equal(seen, np.sort(np.concatenate([v, [init]])))


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_scalar_atomic_gives_each_program_a_ticket(path):
    counter = np.zeros(1, np.int32)
    out = np.full(64, -1, np.int32)
    on_path(ak.counter_kernel, path)[(64,)](counter, out)
    assert counter[0] == 64
    np.testing.assert_array_equal(np.sort(out), np.arange(64))


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_spin_lock_with_cas(path):
    lock = np.zeros(1, np.int32)
    total = np.zeros(32, np.int32)
    on_path(ak.cas_lock_kernel, path)[(50,)](lock, total, BLOCK=32)
    np.testing.assert_array_equal(total, 50)
    assert lock[0] == 0


@pytest.mark.parametrize("path", ["interpreter", "cpu"])
def test_replicated_tile_atomics_run_once_per_element(path):
    mem = np.zeros(16, np.int32)
    old = np.full(16, -1, np.int32)
    on_path(ak.small_tile_atomic_kernel, path)[(1,)](mem, old)
    np.testing.assert_array_equal(mem, 1)
    np.testing.assert_array_equal(old, 0)


from paths import run_on_all_paths  # noqa: E402


def test_gather():
    M, N, K = 8, 32, 16
    src = RNG.standard_normal((M, N)).astype(np.float32)
    idx = RNG.integers(0, N, (M, K)).astype(np.int32)
    run_on_all_paths(ak.gather_kernel, (1,), lambda: (src, idx, np.zeros((M, K), np.float32)),
                     lambda s, i, o: {2: np.take_along_axis(s, i, 1)}, constexprs={"M": M, "N": N, "K": K})


@pytest.mark.parametrize("n,bins", [(1000, 16), (1024, 128), (37, 8)])
def test_histogram(n, bins):
    x = RNG.integers(-2, bins + 2, n).astype(np.int32)  # values outside the bins are ignored
    want = np.bincount(x[(x >= 0) & (x < bins)], minlength=bins).astype(np.int32)
    run_on_all_paths(ak.histogram_kernel, (1,), lambda: (x, np.zeros(bins, np.int32), n),
                     lambda x, o, n: {1: want}, constexprs={"BLOCK": 1024, "BINS": bins})


@pytest.mark.parametrize("dim,desc", [(1, False), (1, True), (0, False)])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_sort_and_topk(dim, desc, dtype):
    M, N, K = 8, 64, 8
    x = (RNG.standard_normal((M, N)) * 100).astype(dtype)
    s = np.sort(x, axis=dim)
    if desc:
        s = np.flip(s, dim)
    top = -np.sort(-x, axis=1)[:, :K]
    bottom = np.sort(x, axis=1)[:, :K]  # tl.topk(..., descending=False): the K smallest, smallest first
    run_on_all_paths(ak.sort_kernel, (1,),
                     lambda: (x, np.zeros_like(x), np.zeros((M, K), dtype), np.zeros((M, K), dtype)),
                     lambda x, o, t, b: {1: s, 2: top, 3: bottom}, constexprs={"M": M, "N": N, "DIM": dim, "DESC": desc, "K": K})

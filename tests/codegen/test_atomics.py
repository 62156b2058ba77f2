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

"""Conformance: masked and strided loads/stores, atomics, control flow, tuples, constexpr rules, launch
specialization, and the builtins only the interpreter has (with the compiler's clean refusal)."""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus import CompilationError
from paths import on_path, run_on_all_paths

from . import kernels as K

RNG = np.random.default_rng(99)


def test_masked_and_strided_loads_and_stores():
    base = RNG.uniform(-4, 4, (3, 5)).astype(np.float32)
    view = base.T  # (5, 3) with strides (1, 5) elements
    M, N, BM, BN = 5, 3, 8, 4
    sm, sn = (s // 4 for s in view.strides)
    padded = np.full((BM, BN), -1.0, np.float32)
    padded[:M, :N] = view
    stored = np.full((BM, BN), 9.0, np.float32)
    even = (np.arange(BM)[:, None] % 2 == 0) & (np.arange(BM)[:, None] < M) & (np.arange(BN)[None, :] < N)
    stored[even] = (padded * 2)[even]
    want = np.concatenate([padded.ravel(), stored.ravel(), [view[0, 0], view[1, 1]]]).astype(np.float32)
    run_on_all_paths(K.masked_strided, (1,),
                     lambda: [view, np.full(2 * BM * BN + 2, 9.0, np.float32), M, N, sm, sn],
                     lambda *a: {1: want}, constexprs={"BM": BM, "BN": BN}, rtol=0, atol=0)


def test_atomics_under_contention():
    grid, BLOCK = 4, 8
    vals = RNG.integers(-50, 50, grid * BLOCK).astype(np.int32)
    v = vals.reshape(grid, BLOCK)
    counter = np.array([v[:, offs::4].sum() for offs in range(4)], np.int32)
    want = {0: counter, 1: np.array([0.5 * grid], np.float32), 2: np.maximum(v.max(axis=0), -1000),
            3: np.where(np.arange(BLOCK) < BLOCK // 2, np.minimum(v.min(axis=0), 1000), 1000).astype(np.int32),
            4: np.ones(grid, np.int32), 5: np.arange(grid, dtype=np.int32) + 100, 6: np.full(grid, 5, np.int32)}

    def make_args():
        return [np.zeros(4, np.int32), np.zeros(1, np.float32), np.full(BLOCK, -1000, np.int32),
                np.full(BLOCK, 1000, np.int32), np.zeros(grid, np.int32), np.zeros(grid, np.int32),
                np.zeros(grid, np.int32), vals.copy()]

    run_on_all_paths(K.atomics, (grid,), make_args, lambda *a: want, constexprs={"BLOCK": BLOCK})


@pytest.mark.parametrize("n,flag", [(0, 0), (5, 1), (7, 2), (200, 0)])
def test_control_flow(n, flag):
    BLOCK, UNROLL = 8, 3
    x = RNG.integers(-10, 10, BLOCK).astype(np.int32)
    out = np.full(5 * BLOCK + 3, -9, np.int32)
    out[:BLOCK] = x * sum(range(0, n, 2))
    out[BLOCK] = sum(range(n))
    y = [x + 1, x * 2, -x][flag]
    out[BLOCK + 1: 2 * BLOCK + 1] = y
    out[2 * BLOCK + 1: 3 * BLOCK + 1] = y + sum(range(UNROLL))
    out[3 * BLOCK + 1: 4 * BLOCK + 1] = np.clip(x, 2, 5) * 100 + 7
    if n - 3 >= 0:
        out[4 * BLOCK + 1] = n - 3
    out[4 * BLOCK + 2: 5 * BLOCK + 2] = x if n > 2 else 0
    if n <= 100:
        out[5 * BLOCK + 2] = 77
    run_on_all_paths(K.control_flow, (1,), lambda: [x.copy(), np.full(5 * BLOCK + 3, -9, np.int32), n, flag],
                     lambda *a: {1: out}, constexprs={"BLOCK": BLOCK, "UNROLL": UNROLL})


@pytest.mark.parametrize("mode,flag", [("neg", True), ("pos", False)])
def test_constexpr_rules(mode, flag):
    BLOCK, SCALE = 16, 3
    v = np.arange(BLOCK, dtype=np.int32) * SCALE
    if mode == "neg":
        v = -v
    v = v + 6 + 16 if flag else v.astype(np.float32).view(np.int32) & 0xFFFF
    want = np.concatenate([v, np.arange(BLOCK // 2) + 5 + 3]).astype(np.int32)
    run_on_all_paths(K.constexpr_rules, (1,), lambda: [np.zeros(BLOCK + BLOCK // 2, np.int32)],
                     lambda *a: {0: want}, constexprs={"BLOCK": BLOCK, "SCALE": SCALE, "MODE": mode, "FLAG": flag})


@pytest.mark.parametrize("n", [1, 16, 7, -3])
def test_launch_specialization_values(n):
    """n == 1 (a constant), n % 16 == 0 (a divisibility fact), other ints, an int64, a uint64, a bool, a float
    and None all reach the kernel with their values."""
    BLOCK = 16
    big, ubig = 2**40 + 3, 2**63 + 6
    want = np.concatenate([np.arange(BLOCK) * n + big, [(ubig >> 1), 1 + 1, 10]]).astype(np.int64)
    run_on_all_paths(K.specialization, (1,), lambda: [np.zeros(BLOCK + 3, np.int64), n, big, ubig, True, 2.5, None],
                     lambda *a: {0: want}, constexprs={"BLOCK": BLOCK})


def test_specialization_produces_distinct_kernels():
    k = enceladus.jit(K.specialization.fn)
    out = np.zeros(19, np.int64)
    for n in (1, 16, 32, 7, 9):
        k[(1,)](out, n, 2**40, 2**63, True, 1.0, None, BLOCK=16)
    assert len(k.cache) == 3  # n == 1, n % 16 == 0, other


@pytest.mark.parametrize("op", ["sort", "gather", "histogram"])
def test_sort_gather_histogram(op):
    x = np.array([5, 3, 7, 1, 0, 2, 6, 4], np.int32)
    want = {"sort": np.sort(x), "gather": x[::-1], "histogram": np.bincount(x, minlength=8)}[op].astype(np.int32)
    run_on_all_paths(K.sort_gather_histogram, (1,), lambda: [x.copy(), np.zeros(8, np.int32)],
                     lambda *a: {1: want}, constexprs={"OP": op})


@pytest.mark.parametrize("op", ["device_assert", "device_print"])
def test_device_print_and_assert_on_every_path(op, capsys):
    x = np.arange(8, dtype=np.int32)
    run_on_all_paths(K.device_checks, (1,), lambda: [x.copy()], lambda *a: {0: x + 1}, constexprs={"OP": op},
                     debug=op == "device_assert")  # asserts are compiled in debug mode only, as in Triton
    if op == "device_print":
        out = capsys.readouterr().out.splitlines()
        lines = [line for line in out if "x = " in line]
        assert len(lines) == 16  # 8 elements, on each of the two paths
        assert lines[:8] == lines[8:]  # the compiled kernel prints exactly what the interpreter prints


def test_branch_merging_a_scalar_and_a_tile_is_refused():
    # as in Triton: `y = 1.5` (fp32) in one branch and an int32 tile in the other do not merge
    with pytest.raises(CompilationError, match="in one branch and"):
        on_path(K.branch_scalar_or_tile, "cpu")[(1,)](np.zeros(4, np.float32), 1)


def test_rand_with_a_literal_offset():
    # tl.rand(0, 1): Triton 3.9.0's tl.rand(0, offs) at offset 1 (its interpreter refuses a literal offset:
    # "'int' object has no attribute 'to'"); see tests/codegen/test_random_known_answers.py
    want = np.array([float.fromhex("0x1.c6ccd4p-5")], np.float32)
    run_on_all_paths(K.rand_int_offset, (1,), lambda: [np.zeros(1, np.float32)], lambda *a: {0: want}, rtol=0, atol=0)

"""A loop-carried pointer tile keeps one pointer per run of a thread's contiguous elements (issue 24, "offsets, not
pointer tiles": fewer registers carried across the loop), only where every value it holds is contiguous over
those runs; element e is then the run's pointer plus e % run (row statistics carried as slices of a dot's
fragments: tests/codegen/test_dot_registers.py). Values on every path against NumPy, between sentinels; the
compiled MSL says which pointer tiles were compressed."""

from __future__ import annotations

import re

import numpy as np
import pytest

from paths import run_on_all_paths

from . import loop_vec_kernels as lk

RUN = re.compile(r"device (?:const )?\w+\* c\d+\[(\d+)\];  // one pointer per run of (\d+) contiguous elements")


def _compressed(kernel, *args, **kw) -> list[tuple[int, int]]:
    msl = kernel.warmup(*args, **kw).asm["msl"]
    return [(int(a), int(b)) for a, b in RUN.findall(msl)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: d.__name__)
@pytest.mark.parametrize("m,k", [(64, 256), (60, 250)], ids=["aligned", "ragged"])
def test_matmul_operand_pointers_one_per_run(dtype, m, k):
    a = (np.arange(m * k) % 251 + 1).astype(dtype).reshape(m, k)
    args = lambda: (a, np.zeros((m, k), dtype), m, k, k, 1, k, 1)  # noqa: E731
    kw = {"BLOCK_M": 16, "BLOCK_K": 64}
    # 16 x 64 tiles on 128 threads: 8 elements per thread, in one run (4 fp32 -> 2 runs of 4)
    run = 16 // np.dtype(dtype).itemsize
    assert _compressed(lk.tile_copy_carried_pointers, *args(), **kw, num_warps=4) == [(8 // run, run)] * 2
    run_on_all_paths(lk.tile_copy_carried_pointers, ((m + 15) // 16,), args, lambda *x: {1: a},
                     constexprs=kw, num_warps=4, rtol=0, atol=0)


def test_pointers_not_contiguous_along_the_run_stay_whole():
    # A column-major (stride_ak = m): along K the pointers are m apart, so every element keeps its pointer
    m, k = 64, 256
    a = (np.arange(m * k) % 251 + 1).astype(np.float32).reshape(k, m)
    args = lambda: (a, np.zeros((m, k), np.float32), m, k, 1, m, k, 1)  # noqa: E731
    kw = {"BLOCK_M": 16, "BLOCK_K": 64}
    assert _compressed(lk.tile_copy_carried_pointers, *args(), **kw, num_warps=4) == [(2, 4)]  # B's only
    run_on_all_paths(lk.tile_copy_carried_pointers, (m // 16,), args, lambda *x: {1: a.T}, constexprs=kw,
                     num_warps=4, rtol=0, atol=0)


@pytest.mark.parametrize("step", [1024, 3])
def test_a_misaligned_step_keeps_runs(step):
    # advancing by 3 elements breaks the 16-byte alignment (scalar accesses) but not the contiguity: the tiles
    # are still compressed, and element e = run pointer + e % run is still right
    rows, iters, stride = 3, 5, 8192
    x = (np.arange(rows * stride) % 251 + 1).astype(np.float32).reshape(rows, stride)
    touched = (iters - 1) * step + 1024
    exp = np.zeros_like(x)
    exp[:, :touched] = x[:, :touched]
    args = lambda: (x, np.zeros_like(x), stride, iters)  # noqa: E731
    kw = {"BLOCK": 1024, "STEP": step}
    assert _compressed(lk.row_copy_carried_pointers_unmasked, *args(), **kw, num_warps=4) == [(2, 4)] * 2
    run_on_all_paths(lk.row_copy_carried_pointers_unmasked, (rows,), args, lambda *a: {1: exp}, constexprs=kw,
                     num_warps=4, rtol=0, atol=0)



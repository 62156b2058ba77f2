"""Tiles that Triton treats as scalars: tl.split of a 2-element 1-D tile gives two scalars, and a single-element
tile steers an ``if`` like its element (Triton's "unsplat"); a wider tile is still refused as a condition."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import ALL_PATHS, cpu_available, on_path, path_missing, run_on_all_paths


@enceladus.jit
def split_pair_kernel(x_ptr, lo_ptr, hi_ptr):
    lo, hi = tl.split(tl.load(x_ptr + tl.arange(0, 2)))
    tl.store(lo_ptr, lo)
    tl.store(hi_ptr, hi * 10)  # a scalar in arithmetic: the halves are scalars, not 1-element tiles


@enceladus.jit
def single_element_if_kernel(x_ptr, out_ptr, LIMIT: tl.constexpr):
    cond = tl.load(x_ptr + tl.arange(0, 1)) > LIMIT  # a tile of shape [1]
    if cond:
        tl.store(out_ptr + tl.program_id(0), 42)


@enceladus.jit
def wide_if_kernel(x_ptr, out_ptr):
    cond = tl.load(x_ptr + tl.arange(0, 2)) > 0
    if cond:
        tl.store(out_ptr, 1)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_split_of_a_pair_gives_two_scalars(dtype):
    x = np.array([7, -3], dtype)
    run_on_all_paths(split_pair_kernel, (1,), lambda: (x.copy(), np.zeros(1, dtype), np.zeros(1, dtype)),
                     lambda x, lo, hi: {1: x[:1], 2: x[1:] * 10}, rtol=0, atol=0)


@pytest.mark.parametrize("value,taken", [(41, False), (43, True)])
def test_a_single_element_tile_steers_an_if(value, taken):
    run_on_all_paths(single_element_if_kernel, (3,),
                     lambda: (np.array([value], np.int32), np.zeros(3, np.int32)),
                     lambda x, out: {1: np.full(3, 42 if taken else 0, np.int32)}, constexprs={"LIMIT": 42})


@pytest.mark.parametrize("path", ALL_PATHS)
def test_a_wider_tile_is_still_refused_as_a_condition(path):
    if path == "cpu" and not cpu_available():
        path_missing(path, "no C++ compiler")
    x, out = np.ones(2, np.int32), np.zeros(1, np.int32)
    if path == "interpreter":
        with pytest.raises(ValueError, match="ambiguous"):
            on_path(wide_if_kernel, path)[(1,)](x, out)
    else:
        with pytest.raises(enceladus.CompilationError, match="the condition of an 'if' must be a scalar"):
            on_path(wide_if_kernel, path)[(1,)](x, out)


@enceladus.jit
def ternary_store_kernel(t_ptr, f_ptr, out_ptr):
    pid = tl.program_id(0)
    # a conditional expression whose branches are stores: only the branch taken may run (Triton's test_if)
    tl.store(out_ptr + pid, tl.load(t_ptr)) if pid % 2 == 0 else tl.store(out_ptr + pid, tl.load(f_ptr))


@enceladus.jit
def ternary_load_kernel(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    # the load runs only where pid < n: x has n elements, so evaluating both sides would read past its end
    v = tl.load(x_ptr + pid) if pid < n else -1.0
    tl.store(out_ptr + pid, v * 2)


def test_a_ternary_with_stores_runs_only_the_branch_taken():
    run_on_all_paths(ternary_store_kernel, (6,),
                     lambda: (np.array([1], np.int32), np.array([2], np.int32), np.zeros(6, np.int32)),
                     lambda t, f, out: {2: np.array([1, 2, 1, 2, 1, 2], np.int32)})


def test_a_ternary_loads_only_where_its_condition_holds():
    x = np.arange(1, 4, dtype=np.float32)
    run_on_all_paths(ternary_load_kernel, (6,), lambda: (x.copy(), np.zeros(6, np.float32), 3),
                     lambda x, out, n: {1: np.array([2, 4, 6, -2, -2, -2], np.float32)})

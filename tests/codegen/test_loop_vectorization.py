"""Global accesses inside loops whose addresses are carried across iterations (issue 24, first bullet):
the axis facts of a loop-carried pointer tile, scalar pointer or offset are the meet of its initial value's
facts and those of the value the body yields (a fixpoint), so an access stays a 16-byte vector when every
iteration's address is contiguous and aligned -- and only then.

Each case runs on every path against NumPy, between sentinels (tests/paths.py ``guard``), and checks the
vector width the compiler recorded: full vectors for aligned rows, contiguous pointer tiles and steps that
are multiples of the vector; narrower or scalar accesses for a ragged tail, a view misaligned by one
element, a step that is not a multiple of the vector and strides that break contiguity. A misaligned
vector access faults on the cpu backend and a vector store past the mask overwrites a sentinel, so a wrong
fact fails here on values, not only on metadata.
"""

from __future__ import annotations

import numpy as np
import pytest

from paths import ALL_PATHS, cpu_available, guard, on_path, path_missing

from . import loop_vec_kernels as lk

ROWS = 3
FULL = {np.float32: 4, np.float16: 8}  # elements in 16 bytes


def _launch(kernel, path, grid, arrays, scalars, constexprs, expected, num_warps=4):
    """Launch with each array (array, offset in elements) between sentinels; check the written array
    (the second) against ``expected`` and every sentinel; return the (kind, vector width) of each global
    access the compiled kernel makes (None on the interpreter path)."""
    if path == "cpu" and not cpu_available():
        path_missing("cpu", "no C++ compiler")
    guards = [guard(a, off * a.itemsize) for a, off in arrays]
    views = [g.view for g in guards]
    kern = on_path(kernel, path)
    kern[grid](*views, *scalars, **constexprs, num_warps=num_warps)
    what = f"{kernel.fn.__name__} on the {path} path ({constexprs}, offsets {[off for _, off in arrays]})"
    for i, g in enumerate(guards):
        g.check(f"{what}: argument {i}")
    np.testing.assert_array_equal(views[1], expected, err_msg=what)
    if path != "cpu":
        return None
    ck = kernel.warmup(*views, *scalars, **constexprs, num_warps=num_warps, grid=grid)
    return [(a.kind, a.vector) for a in ck.accesses]


def _rows(dtype, n: int, stride: int):
    x = (np.arange(ROWS * stride) % 251 + 1).astype(dtype).reshape(ROWS, stride)
    return x, np.zeros_like(x)


ROW_KERNELS = [
    ("induction variable", lk.row_copy_offset_loop, {}),
    ("carried offset (while)", lk.row_copy_carried_offset, {"STEP": 1024}),
    ("carried pointer tiles", lk.row_copy_carried_pointers, {"STEP": 1024}),
]


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: d.__name__)
@pytest.mark.parametrize("name,kernel,extra", ROW_KERNELS, ids=[c[0] for c in ROW_KERNELS])
def test_row_loops_vectorize_when_aligned(name, kernel, extra, dtype, path):
    # N a multiple of 16 (several iterations and a last block cut at a vector boundary): full vectors
    n = 3 * 1024 - 16
    x, y = _rows(dtype, n, n)
    exp = x.copy()
    acc = _launch(kernel, path, (ROWS,), [(x, 0), (y, 0)], (n, n), {"BLOCK": 1024, **extra}, exp)
    v = FULL[dtype]
    assert acc in (None, [("load", v), ("store", v)]), (name, acc)


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("name,kernel,extra", ROW_KERNELS, ids=[c[0] for c in ROW_KERNELS])
def test_row_loops_ragged_tail_checks_the_mask_per_run(name, kernel, extra, path):
    # N not a multiple of 16: the mask is constant only in runs of 1, so each run checks it (a vector where
    # it is true throughout, element by element in the run that holds N), and the last iteration writes
    # exactly up to N (the row's padding, up to the stride, stays zero)
    n, stride = 2 * 1024 + 5, 3 * 1024
    x, y = _rows(np.float32, n, stride)
    exp = np.zeros_like(x)
    exp[:, :n] = x[:, :n]
    acc = _launch(kernel, path, (ROWS,), [(x, 0), (y, 0)], (stride, n), {"BLOCK": 1024, **extra}, exp)
    assert acc in (None, [("load", 4), ("store", 4)]), (name, acc)


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("name,kernel,extra", ROW_KERNELS, ids=[c[0] for c in ROW_KERNELS])
def test_row_loops_misaligned_view_is_scalar_on_that_pointer(name, kernel, extra, path):
    # the source one element past a 16-byte boundary: only the load loses its vectors
    n = 2 * 1024
    x, y = _rows(np.float32, n, n)
    acc = _launch(kernel, path, (ROWS,), [(x, 1), (y, 0)], (n, n), {"BLOCK": 1024, **extra}, x.copy())
    assert acc in (None, [("load", 1), ("store", 4)]), (name, acc)
    # and the destination misaligned: only the store
    acc = _launch(kernel, path, (ROWS,), [(x, 0), (y, 1)], (n, n), {"BLOCK": 1024, **extra}, x.copy())
    assert acc in (None, [("load", 4), ("store", 1)]), (name, acc)


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("kernel", [lk.row_copy_carried_offset, lk.row_copy_carried_pointers],
                         ids=["carried offset (while)", "carried pointer tiles"])
@pytest.mark.parametrize("step,vec", [(1024, 4), (512, 4), (6, 2), (3, 1)])
def test_carried_step_decides_the_width(kernel, step, vec, path):
    # a carried address advanced by `step` elements: the blocks overlap when step < BLOCK (every iteration
    # rewrites the same values), and the access is as wide as the step's alignment allows: 16 bytes for a
    # multiple of 4 fp32, 8 bytes for 6 (2 x 4 bytes), scalar for 3
    n = 2048
    x, y = _rows(np.float32, n, n)
    acc = _launch(kernel, path, (ROWS,), [(x, 0), (y, 0)], (n, n), {"BLOCK": 1024, "STEP": step}, x.copy())
    assert acc in (None, [("load", vec), ("store", vec)]), (step, acc)


def _tile_case(dtype, m, k, transposed_a):
    """A (m x k, row-major or its transpose viewed as m x k) and B (m x k) for tile_copy_carried_pointers."""
    base = (np.arange(m * k) % 251 + 1).astype(dtype)
    a = base.reshape(k, m).copy() if transposed_a else base.reshape(m, k).copy()
    b = np.zeros((m, k), dtype)
    av = a.T if transposed_a else a
    strides = (1, m) if transposed_a else (k, 1)
    return a, b, av, strides


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: d.__name__)
@pytest.mark.parametrize("m,k,vec", [(64, 256, "full"), (60, 240, "full"), (64, 250, 1)],
                         ids=["aligned", "ragged rows, K multiple of 16", "ragged K"])
def test_matmul_operand_loop(m, k, vec, dtype, path):
    # the tutorial matmul's operand loop: 2-D pointer tiles advanced by BLOCK_K * stride_ak (stride_ak == 1
    # specialized), masked on M and on K - k * BLOCK_K
    a, b, av, (sam, sak) = _tile_case(dtype, m, k, False)
    acc = _launch(lk.tile_copy_carried_pointers, path, ((m + 15) // 16,), [(a, 0), (b, 0)],
                  (m, k, sam, sak, k, 1), {"BLOCK_M": 16, "BLOCK_K": 64}, av)
    want = FULL[dtype] if vec == "full" else vec
    assert acc in (None, [("load", want), ("store", want)]), acc


@pytest.mark.parametrize("path", ALL_PATHS)
def test_matmul_operand_loop_transposed_converts_odd_stride_is_scalar(path):
    m, k = 64, 256
    # A column-major (stride_ak = m): the pointer tile is contiguous down M, not along K; the load follows
    # memory (16-byte runs down the columns) and the tile reaches the row-major store through threadgroup
    # memory (tests/codegen/test_transpose_layout.py)
    a, b, av, (sam, sak) = _tile_case(np.float32, m, k, True)
    acc = _launch(lk.tile_copy_carried_pointers, path, (m // 16,), [(a, 0), (b, 0)],
                  (m, k, sam, sak, k, 1), {"BLOCK_M": 16, "BLOCK_K": 64}, av)
    assert acc in (None, [("load", 4), ("store", 4)]), acc
    # rows of A one element longer than K (an odd row stride): every row but the first is misaligned
    wide = (np.arange(m * (k + 1)) % 251 + 1).astype(np.float32).reshape(m, k + 1)
    acc = _launch(lk.tile_copy_carried_pointers, path, (m // 16,), [(wide, 0), (np.zeros((m, k), np.float32), 0)],
                  (m, k, k + 1, 1, k, 1), {"BLOCK_M": 16, "BLOCK_K": 64}, wide[:, :k])
    assert acc in (None, [("load", 1), ("store", 4)]), acc


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("n,stride,vec", [(2048, 2048, 4), (2048 - 16, 2048, 4), (2047, 2048, 4), (2048, 2049, 1)],
                         ids=["aligned", "N multiple of 16", "ragged N", "odd row stride"])
def test_nested_loops_carry_row_and_column_pointers(n, stride, vec, path):
    rows_per_program = 2
    x = (np.arange(2 * rows_per_program * stride) % 251 + 1).astype(np.float32).reshape(-1, stride)
    y = np.zeros_like(x)
    exp = np.zeros_like(x)
    exp[:, :n] = x[:, :n]
    acc = _launch(lk.nested_carried_pointers, path, (2,), [(x, 0), (y, 0)], (stride, rows_per_program, n),
                  {"BLOCK": 1024}, exp)
    assert acc in (None, [("load", vec), ("store", vec)]), acc


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("step,vec", [(1024, 4), (8, 4), (6, 2), (3, 1), (1, 1)])
def test_unmasked_carried_pointers_step_decides_the_width(step, vec, path):
    # no mask to hide a wrong fact: a step of 3 elements taken as 16-byte aligned would make a misaligned
    # vector access in the second iteration (a fault on the cpu backend)
    iters, stride = 5, 8192
    x, y = _rows(np.float32, stride, stride)
    touched = (iters - 1) * step + 1024
    exp = np.zeros_like(x)
    exp[:, :touched] = x[:, :touched]
    acc = _launch(lk.row_copy_carried_pointers_unmasked, path, (ROWS,), [(x, 0), (y, 0)], (stride, iters),
                  {"BLOCK": 1024, "STEP": step}, exp)
    assert acc in (None, [("load", vec), ("store", vec)]), (step, acc)

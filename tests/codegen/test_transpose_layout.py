"""A tile stored along another dimension than the one it was loaded along (``tl.trans``/``tl.permute`` of a
loaded tile): the load is done in the default coalesced layout and the tile changes layout through
threadgroup memory, so that both the load and the store are 16-byte vectors (issue 23, the GPU proxy's
transpose row). When the conversion's buffer does not fit in threadgroup memory, the load stays in the
store's layout (narrow loads, no threadgroup memory).

Each case runs on every path against NumPy between sentinels; on the cpu path it checks the vector widths
the compiler recorded, the threadgroup memory and barriers it declared, and runs once more in debug mode,
whose threadgroup-memory race detector reports a missing barrier (docs/cpu_backend.md).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import ALL_PATHS, cpu_available, on_path, path_missing, run_on_all_paths

FULL = {np.float32: 4, np.float16: 8}  # elements in 16 bytes


@enceladus.jit
def transpose_kernel(X, Y, M, N, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = tl.load(X + rm[:, None] * stride_x + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    tl.store(Y + rn[:, None] * stride_y + rm[None, :], tl.trans(tile), mask=(rn[:, None] < N) & (rm[None, :] < M))


@enceladus.jit
def permute3_kernel(X, Y, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    """Y[c, a, b] = 2 * X[a, b, c] + 1 (the permuted tile is computed on before the store)."""
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(X + a * (B * C) + b * C + c)
    z = tl.permute(x * 2 + 1, (2, 0, 1))
    ca = tl.arange(0, C)[:, None, None]
    aa = tl.arange(0, A)[None, :, None]
    ba = tl.arange(0, B)[None, None, :]
    tl.store(Y + ca * (A * B) + aa * B + ba, z)


@enceladus.jit
def transpose_loop_kernel(X, Y, N, BLOCK: tl.constexpr):
    """Transposes BLOCK x BLOCK tiles of one BLOCK-row strip per program, in a loop (the conversion's
    buffer is reused every iteration: a barrier must keep the next write from the previous reads)."""
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    for j in range(0, N, BLOCK):
        rn = j + tl.arange(0, BLOCK)
        tile = tl.load(X + rm[:, None] * N + rn[None, :])
        tl.store(Y + rn[:, None] * N + rm[None, :], tl.trans(tile))


def _compiled(kernel, args, constexprs, grid, num_warps):
    ck = kernel.warmup(*args, **constexprs, num_warps=num_warps, grid=grid)
    return ck, {(a.kind, a.vector) for a in ck.accesses}


def _debug_launch(kernel, grid, args, constexprs, num_warps):
    """Launch once in debug mode on the cpu path (race detector on); an instrumented build that fails would
    only warn, so warnings are errors here."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        on_path(kernel, "cpu")[grid](*args, **constexprs, num_warps=num_warps, debug=True)


def _needs_cpu():
    if not cpu_available():
        path_missing("cpu", "no C++ compiler")


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: d.__name__)
@pytest.mark.parametrize("bm,bn,warps", [(32, 128, 4), (64, 64, 4), (16, 32, 1), (32, 32, 2)])
def test_transpose_is_vectorized_both_ways(dtype, bm, bn, warps):
    M, N = 2 * bm, 3 * bn  # multiples of the tile: every access is a full 16-byte vector
    x = (np.arange(M * N) % 509).astype(dtype).reshape(M, N)
    grid = (M // bm, N // bn)
    meta = {"BLOCK_M": bm, "BLOCK_N": bn}
    make = lambda: (x.copy(), np.zeros((N, M), dtype), M, N, N, M)  # noqa: E731
    run_on_all_paths(transpose_kernel, grid, make, lambda *a: {1: x.T}, constexprs=meta, num_warps=warps,
                     rtol=0, atol=0)
    _needs_cpu()
    ck, widths = _compiled(transpose_kernel, make(), meta, grid, warps)
    assert widths == {("load", FULL[dtype]), ("store", FULL[dtype])}, widths
    assert ck.metadata["threadgroup_memory"] == bm * (bn + 1) * x.itemsize
    assert ck.metadata["barriers"] >= 1
    assert any("converted from" in n for n in ck.metadata["notes"])
    args = make()
    _debug_launch(transpose_kernel, grid, args, meta, warps)
    np.testing.assert_array_equal(args[1], x.T)


@pytest.mark.parametrize("path", ALL_PATHS)
def test_transpose_ragged_edges(path):
    """M and N not multiples of the tile (masks on both sides) and strides that break 16-byte alignment."""
    M, N, bm, bn = 45, 70, 32, 64
    x = np.random.default_rng(1).standard_normal((M, N)).astype(np.float32)
    run_on_all_paths(transpose_kernel, (2, 2), lambda: (x.copy(), np.zeros((N, M), np.float32), M, N, N, M),
                     lambda *a: {1: x.T}, constexprs={"BLOCK_M": bm, "BLOCK_N": bn}, paths=(path,), rtol=0, atol=0)
    if path == "cpu":
        _debug_launch(transpose_kernel, (2, 2), (x.copy(), np.zeros((N, M), np.float32), M, N, N, M),
                      {"BLOCK_M": bm, "BLOCK_N": bn}, 4)


def test_transpose_falls_back_when_the_buffer_does_not_fit():
    """128 x 128 float32 needs 128 x 129 x 4 bytes (> 32 KB) to convert: the tile is loaded in the store's
    layout (narrow loads, 16-byte stores, no threadgroup memory), still correct."""
    M = N = 256
    x = np.arange(M * N, dtype=np.float32).reshape(M, N)
    meta = {"BLOCK_M": 128, "BLOCK_N": 128}
    make = lambda: (x.copy(), np.zeros((N, M), np.float32), M, N, N, M)  # noqa: E731
    run_on_all_paths(transpose_kernel, (2, 2), make, lambda *a: {1: x.T}, constexprs=meta, rtol=0, atol=0)
    _needs_cpu()
    ck, widths = _compiled(transpose_kernel, make(), meta, (2, 2), 4)
    assert ("store", 4) in widths and ("load", 1) in widths, widths
    assert ck.metadata["threadgroup_memory"] == 0


def test_permute3_loads_and_stores_are_vectors():
    A, B, C = 4, 8, 16
    x = np.arange(A * B * C, dtype=np.float32).reshape(A, B, C)
    make = lambda: (x.copy(), np.zeros((C, A, B), np.float32))  # noqa: E731
    meta = {"A": A, "B": B, "C": C}
    ref = np.transpose(2 * x + 1, (2, 0, 1))
    run_on_all_paths(permute3_kernel, (1,), make, lambda *a: {1: ref}, constexprs=meta, rtol=0, atol=0)
    _needs_cpu()
    ck, widths = _compiled(permute3_kernel, make(), meta, (1,), 4)
    assert widths == {("load", 4), ("store", 4)}, widths
    args = make()
    _debug_launch(permute3_kernel, (1,), args, meta, 4)
    np.testing.assert_array_equal(args[1], ref)


def test_transpose_in_a_loop_reuses_the_buffer_race_free():
    N, BLOCK = 128, 32
    x = np.random.default_rng(2).standard_normal((N, N)).astype(np.float32)
    make = lambda: (x.copy(), np.zeros((N, N), np.float32), N)  # noqa: E731
    run_on_all_paths(transpose_loop_kernel, (N // BLOCK,), make, lambda *a: {1: x.T}, constexprs={"BLOCK": BLOCK},
                     rtol=0, atol=0)
    _needs_cpu()
    ck, widths = _compiled(transpose_loop_kernel, make(), {"BLOCK": BLOCK}, (N // BLOCK,), 4)
    assert widths == {("load", 4), ("store", 4)}, widths
    args = make()
    _debug_launch(transpose_loop_kernel, (N // BLOCK,), args, {"BLOCK": BLOCK}, 4)
    np.testing.assert_array_equal(args[1], x.T)


@enceladus.jit
def column_to_row_major(X, Y, M, N, ld_x, ld_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Y (row-major) = X (column-major): the tile's addresses run down dim 0 on load, along dim 1 on store."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(X + rm[:, None] + rn[None, :] * ld_x, mask=mask)
    tl.store(Y + rm[:, None] * ld_y + rn[None, :], tile, mask=mask)


def test_column_major_tile_stored_row_major_is_vectorized_both_ways():
    M, N, bm, bn = 64, 96, 32, 32
    x_cm = np.asfortranarray(np.random.default_rng(3).standard_normal((M, N)).astype(np.float32))
    flat = np.ascontiguousarray(x_cm.T)  # the column-major bytes, as a C-contiguous (N, M) array
    make = lambda: (flat.copy(), np.zeros((M, N), np.float32), M, N, M, N)  # noqa: E731
    meta = {"BLOCK_M": bm, "BLOCK_N": bn}
    run_on_all_paths(column_to_row_major, (M // bm, N // bn), make, lambda *a: {1: x_cm}, constexprs=meta,
                     rtol=0, atol=0)
    _needs_cpu()
    ck, widths = _compiled(column_to_row_major, make(), meta, (M // bm, N // bn), 4)
    assert widths == {("load", 4), ("store", 4)}, widths
    args = make()
    _debug_launch(column_to_row_major, (M // bm, N // bn), args, meta, 4)
    np.testing.assert_array_equal(args[1], x_cm)

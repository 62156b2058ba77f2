"""A loop-carried tile is homed in the layout the loop body uses it in (passes/layouts.py, ``carried_homes``).

Triton's matmuls advance their operand pointers in the loop (``b_ptrs += BLOCK_K * stride_bk``). With a
column-major B (``stride_bk == 1``: tutorial 09 validates its kernels on ``b.T``), B is loaded along its
columns, in another layout than the default one the backward walk homed the carried pointer tile in; every
iteration then converted the pointer tile through threadgroup memory (a [64, 128] tile of 64-bit offsets:
66 KB, so 128x128x64 fp16 tiles were refused with OutOfResources although their operands fit in 32 KB).
Each case runs on every path against NumPy between sentinels, with integer-valued data (exact in fp16 and
fp32); the compiled MSL must convert no pointer tile (a pointer tile moves as 64-bit offsets: ``threadgroup
long``). The epilogue's conversion of the accumulator before its store (16-byte stores) stays where it fits.
"""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from paths import run_on_all_paths


@enceladus.jit
def carried_pointer_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                           stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        left = K - k * BK
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@enceladus.jit
def carried_sum_after_loop(x_ptr, out_ptr, rows, stride_r, stride_c, BR: tl.constexpr, BC: tl.constexpr):
    """The carried pointer tile is also used after the loop (one more row block), in the body's layout."""
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    ptrs = x_ptr + r[:, None] * stride_r + c[None, :] * stride_c
    acc = tl.zeros((BC, BR), tl.float32)
    for _ in range(0, rows // BR - 1):
        acc += tl.trans(tl.load(ptrs))
        ptrs += BR * stride_r
    acc += tl.trans(tl.load(ptrs))
    tl.store(out_ptr + c[:, None] * BR + r[None, :], acc)


def _ints(shape, dtype, seed):
    return np.random.default_rng(seed).integers(-2, 3, size=shape).astype(dtype)


def _matmul_case(m, n, k, dtype, column_major_b):
    a = _ints((m, k), dtype, 1)
    b = _ints((k, n), dtype, 2)
    stored_b = np.ascontiguousarray(b.T) if column_major_b else b  # B[k, j] at k + j * K, or at k * N + j
    strides_b = (1, k) if column_major_b else (n, 1)
    make = lambda: (a, stored_b, np.zeros((m, n), dtype), m, n, k, k, 1, *strides_b, n, 1)  # noqa: E731
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(dtype)
    return make, want


def _pointer_conversions(msl: str) -> list[str]:
    return [line.strip() for line in msl.splitlines() if "threadgroup long" in line and "layout conversion" in line]


@pytest.mark.parametrize("column_major_b", [True, False], ids=["b_column_major", "b_row_major"])
def test_128x128x64_fp16_tiles_fit_in_threadgroup_memory(column_major_b):
    # was: "needs 65536 bytes of threadgroup memory (for layout conversion of %97)" with a column-major B
    m, n, k = 128, 128, 192
    make, want = _matmul_case(m, n, k, np.float16, column_major_b)
    kw = {"BM": 128, "BN": 128, "BK": 64}
    ck = carried_pointer_matmul.warmup(*make(), **kw, num_warps=4, grid=(1, 1))
    assert ck.metadata.shared == 2 * 128 * 64 * 2  # the two staged operands, nothing else
    assert _pointer_conversions(ck.asm["msl"]) == []
    run_on_all_paths(carried_pointer_matmul, (1, 1), make, lambda *x: {2: want}, constexprs=kw, num_warps=4,
                     rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda d: d.__name__)
@pytest.mark.parametrize("bm,bn,bk,warps", [(32, 32, 32, 1), (64, 32, 16, 4), (32, 64, 32, 2)])
@pytest.mark.parametrize("ragged", [False, True])
def test_column_major_b_pointers_are_not_converted_in_the_loop(dtype, bm, bn, bk, warps, ragged):
    m, n, k = (2 * bm, 2 * bn, 3 * bk) if not ragged else (2 * bm - 3, 2 * bn - 5, 3 * bk - 7)
    make, want = _matmul_case(m, n, k, dtype, column_major_b=True)
    kw = {"BM": bm, "BN": bn, "BK": bk}
    ck = carried_pointer_matmul.warmup(*make(), **kw, num_warps=warps, grid=(2, 2))
    assert _pointer_conversions(ck.asm["msl"]) == []
    run_on_all_paths(carried_pointer_matmul, (2, 2), make, lambda *x: {2: want}, constexprs=kw, num_warps=warps,
                     rtol=0, atol=0)


@pytest.mark.parametrize("warps", [1, 4])
def test_carried_tile_used_after_the_loop(warps):
    rows, br, bc = 96, 32, 32
    x = _ints((rows, bc), np.float32, 3)
    # read column-major (stride_r == 1): the loads walk down the columns, the transposes store along rows
    stored = np.ascontiguousarray(x.T)
    make = lambda: (stored, np.zeros((bc, br), np.float32), rows, 1, rows)  # noqa: E731
    want = x.reshape(rows // br, br, bc).sum(axis=0).T
    kw = {"BR": br, "BC": bc}
    ck = carried_sum_after_loop.warmup(*make(), **kw, num_warps=warps, grid=(1,))
    assert _pointer_conversions(ck.asm["msl"]) == []
    run_on_all_paths(carried_sum_after_loop, (1,), make, lambda *a: {1: want}, constexprs=kw, num_warps=warps,
                     rtol=0, atol=0)

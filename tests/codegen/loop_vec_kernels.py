"""Kernels whose global accesses sit in loops, with addresses carried across iterations (pointer tiles,
scalar pointers, offsets): the loop-vectorization tests (test_loop_vectorization.py) inspect their
vector widths and check their values."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def row_copy_offset_loop(X, Y, stride, N, BLOCK: tl.constexpr):
    """Each program copies one row, BLOCK columns per iteration, the offset being the induction variable."""
    row = tl.program_id(0)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        tl.store(Y + row * stride + cols, tl.load(X + row * stride + cols, mask=cols < N), mask=cols < N)


@enceladus.jit
def row_copy_carried_offset(X, Y, stride, N, BLOCK: tl.constexpr, STEP: tl.constexpr):
    """As row_copy_offset_loop, the offset a loop-carried scalar advanced by STEP (a while loop)."""
    row = tl.program_id(0)
    off = 0
    while off < N:
        cols = off + tl.arange(0, BLOCK)
        tl.store(Y + row * stride + cols, tl.load(X + row * stride + cols, mask=cols < N), mask=cols < N)
        off += STEP


@enceladus.jit
def row_copy_carried_pointers(X, Y, stride, N, BLOCK: tl.constexpr, STEP: tl.constexpr):
    """The pointer tiles themselves are carried and advanced by STEP elements per iteration."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x_ptrs = X + row * stride + cols
    y_ptrs = Y + row * stride + cols
    for off in range(0, N, STEP):
        mask = off + cols < N
        tl.store(y_ptrs, tl.load(x_ptrs, mask=mask), mask=mask)
        x_ptrs += STEP
        y_ptrs += STEP


@enceladus.jit
def tile_copy_carried_pointers(A, B, M, K, stride_am, stride_ak, stride_bm, stride_bk,
                               BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """The operand loop of the tutorial matmul: 2-D pointer tiles advanced by BLOCK_K * stride_ak, masked
    on both edges; each program copies a BLOCK_M-row stripe of A into B."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = B + offs_m[:, None] * stride_bm + offs_k[None, :] * stride_bk
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        mask = (offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K)
        tl.store(b_ptrs, tl.load(a_ptrs, mask=mask, other=0.0), mask=mask)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk


@enceladus.jit
def nested_carried_pointers(X, Y, stride, R, N, BLOCK: tl.constexpr):
    """Rows in an outer loop, columns in an inner loop; the row base pointers are carried by the outer loop
    and the column pointer tiles by the inner one."""
    x_row = X + tl.program_id(0) * R * stride
    y_row = Y + tl.program_id(0) * R * stride
    for _r in range(0, R):
        xp = x_row + tl.arange(0, BLOCK)
        yp = y_row + tl.arange(0, BLOCK)
        for off in range(0, N, BLOCK):
            mask = off + tl.arange(0, BLOCK) < N
            tl.store(yp, tl.load(xp, mask=mask), mask=mask)
            xp += BLOCK
            yp += BLOCK
        x_row += stride
        y_row += stride


@enceladus.jit
def row_copy_carried_pointers_unmasked(X, Y, stride, ITERS, BLOCK: tl.constexpr, STEP: tl.constexpr):
    """Carried pointer tiles without a mask: nothing but the pointers' own facts bounds the access width."""
    row = tl.program_id(0)
    x_ptrs = X + row * stride + tl.arange(0, BLOCK)
    y_ptrs = Y + row * stride + tl.arange(0, BLOCK)
    for _ in range(0, ITERS):
        tl.store(y_ptrs, tl.load(x_ptrs))
        x_ptrs += STEP
        y_ptrs += STEP

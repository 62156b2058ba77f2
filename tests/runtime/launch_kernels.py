"""Kernels for the launch tests."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


@enceladus.jit(do_not_specialize=["n"])
def scale_no_spec(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


@enceladus.jit
def strided_scale(x_ptr, out_ptr, M, N, stride_xm, stride_xn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn, mask=mask)
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], x + 1, mask=mask)


@enceladus.jit
def annotated(x_ptr, n: tl.int64, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, (offs + n).to(tl.float32))

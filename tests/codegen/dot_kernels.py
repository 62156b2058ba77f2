"""Kernels for tl.dot tests."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def leaky(x, slope):
    return tl.where(x >= 0, x, x * slope)


@enceladus.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EPILOGUE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + ka[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    if EPILOGUE == "leaky":
        acc = leaky(acc * 0.5, 0.01)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


@enceladus.jit
def small_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, OUT: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if OUT == "default":
        c = tl.dot(a, b)
    elif OUT == "fp16":
        c = tl.dot(a, b, out_dtype=tl.float16)
    elif OUT == "int8":  # Triton ignores out_dtype for int8 operands: the result is int32
        c = tl.dot(a, b, out_dtype=tl.int8)
        tl.static_assert(c.dtype == tl.int32)
    else:
        c = tl.dot(a, b, acc=tl.full((M, N), 1.0, tl.float32))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@enceladus.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rb * M * K + rm[None, :, None] * K + rk[None, None, :])
    b = tl.load(b_ptr + rb * K * N + rk[None, :, None] * N + rn[None, None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rb * M * N + rm[None, :, None] * N + rn[None, None, :], c)


@enceladus.jit
def dot_trans_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    bt = tl.load(b_ptr + rn[:, None] * K + rk[None, :])  # b stored as [N, K]
    c = tl.dot(a, tl.trans(bt))
    s = tl.sum(c, axis=1)  # a reduction straight from the accumulator layout
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c - s[:, None])


@enceladus.jit
def bad_dot_shapes(a_ptr):
    x = tl.load(a_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    y = tl.load(a_ptr + tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :])
    tl.store(a_ptr, tl.sum(tl.sum(tl.dot(x, y), 0), 0))  # <- here


@enceladus.jit
def bad_dot_dtypes(a_ptr, b_ptr):
    x = tl.load(a_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    y = tl.load(b_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    tl.store(a_ptr, tl.sum(tl.sum(tl.dot(x, y), 0), 0))  # <- here


@enceladus.jit
def two_dot_layouts_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # two dots whose accumulators get different fragment layouts; a row sum of one scales the other
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    s = tl.sum(tl.dot(a, tl.trans(a)), 1)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b) / s[:, None])

"""Kernels for the matmul2d accumulator kept in a cooperative tensor across the K loop (test_matmul2d_carried.py)."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def kloop_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, scale, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr, FORM: tl.constexpr):
    """C = epilogue(A @ B) over a K loop, the accumulator carried in one of several source forms."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    if FORM == "bias":  # a loaded initial value (not a splat): moved into the cooperative tensor once
        acc = tl.load(bias_ptr + rm[:, None] * N + rn[None, :], mask=out_mask, other=0.0)
    elif FORM == "full":
        acc = tl.full((BM, BN), 1.5, tl.float32)
    else:
        acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        if FORM == "add":
            acc += tl.dot(a, b)
        elif FORM == "scaled":  # the carried value is used by more than the dot: stays in registers
            acc = tl.dot(a, b, acc) * 1.0
        else:
            acc = tl.dot(a, b, acc)
    c = (acc * scale).to(c_ptr.dtype.element_ty)  # epilogue: scale, cast, masked store
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=out_mask)


@enceladus.jit
def two_loops_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Two K loops one after the other, each with its own carried accumulator: C = A @ B + 2 A @ B."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc1 = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc1 = tl.dot(a, b, acc1)
    acc2 = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc2 += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc1 + 2.0 * acc2)


@enceladus.jit
def nested_kernel(a_ptr, b_ptr, c_ptr, K, KC, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """K in chunks of KC, each chunk a K loop of its own carrying the accumulator (the inner loop's cooperative
    tensor starts from the outer loop's register tile each time): C = A @ B."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for kc in range(0, K, KC):
        for k in range(kc, kc + KC, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
            acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@enceladus.jit
def two_dots_kernel(a_ptr, b_ptr, d_ptr, c_ptr, e_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Two accumulators carried by one K loop (a gated-MLP shape: A @ B and A @ D), each in its own cooperative
    tensor."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc1 = tl.zeros((BM, BN), tl.float32)
    acc2 = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        d = tl.load(d_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc1 = tl.dot(a, b, acc1)
        acc2 += tl.dot(a, d)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc1)
    tl.store(e_ptr + rm[:, None] * BN + rn[None, :], acc2 * 2.0)

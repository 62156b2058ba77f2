"""Kernels whose tiles of pointers must change layout."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def two_dots_through_advancing_pointers(q_ptr, k_ptr, out_ptr, steps, N: tl.constexpr, M: tl.constexpr,
                                        D: tl.constexpr):
    # the shape of fused attention's dK/dV loop: qT feeds tl.dot(k, qT) and tl.dot(s, tl.trans(qT)), so the
    # loop-carried pointers it is loaded through are needed in two layouts
    offs_n = tl.arange(0, N)
    offs_m = tl.arange(0, M)
    offs_d = tl.arange(0, D)
    k = tl.load(k_ptr + offs_n[:, None] * D + offs_d[None, :])
    qT_ptrs = q_ptr + offs_m[None, :] * D + offs_d[:, None]
    acc = tl.zeros([N, D], dtype=tl.float32)
    for _ in range(steps):
        qT = tl.load(qT_ptrs)
        s = tl.dot(k, qT)
        acc += tl.dot(s.to(tl.float16), tl.trans(qT))
        qT_ptrs += M * D
    tl.store(out_ptr + offs_n[:, None] * D + offs_d[None, :], acc)


@enceladus.jit
def reshape_flip_pointers(x_ptr, out_ptr):
    p = x_ptr + tl.arange(0, 64)
    q = tl.reshape(p, (8, 8))
    r = tl.flip(q, 1)
    rows = tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :]
    tl.store(out_ptr + rows, tl.load(r))
    tl.store(out_ptr + 64 + rows, tl.load(q) * 2)
    c = tl.cat(x_ptr + 32 + tl.arange(0, 32), x_ptr + tl.arange(0, 32), can_reorder=True)
    tl.store(out_ptr + 128 + tl.arange(0, 64), tl.load(c))


@enceladus.jit
def cat_pointers_of_two_arguments(x_ptr, y_ptr, out_ptr):
    p = tl.cat(x_ptr + tl.arange(0, 32), y_ptr + tl.arange(0, 32), can_reorder=True)
    tl.store(out_ptr + tl.arange(0, 64), tl.load(p))

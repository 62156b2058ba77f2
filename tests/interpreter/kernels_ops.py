"""Kernels for the ops the interpreter runs ahead of the compiler: reductions, scans, shape ops, dot..."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@enceladus.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@enceladus.jit
def reduce_kernel(x_ptr, out_ptr, idx_ptr, OP: tl.constexpr, AXIS: tl.constexpr, R: tl.constexpr,
                  C: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + pid * R * C + offs)
    n = C if AXIS == 0 else R
    outs = tl.arange(0, n)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS)
    elif OP == "max":
        r, i = tl.max(x, axis=AXIS, return_indices=True)
        tl.store(idx_ptr + pid * n + outs, i)
    elif OP == "min":
        r = tl.min(x, axis=AXIS)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS)
    elif OP == "xor":
        r = tl.xor_sum(x, axis=AXIS)
    else:
        r = x.sum(AXIS)
    tl.store(out_ptr + pid * n + outs, r)


@enceladus.jit
def full_sum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.program_id(0), tl.sum(x))


@enceladus.jit
def _pair_max(a, ia, b, ib):
    take_b = b > a
    return tl.where(take_b, b, a), tl.where(take_b, ib, ia)


@enceladus.jit
def _add(a, b):
    return a + b


@enceladus.jit
def _first_nonzero(a, b):
    # Associative but not commutative: keeps the earliest non-zero value.
    return tl.where(a != 0, a, b)


@enceladus.jit
def custom_reduce_kernel(x_ptr, out_ptr, idx_ptr, first_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    m, i = tl.reduce((x, offs), 0, _pair_max)
    tl.store(out_ptr + pid, m)
    tl.store(idx_ptr + pid, i)
    tl.store(first_ptr + pid, tl.reduce(x, 0, _first_nonzero))


@enceladus.jit
def scan_kernel(x_ptr, out_ptr, rev_ptr, custom_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0))
    tl.store(rev_ptr + offs, tl.cumsum(x, 0, reverse=True))
    tl.store(custom_ptr + offs, tl.associative_scan(x, 0, _add))


@enceladus.jit
def shape_kernel(x_ptr, t_ptr, r_ptr, j_ptr, s_ptr, f_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    t_offs = tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :]
    tl.store(t_ptr + t_offs, tl.trans(x))
    tl.store(r_ptr + tl.arange(0, M * N), tl.reshape(x, M * N))
    j = tl.join(x, x * 2)
    tl.store(j_ptr + offs[:, :, None] * 2 + tl.arange(0, 2)[None, None, :], j)
    a, b = tl.split(j)
    tl.store(s_ptr + offs, a + b)
    tl.store(f_ptr + offs, tl.flip(x, 1))


@enceladus.jit
def sort_gather_kernel(x_ptr, idx_ptr, sorted_ptr, gathered_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(sorted_ptr + offs, tl.sort(x, descending=True))
    idx = tl.load(idx_ptr + offs)
    tl.store(gathered_ptr + offs, tl.gather(x, idx, 0))


@enceladus.jit
def histogram_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, BINS: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.program_id(0) * BINS + tl.arange(0, BINS), tl.histogram(x, BINS))


@enceladus.jit
def atomic_kernel(x_ptr, counts_ptr, old_ptr, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    bins = tl.load(x_ptr + offs)
    tl.atomic_add(counts_ptr + bins, 1)
    old = tl.atomic_max(old_ptr + tl.arange(0, 1), tl.program_id(0) + tl.zeros((1,), tl.int32))
    tl.store(old_ptr + 1 + tl.program_id(0) + tl.arange(0, 1), old)


@enceladus.jit
def rand_kernel(out_ptr, seed, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if KIND == "rand":
        r = tl.rand(seed, offs)
    elif KIND == "randn":
        r = tl.randn(seed, offs)
    else:
        r = tl.randint(seed, offs)
    tl.store(out_ptr + offs, r, mask=offs < n)


@enceladus.jit
def dot_dtype_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


@enceladus.jit
def tile_op_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    # out has room for M * N * 2 elements; each OP writes its result flattened.
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "cumprod":
        r = tl.reshape(tl.cumprod(x, axis=1), M * N)
    elif OP == "argmin":
        r = tl.argmin(x, axis=1)
    elif OP == "interleave":
        r = tl.reshape(tl.interleave(x, y), M * N * 2)
    elif OP == "cat":
        r = tl.reshape(tl.cat(x, y, dim=0), M * N * 2)
    elif OP == "permute":
        r = tl.reshape(tl.permute(tl.reshape(x, (M, N // 2, 2)), (2, 0, 1)), M * N)
    elif OP == "expand_broadcast":
        r = tl.reshape(tl.broadcast_to(tl.expand_dims(tl.sum(x, 1), 1), (M, N)), M * N)
    elif OP == "umulhi":
        r = tl.reshape(tl.umulhi(x, y), M * N)
    elif OP == "fdiv":
        r = tl.reshape(tl.fdiv(x, y), M * N)
    elif OP == "rtz":
        r = tl.reshape(x.to(tl.float16, fp_downcast_rounding="rtz"), M * N)
    elif OP == "cumsum_int8":
        r = tl.reshape(tl.cumsum(x, axis=1), M * N)
    else:
        r = tl.reshape(x.T, M * N)
    tl.store(out_ptr + tl.arange(0, r.shape[0]), r)


@enceladus.jit
def swizzle_kernel(out_ptr, M: tl.constexpr, N: tl.constexpr, G: tl.constexpr):
    i = tl.program_id(0)
    j = tl.program_id(1)
    si, sj = tl.swizzle2d(i, j, M, N, G)
    tl.store(out_ptr + (i * N + j) * 2 + tl.arange(0, 2), tl.where(tl.arange(0, 2) == 0, si, sj))


@enceladus.jit
def cas_kernel(lock_ptr, out_ptr):
    pid = tl.program_id(0)
    old = tl.atomic_cas(lock_ptr, 0, pid + 1)
    prev = tl.atomic_xchg(lock_ptr + 1, pid)
    tl.store(out_ptr + pid * 2, old)
    tl.store(out_ptr + pid * 2 + 1, prev)

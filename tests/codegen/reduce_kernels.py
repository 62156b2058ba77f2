"""Kernels for reductions, scans, shape ops and control flow (compiled and interpreted)."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def reduce2d_kernel(x_ptr, out_ptr, M, N, OP: tl.constexpr, AXIS: tl.constexpr, BM: tl.constexpr,
                    BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS)
    elif OP == "max":
        r = tl.max(x, axis=AXIS)
    elif OP == "min":
        r = tl.min(x, axis=AXIS)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS)
    elif OP == "argmin":
        r = tl.argmin(x, axis=AXIS)
    elif OP == "xor_sum":
        r = tl.xor_sum(x, axis=AXIS)
    else:
        tl.static_assert(False, "unknown op")
    if AXIS == 0:
        tl.store(out_ptr + rn, r, mask=rn < N)
    else:
        tl.store(out_ptr + rm, r, mask=rm < M)


@enceladus.jit
def reduce_all_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x))
    tl.store(out_ptr + 1, tl.max(x, axis=0))
    tl.store(out_ptr + 2, x.sum(0) * 2)


@enceladus.jit
def keep_dims_kernel(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    centered = x - tl.sum(x, axis=1, keep_dims=True) / BN
    scaled = centered / tl.max(tl.abs(centered), axis=0, keep_dims=True)
    tl.store(out_ptr + rm[:, None] * BN + rn[None, :], scaled)


@enceladus.jit
def reduce3d_kernel(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    ia = tl.arange(0, A)[:, None, None]
    ib = tl.arange(0, B)[None, :, None]
    ic = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ia * B * C + ib * C + ic)
    r = tl.sum(x, axis=AXIS)
    if AXIS == 0:
        tl.store(out_ptr + tl.arange(0, B)[:, None] * C + tl.arange(0, C)[None, :], r)
    elif AXIS == 1:
        tl.store(out_ptr + tl.arange(0, A)[:, None] * C + tl.arange(0, C)[None, :], r)
    else:
        tl.store(out_ptr + tl.arange(0, A)[:, None] * B + tl.arange(0, B)[None, :], r)


@enceladus.jit
def max_with_index(a, ia, b, ib):
    better = (a > b) | ((a == b) & (ia < ib))
    return tl.where(better, a, b), tl.where(better, ia, ib)


@enceladus.jit
def custom_reduce_kernel(x_ptr, val_ptr, idx_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=-float("inf"))
    v, i = tl.reduce((x, offs), 0, max_with_index)
    tl.store(val_ptr, v)
    tl.store(idx_ptr, i)


@enceladus.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(out_ptr + row * stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@enceladus.jit
def shape_ops_kernel(x_ptr, out_ptr, OP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    if OP == "trans":
        y = tl.trans(x)
        tl.store(out_ptr + rn[:, None] * BM + rm[None, :], y)
    elif OP == "T":
        y = x.T + 1
        tl.store(out_ptr + rn[:, None] * BM + rm[None, :], y)
    elif OP == "reshape":
        y = tl.reshape(x, (BN, BM))
        tl.store(out_ptr + rn[:, None] * BM + rm[None, :], y)
    elif OP == "ravel":
        y = tl.ravel(x)
        tl.store(out_ptr + tl.arange(0, BM * BN), y)
    elif OP == "flip":
        y = tl.flip(x, 1)
        tl.store(out_ptr + rm[:, None] * BN + rn[None, :], y)
    elif OP == "flip0":
        y = tl.flip(x, 0)
        tl.store(out_ptr + rm[:, None] * BN + rn[None, :], y)
    elif OP == "cat":
        y = tl.cat(x, x * 2, can_reorder=False)
        r2 = tl.arange(0, 2 * BM)
        tl.store(out_ptr + r2[:, None] * BN + rn[None, :], y)
    elif OP == "split":
        a, b = tl.split(tl.reshape(x, (BM, BN // 2, 2)))
        h = tl.arange(0, BN // 2)
        tl.store(out_ptr + rm[:, None] * BN + h[None, :], a)
        tl.store(out_ptr + rm[:, None] * BN + BN // 2 + h[None, :], b)
    elif OP == "join":
        j = tl.join(x, x + 100)
        k = tl.arange(0, 2)
        tl.store(out_ptr + rm[:, None, None] * BN * 2 + rn[None, :, None] * 2 + k[None, None, :], j)
    elif OP == "interleave":
        y = tl.interleave(x, -x)
        r2 = tl.arange(0, 2 * BN)
        tl.store(out_ptr + rm[:, None] * 2 * BN + r2[None, :], y)
    elif OP == "broadcast_to":
        row = tl.load(x_ptr + rn)
        y = tl.broadcast_to(row[None, :], (BM, BN)) + tl.expand_dims(rm, 1)
        tl.store(out_ptr + rm[:, None] * BN + rn[None, :], y)
    elif OP == "permute3":
        y = tl.reshape(x, (2, BM // 2, BN))
        z = tl.permute(y, (2, 0, 1))
        a = tl.arange(0, BN)[:, None, None]
        b = tl.arange(0, 2)[None, :, None]
        c = tl.arange(0, BM // 2)[None, None, :]
        tl.store(out_ptr + a * BM + b * (BM // 2) + c, z)
    elif OP == "squeeze":
        col = tl.sum(x, axis=1, keep_dims=True)
        tl.store(out_ptr + rm, tl.squeeze(col, 1))
    else:
        tl.static_assert(False, "unknown op")


@enceladus.jit
def loop_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@enceladus.jit
def control_kernel(out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid >= n:
        return
    if MODE == 0:  # runtime if/elif/else with tiles defined in branches
        if pid % 3 == 0:
            v = offs * 2
        elif pid % 3 == 1:
            v = offs + 100
        else:
            v = -offs
    elif MODE == 1:  # while with carried scalar and tile
        i = 0
        v = tl.zeros((BLOCK,), tl.int32)
        while i < pid:
            v += offs
            i += 1
    elif MODE == 2:  # negative step, nested loops
        v = tl.zeros((BLOCK,), tl.int32)
        for i in range(pid, 0, -1):
            for j in range(0, 2):
                v += i * (j + 1)
    else:  # ternary on runtime scalars, static_range
        k = pid * 2 if pid > 1 else pid + 7
        v = offs + k
        for s in tl.static_range(3):
            v = v * 2 + s
    tl.store(out_ptr + pid * BLOCK + offs, v)


@enceladus.jit
def layout_conversion_kernel(x_ptr, y_ptr, out_ptr, out2_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    bias = tl.load(y_ptr + rn)  # loaded once, used as 1-D and in 2-D
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    tl.store(out_ptr + rm[:, None] * BN + rn[None, :], x + bias[None, :])
    tl.store(out2_ptr + rn, bias * 2)


@enceladus.jit
def scan_kernel(x_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "cumsum":
        y = tl.cumsum(x, 0)
    else:
        y = tl.cumprod(x, 0)
    tl.store(out_ptr + offs, y)


@enceladus.jit
def pair_first(a, ia, b, ib):
    # a non-commutative combine: keeps the sum of values and the index of the first element
    return a + b, ia


@enceladus.jit
def scan2d_kernel(x_ptr, out_ptr, idx_ptr, OP: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    if OP == "cumsum":
        y = tl.cumsum(x, AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        y = tl.cumprod(x, AXIS, reverse=REVERSE)
    else:
        idx = tl.broadcast_to(rn[None, :], (BM, BN)) + rm[:, None] * BN
        y, i = tl.associative_scan((x, idx), AXIS, pair_first, reverse=REVERSE)
        tl.store(idx_ptr + rm[:, None] * BN + rn[None, :], i)
    tl.store(out_ptr + rm[:, None] * BN + rn[None, :], y)


@enceladus.jit
def narrow_max_min(x_ptr, out_ptr, N: tl.constexpr, WANT: tl.constexpr, INDICES: tl.constexpr):
    """max/min of a narrow tile: Triton 3.9 reduces types narrower than 32 bits in int32/fp32 (without indices;
    with indices only bf16 widens), so the sum of the two results does not wrap in the narrow type."""
    x = tl.load(x_ptr + tl.arange(0, N))
    if INDICES:
        hi, i = tl.max(x, axis=0, return_indices=True)
        lo, j = tl.min(x, axis=0, return_indices=True)
    else:
        hi = tl.max(x, axis=0)
        lo = tl.min(x, axis=0)
    tl.static_assert(hi.dtype == WANT)
    tl.static_assert(lo.dtype == WANT)
    tl.store(out_ptr, hi + hi)
    tl.store(out_ptr + 1, lo + lo)

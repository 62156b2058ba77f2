"""Benchmark kernels the examples do not cover, written in the Enceladus language (Triton-compatible:
the GPU proxy also compiles this very source with Triton by swapping the imports).

Each comes with the config the proxy's table uses and the reason for it, stated so it holds for Apple
GPUs too (32-wide SIMD groups, threadgroup memory, registers per thread, memory bandwidth).
"""

import enceladus
import enceladus.language as tl


@enceladus.jit
def layer_norm_bwd_dx(DX, DY, DW_partial, DB_partial, X, W, Mean, Rstd, stride, M, N, BLOCK_N: tl.constexpr):
    """dx of layer norm for rows pid, pid + P, ...; this program's partial sums of dw and db go to row pid
    of DW_partial / DB_partial (no locks: a second kernel adds the P partial rows)."""
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(pid, M, n_programs):
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(DX + row * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
        dw += dy * xhat
        db += dy
    tl.store(DW_partial + pid * N + cols, dw, mask=mask)
    tl.store(DB_partial + pid * N + cols, db, mask=mask)


@enceladus.jit
def layer_norm_bwd_dwdb(DW_partial, DB_partial, DW, DB, P, N, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    """dw and db: the column sums of the P partial rows."""
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_P, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_P, BLOCK_N), dtype=tl.float32)
    for i in range(0, P, BLOCK_P):
        rows = i + tl.arange(0, BLOCK_P)
        mask = (rows[:, None] < P) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW_partial + offs, mask=mask, other=0.0)
        db += tl.load(DB_partial + offs, mask=mask, other=0.0)
    tl.store(DW + cols, tl.sum(dw, axis=0).to(DW.dtype.element_ty), mask=cols < N)
    tl.store(DB + cols, tl.sum(db, axis=0).to(DB.dtype.element_ty), mask=cols < N)


@enceladus.jit
def cross_entropy_fwd(Logits, Labels, Loss, stride, V, BLOCK: tl.constexpr):
    """Per-row cross-entropy loss logsumexp(x) - x[label], streaming the row in blocks (online logsumexp).

    e^t is written exp2(t * log2(e)), as Triton's attention tutorial writes its softmax: base 2 is the native
    exponential of both GPUs (NVIDIA's ex2; Apple's G13 has exp2 and log2 instructions and no e^x, per the
    reverse-engineered ISA at github.com/dougallj/applegpu, not Apple documentation), and Triton itself lowers
    tl.exp to ex2.approx(t * log2 e). Accuracy: rounding t = x - m, log2(e) and the product moves each term by a
    relative 2.3 * 2^-24 * |t| at most, on top of exp2's own bound (Apple: 4 ulp, as for exp). Weighted by the
    terms' shares of the sum, the mean of |t| is at most ln V (it is H(p) - ln s <= ln V), so the sum gains at
    most about 2.3 * 2^-24 * ln V relative error (1.4e-6 at V = 32768), and the loss as much, absolutely."""
    row = tl.program_id(0)
    base = Logits + row * stride
    m = -float("inf")
    s = 0.0
    for off in range(0, V, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < V, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp2((m - m_new) * 1.4426950408889634) + tl.sum(tl.exp2((x - m_new) * 1.4426950408889634), axis=0)
        m = m_new
    label = tl.load(Labels + row)
    x_label = tl.load(base + label).to(tl.float32)
    tl.store(Loss + row, tl.log(s) + m - x_label)


@enceladus.jit
def transpose_kernel(X, Y, M, N, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Y = X^T for an M x N matrix X, one BLOCK_M x BLOCK_N tile per program."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = tl.load(X + rm[:, None] * stride_x + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N))
    tl.store(Y + rn[:, None] * stride_y + rm[None, :], tl.trans(tile), mask=(rn[:, None] < N) & (rm[None, :] < M))


@enceladus.jit(do_not_specialize=["stride_xn"])
def transpose_strided_kernel(X, Y, M, N, stride_x, stride_xn, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """transpose_kernel with X's column stride a run-time argument that is not specialized (do_not_specialize),
    so the compiler cannot know X's rows are contiguous: it loads the tile in the store's layout, 4-byte loads
    and no threadgroup memory, as before loads learned to convert. The GPU proxy's sweep times it beside
    transpose_kernel at the same tiles (launched with stride_xn = 1)."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = tl.load(X + rm[:, None] * stride_x + rn[None, :] * stride_xn, mask=(rm[:, None] < M) & (rn[None, :] < N))
    tl.store(Y + rn[:, None] * stride_y + rm[None, :], tl.trans(tile), mask=(rn[:, None] < N) & (rm[None, :] < M))


@enceladus.jit
def histogram_kernel(X, Hist, n, BLOCK: tl.constexpr, RELAXED: tl.constexpr):
    """Hist[X[i]] += 1 for every i (values already in range): one atomic per element onto few addresses.
    RELAXED=False is Triton's default order (acq_rel: on Metal, device-scope fences around the relaxed
    atomic), RELAXED=True the same atomic without them (issue 21's fence cost)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(X + offs, mask=mask, other=0)
    if RELAXED:
        tl.atomic_add(Hist + v, 1, mask=mask, sem="relaxed")
    else:
        tl.atomic_add(Hist + v, 1, mask=mask)


@enceladus.jit
def atomic_accumulate(X, Out, n, BLOCK: tl.constexpr, RELAXED: tl.constexpr):
    """Out[i] += X[i] by one atomic per element, every address distinct (no contention): the cost of the
    atomics and their fences alone. RELAXED as in histogram_kernel."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    if RELAXED:
        tl.atomic_add(Out + offs, x, mask=mask, sem="relaxed")
    else:
        tl.atomic_add(Out + offs, x, mask=mask)


@enceladus.jit
def _uniform(r):
    """uint32 -> float32 uniform in [0, 1), as Triton's tl.rand maps Philox output."""
    i = r.to(tl.int32, bitcast=True)
    i = tl.where(i < 0, -i - 1, i)
    return i.to(tl.float32) * 4.6566127342e-10


@enceladus.jit
def _dropout_part(x_ptr, output_ptr, offsets, n_elements, r, p, scale):
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, tl.where(_uniform(r) > p, x * scale, 0.0), mask=mask)


@enceladus.jit
def seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    """Dropout whose keep mask comes from Philox (no mask tensor in memory). One Philox evaluation gives
    four uniforms, so each program draws for four quarter-blocks at once (a quarter of the 32-bit integer
    multiplies of one evaluation per element); kept values are scaled by 1 / (1 - p), computed once."""
    pid = tl.program_id(axis=0)
    quarter: tl.constexpr = BLOCK_SIZE // 4
    lane = tl.arange(0, quarter)
    r0, r1, r2, r3 = tl.randint4x(seed, pid * quarter + lane)
    scale = 1.0 / (1.0 - p)
    base = pid * BLOCK_SIZE + lane
    _dropout_part(x_ptr, output_ptr, base, n_elements, r0, p, scale)
    _dropout_part(x_ptr, output_ptr, base + quarter, n_elements, r1, p, scale)
    _dropout_part(x_ptr, output_ptr, base + 2 * quarter, n_elements, r2, p, scale)
    _dropout_part(x_ptr, output_ptr, base + 3 * quarter, n_elements, r3, p, scale)


# --- configs (host side) ---------------------------------------------------------------------------------
def layer_norm_bwd_programs(M: int) -> int:
    """Programs of layer_norm_bwd_dx: 512 fills the largest GPUs (an H200's 132 multiprocessors, an M-series
    Ultra's 80 GPU cores, a few threadgroups each) while the partial sums stay small next to the data
    (512 rows of N against M rows read twice)."""
    return min(M, 512)


def layer_norm_bwd_dx_warps(block_n: int) -> int:
    """SIMD groups for a row of block_n elements: 8 elements per thread up to 8 SIMD groups (256 threads),
    which keeps x, dy, w and the two partial sums in registers (5 x 8 floats per thread at 1024 columns,
    5 x 16 at 4096)."""
    return min(max(block_n // 256, 1), 8)


def cross_entropy_config(V: int) -> tuple[int, int]:
    """BLOCK and num_warps: 4096 elements per step (16 KiB of float32) over 4 SIMD groups. Each step does
    two reductions across SIMD groups (max, then sum), each a barrier and a threadgroup-memory round trip;
    4 SIMD groups make those cheaper than 8 while each thread still keeps 32 values, eight 16-byte loads, in
    flight (GPU proxy: 8 SIMD groups 0.99x, 4 SIMD groups 1.00x Triton on the same source)."""
    return min(enceladus.next_power_of_2(V), 4096), 4


def transpose_config() -> tuple[int, int, int]:
    """BLOCK_M, BLOCK_N, num_warps: 32 x 128 tiles over 4 SIMD groups. The compiler loads the tile along
    X's rows and stores the transposed tile along Y's rows, both as 16-byte vectors, converting between
    the two layouts through 32 x 129 x 4 bytes (16.5 KB) of threadgroup memory: half of Metal's 32 KB,
    so two threadgroups fit where a core has 32 KB or more. (GPU proxy, before that conversion existed: the
    loads were 4-byte scalars, 0.98x Triton on the same source here, 0.90x at 64 x 64; the table's sweep
    times the other tile shapes.)"""
    return 32, 128, 4

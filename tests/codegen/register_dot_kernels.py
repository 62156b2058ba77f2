"""Dots whose A fragments come from registers (loop-invariant A, or another dot's result) and dots whose B is
read down the columns of memory (K^T): flash attention's shape and smaller pieces of it."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def attention_kernel(Q, K, V, Out, sm_scale, stride_h, stride_m, N_CTX, HEAD_DIM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX) if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * stride_m + offs_d[:, None], mask=cols[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k) * (sm_scale * 1.44269504)
        valid = cols[None, :] < N_CTX
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(valid, qk, -float("inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * stride_m + offs_d[None, :], mask=cols[:, None] < N_CTX, other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_ij
    out = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * stride_m + offs_d[None, :], out.to(Out.dtype.element_ty),
             mask=offs_m[:, None] < N_CTX)


@enceladus.jit
def invariant_a_kernel(a_ptr, b_ptr, c_ptr, NB, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # A is loaded once; each iteration multiplies it by another block of B and stores that product
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    for j in range(0, NB):
        b = tl.load(b_ptr + j * K * N + rk[:, None] * N + rn[None, :])
        tl.store(c_ptr + j * M * N + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@enceladus.jit
def chained_dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, NB, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                       D: tl.constexpr):
    # out = sum_j (A_j @ B) @ C_j: the first product is the second's A, straight from its registers
    rm, rn, rk, rd = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, D)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    acc = tl.zeros((M, D), tl.float32)
    for j in range(0, NB):
        a = tl.load(a_ptr + j * M * K + rm[:, None] * K + rk[None, :])
        s = tl.dot(a, b)
        c = tl.load(c_ptr + j * N * D + rn[:, None] * D + rd[None, :])
        acc = tl.dot(s.to(c.dtype), c, acc)
    tl.store(out_ptr + rm[:, None] * D + rd[None, :], acc)


@enceladus.jit
def transposed_b_kernel(a_ptr, bt_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # B = Bt^T read straight from the row-major [N, K] array Bt: contiguous down B's columns
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(bt_ptr + rn[None, :] * K + rk[:, None])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@enceladus.jit
def dot_row_max_kernel(a_ptr, b_ptr, out_ptr, NB, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # the running row maximum of A @ B_j over j: carried across the loop as a slice of the dot's fragments
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    m = tl.load(out_ptr + rm)
    for j in range(0, NB):
        b = tl.load(b_ptr + j * K * N + rk[:, None] * N + rn[None, :])
        m = tl.maximum(m, tl.max(tl.dot(a, b), 1))
    tl.store(out_ptr + rm, m)

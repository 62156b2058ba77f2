"""Flash attention forward (online softmax), causal and non-causal, head dims 64 and 128.

Q.K^T and P.V are tl.dot on simdgroup_matrix fragments; the running row maximum and sum are reduced straight
from the accumulator layout, and the output accumulator stays in registers across the whole loop.
"""

import numpy as np

import enceladus
import enceladus.language as tl


@enceladus.jit
def attn_fwd(Q, K, V, Out, sm_scale, stride_h, stride_m, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
             BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    base = off_h * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + base + offs_m[:, None] * stride_m + offs_d[None, :], mask=offs_m[:, None] < N_CTX, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))
    hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX) if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * stride_m + offs_d[:, None], mask=cols[None, :] < N_CTX, other=0.0)
        qk = tl.dot(q, k) * qk_scale
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


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, sm_scale: float) -> np.ndarray:
    heads, n_ctx, head_dim = q.shape
    out = np.empty_like(q)
    block_m, block_n = 32, 32
    attn_fwd[(enceladus.cdiv(n_ctx, block_m), heads)](q, k, v, out, sm_scale, n_ctx * head_dim, head_dim, n_ctx,
                                                     HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
                                                     CAUSAL=causal, num_warps=4)
    return out


def reference(q, k, v, causal, sm_scale):
    q, k, v = (x.astype(np.float32) for x in (q, k, v))
    s = q @ k.transpose(0, 2, 1) * sm_scale
    if causal:
        n = q.shape[1]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    for head_dim in (64, 128):
        for causal in (False, True):
            q, k, v = (rng.standard_normal((2, 100, head_dim)).astype(np.float16) for _ in range(3))
            scale = 1 / np.sqrt(head_dim)
            out = attention(q, k, v, causal, scale)
            np.testing.assert_allclose(out.astype(np.float32), reference(q, k, v, causal, scale), atol=2e-2, rtol=2e-2)
    print(f"flash attention (head dim 64 and 128, causal and not): OK on the '{enceladus.backend_name()}' backend")

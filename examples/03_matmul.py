"""Matrix multiply in the style of Triton's tutorial: grouped program ordering for cache reuse, a fused
activation through a nested @jit function, and @enceladus.autotune over a few block configurations.

tl.dot lowers to simdgroup_matrix 8x8 multiply-accumulates with the accumulator kept in registers.
"""

import numpy as np

import enceladus
import enceladus.language as tl


@enceladus.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@enceladus.autotune(
    configs=[
        enceladus.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4}, num_warps=4),
        enceladus.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 4}, num_warps=4),
        enceladus.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=2),
    ],
    key=["M", "N", "K"],
    cache_results=True,
)
@enceladus.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    # programs that share rows of A run next to each other (better reuse of A in the cache)
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_am[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_bn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn, c,
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def matmul(a: np.ndarray, b: np.ndarray, activation: str = "") -> np.ndarray:
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, "incompatible dimensions"
    c = np.empty((M, N), dtype=a.dtype)
    s = a.itemsize

    def grid(meta):
        return (enceladus.cdiv(M, meta["BLOCK_M"]) * enceladus.cdiv(N, meta["BLOCK_N"]),)

    matmul_kernel[grid](a, b, c, M, N, K, a.strides[0] // s, a.strides[1] // s, b.strides[0] // s,
                        b.strides[1] // s, c.strides[0] // c.itemsize, c.strides[1] // c.itemsize,
                        ACTIVATION=activation)
    return c


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    for dtype, tol in ((np.float32, 1e-4), (np.float16, 2e-2)):
        a = rng.standard_normal((257, 77)).astype(dtype)
        b = rng.standard_normal((77, 129)).astype(dtype)
        c = matmul(a, b, activation="leaky_relu")
        ref = a.astype(np.float32) @ b.astype(np.float32)
        ref = np.where(ref >= 0, ref, 0.01 * ref)
        np.testing.assert_allclose(c.astype(np.float32), ref, rtol=tol, atol=tol * 10)
    print(f"matmul 257 x 77 x 129 with a fused leaky ReLU (float32, float16): OK on the "
          f"'{enceladus.backend_name()}' backend")

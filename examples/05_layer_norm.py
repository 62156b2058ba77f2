"""Layer norm forward (with weight, bias, eps; writes the mean and 1/std of each row), as in Triton's tutorial.

Each program normalizes one row. A row that fits in one tile (ONE_TILE) is read once and kept in registers
for the mean, the variance and the output; a longer row loops over it in blocks, as the tutorial does: a
loop-carried tile accumulates the sum, a second loop the squared deviations, a third normalizes and stores.
"""

import numpy as np

import enceladus
import enceladus.language as tl


@enceladus.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr, ONE_TILE: tl.constexpr = False):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    if ONE_TILE:  # N <= BLOCK_SIZE: one read of x, which stays in registers
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / N
        xc = tl.where(mask, x - mean, 0.0)
        var = tl.sum(xc * xc, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        tl.store(Y + cols, (xc * rstd * w + b).to(Y.dtype.element_ty), mask=mask)
    else:  # a longer row: three passes over it, in blocks (Triton's tutorial)
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.0)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
            x_hat = (x - mean) * rstd
            y = x_hat * w + b
            tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)


def layer_norm_config(N: int, itemsize: int) -> tuple[int, int]:
    """BLOCK_SIZE and num_warps for rows of N elements of itemsize bytes.

    A tile holds up to 8 KiB of the row, 8 elements per thread (one SIMD group per 256 elements, up to
    8): two 16-byte loads per thread in flight per pass while the three tiles a pass needs (x, w, b) stay
    far below the register budget of Apple GPUs at 256 threads; longer rows loop. (GPU proxy, NVIDIA H200:
    the earlier 4 KiB cap made a 4096-column row take four trips with half the threads, 0.82x Triton's
    tutorial; 16 KiB tiles at 16 elements per thread ran 0.87x once the kernel declared its threadgroup
    size; 8 KiB tiles ran 1.02x.)

    Pass ONE_TILE=N <= BLOCK_SIZE: a row that fits in one tile is then read from memory once instead of three
    times (the loop form reads it again for the variance and for the output, relying on caches that any
    GPU shares with other threadgroups), with one set of loads, masks and index math instead of three;
    the price is x held in registers across the two reductions (8 floats per thread here)."""
    block = min(enceladus.next_power_of_2(N), 8192 // itemsize)
    return block, min(max(block // 256, 1), 8)


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5):
    M, N = x.shape
    y = np.empty_like(x)
    mean = np.empty(M, np.float32)
    rstd = np.empty(M, np.float32)
    block, num_warps = layer_norm_config(N, x.itemsize)
    layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, x.strides[0] // x.itemsize, N, eps, BLOCK_SIZE=block,
                         ONE_TILE=block >= N, num_warps=num_warps)
    return y, mean, rstd


def reference(x, w, b, eps=1e-5):
    x32 = x.astype(np.float32)
    mean = x32.mean(1)
    rstd = 1 / np.sqrt(((x32 - mean[:, None]) ** 2).mean(1) + eps)
    return ((x32 - mean[:, None]) * rstd[:, None] * w + b).astype(x.dtype), mean, rstd


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    # 1151 columns fit in one tile (ONE_TILE); 5000 do not, so the row is walked in blocks
    for M, N in ((37, 1151), (5, 5000)):
        for dtype, tol in ((np.float32, 1e-5), (np.float16, 2e-3)):
            x = rng.standard_normal((M, N)).astype(dtype)
            w = rng.standard_normal(N).astype(np.float32)
            b = rng.standard_normal(N).astype(np.float32)
            y, mean, rstd = layer_norm(x, w, b)
            y_ref, mean_ref, rstd_ref = reference(x, w, b)
            np.testing.assert_allclose(mean, mean_ref, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-4)
            np.testing.assert_allclose(y.astype(np.float32), y_ref.astype(np.float32), rtol=tol, atol=tol)
    print(f"layer norm of 37 x 1151 and 5 x 5000 (float32, float16): OK on the '{enceladus.backend_name()}' backend")

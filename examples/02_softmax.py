"""Fused row softmax: each program loads one row once, and reduces it twice across SIMD groups.

Run with ENCELADUS_INTERPRET=1 to execute the same kernel with the NumPy interpreter.
"""

import numpy as np

import enceladus
import enceladus.language as tl


@enceladus.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_row_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    out = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


def softmax_config(n_cols: int) -> tuple[int, int]:
    """BLOCK (the whole row in one tile) and num_warps for rows of n_cols elements."""
    block = enceladus.next_power_of_2(n_cols)
    num_warps = 4 if block <= 2048 else (8 if block <= 4096 else 16)
    return block, num_warps


def softmax(x: np.ndarray) -> np.ndarray:
    n_rows, n_cols = x.shape
    out = np.empty_like(x)
    block, num_warps = softmax_config(n_cols)
    softmax_kernel[(n_rows,)](out, x, x.strides[0] // x.itemsize, out.strides[0] // out.itemsize, n_rows, n_cols,
                              BLOCK=block, num_warps=num_warps)
    return out


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    for dtype, tol in ((np.float32, 1e-6), (np.float16, 2e-3)):
        x = rng.standard_normal((123, 781)).astype(dtype)
        y = softmax(x)
        ref = np.exp(x.astype(np.float32) - x.astype(np.float32).max(1, keepdims=True))
        ref /= ref.sum(1, keepdims=True)
        np.testing.assert_allclose(y.astype(np.float32), ref, rtol=tol, atol=tol)
    print(f"softmax of 123 x 781 rows (float32, float16): OK on the '{enceladus.backend_name()}' backend")

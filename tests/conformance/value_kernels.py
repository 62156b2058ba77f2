"""Kernels for values Triton 3.9 defines and a reimplementation easily gets wrong."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def shifts_kernel(x_ptr, y0, y1, y2, y3, y4, y5, y6, y7, out_ptr, N: tl.constexpr):
    # x << y and x >> y of one left type against the eight integer types; each result keeps its own type
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    for i in tl.static_range(8):
        y_ptr = (y0, y1, y2, y3, y4, y5, y6, y7)[i]
        y = tl.load(y_ptr + offs)
        tl.store(out_ptr + (2 * i) * N + offs, (x >> y).to(tl.uint64, bitcast=False))
        tl.store(out_ptr + (2 * i + 1) * N + offs, (x << y).to(tl.uint64, bitcast=False))


@enceladus.jit
def int1_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs) != 0
    y = tl.load(y_ptr + offs) != 0
    results = (x + y, x - y, x * y, -x, x << y, x >> y, ~x)
    for i in tl.static_range(7):
        tl.store(out_ptr + i * N + offs, results[i].to(tl.int32))


@enceladus.jit
def umulhi_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.umulhi(tl.load(a_ptr + offs), tl.load(b_ptr + offs)))


@enceladus.jit
def clamp_kernel(x_ptr, lo, hi, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + N + offs, tl.clamp(x, lo, hi))


@enceladus.jit
def extremes_kernel(x_ptr, out_ptr, R: tl.constexpr, N: tl.constexpr):
    # along rows (axis 1) and, through the transpose, along axis 0
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * N + tl.arange(0, N)[None, :])
    rows = tl.arange(0, R)
    mx, imx = tl.max(x, 1, return_indices=True)
    mn, imn = tl.min(x, 1, return_indices=True)
    tl.store(out_ptr + rows * 6, tl.argmax(x, 1).to(tl.float32))
    tl.store(out_ptr + rows * 6 + 1, tl.argmin(x, 1).to(tl.float32))
    tl.store(out_ptr + rows * 6 + 2, mx)
    tl.store(out_ptr + rows * 6 + 3, mn)
    tl.store(out_ptr + rows * 6 + 4, tl.argmax(tl.trans(x), 0).to(tl.float32) + imx * 0)
    tl.store(out_ptr + rows * 6 + 5, tl.argmin(tl.trans(x), 0).to(tl.float32) + imn * 0)


@enceladus.jit
def interleave_scalars_kernel(out_ptr):
    a = tl.load(out_ptr)
    tl.store(out_ptr + 1 + tl.arange(0, 2), tl.interleave(a, a + 1))

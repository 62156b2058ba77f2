"""Kernels that use the small tl builtins (hints, casts, shape helpers, bitwise atomics, tl.math / tl.extra)."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def surface_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.assume(n > 0)
    tl.static_print("surface_kernel BLOCK =", BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, BLOCK), BLOCK), BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    two = tl.max_constancy(tl.full([BLOCK], 2.0, tl.float32), BLOCK)
    row, grid = tl.broadcast(tl.unsqueeze(x, 0), tl.zeros([2, BLOCK], tl.float32))
    tl.debug_barrier()
    y = tl.math.exp(tl.zeros_like(x)) * two + tl.cast(x, tl.int32).to(tl.float32) + tl.sum(row + grid, 0)
    tl.static_assert(isinstance(x.dtype, tl.dtype) and x.dtype == tl.float32)
    same = tl.view(tl.unsqueeze(x, 0), (BLOCK,))  # the elements in the same order: same - x == 0
    tl.store(out_ptr + offs, y + tl.extra.libdevice.tanh(x) + (same - x) * 1000, mask=mask)


@enceladus.jit
def bitwise_atomics_kernel(and_ptr, or_ptr, xor_ptr, vals_ptr):
    v = tl.load(vals_ptr + tl.program_id(0))
    tl.atomic_and(and_ptr, v)
    tl.atomic_or(or_ptr, v)
    tl.atomic_xor(xor_ptr, v)


@enceladus.jit
def swizzle_kernel(out_ptr, size_i, size_j, size_g, BLOCK: tl.constexpr):
    ij = tl.arange(0, BLOCK)
    i, j = tl.swizzle2d(ij // size_j, ij % size_j, size_i, size_j, size_g)
    mask = ij < size_i * size_j
    tl.store(out_ptr + 2 * ij, i, mask=mask)
    tl.store(out_ptr + 2 * ij + 1, j, mask=mask)

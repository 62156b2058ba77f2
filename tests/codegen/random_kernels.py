"""Kernels for random numbers (Philox) and other library builtins."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def random_kernel(out_i, out_u, out_n, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_i + offs, tl.randint(seed, offs), mask=mask)
    tl.store(out_u + offs, tl.rand(seed, offs), mask=mask)
    tl.store(out_n + offs, tl.randn(seed, offs), mask=mask)


@enceladus.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@enceladus.jit
def swizzle_kernel(out_ptr, SIZE_I: tl.constexpr, SIZE_J: tl.constexpr, SIZE_G: tl.constexpr):
    i = tl.arange(0, SIZE_I)[:, None]
    j = tl.arange(0, SIZE_J)[None, :]
    ni, nj = tl.swizzle2d(i, j, SIZE_I, SIZE_J, SIZE_G)
    tl.store(out_ptr + i * SIZE_J + j, ni * SIZE_J + nj)


@enceladus.jit
def philox_kernel(out_ptr, seed, c0, c1, c2, c3):
    one = tl.arange(0, 1)
    a, b, c, d = tl.philox(seed, c0 + one * 0, c1 + one * 0, c2 + one * 0, c3 + one * 0)
    tl.store(out_ptr + one, a)
    tl.store(out_ptr + 1 + one, b)
    tl.store(out_ptr + 2 + one, c)
    tl.store(out_ptr + 3 + one, d)


@enceladus.jit
def randint4x_kernel(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(out_ptr + offs * 4, a)
    tl.store(out_ptr + offs * 4 + 1, b)
    tl.store(out_ptr + offs * 4 + 2, c)
    tl.store(out_ptr + offs * 4 + 3, d)

"""Kernels whose memory accesses the vectorization tests inspect."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@enceladus.jit
def copy_unmasked(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@enceladus.jit
def copy_offset(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + 1
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@enceladus.jit
def copy_strided(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride))


@enceladus.jit
def copy_2d(x_ptr, out_ptr, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    ptrs = offs_m[:, None] * stride_m + offs_n[None, :]
    tl.store(out_ptr + ptrs, tl.load(x_ptr + ptrs))


@enceladus.jit
def copy_hinted(x_ptr, out_ptr, start, BLOCK: tl.constexpr):
    offs = tl.multiple_of(start, 16) + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@enceladus.jit
def copy_other_varies(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """A masked load whose `other` differs per element (-offset), stored unmasked: the run that holds n mixes
    loaded elements and `other`."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=-offs.to(tl.float32)))

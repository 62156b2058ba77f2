"""Kernels for the libdevice functions with rounding modes, conversions and bit functions."""

import enceladus
import enceladus.language as tl
from enceladus.language.extra import libdevice


@enceladus.jit
def ld1_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, getattr(libdevice, OP)(x), mask=offs < n)


@enceladus.jit
def ld2_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, getattr(libdevice, OP)(x, y), mask=offs < n)


@enceladus.jit
def ld3_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n)
    z = tl.load(z_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, getattr(libdevice, OP)(x, y, z), mask=offs < n)


@enceladus.jit
def ld4_kernel(a_ptr, b_ptr, c_ptr, d_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs, mask=offs < n)
    b = tl.load(b_ptr + offs, mask=offs < n)
    c = tl.load(c_ptr + offs, mask=offs < n)
    d = tl.load(d_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, getattr(libdevice, OP)(a, b, c, d), mask=offs < n)

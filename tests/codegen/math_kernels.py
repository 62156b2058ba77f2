"""Kernels for libdevice-style math."""

import enceladus
import enceladus.language as tl
from enceladus.language.extra import libdevice


@enceladus.jit
def unary_extra_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.5)
    fn = getattr(libdevice, OP)
    tl.store(out_ptr + offs, fn(x), mask=offs < n)


@enceladus.jit
def binary_extra_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    y = tl.load(y_ptr + offs, mask=offs < n, other=1.0)
    fn = getattr(libdevice, OP)
    tl.store(out_ptr + offs, fn(x, y), mask=offs < n)


@enceladus.jit
def nan_kernel(x_ptr, y_ptr, out_ptr, flags_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    flags = libdevice.isnan(x).to(tl.int32) + 2 * libdevice.isinf(x).to(tl.int32) + 4 * libdevice.signbit(x).to(tl.int32)
    flags += 8 * libdevice.isfinite(x).to(tl.int32)
    tl.store(flags_ptr + offs, flags)

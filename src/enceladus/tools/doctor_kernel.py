"""The small kernel ``enceladus doctor`` compiles and runs to check a backend end to end."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

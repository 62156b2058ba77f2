"""Kernels with tl.inline_asm_elementwise: on Apple GPUs the inline code is one MSL expression."""

import enceladus
import enceladus.language as tl


@enceladus.jit
def inline_msl_kernel(x_ptr, y_ptr, out_ptr, bits_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    # a float expression with an MSL builtin, a scalar broadcast against the tiles, and a bit trick on the bits
    r = tl.inline_asm_elementwise("fma($1, $2, $3)", "=r,r,r,r", [x, y, 0.5], dtype=tl.float32, is_pure=True,
                                  pack=1)
    b = tl.inline_asm_elementwise("as_type<uint>($1) >> 23 & 0xffu", "=r,r", [x], dtype=(tl.uint32,),
                                  is_pure=True, pack=1)
    tl.store(out_ptr + offs, r, mask=mask)
    tl.store(bits_ptr + offs, b, mask=mask)


@enceladus.jit
def inline_refusals_kernel(x_ptr, KIND: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    if KIND == "ptx":
        y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    elif KIND == "pack":
        y = tl.inline_asm_elementwise("$1", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=4)
    else:
        y = tl.inline_asm_elementwise("$1 + $2", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(x_ptr + tl.arange(0, 4), y)

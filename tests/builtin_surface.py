"""The public ``tl`` surface, for the coverage tests of the compiler and the interpreter.

``TRITON_3_9_NAMES`` is ``sorted(triton.language.__all__)`` of triton==3.9.0 (pinned here so the tests
need no Triton install). ``NOT_YET`` are the Triton names neither path implements yet although an Apple
GPU could run them (work to do, not a hardware limit); Apple GPU limits are in the refusal tables.
"""

from __future__ import annotations

import enceladus.language as tl
import enceladus.language.extra.libdevice as libdevice
from enceladus.language import math as tl_math
from enceladus.language.core import builtin_name

TRITON_3_9_NAMES = """
PropagateNan TRITON_MAX_TENSOR_NUMEL abs add arange argmax argmin associative_scan assume atomic_add atomic_and
atomic_cas atomic_load atomic_max atomic_min atomic_or atomic_poll atomic_store atomic_xchg atomic_xor bfloat16
bitonic_merge block_type broadcast broadcast_to cast cat cdiv ceil clamp condition const constexpr constexpr_type
cos cumprod cumsum debug_barrier device_assert device_print div_rn dot dot_scaled dtype erf exp exp2 expand_dims
expect_zero extra fdiv flip float16 float32 float64 float8e4b15 float8e4b8 float8e4nv float8e5 float8e5b16 floor
fma full gather histogram inline_asm_elementwise int1 int16 int32 int64 int8 interleave join load
load_tensor_descriptor log log2 make_block_ptr make_tensor_descriptor map_elementwise math max max_constancy
max_contiguous maximum min minimum mul multiple_of num_programs pair_uniform_to_normal permute philox philox_impl
pi32_t pointer_type program_id rand rand4x randint randint4x randn randn4x range ravel reduce reduce_or reshape
rsqrt sigmoid sin slice softmax sort split sqrt sqrt_rn squeeze static_assert static_print static_range store
store_tensor_descriptor sub sum swizzle2d target_info tensor tensor_descriptor to_tensor topk trans tuple uint16
uint32 uint64 uint8 uint_to_uniform_float umulhi unsqueeze view void where xor_sum zeros zeros_like
""".split()  # noqa: SIM905  (pasted from the Triton interpreter)

NOT_YET = set("""
TRITON_MAX_TENSOR_NUMEL add bitonic_merge block_type condition const
constexpr_type div_rn expect_zero map_elementwise mul pair_uniform_to_normal philox_impl
pi32_t rand4x randn4x slice softmax sqrt_rn sub target_info tensor_descriptor to_tensor
tuple uint_to_uniform_float void
""".split())  # noqa: SIM905


def public_builtins() -> dict[str, str]:
    """Every public builtin of ``tl``, ``tl.math`` and ``tl.extra.libdevice``: qualified name -> builtin name."""
    out = {}
    for prefix, module in (("tl", tl), ("tl.math", tl_math), ("libdevice", libdevice)):
        for attr in dir(module):
            name = builtin_name(getattr(module, attr))
            if name is not None and not attr.startswith("_"):
                out[f"{prefix}.{attr}"] = name
    return out

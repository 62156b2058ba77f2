"""The tile language: ``import enceladus.language as tl``.

Every name here matches upstream Triton's ``triton.language`` so that kernels port by changing the
import. Builtins run only inside ``@enceladus.jit`` kernels.
"""

from __future__ import annotations

from . import extra, math, random, standard, target_info
from .builtins import (  # ops the interpreter implements ahead of the compiler
    PropagateNan,
    abs,
    add,
    advance,
    arange,
    argmax,
    argmin,
    associative_scan,
    assume,
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_load,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_poll,
    atomic_store,
    atomic_xchg,
    atomic_xor,
    broadcast,
    broadcast_to,
    cast,
    cat,
    cdiv,
    ceil,
    clamp,
    cos,
    cumprod,
    cumsum,
    debug_barrier,
    device_assert,
    device_print,
    dot,
    dot_scaled,
    erf,
    exp,
    exp2,
    expand_dims,
    expect_zero,
    fdiv,
    flip,
    floor,
    fma,
    full,
    gather,
    histogram,
    interleave,
    join,
    load,
    load_tensor_descriptor,
    log,
    log2,
    make_block_ptr,
    make_tensor_descriptor,
    map_elementwise,
    max,
    max_constancy,
    max_contiguous,
    maximum,
    min,
    minimum,
    mul,
    multiple_of,
    num_programs,
    pair_uniform_to_normal,
    permute,
    philox,
    philox_impl,
    program_id,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    range,
    ravel,
    reduce,
    reduce_or,
    reshape,
    rsqrt,
    sigmoid,
    sin,
    softmax,
    sort,
    split,
    sqrt,
    squeeze,
    static_assert,
    static_print,
    static_range,
    store,
    store_tensor_descriptor,
    sub,
    sum,
    swizzle2d,
    to_tensor,
    topk,
    trans,
    uint_to_uniform_float,
    umulhi,
    unsqueeze,
    view,
    where,
    xor_sum,
    zeros,
    zeros_like,
)
from .core import condition, constexpr, tuple
from .dtypes import (
    bfloat16,
    block_type,
    dtype,
    float8e4b8,
    float8e4b15,
    float8e4nv,
    float8e5,
    float8e5b16,
    float16,
    float32,
    float64,
    int1,
    int8,
    int16,
    int32,
    int64,
    pointer_type,
    str_to_ty,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .math import div_rn, sqrt_rn

TRITON_MAX_TENSOR_NUMEL = 1 << 20  # the most elements a tile may have, as in Triton
pi32_t = pointer_type(int32)  # Triton's name for a pointer to int32

tensor = object  # Triton exposes tl.tensor for annotations; kernels never construct one directly.

__all__ = [
    "abs", "arange", "bfloat16", "cast", "cdiv", "ceil", "clamp", "constexpr", "cos",
    "dtype", "erf", "exp", "exp2", "fdiv", "float16", "float32", "float64", "floor", "fma", "full",
    "int1", "int8", "int16", "int32", "int64", "load", "log", "log2", "math", "max_contiguous",
    "maximum", "minimum", "multiple_of", "num_programs", "pointer_type", "program_id", "range", "rsqrt",
    "sigmoid", "sin", "sqrt", "static_assert", "static_print", "static_range", "store", "tensor",
    "uint8", "uint16", "uint32", "uint64", "umulhi", "where", "zeros", "zeros_like",
]
__all__ += ["float8e4b8", "float8e4b15", "float8e4nv", "float8e5", "float8e5b16"]
__all__ += ["extra", "advance", "make_block_ptr", "make_tensor_descriptor", "PropagateNan", "argmax", "argmin", "associative_scan", "assume", "atomic_add", "atomic_and", "atomic_cas", "atomic_load", "atomic_max", "atomic_min", "atomic_or", "atomic_poll", "atomic_store", "atomic_xchg", "atomic_xor", "broadcast", "broadcast_to", "cat", "cumprod", "cumsum", "debug_barrier", "device_assert", "device_print", "dot", "dot_scaled", "expand_dims", "flip", "gather", "histogram", "interleave", "join", "max", "max_constancy", "min", "permute", "philox", "rand", "randint", "randint4x", "randn", "ravel", "reduce", "reduce_or", "reshape", "sort", "split", "squeeze", "sum", "swizzle2d", "topk", "trans", "unsqueeze", "view", "xor_sum"]
__all__ += ["block_type", "div_rn", "map_elementwise", "random", "sqrt_rn", "str_to_ty", "tuple"]
__all__ += ["pair_uniform_to_normal", "philox_impl", "rand4x", "randn4x", "uint_to_uniform_float"]
__all__ += ["load_tensor_descriptor", "store_tensor_descriptor"]
__all__ += ["TRITON_MAX_TENSOR_NUMEL", "add", "condition", "expect_zero", "mul", "pi32_t", "softmax", "sub", "to_tensor"]
__all__ += ["standard", "target_info"]
from .structs import tensor_descriptor, tensor_descriptor_type  # noqa: E402

__all__ += ["tensor_descriptor", "tensor_descriptor_type"]

"""The tile language: ``import enceladus.language as tl``.

Every name here matches upstream Triton's ``triton.language`` so that kernels port by changing the
import. Builtins run only inside ``@enceladus.jit`` kernels.
"""

from __future__ import annotations

from . import math
from .builtins import (
    abs,
    arange,
    cast,
    cdiv,
    ceil,
    clamp,
    cos,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    full,
    load,
    log,
    log2,
    max_contiguous,
    maximum,
    minimum,
    multiple_of,
    num_programs,
    program_id,
    range,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    static_assert,
    static_print,
    static_range,
    store,
    umulhi,
    where,
    zeros,
    zeros_like,
)
from .core import constexpr
from .dtypes import (
    bfloat16,
    dtype,
    float16,
    float32,
    float64,
    int1,
    int8,
    int16,
    int32,
    int64,
    pointer_type,
    uint8,
    uint16,
    uint32,
    uint64,
)

tensor = object  # Triton exposes tl.tensor for annotations; kernels never construct one directly.

__all__ = [
    "abs", "arange", "bfloat16", "cast", "cdiv", "ceil", "clamp", "constexpr", "cos",
    "dtype", "erf", "exp", "exp2", "fdiv", "float16", "float32", "float64", "floor", "fma", "full",
    "int1", "int8", "int16", "int32", "int64", "load", "log", "log2", "math", "max_contiguous",
    "maximum", "minimum", "multiple_of", "num_programs", "pointer_type", "program_id", "range", "rsqrt",
    "sigmoid", "sin", "sqrt", "static_assert", "static_print", "static_range", "store", "tensor",
    "uint8", "uint16", "uint32", "uint64", "umulhi", "where", "zeros", "zeros_like",
]

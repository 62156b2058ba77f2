"""``tl.standard``: Triton's standard library module (the builtins Triton writes in the tile language), for
code that names it (``tl.standard.softmax(x)`` is ``tl.softmax(x)``). ``sort_impl`` is not provided."""

from .builtins import (  # noqa: F401
    argmax,
    argmin,
    bitonic_merge,
    cdiv,
    cumprod,
    cumsum,
    flip,
    interleave,
    max,
    min,
    ravel,
    reduce_or,
    sigmoid,
    softmax,
    sort,
    squeeze,
    sum,
    swizzle2d,
    topk,
    unsqueeze,
    xor_sum,
    zeros,
    zeros_like,
)

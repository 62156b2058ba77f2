"""Triton builtins the compiler refuses, each with the Apple GPU limit behind it and the fix offered.

Every public ``tl`` builtin has a typing rule in ``semantic.RULES`` (or is written in the tile language,
``compiler/library.py``) or an entry here; ``tests/frontend/test_builtin_coverage.py`` checks it. The
interpreter keeps its own table (``interpreter/refusals.py``): it is an independent implementation.
"""

from __future__ import annotations

from typing import NamedTuple


class Refusal(NamedTuple):
    """Why a builtin cannot run on an Apple GPU, and what the user can do instead."""

    reason: str
    fix: str


_FP8 = Refusal("Apple GPUs have no 8-bit floating-point types (Metal has half, bfloat and float)",
               "store fp8 data as uint8 and decode it with bit operations into tl.float16 or tl.float32")

REFUSED: dict[str, Refusal] = {
    "inline_asm_elementwise": Refusal(
        "Metal Shading Language has no inline assembly (Apple GPUs take no PTX or AIR text from kernels)",
        "write the computation with tl.* builtins; bit tricks usually map to tl.cast(..., bitcast=True)"),
    "dot_scaled": Refusal(
        "tl.dot_scaled multiplies microscaled fp8/fp4 operands, which Apple GPUs have no types or units for",
        "dequantize the operands into tl.float16 or tl.float32 and use tl.dot"),
    "float8e4b15": _FP8,
    "float8e4b8": _FP8,
    "float8e4nv": _FP8,
    "float8e5": _FP8,
    "float8e5b16": _FP8,
}

"""Triton builtins the interpreter refuses, each with the Apple GPU limit behind it and the fix offered.

The interpreter is an independent implementation of the language (the oracle the compiler is tested
against), so it keeps its own table; ``tests/interpreter/test_builtin_coverage.py`` checks that every
public ``tl`` builtin is implemented in ``ops.OPS`` or refused here, and that both paths refuse the same
names.
"""

from __future__ import annotations

from typing import Any

_FP8 = ("Apple GPUs have no 8-bit floating-point types (Metal has half, bfloat and float)",
        "store fp8 data as uint8 and decode it with bit operations into tl.float16 or tl.float32")

# name -> (the Apple GPU limit, the fix offered)
REFUSED: dict[str, tuple[str, str]] = {
    "inline_asm_elementwise": ("Metal Shading Language has no inline assembly",
                               "write the computation with tl.* builtins (tl.cast(..., bitcast=True) for bit tricks)"),
    "dot_scaled": ("Apple GPUs have no types or units for microscaled fp8/fp4 operands",
                   "dequantize the operands into tl.float16 or tl.float32 and use tl.dot"),
    "float8e4b15": _FP8,
    "float8e4b8": _FP8,
    "float8e4nv": _FP8,
    "float8e5": _FP8,
    "float8e5b16": _FP8,
}


class RefusedBuiltinError(AttributeError):
    """A kernel used a Triton builtin that cannot run on Apple GPUs (the message says why and what to do)."""


def refuse(name: str) -> Any:
    """Raise the interpreter's refusal of ``tl.<name>`` (an ``AttributeError`` for names it does not know)."""
    if name in REFUSED:
        reason, fix = REFUSED[name]
        raise RefusedBuiltinError(f"tl.{name} cannot run on Apple GPUs: {reason}; fix: {fix}")
    raise AttributeError(f"module 'enceladus.language' has no attribute '{name}'")

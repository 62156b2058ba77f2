"""Builtins of the tile language, with their documentation.

Bodies are never run: the compiler applies each builtin's rule from ``compiler/semantic.py`` and
the interpreter its NumPy implementation, both found by the builtin's name.
"""

from __future__ import annotations

import builtins as _py

from .core import builtin, constexpr


# --- programs ------------------------------------------------------------------------------------
@builtin
def program_id(axis):
    """The index of the running program along ``axis`` (0, 1 or 2) of the launch grid, as int32.

    Example: ``pid = tl.program_id(0)``. On Metal, a program is one threadgroup.
    """


@builtin
def num_programs(axis):
    """The number of programs along ``axis`` of the launch grid, as int32."""


# --- creation ------------------------------------------------------------------------------------
@builtin
def arange(start, end):
    """A 1-D int32 tile ``[start, start + 1, ..., end - 1]``.

    ``start`` and ``end`` must be constexprs and ``end - start`` a power of two, e.g.
    ``offs = tl.arange(0, BLOCK)``.
    """


@builtin
def full(shape, value, dtype):
    """A tile of ``shape`` (a tuple of constexpr powers of two) filled with ``value`` of ``dtype``."""


@builtin
def zeros(shape, dtype):
    """A tile of ``shape`` filled with zeros of ``dtype``: ``acc = tl.zeros((BLOCK,), tl.float32)``."""


@builtin
def zeros_like(input):
    """A tile of zeros with the shape and dtype of ``input``."""


# --- memory --------------------------------------------------------------------------------------
@builtin
def load(pointer, mask=None, other=None, *, cache_modifier="", eviction_policy="", volatile=False):
    """Load a tile (or scalar) from the pointer tile ``pointer``.

    Lanes where ``mask`` is false do not touch memory and take ``other`` (default: undefined in
    Triton; here zero). Example::

        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)

    ``cache_modifier``, ``eviction_policy`` and ``volatile`` are accepted for compatibility and have
    no effect on Apple GPUs.
    """


@builtin
def store(pointer, value, mask=None, *, cache_modifier="", eviction_policy=""):
    """Store ``value`` (converted to the pointee type) through ``pointer`` where ``mask`` is true."""


# --- selection and casts -------------------------------------------------------------------------
@builtin
def where(condition, x, y):
    """Elementwise ``x`` where ``condition`` else ``y`` (both sides are evaluated)."""


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """Convert ``input`` to ``dtype`` (also ``x.to(dtype)``).

    Float to integer truncates toward zero; float narrowing rounds to nearest even. With
    ``bitcast=True`` the bits are reinterpreted (the widths must match).
    """


# --- math ----------------------------------------------------------------------------------------
def _math_doc(name: str, what: str):
    def rule(x):
        pass

    rule.__name__ = name
    rule.__qualname__ = name
    rule.__doc__ = f"Elementwise {what}. Integer inputs are refused; float16/bfloat16 compute in float32."
    return builtin(rule)


exp = _math_doc("exp", "e**x")
exp2 = _math_doc("exp2", "2**x")
log = _math_doc("log", "natural logarithm")
log2 = _math_doc("log2", "base-2 logarithm")
sqrt = _math_doc("sqrt", "square root")
rsqrt = _math_doc("rsqrt", "1 / sqrt(x)")
sin = _math_doc("sin", "sine")
cos = _math_doc("cos", "cosine")
floor = _math_doc("floor", "floor")
ceil = _math_doc("ceil", "ceiling")
erf = _math_doc("erf", "error function (Metal has none: Enceladus emits a polynomial)")
sigmoid = _math_doc("sigmoid", "1 / (1 + exp(-x))")


@builtin
def abs(x):
    """Elementwise absolute value (integers wrap like C: ``abs(INT_MIN) == INT_MIN``)."""


@builtin
def fma(x, y, z):
    """Elementwise fused multiply-add ``x * y + z`` with one rounding."""


@builtin
def maximum(x, y, propagate_nan=None):
    """Elementwise maximum. As in Triton, NaN handling is the hardware's unless ``propagate_nan`` is ALL."""


@builtin
def minimum(x, y, propagate_nan=None):
    """Elementwise minimum. As in Triton, NaN handling is the hardware's unless ``propagate_nan`` is ALL."""


@builtin
def clamp(x, min, max, propagate_nan=None):
    """Elementwise ``minimum(maximum(x, min), max)``."""


@builtin
def fdiv(x, y, ieee_rounding=False):
    """Floating-point division ``x / y``."""


@builtin
def umulhi(x, y):
    """The high 32 bits of the 64-bit product of two 32-bit integer tiles."""


@builtin
def cdiv(x, div):
    """Ceiling division ``(x + div - 1) // div``, on tiles, scalars and constexprs."""


# --- hints and compile-time helpers ----------------------------------------------------------------
@builtin
def multiple_of(input, values):
    """Promise the compiler that the first element of every run of ``input`` is a multiple of ``values``."""


@builtin
def max_contiguous(input, values):
    """Promise the compiler that ``input`` holds runs of ``values`` consecutive integers."""


@builtin
def static_assert(cond, msg=""):
    """Assert a constexpr condition while compiling; a false one is a CompilationError."""


@builtin
def static_print(*values, sep=" ", end="\n"):
    """Print constexprs and types while compiling (once per compilation)."""


# --- iteration -----------------------------------------------------------------------------------
class static_range:
    """A range that is unrolled at compile time; its bounds must be constexprs.

    ``for i in tl.static_range(4): ...``
    """

    def __init__(self, arg1, arg2=None, step=None):
        self.args = (arg1, arg2, step)

    def __iter__(self):
        a, b, s = (x.value if isinstance(x, constexpr) else x for x in self.args)
        return iter(_py.range(a) if b is None else _py.range(a, b, s or 1))


class range:
    """A runtime loop range, like Python's ``range``; extra tuning arguments are accepted.

    ``for k in tl.range(0, K, BLOCK_K, num_stages=2): ...``
    """

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False):
        self.args = (arg1, arg2, step)

    def __iter__(self):
        a, b, s = (x.value if isinstance(x, constexpr) else x for x in self.args)
        return iter(_py.range(a) if b is None else _py.range(a, b, s or 1))

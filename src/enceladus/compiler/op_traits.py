"""One table of op traits: every tile-IR op, its family, how layout assignment treats it, whether axis
analysis has a transfer rule for it, and the emitter method that lowers it to MSL.

The verifier (``ir.py``), layout assignment (``passes/layouts.py``), axis analysis
(``passes/axis_info.py``) and the MSL emitter (``codegen_msl/emitter.py``) derive their op sets from
this table and nothing else; ``tests/codegen/test_op_traits.py`` checks that every op's emit rule
exists. Adding an IR op means adding one row here (and its emit rule).
"""

from __future__ import annotations

from dataclasses import dataclass

# How layout assignment treats an op's result (see passes/layouts.py):
TRANSPARENT = "transparent"  # computed slot by slot from operands in the same layout; rematerialized when pure
VIEW = "view"  # transparent and free: the result is an expression over the operand's registers or coordinates
HOME = "home"  # computed once, in one home layout, from operands demanded in that same layout
VIA_SMEM = "via_smem"  # moves data through threadgroup memory: operands in any layout, the result has a home
OWN = "own"  # the layout pass has a rule of its own for it (control flow, reductions, dot, stores, ...)
SCALAR = "scalar"  # never produces a tile

LAYOUT_TREATMENTS = (TRANSPARENT, VIEW, HOME, VIA_SMEM, OWN, SCALAR)


@dataclass(frozen=True)
class OpTraits:
    """What every pass needs to know about one IR op."""

    name: str
    family: str  # elementwise_binary, compare, elementwise_unary, elementwise_other, memory, source, shape, ...
    layout: str  # one of LAYOUT_TREATMENTS
    axis_rule: bool  # axis analysis derives facts for its result (else: nothing known; control flow is structural)
    emit: str  # the MSLEmitter method that lowers it (called with the op)


OPS: dict[str, OpTraits] = {}


def _add(family: str, layout: str, axis_rule: bool, emit: str, names: str) -> None:
    for name in names.split():
        if name in OPS:
            raise ValueError(f"op '{name}' is declared twice in the op-trait table")
        OPS[name] = OpTraits(name, family, layout, axis_rule, emit)


# family               layout       axis   emit rule          ops
_add("elementwise_binary", TRANSPARENT, True, "emit_value",
     "add sub mul fdiv idiv mod and or xor shl shr max min umulhi fmod pow atan2 copysign hypot fmin fmax")
_add("compare", TRANSPARENT, True, "emit_value", "lt le gt ge eq ne")
_add("elementwise_unary", TRANSPARENT, True, "emit_value",
     "neg not abs exp exp2 log log2 sqrt rsqrt sin cos floor ceil erf sigmoid tanh tan asin acos atan sinh cosh "
     "asinh acosh atanh log10 log1p expm1 exp10 cbrt erfc trunc round rint nearbyint fabs isnan isinf isfinite "
     "signbit")
_add("elementwise_other", TRANSPARENT, True, "emit_value", "select fma cast bitcast addptr")
# fp32 division by a shared divisor (passes/reciprocal_division.py): recip d = 1/d for |d| in [2^-126, 2^126]
# (else +inf); fdiv_recip x, d, r = x * r, or IEEE x / d where that is not finite below 2^127
_add("elementwise_unary", TRANSPARENT, False, "emit_value", "recip")
_add("elementwise_other", TRANSPARENT, False, "emit_value", "fdiv_recip")
_add("elementwise_other", TRANSPARENT, False, "emit_value", "libdevice")
_add("elementwise_other", TRANSPARENT, False, "emit_value", "inline_msl")  # tl.inline_asm_elementwise  # attrs fn: codegen_msl/libdevice.py
_add("memory", HOME, True, "emit_value", "load")
_add("memory", HOME, False, "emit_value", "atomic")
_add("memory", OWN, False, "emit_store", "store")
_add("source", TRANSPARENT, True, "emit_value", "const arange")
_add("source", SCALAR, True, "emit_value", "program_id num_programs")
_add("source", VIEW, True, "emit_value", "splat")
_add("shape", VIEW, True, "emit_value", "broadcast expand_dims squeeze")
_add("shape", VIEW, False, "emit_value", "permute join")
_add("shape", VIA_SMEM, False, "emit_via_smem", "reshape cat flip")
_add("shape", VIA_SMEM, False, "emit_histogram", "histogram")
_add("shape", VIA_SMEM, False, "emit_sort", "sort")
_add("shape", OWN, False, "emit_split", "split")
_add("shape", OWN, False, "emit_gather", "gather")
_add("hint", VIEW, True, "emit_value", "multiple_of max_contiguous")
_add("control", OWN, False, "emit_loop", "for while")
_add("control", OWN, False, "emit_if", "if")
_add("control", OWN, False, "emit_yield", "yield")
_add("reduction", OWN, False, "emit_reduce", "reduce")
_add("reduction", OWN, False, "emit_scan", "scan")
_add("matmul", OWN, False, "emit_dot", "dot")
_add("debug", OWN, False, "emit_print", "print")
_add("debug", OWN, False, "emit_assert", "assert")
_add("sync", SCALAR, False, "emit_barrier", "barrier")
_add("map", OWN, False, "emit_map_elementwise", "map_elementwise")  # a scalar region run once per element


def ops_where(**traits: object) -> frozenset[str]:
    """The names of the ops whose traits equal every given value, e.g. ``ops_where(layout=VIA_SMEM)``."""
    return frozenset(t.name for t in OPS.values() if all(getattr(t, k) == v for k, v in traits.items()))


def family(*names: str) -> frozenset[str]:
    """The ops of the given families."""
    return frozenset(t.name for t in OPS.values() if t.family in names)

"""Typing rules of the math builtins: the float functions (``tl.exp``, ``tl.sqrt``, ``tl.isnan``...), ``fmod``,
``abs``, ``fma``, ``maximum``/``minimum``/``clamp``, ``fdiv``, ``umulhi`` and ``cdiv``.
They register themselves in ``semantic.RULES`` (``tl.math``'s libdevice functions, ``div_rn`` and ``sqrt_rn``
among them: ``semantic_libdevice``)."""

from __future__ import annotations

from typing import Any

from ..language import dtypes as D
from .semantic import RULES, Builder, SemanticError, Value, _common, binary, compare, is_value, rule, where


def _float_unary(name: str):
    def rule_fn(b: Builder, x: Any) -> Value:
        if not isinstance(x, Value):
            x = b.const(x, D.float32)
        ty = x.type.element
        if name in D.FP32_ONLY_MATH and not (ty.is_fp32() or ty.is_fp64()):
            raise SemanticError(*D.math_dtype_refusal(name, ty))
        if not ty.is_floating():
            raise SemanticError(f"tl.{name} expects a floating-point input, got {ty}",
                                f"convert first: tl.{name}(x.to(tl.float32))")
        if ty.is_fp32():
            return b.emit(name, [x], x.type)
        # half-precision inputs compute in float32 and round once at the end
        r = b.emit(name, [b.cast(x, D.float32)], b.type(D.float32, x.type.shape))
        return b.cast(r, ty)

    rule_fn.__name__ = name
    RULES[name] = rule_fn
    return rule_fn


FLOAT_UNARY = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "floor", "ceil", "erf", "sigmoid",
               # enceladus.language.extra.libdevice
               "tanh", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log10", "log1p",
               "expm1", "exp10", "cbrt", "erfc", "trunc", "round", "rint", "nearbyint", "fabs")
for _name in FLOAT_UNARY:
    _float_unary(_name)


def _float_binary(name: str):
    def rule_fn(b: Builder, x: Any, y: Any) -> Value:
        xv, yv = _common(b, x if isinstance(x, Value) or not isinstance(x, int) else float(x),
                         y if isinstance(y, Value) or not isinstance(y, int) else float(y))
        ty = xv.type.element
        if not ty.is_floating():
            raise SemanticError(f"{name} expects floating-point inputs, got {ty}", "convert with .to(tl.float32)")
        if ty.is_fp32():
            return b.emit(name, [xv, yv], xv.type)
        r = b.emit(name, [b.cast(xv, D.float32), b.cast(yv, D.float32)], b.type(D.float32, xv.type.shape))
        return b.cast(r, ty)

    RULES[name] = rule_fn


for _name in ("pow", "atan2", "copysign", "hypot", "fmin", "fmax"):
    _float_binary(_name)


def _float_predicate(name: str):
    def rule_fn(b: Builder, x: Any) -> Value:
        if not isinstance(x, Value):
            x = b.const(x, D.float32)
        ty = x.type.element
        if not ty.is_floating():
            raise SemanticError(f"{name} expects a floating-point input, got {ty}",
                                "cast the input first, e.g. x.to(tl.float32)")
        return b.emit(name, [b.cast(x, D.float32)], b.type(D.int1, x.type.shape))

    RULES[name] = rule_fn


for _name in ("isnan", "isinf", "isfinite", "signbit"):
    _float_predicate(_name)


@rule("fmod")
def fmod_(b: Builder, x: Any, y: Any) -> Value:
    xv, yv = _common(b, x, y)
    if not xv.type.element.is_floating():
        raise SemanticError("fmod expects floating-point inputs", "use % for integers")
    return b.emit("fmod", [xv, yv], xv.type)


@rule("abs")
def abs_(b: Builder, x: Any) -> Any:
    if not isinstance(x, Value):
        return abs(x)
    if x.type.element.is_ptr():
        raise SemanticError("tl.abs of a pointer is not defined",
                            "take tl.abs of the offsets before adding them to the pointer")
    if x.type.element.is_int_unsigned():
        return x
    if x.type.element in D.FP8_DTYPES:  # a bit operation, not arithmetic: clear the sign bit of the code
        bits = b.cast(x, D.uint8, bitcast=True)
        cleared = binary(b, "&", bits, 0x7F)
        if x.type.element.name in D.FP8_FNUZ_NAMES:  # 0x80 is the NaN and stays one
            cleared = where(b, compare(b, "==", bits, 0x80), bits, cleared)
        return b.cast(cleared, x.type.element, bitcast=True)
    return b.emit("abs", [x], x.type)


@rule("fma")
def fma(b: Builder, x: Any, y: Any, z: Any) -> Value:
    xv, yv = _common(b, x, y)
    xv, zv = _common(b, xv, z)
    shape = b.broadcast_shapes(xv.type.shape, yv.type.shape, zv.type.shape)
    ty = xv.type.element
    if not ty.is_floating():
        raise SemanticError(f"tl.fma expects floating-point inputs, got {ty}", "use x * y + z for integers")
    xv, yv, zv = (b.broadcast_to(b.cast(v, ty), shape) for v in (xv, yv, zv))
    return b.emit("fma", [xv, yv, zv], xv.type)


def _minmax(name: str):
    def rule_fn(b: Builder, x: Any, y: Any, propagate_nan: Any = None) -> Value:
        from ..language.builtins import PropagateNan

        mode = {None: "NONE", PropagateNan.NONE: "NONE", PropagateNan.ALL: "ALL"}.get(propagate_nan,
                                                                                   str(propagate_nan).upper())
        if mode not in ("NONE", "ALL"):
            raise SemanticError(f"tl.{name}: unknown propagate_nan={propagate_nan!r}", "use tl.PropagateNan.ALL or NONE")
        xv, yv = _common(b, x, y)
        r = b.emit(name[:3], [xv, yv], xv.type)
        if mode.endswith("ALL") and xv.type.element.is_floating():
            # a NaN in either input gives NaN (x + y is NaN exactly when one of them is)
            either = binary(b, "|", RULES["isnan"](b, xv), RULES["isnan"](b, yv))
            nan = b.broadcast_to(b.const(float("nan"), xv.type.element), xv.type.shape)
            r = b.emit("select", [either, nan, r], r.type)
        return r

    RULES[name] = rule_fn
    return rule_fn


_minmax("maximum")
_minmax("minimum")


@rule("clamp")
def clamp(b: Builder, x: Any, min: Any, max: Any, propagate_nan: Any = None) -> Value:
    return RULES["minimum"](b, RULES["maximum"](b, x, min, propagate_nan), max, propagate_nan)


@rule("fdiv")
def fdiv(b: Builder, x: Any, y: Any, ieee_rounding: Any = False) -> Value:
    xv, yv = _common(b, x, y)
    if not xv.type.element.is_floating():
        raise SemanticError("tl.fdiv expects floating-point inputs", "use x / y, which converts integers to float32")
    if is_value(ieee_rounding):
        raise SemanticError("tl.fdiv: ieee_rounding must be a constant True or False, got a run-time value",
                            "pass a Python bool or a tl.constexpr")
    if ieee_rounding:  # always IEEE division, never a multiply by a reciprocal (passes/reciprocal_division.py)
        return b.emit("fdiv", [xv, yv], xv.type, ieee_rounding=True)
    return b.emit("fdiv", [xv, yv], xv.type)




@rule("umulhi")
def umulhi(b: Builder, x: Any, y: Any) -> Value:
    xv, yv = _common(b, x, y)
    if xv.type.element.name not in ("int32", "uint32", "int64", "uint64"):
        raise SemanticError(f"tl.umulhi expects 32- or 64-bit integers, got {xv.type.element}",
                            "cast with .to(tl.uint32)")
    return b.emit("umulhi", [xv, yv], xv.type)


@rule("cdiv")
def cdiv(b: Builder, x: Any, div: Any) -> Any:
    if not isinstance(x, Value) and not isinstance(div, Value):
        return -(-x // div)
    return binary(b, "//", binary(b, "-", binary(b, "+", x, div), 1), div)

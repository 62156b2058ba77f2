"""Typing rules of the tile language: each builtin and operator builds tile IR here.

One op, one entry: ``RULES[name]`` is the rule for ``tl.<name>``. Rules take the builder and the
call's arguments (IR values or Python constants) and raise ``SemanticError`` with a suggested fix
when the program is ill-typed; the frontend adds the source location.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..language import dtypes as D
from ..language.dtypes import dtype, pointer_type
from . import ir
from .ir import Type, Value

MAX_TILE_NUMEL = 1 << 20  # Triton's TRITON_MAX_TENSOR_NUMEL


class SemanticError(Exception):
    """An ill-typed program; the frontend turns it into a located CompilationError."""

    def __init__(self, message: str, fix: str | None = None, culprit: Any = None):
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.culprit = culprit  # the argument value at fault: the error then points at that argument


def is_value(x: Any) -> bool:
    return isinstance(x, Value)


def is_python_scalar(x: Any) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, dtype)


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class Builder:
    """Appends typed ops to an ``ir.Function`` at the current source location."""

    def __init__(self, fn: ir.Function, debug: bool = False):
        self.fn = fn
        self.loc: ir.Loc | None = None
        self.debug = debug  # debug mode (Triton's debug=True): debug-only checks are compiled in
        self._types: dict[tuple[int, tuple[int, ...]], Type] = {}

    def type(self, element: dtype | pointer_type, shape: tuple[int, ...] = ()) -> Type:
        """``Type(element, shape)``, made once per kernel: types are immutable values, and a kernel's ops have a
        few distinct ones (a matmul 27 of 89). Keyed by the element's identity (the type keeps it alive)."""
        key = (id(element), shape)
        t = self._types.get(key)
        if t is None:
            t = self._types[key] = Type(element, shape)
        return t

    def emit(self, name: str, operands: list[Value], type: Type | None, **attrs: Any) -> Value:
        """Append op ``name`` at the current location; ``operands`` is a list made for it (the op keeps it)."""
        if name not in FP8_MOVES:
            for v in operands:
                if v.type.is_fp8:
                    refuse_fp8_compute(v.type.element, name)
        return self.fn.append(name, operands, type, attrs, self.loc)

    # --- constants and shapes --------------------------------------------------------------
    def const(self, value: Any, ty: dtype) -> Value:
        if _plain_constant(value, ty):  # nothing to convert or check (what the general path below gives)
            return self.emit("const", [], self.type(ty), value=float(value) if ty is D.float32 else value)
        if isinstance(ty, dtype) and ty.is_fp8() and isinstance(value, (bool, int, float)):
            return self.cast(self.const(float(value), D.float32), ty)  # encoded by the conversion's rules
        if not isinstance(value, (bool, int, float)):
            what = f"the string {value!r}" if isinstance(value, str) else f"{type(value).__name__} {value!r}"
            raise SemanticError(f"expected a number of type {ty}, got {what}", "pass a number or a tile",
                                culprit=value)
        if ty.is_floating():
            value = float(value)
        elif ty.is_bool():
            value = bool(value)
        else:
            value = int(value)
            bits = ty.primitive_bitwidth
            value &= (1 << bits) - 1  # store the two's-complement bits, reinterpreted below
            if ty.is_int_signed() and value >= 1 << (bits - 1):
                value -= 1 << bits
        return self.emit("const", [], self.type(ty), value=value)

    def splat(self, x: Value, shape: tuple[int, ...]) -> Value:
        if x.type.shape == tuple(shape):
            return x
        assert not x.type.is_tile
        return self.emit("splat", [x], self.type(x.type.element, tuple(shape)))

    def broadcast_to(self, x: Value, shape: tuple[int, ...]) -> Value:
        shape = tuple(shape)
        if x.type.shape == shape:
            return x
        if not x.type.is_tile:
            return self.splat(x, shape)
        src = x.type.shape
        if len(src) > len(shape):
            raise SemanticError(f"cannot broadcast a tile of shape {list(src)} to {list(shape)}",
                                "make the shapes compatible: sizes must be equal or 1 in each dimension (add dimensions with x[:, None])")
        while len(x.type.shape) < len(shape):
            x = self.emit("expand_dims", [x], self.type(x.type.element, (1,) + x.type.shape), axis=0)
        for have, want in zip(x.type.shape, shape):
            if have != want and have != 1:
                raise SemanticError(
                    f"cannot broadcast a tile of shape {list(src)} to {list(shape)}",
                    "make the shapes agree, or add a size-1 axis with x[:, None] / x[None, :]",
                )
        return self.emit("broadcast", [x], self.type(x.type.element, shape))

    def broadcast_shapes(self, *shapes: tuple[int, ...]) -> tuple[int, ...]:
        # the common cases, shape by shape, as the general rule below gives them (which also words the errors)
        out = _broadcast_pair(shapes[0], shapes[1]) if len(shapes) >= 2 else None
        for s in shapes[2:]:
            if out is None:
                break
            out = _broadcast_pair(out, s)
        if out is not None:
            return out
        rank = max(len(s) for s in shapes)
        out = []
        for i in range(rank):
            dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
            if len(dims) > 1:
                raise SemanticError(
                    "tiles of shapes " + " and ".join(str(list(s)) for s in shapes) + " cannot be broadcast together",
                    "make the shapes agree, or add a size-1 axis with x[:, None] / x[None, :]",
                )
            out.append(dims.pop() if dims else 1)
        return tuple(out)

    def cast(self, x: Value, ty: dtype | pointer_type, bitcast: bool = False, rounding: str | None = None) -> Value:
        src = x.type.element
        if src is ty or src == ty:
            return x
        if bitcast:
            if src.is_ptr() or ty.is_ptr():
                raise SemanticError("bitcast of pointers is not supported", "bitcast the loaded values instead")
            if src.primitive_bitwidth != ty.primitive_bitwidth:
                raise SemanticError(
                    f"cannot bitcast {src} ({src.primitive_bitwidth} bits) to {ty} ({ty.primitive_bitwidth} bits)",
                    "bitcast between types of the same width, or use .to(dtype) for a value conversion",
                )
            return self.emit("bitcast", [x], self.type(ty, x.type.shape))
        if src.is_ptr() or ty.is_ptr():
            return self._pointer_cast(x, src, ty)
        if ty.is_fp64():
            raise SemanticError("Apple GPUs have no float64", "use tl.float32")
        if rounding == "rtz":
            return self.emit("cast", [x], self.type(ty, x.type.shape), rounding="rtz")
        return self.emit("cast", [x], self.type(ty, x.type.shape))

    def _pointer_cast(self, x: Value, src: Any, ty: Any) -> Value:
        """Triton's pointer casts: pointer -> pointer (another element type), integer -> pointer (an address, e.g.
        a data_ptr() loaded from memory), pointer -> int64/uint64 (its address) or int1 (is it non-null)."""
        if src.is_ptr() and ty.is_ptr() or ty.is_ptr() and src.is_int() and src.primitive_bitwidth == 64:
            return self.emit("cast", [x], self.type(ty, x.type.shape))
        if src.is_ptr() and ty.is_int() and ty.primitive_bitwidth == 64:
            return self.emit("cast", [x], self.type(ty, x.type.shape))
        if src.is_ptr() and ty.is_bool():
            return self.emit("ne", [self.cast(x, D.uint64), self.splat(self.const(0, D.uint64), x.type.shape)
                                    if x.type.is_tile else self.const(0, D.uint64)], x.type.with_element(D.int1))
        if ty.is_ptr():
            raise SemanticError(f"cannot convert {src} to {ty}: an address is a 64-bit integer",
                                "convert the addresses to tl.int64 first (x.to(tl.int64))")
        raise SemanticError(f"cannot convert {src} to {ty}: a pointer converts to int64, uint64 or int1 only",
                            "use .to(tl.int64) for the address")

    def to_value(self, x: Any, ty: dtype) -> Value:
        """A Python scalar as a constant of ``ty`` (range-checked), or an IR value converted to ``ty``."""
        if isinstance(x, Value):
            return self.cast(x, ty)
        if _plain_constant(x, ty):  # in range: nothing to refuse
            return self.const(x, ty)
        if isinstance(x, int) and not isinstance(x, bool) and x < 0 and ty.is_int_unsigned() and not ty.is_bool():
            raise SemanticError(
                f"cannot combine the negative scalar {x} with an unsigned {ty} tile",
                "cast one of them explicitly, e.g. x.to(tl.int32)",
            )
        if not D.fits(x, ty):
            raise SemanticError(f"Scalar {x} is out of range for type {ty}", "cast the tile to a wider type first")
        return self.const(x, ty)


def _plain_constant(value: Any, ty: Any) -> bool:
    """Whether ``value`` is a float or an int that becomes a float32 constant, or an int that an int32 constant
    holds as it is: the common constants, for which Builder.const and to_value have nothing to convert or refuse."""
    cls = value.__class__
    if ty is D.float32:
        return cls is float or cls is int
    return ty is D.int32 and cls is int and -0x80000000 <= value <= 0x7FFFFFFF


def _broadcast_pair(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The broadcast of two shapes that are equal, of the same rank or one a scalar's; None for the others."""
    if a == b or not b:
        return tuple(a)
    if not a:
        return tuple(b)
    if len(a) != len(b):
        return None
    out = []
    for p, q in zip(a, b):
        if p == q or q == 1:
            out.append(p)
        elif p == 1:
            out.append(q)
        else:
            return None  # the general rule refuses them
    return tuple(out)


def element_type(x: Any) -> dtype | pointer_type:
    if isinstance(x, Value):
        return x.type.element
    if isinstance(x, (bool, int, float)):
        try:
            return D.literal_dtype(x)
        except ValueError:
            raise SemanticError(f"Scalar {x} is out of range for every integer type",
                                "no integer type is wider than 64 bits: use a smaller constant") from None
    raise SemanticError(f"expected a tile or a scalar, got {type(x).__name__} {x!r}",
                        "pass a tile, a number or a scalar kernel argument")


def shape_of(x: Any) -> tuple[int, ...]:
    return x.type.shape if isinstance(x, Value) else ()


# --- operators ------------------------------------------------------------------------------------

_ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "fdiv", "//": "idiv", "%": "mod",
          "&": "and", "|": "or", "^": "xor", "<<": "shl", ">>": "shr"}
_CMP = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
_PLAIN_ARITH = {"+": "add", "-": "sub", "*": "mul"}


def _common(b: Builder, x: Any, y: Any, div_or_mod: bool = False) -> tuple[Value, Value]:
    """Convert both operands to their computation type and a common shape."""
    return _converted(b, x, y, element_type(x), element_type(y), div_or_mod)


def _converted(b: Builder, x: Any, y: Any, xt: Any, yt: Any, div_or_mod: bool = False) -> tuple[Value, Value]:
    """``_common`` of operands whose element types (``element_type``) the caller has already."""
    x_value, y_value = isinstance(x, Value), isinstance(y, Value)
    if x_value and y_value and xt is yt and (xt is D.float32 or xt is D.int32 or xt is D.int64):
        ty = xt  # two values of one such type: that is their computation type
    else:
        try:
            ty = D.computation_type(xt, not x_value, yt, not y_value, div_or_mod)
        except D.NoFloat64Error as e:
            raise SemanticError(str(e), e.fix) from None
        except TypeError as e:
            fix = ("convert the fp8 tile first, e.g. x.to(tl.float16): fp8 tiles mix only with floating-point tiles"
                   if xt.is_fp8() or yt.is_fp8() else "cast one operand with .to(...) so both have the same signedness")
            raise SemanticError(str(e), fix) from None
    x_shape = x.type.shape if x_value else ()
    y_shape = y.type.shape if y_value else ()
    shape = x_shape if x_shape == y_shape else b.broadcast_shapes(x_shape, y_shape)
    # each operand as Builder.to_value and broadcast_to make it, without their calls where they would give it back
    xv = x if x_value and xt is ty else b.to_value(x, ty)
    if xv.type.shape != shape:
        xv = b.broadcast_to(xv, shape)
    yv = y if y_value and yt is ty else b.to_value(y, ty)
    if yv.type.shape != shape:
        yv = b.broadcast_to(yv, shape)
    return xv, yv


def binary(b: Builder, op: str, x: Any, y: Any) -> Value:
    """``x <op> y`` for the Python operators on tiles and scalars, with Triton's typing."""
    # element_type and is_ptr() as they answer for values, without their calls (a scalar is never a pointer)
    xt = x.type.element if isinstance(x, Value) else element_type(x)
    yt = y.type.element if isinstance(y, Value) else element_type(y)
    if (isinstance(x, Value) and x.type.is_ptr) or (isinstance(y, Value) and y.type.is_ptr):
        return _pointer_arith(b, op, x, y)
    name = _PLAIN_ARITH.get(op)
    if name is not None:  # + - * (the other operators have rules of their own below)
        x, y = _converted(b, x, y, xt, yt)
        return b.emit(name, [x, y], x.type)
    if op == "/":
        x, y = _converted(b, x, y, xt, yt, div_or_mod=True)
        if not x.type.element.is_floating():
            x, y = b.cast(x, D.float32), b.cast(y, D.float32)
        return b.emit("fdiv", [x, y], x.type)
    if op in ("//", "%"):
        x, y = _converted(b, x, y, xt, yt, div_or_mod=True)
        if x.type.element.is_floating():
            if op == "//":
                raise SemanticError("// is not defined on floating-point tiles", "use tl.floor(x / y)")
            return b.emit("fmod", [x, y], x.type)
        return b.emit(_ARITH[op], [x, y], x.type)
    if op in ("&", "|", "^", "<<", ">>"):
        if xt.is_floating() or yt.is_floating():
            raise SemanticError(f"invalid operands of type {xt} and {yt} for operator {op}: it needs integer operands",
                                "cast to an integer type first, or use .to(tl.int32, bitcast=True) for the bits")
        # Triton picks an arithmetic or a logical >> from the signedness of the left tile (of the right one when
        # the left is a Python literal) before both are converted to the common type
        arithmetic = (xt if isinstance(x, Value) else yt).is_int_signed()
        x, y = _converted(b, x, y, xt, yt)
        if op == ">>" and arithmetic != x.type.element.is_int_signed():
            return b.emit("shr", [x, y], x.type, arithmetic=arithmetic)
        return b.emit(_ARITH[op], [x, y], x.type)
    x, y = _converted(b, x, y, xt, yt)
    return b.emit(_ARITH[op], [x, y], x.type)


def _pointer_arith(b: Builder, op: str, x: Any, y: Any) -> Value:
    xt, yt = element_type(x), element_type(y)
    if yt.is_ptr() and op == "+":
        x, y, xt, yt = y, x, yt, xt
    if not xt.is_ptr() or yt.is_ptr() or op not in ("+", "-"):
        raise SemanticError(f"operator {op} is not defined between {xt} and {yt}",
                            "pointers support only pointer + integer offsets and pointer - integer offsets")
    if yt.is_floating():
        raise SemanticError(f"cannot offset a pointer by a floating-point value ({yt})",
                            "offsets must be integers: use offs.to(tl.int32)")
    if not isinstance(y, Value):
        y = b.const(y, D.literal_dtype(y))
    if op == "-":
        y = b.emit("neg", [y], y.type)
    x_shape, y_shape = x.type.shape, y.type.shape  # (both are values now: the pointer, and the offsets)
    shape = x_shape if x_shape == y_shape else b.broadcast_shapes(x_shape, y_shape)
    xv = x if x_shape == shape else b.broadcast_to(x, shape)
    yv = y if y_shape == shape else b.broadcast_to(y, shape)
    return b.emit("addptr", [xv, yv], xv.type)


def compare(b: Builder, op: str, x: Any, y: Any) -> Value:
    xt = x.type.element if isinstance(x, Value) else element_type(x)  # (as in binary)
    yt = y.type.element if isinstance(y, Value) else element_type(y)
    if (isinstance(x, Value) and x.type.is_ptr) or (isinstance(y, Value) and y.type.is_ptr):
        raise SemanticError("comparing pointers is not supported", "compare the offsets instead")
    x, y = _converted(b, x, y, xt, yt)
    return b.emit(_CMP[op], [x, y], b.type(D.int1, x.type.shape))


def unary(b: Builder, op: str, x: Value) -> Value:
    ty = x.type.element
    if op == "+":
        return x
    if op == "-":
        if ty.is_ptr():
            raise SemanticError("cannot negate a pointer",
                                "negate the offsets before adding them to the pointer")
        return b.emit("neg", [x], x.type)
    if op == "~":
        if not ty.is_int():
            raise SemanticError(f"operator ~ needs an integer operand, got {ty}", "use -x for floats")
        return b.emit("not", [x], x.type)
    if op == "not":
        if x.type.is_tile and not ty.is_bool():  # Triton: `not` is logical, on booleans (and scalars)
            raise SemanticError(f"'not' needs a boolean tile, got {x.type}",
                                "use x == 0 (or ~x for the bitwise complement)")
        if ty.is_ptr():
            raise SemanticError("'not' is not defined on pointers", "compare the offsets instead")
        return compare(b, "==", x, 0)
    raise SemanticError(f"unary operator {op} is not supported",
                        "use -x, ~x (integers), `not` on scalars, or tl.abs")


# --- builtins ---------------------------------------------------------------------------------------

# IR ops that move or convert fp8 codes without computing on them (fp8 is a storage type: Apple GPUs have no fp8
# arithmetic); the others refuse fp8 operands
FP8_MOVES = frozenset({"cast", "bitcast", "select", "load", "store", "splat", "broadcast", "expand_dims", "squeeze",
                       "permute", "join", "reshape", "cat", "flip", "split", "gather", "multiple_of",
                       "max_contiguous", "for", "while", "if", "yield"})


def refuse_fp8_compute(ty: dtype, op: str) -> None:
    raise SemanticError(f"'{op}' on {ty!r} values: Apple GPUs have no fp8 arithmetic, so fp8 is a storage type "
                        "(loads, stores, casts, tl.dot)",
                        f"convert first: x.to(tl.float16) or x.to(tl.float32), and .to({ty!r}) the result back")


RULES: dict[str, Callable[..., Any]] = {}


def rule(name: str):
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        RULES[name] = fn
        return fn

    return register


def _const_int(x: Any, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise SemanticError(f"{what} must be a constexpr integer, got {x!r}",
                            "pass it as a tl.constexpr parameter or a literal")
    return x


@rule("program_id")
def program_id(b: Builder, axis: Any) -> Value:
    axis = _const_int(axis, "axis of tl.program_id")
    if axis not in (0, 1, 2):
        raise SemanticError(f"program_id axis must be 0, 1 or 2, got {axis}",
                            "use tl.program_id(0), (1) or (2)")
    return b.emit("program_id", [], b.type(D.int32), axis=axis)


@rule("num_programs")
def num_programs(b: Builder, axis: Any) -> Value:
    axis = _const_int(axis, "axis of tl.num_programs")
    if axis not in (0, 1, 2):
        raise SemanticError(f"num_programs axis must be 0, 1 or 2, got {axis}",
                            "use tl.num_programs(0), (1) or (2)")
    return b.emit("num_programs", [], Type(D.int32), axis=axis)


def _check_shape(shape: tuple[int, ...]) -> None:
    for s in shape:
        if not is_pow2(s):
            raise SemanticError(f"tile dimensions must be powers of two, got shape {list(shape)}",
                                "round up with triton-style next_power_of_2(n) and mask the extra lanes")
    if math.prod(shape) > MAX_TILE_NUMEL:
        raise SemanticError(f"a tile of shape {list(shape)} has more than {MAX_TILE_NUMEL} elements",
                            "use smaller blocks and loop over them")


@rule("arange")
def arange(b: Builder, start: Any, end: Any) -> Value:
    start = _const_int(start, "start of tl.arange")
    end = _const_int(end, "end of tl.arange")
    n = end - start
    if n <= 0:
        raise SemanticError(f"tl.arange({start}, {end}) is empty", "end must be greater than start")
    if not is_pow2(n):
        raise SemanticError(
            f"tl.arange({start}, {end}) has {n} elements, which is not a power of two",
            f"use tl.arange(0, {1 << (n - 1).bit_length()}) with a mask such as offs < {n}",
        )
    _check_shape((n,))
    return b.emit("arange", [], b.type(D.int32, (n,)), start=start, end=end)


def _shape_arg(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise SemanticError(f"shape must be a tuple of constexpr integers, got {shape!r}",
                            "pass a tuple of constexpr integers, e.g. (BLOCK,) or (BLOCK_M, BLOCK_N)")
    out = tuple(_const_int(s, "each dimension of a shape") for s in shape)
    _check_shape(out)
    return out


def _dtype_arg(ty: Any) -> dtype:
    if not isinstance(ty, dtype):
        raise SemanticError(f"expected a dtype such as tl.float32, got {ty!r}",
                            "pass a tl dtype (tl.float32, tl.int32, ...)")
    if ty.is_fp64():
        raise SemanticError("Apple GPUs have no float64", "use tl.float32")
    return ty


def _axis_arg(axis: Any, rank: int, what: str) -> int:
    axis = _const_int(axis, f"the axis of {what}")
    if not -rank <= axis < rank:
        raise SemanticError(f"axis {axis} is out of range for a tile of rank {rank} in {what}",
                            f"use an axis from {-rank} to {rank - 1}")
    return axis % rank


@rule("full")
def full(b: Builder, shape: Any, value: Any, dtype: Any) -> Value:
    shape = _shape_arg(shape)
    ty = _dtype_arg(dtype)
    return b.splat(b.to_value(value, ty), shape) if shape else b.to_value(value, ty)


@rule("zeros")
def zeros(b: Builder, shape: Any, dtype: Any) -> Value:
    return full(b, shape, 0, dtype)


@rule("zeros_like")
def zeros_like(b: Builder, input: Any) -> Value:
    if not isinstance(input, Value):
        raise SemanticError("tl.zeros_like expects a tile",
                            "pass a tile, or use tl.zeros(shape, dtype)")
    return full(b, input.type.shape, 0, input.type.element)


def _mask(b: Builder, mask: Any, shape: tuple[int, ...], what: str) -> Value | None:
    if mask is None:
        return None
    if isinstance(mask, bool):
        mask = b.const(mask, D.int1)
    if not isinstance(mask, Value) or not mask.type.element.is_bool():
        got = mask.type.element if isinstance(mask, Value) else repr(mask)
        raise SemanticError(f"the mask of {what} must be a boolean tile, got {got}",
                            "build it from a comparison such as offs < n")
    return b.broadcast_to(mask, shape)


@rule("where")
def where(b: Builder, condition: Any, x: Any, y: Any) -> Any:
    if not isinstance(condition, Value):
        return x if condition else y
    if not condition.type.element.is_bool():
        condition = b.emit("ne", [condition, b.const(0, condition.type.element)],
                           condition.type.with_element(D.int1)) if not condition.type.is_tile else \
            compare(b, "!=", condition, 0)
    if element_type(x).is_ptr() or element_type(y).is_ptr():
        return _where_pointers(b, condition, x, y)
    xv, yv = _common(b, x, y)
    shape = b.broadcast_shapes(condition.type.shape, xv.type.shape)
    c = b.broadcast_to(condition, shape)
    return b.emit("select", [c, b.broadcast_to(xv, shape), b.broadcast_to(yv, shape)], b.type(xv.type.element, shape))


def _where_pointers(b: Builder, condition: Value, x: Any, y: Any) -> Value:
    """tl.where between two pointers of one type: a select of their 64-bit addresses, cast back (the pointers may
    point into different arguments)."""
    tx, ty = element_type(x), element_type(y)
    if tx != ty:
        raise SemanticError(f"tl.where between pointers needs two pointers of the same type, got {tx} and {ty}",
                            "cast one of them with .to(tl.pointer_type(...)), or select the offsets instead")
    shape = b.broadcast_shapes(condition.type.shape, x.type.shape, y.type.shape)
    xa, ya = (b.broadcast_to(b.cast(v, D.uint64), shape) for v in (x, y))
    picked = b.emit("select", [b.broadcast_to(condition, shape), xa, ya], xa.type)
    return b.cast(picked, tx)


@rule("cast")
def cast(b: Builder, input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: Any = False) -> Value:
    ty = _dtype_arg(dtype) if not isinstance(dtype, pointer_type) else dtype
    if not isinstance(input, Value):
        input = b.const(input, D.literal_dtype(input))
    if fp_downcast_rounding == "rtz" and isinstance(ty, D.dtype) and ty.name in ("fp8e5", "fp8e4b15"):
        if not input.type.element.is_floating():
            raise SemanticError("fp_downcast_rounding should be set only for truncating fp conversions",
                                "drop fp_downcast_rounding, or convert a floating-point tile")
        # float8e5: Triton's GPU conversion toward zero; float8e4b15: Triton ignores the mode (same conversion)
        return b.cast(input, ty, bool(bitcast), rounding="rtz" if ty.name == "fp8e5" else None)
    if fp_downcast_rounding == "rtz" and isinstance(ty, D.dtype) and ty.is_fp8():
        raise SemanticError(f"fp_downcast_rounding='rtz' to {ty!r} does not exist in Triton (its GPU backends convert "
                            "to float8e5 toward zero and ignore the mode for float8e4b15)", "use 'rtne' (the default)")
    if fp_downcast_rounding not in (None, "rtne"):
        raise SemanticError(f"fp_downcast_rounding={fp_downcast_rounding!r} is not supported",
                            "Apple GPUs round to nearest even ('rtne'); drop the argument")
    return b.cast(input, ty, bool(bitcast))


def _hint(name: str):
    def rule_fn(b: Builder, input: Any, values: Any) -> Value:
        if not isinstance(input, Value):
            raise SemanticError(f"tl.{name} expects a tile",
                                "pass a tile (e.g. made with tl.arange, tl.load or tl.full)")
        vals = values if isinstance(values, (tuple, list)) else (values,)
        vals = tuple(_const_int(v, f"the value of tl.{name}") for v in vals)
        if len(vals) == 1:
            vals = vals * max(1, len(input.type.shape))
        if len(vals) != max(1, len(input.type.shape)):
            raise SemanticError(f"tl.{name} needs one value per dimension of the tile ({len(input.type.shape)})",
                                "pass one value per dimension of the tile")
        return b.emit(name, [input], input.type, values=vals)

    RULES[name] = rule_fn


_hint("multiple_of")
_hint("max_contiguous")


@rule("debug_barrier")
def debug_barrier(b: Builder) -> None:
    b.emit("barrier", [], None)


@rule("assume")
def assume(b: Builder, cond: Any) -> None:
    return None  # a promise to the optimizer; nothing to check or emit


@rule("max_constancy")
def max_constancy(b: Builder, input: Any, values: Any) -> Any:
    return input




# --- inline code -----------------------------------------------------------------------------------------------

# Tokens of NVIDIA PTX that an MSL expression never contains (instruction suffixes, registers, statements)
_PTX_SIGNS = ("mov.", "cvt.", "ld.", "st.", "add.", "mul.", "shl.", "shr.", "and.b", "or.b", "xor.b", "prmt.",
              "lop3.", "fma.rn", ".reg", ".b32", ".b16", ".u32", ".s32", ".f32", ".f16", "%r", "%f", "{", ";")


def ptx_sign(text: str) -> str | None:
    """The first PTX-looking token of inline code, or None."""
    return next((t for t in _PTX_SIGNS if t in text), None)


@rule("inline_asm_elementwise")
def inline_asm_elementwise(b: Builder, asm: Any, constraints: Any, args: Any, dtype: Any, is_pure: Any,
                           pack: Any) -> Value:
    what = "tl.inline_asm_elementwise"
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise SemanticError(f"{what} needs the code and the constraints as constant strings",
                            "pass string literals (or constexprs)")
    sign = ptx_sign(asm)
    if sign is not None:
        raise SemanticError(f"{what}: this looks like PTX (it contains {sign!r}); Apple GPUs run no PTX, and on "
                            "Apple the inline code is one Metal Shading Language expression in which $i names "
                            "the i-th operand (outputs first, as in Triton)",
                            "rewrite it as an MSL expression, e.g. \"$1 * 2.0f + $2\" for "
                            "constraints \"=r,r,r\", or use tl.* builtins")
    if isinstance(dtype, (tuple, list)):
        if len(dtype) != 1:
            raise SemanticError(f"{what}: an MSL expression has one result, not {len(dtype)}",
                                "call it once per output")
        dtype = dtype[0]
    if pack != 1:
        raise SemanticError(f"{what}: pack={pack!r}; an MSL expression computes one element at a time",
                            "pass pack=1")
    ty = _dtype_arg(dtype)
    operands = [a if isinstance(a, Value) else b.const(a, D.literal_dtype(a)) for a in (list(args) if isinstance(
        args, (tuple, list)) else [args])]
    outputs = sum(1 for c in constraints.split(",") if c.strip().startswith("="))
    if outputs != 1:
        raise SemanticError(f"{what}: constraints {constraints!r} name {outputs} outputs; the MSL expression "
                            "gives exactly one", "start the constraints with one '=r'")
    import re

    used = {int(m) for m in re.findall(r"\$(\d+)", asm)}
    bad = sorted(i for i in used if not 1 <= i <= len(operands))
    if bad:
        raise SemanticError(f"{what}: ${bad[0]} names no argument (there are {len(operands)}: $1..${len(operands)})",
                            "number the arguments from $1 (the output is $0)")
    shape = b.broadcast_shapes(*(o.type.shape for o in operands)) if operands else ()
    operands = [b.broadcast_to(o, shape) for o in operands]
    return b.emit("inline_msl", operands, Type(ty, shape), code=asm)


# --- device_print / device_assert ------------------------------------------------------------------------------

@rule("device_print")
def device_print(b: Builder, prefix: Any, *args: Any, hex: Any = False) -> None:
    if not isinstance(prefix, str):
        raise SemanticError("tl.device_print needs a string prefix first", 'e.g. tl.device_print("x = ", x)')
    values = []
    for a in args:
        v = a if isinstance(a, Value) else b.const(a, D.literal_dtype(a))
        if v.type.element.is_ptr():
            raise SemanticError("tl.device_print cannot print pointers", "print the offsets instead")
        values.append(v)
    shape = b.broadcast_shapes(*(v.type.shape for v in values)) if values else ()
    values = [b.broadcast_to(v, shape) if shape else v for v in values]
    b.emit("print", values, None, prefix=prefix, hex=bool(hex))


@rule("device_assert")
def device_assert(b: Builder, cond: Any, msg: Any = "", mask: Any = None) -> None:
    if not isinstance(cond, Value):
        if cond or not b.debug:
            return None
        cond = b.const(False, D.int1)  # a constant false one fails every launch in debug mode, as in Triton's
    c = cond if cond.type.element.is_bool() else compare(b, "!=", cond, 0)
    operands = [c]
    if mask is not None:
        operands.append(_mask(b, mask, c.type.shape, "tl.device_assert"))
    if b.debug:  # as Triton: compiled in only in debug mode (debug=True, ENCELADUS_DEBUG=1)
        b.emit("assert", operands, None, msg=str(msg))
    return None

# the rule families of their own modules register themselves in RULES when imported
from . import (  # noqa: E402,F401
    semantic_dot,
    semantic_libdevice,
    semantic_math,
    semantic_memory,
    semantic_reduce,
    semantic_shape,
)

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
        if name not in FP8_MOVES:
            for v in operands:
                if v.type.is_fp8:
                    refuse_fp8_compute(v.type.element, name)
        return self.fn.append(name, operands, type, attrs, self.loc)

    # --- constants and shapes --------------------------------------------------------------
    def const(self, value: Any, ty: dtype) -> Value:
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
        if len(shapes) == 2:  # the common cases, as the general rule below gives them
            a, b = shapes
            if a == b or not b:
                return tuple(a)  # equal shapes, or a tile and a scalar
            if not a:
                return tuple(b)
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
            return self.emit("bitcast", [x], x.type.with_element(ty))
        if src.is_ptr() or ty.is_ptr():
            return self._pointer_cast(x, src, ty)
        if ty.is_fp64():
            raise SemanticError("Apple GPUs have no float64", "use tl.float32")
        if rounding == "rtz":
            return self.emit("cast", [x], x.type.with_element(ty), rounding="rtz")
        return self.emit("cast", [x], x.type.with_element(ty))

    def _pointer_cast(self, x: Value, src: Any, ty: Any) -> Value:
        """Triton's pointer casts: pointer -> pointer (another element type), integer -> pointer (an address, e.g.
        a data_ptr() loaded from memory), pointer -> int64/uint64 (its address) or int1 (is it non-null)."""
        if src.is_ptr() and ty.is_ptr() or ty.is_ptr() and src.is_int() and src.primitive_bitwidth == 64:
            return self.emit("cast", [x], x.type.with_element(ty))
        if src.is_ptr() and ty.is_int() and ty.primitive_bitwidth == 64:
            return self.emit("cast", [x], x.type.with_element(ty))
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
        if isinstance(x, int) and not isinstance(x, bool) and x < 0 and ty.is_int_unsigned() and not ty.is_bool():
            raise SemanticError(
                f"cannot combine the negative scalar {x} with an unsigned {ty} tile",
                "cast one of them explicitly, e.g. x.to(tl.int32)",
            )
        if not D.fits(x, ty):
            raise SemanticError(f"Scalar {x} is out of range for type {ty}", "cast the tile to a wider type first")
        return self.const(x, ty)


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


def _common(b: Builder, x: Any, y: Any, div_or_mod: bool = False) -> tuple[Value, Value]:
    """Convert both operands to their computation type and a common shape."""
    if isinstance(x, Value) and isinstance(y, Value):
        tx, ty = x.type, y.type
        e = tx.element
        if e is ty.element and (e is D.float32 or e is D.int32 or e is D.int64):
            # two values of one such type: that is their computation type, so to_value gives each back as it is
            if tx.shape == ty.shape:
                return x, y
            shape = b.broadcast_shapes(tx.shape, ty.shape)
            return b.broadcast_to(x, shape), b.broadcast_to(y, shape)
    xt, yt = element_type(x), element_type(y)
    try:
        ty = D.computation_type(xt, not isinstance(x, Value), yt, not isinstance(y, Value), div_or_mod)
    except D.NoFloat64Error as e:
        raise SemanticError(str(e), e.fix) from None
    except TypeError as e:
        fix = ("convert the fp8 tile first, e.g. x.to(tl.float16): fp8 tiles mix only with floating-point tiles"
               if xt.is_fp8() or yt.is_fp8() else "cast one operand with .to(...) so both have the same signedness")
        raise SemanticError(str(e), fix) from None
    shape = b.broadcast_shapes(shape_of(x), shape_of(y))
    xv = b.broadcast_to(b.to_value(x, ty), shape)
    yv = b.broadcast_to(b.to_value(y, ty), shape)
    return xv, yv


def binary(b: Builder, op: str, x: Any, y: Any) -> Value:
    """``x <op> y`` for the Python operators on tiles and scalars, with Triton's typing."""
    xt, yt = element_type(x), element_type(y)
    if xt.is_ptr() or yt.is_ptr():
        return _pointer_arith(b, op, x, y)
    if op == "/":
        x, y = _common(b, x, y, div_or_mod=True)
        if not x.type.element.is_floating():
            x, y = b.cast(x, D.float32), b.cast(y, D.float32)
        return b.emit("fdiv", [x, y], x.type)
    if op in ("//", "%"):
        x, y = _common(b, x, y, div_or_mod=True)
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
        x, y = _common(b, x, y)
        if op == ">>" and arithmetic != x.type.element.is_int_signed():
            return b.emit("shr", [x, y], x.type, arithmetic=arithmetic)
        return b.emit(_ARITH[op], [x, y], x.type)
    x, y = _common(b, x, y)
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
    shape = b.broadcast_shapes(shape_of(x), shape_of(y))
    xv = b.broadcast_to(x, shape)
    yv = b.broadcast_to(y, shape)
    return b.emit("addptr", [xv, yv], xv.type)


def compare(b: Builder, op: str, x: Any, y: Any) -> Value:
    xt, yt = element_type(x), element_type(y)
    if xt.is_ptr() or yt.is_ptr():
        raise SemanticError("comparing pointers is not supported", "compare the offsets instead")
    x, y = _common(b, x, y)
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


@rule("load")
def load(b: Builder, pointer: Any, mask: Any = None, other: Any = None, *, cache_modifier: Any = "",
         eviction_policy: Any = "", volatile: Any = False, boundary_check: Any = None,
         padding_option: Any = None) -> Value:
    if not isinstance(pointer, Value):  # (imported here, and only then: aggregates imports this module)
        from .aggregates import BlockPointer, padding_value

        if isinstance(pointer, BlockPointer):
            if mask is not None or other is not None:
                raise SemanticError("tl.load of a block pointer takes boundary_check and padding_option, not "
                                    "mask/other", "use boundary_check=(0, 1) and padding_option='zero' instead of "
                                    "mask/other")
            check = tuple(boundary_check or ())
            ptr, m = pointer.tiles(b, check)
            return load(b, ptr, m, padding_value(padding_option, pointer.element_ty) if m is not None else None)
    if not isinstance(pointer, Value) or not pointer.type.is_ptr:
        raise SemanticError("tl.load expects a pointer or a tile of pointers",
                            "pass a pointer argument plus offsets, e.g. tl.load(x_ptr + offs)")
    if boundary_check is not None or padding_option is not None:
        raise SemanticError("boundary_check/padding_option apply to block pointers (tl.make_block_ptr)",
                            "use a mask, e.g. mask=offs < n")
    shape = b.broadcast_shapes(pointer.type.shape, shape_of(mask), shape_of(other))
    pointer = b.broadcast_to(pointer, shape)
    mask_v = _mask(b, mask, shape, "tl.load")
    elem = pointer.type.element.element_ty
    if elem.is_fp64():
        raise SemanticError(FP64_STORE_ONLY, "pass the array as float32 (arr.astype(np.float32))")
    operands = [pointer]
    if mask_v is not None:
        operands.append(mask_v)
        operands.append(b.broadcast_to(b.to_value(0 if other is None else other, elem), shape))
    elif other is not None:
        raise SemanticError("tl.load got `other` without `mask`", "pass mask=... too, or drop other=")
    return b.emit("load", operands, b.type(elem, shape))


def refuse_const_write(pointer: Value, what: str) -> None:
    """Writes through a pointer to constant data (a ``tl.const`` parameter, ``tl.pointer_type(.., const=True)``)
    are refused, as in Triton."""
    if pointer.type.element.is_const():
        raise SemanticError(f"{what} cannot write through a pointer to constant data ({pointer.type.element}: "
                            "a parameter annotated tl.const, or a pointer cast to tl.pointer_type(..., const=True))",
                            "drop the tl.const annotation (or const=True) from the pointer you write through")


@rule("store")
def store(b: Builder, pointer: Any, value: Any, mask: Any = None, *, cache_modifier: Any = "",
          eviction_policy: Any = "", boundary_check: Any = None) -> None:
    if not isinstance(pointer, Value):  # (imported here, and only then: aggregates imports this module)
        from .aggregates import BlockPointer

        if isinstance(pointer, BlockPointer):
            if mask is not None:
                raise SemanticError("tl.store through a block pointer takes boundary_check, not mask",
                                    "use boundary_check=(0, 1) instead of mask")
            ptr, m = pointer.tiles(b, tuple(boundary_check or ()))
            return store(b, ptr, value, m)
    if not isinstance(pointer, Value) or not pointer.type.is_ptr:
        raise SemanticError("tl.store expects a pointer or a tile of pointers as its first argument",
                            "pass a pointer argument plus offsets, e.g. tl.store(out_ptr + offs, y)")
    if boundary_check is not None:
        raise SemanticError("boundary_check applies to block pointers (tl.make_block_ptr)",
                            "use a mask, e.g. mask=offs < n")
    refuse_const_write(pointer, "tl.store")
    if not pointer.type.is_tile and shape_of(value):
        raise SemanticError(
            f"cannot store a tile of shape {list(shape_of(value))} through a single pointer",
            "build a tile of pointers with ptr + tl.arange(...) offsets",
        )
    shape = b.broadcast_shapes(pointer.type.shape, shape_of(value), shape_of(mask))
    if shape != pointer.type.shape:
        raise SemanticError(
            f"the value (shape {list(shape_of(value))}) or mask does not fit the pointer tile {list(pointer.type.shape)}",
            "store a value whose shape broadcasts to the pointer tile's shape",
        )
    elem = pointer.type.element.element_ty
    if isinstance(value, Value) and value.type.element.is_ptr() and not (elem.is_int() and elem.primitive_bitwidth == 64):
        raise SemanticError(f"storing pointers needs a pointer to int64 or uint64 (their addresses), got a pointer "
                            f"to {elem}", "store the addresses through an int64 pointer, or store integer offsets")
    if elem.is_fp64():  # storage only: the value's float64 bits, through the same memory seen as uint64
        v = b.broadcast_to(float64_bits(b, value), shape)
        pointer = b.cast(pointer, pointer_type(D.uint64))
    else:
        v = b.broadcast_to(b.to_value(value, elem), shape)
    operands = [pointer, v]
    mask_v = _mask(b, mask, shape, "tl.store")
    if mask_v is not None:
        operands.append(mask_v)
    b.emit("store", operands, None)


FP64_STORE_ONLY = ("a float64 array can only be stored to (Apple GPUs have no float64: a kernel writes float32, "
                   "float16, bfloat16, fp8 or integer values into it, converted as Triton converts them), not loaded or "
                   "updated atomically")


def float64_bits(b: Builder, value: Any) -> Value:
    """The bits (uint64) of float64(value) for a float of 32 bits or fewer or an integer (rounded to nearest even
    beyond 53 bits, as Triton's conversion), built in integer arithmetic: Apple GPUs have no float64 type, but a float64 array
    can still receive such values exactly (Triton's store converts them to the element type)."""
    if not isinstance(value, Value):
        value = b.const(value, D.literal_dtype(value))  # a float literal is float32, as Triton types it
    src = value.type.element
    if src.is_fp64():  # a float literal beyond float32's range (Triton types it float64)
        raise SemanticError("storing a float64 value (a literal beyond float32's range) needs float64, which Apple "
                            "GPUs do not have", "store a float32 value")
    if src.is_int() and not src.is_bool() and src.primitive_bitwidth >= 32:
        return _int_float64_bits(b, value)
    if src.is_ptr():
        raise SemanticError("storing pointers into a float64 array is not supported",
                            "store their addresses into an int64 array")
    f = b.cast(value, D.float32)
    u = b.cast(b.emit("bitcast", [f], f.type.with_element(D.uint32)), D.uint64)
    sign = binary(b, "<<", binary(b, ">>", u, 31), 63)
    exp = binary(b, "&", binary(b, ">>", u, 23), 0xFF)
    frac = binary(b, "<<", binary(b, "&", u, 0x7FFFFF), 29)
    # a subnormal float32 (exponent 0) is its fraction times 2**-149: the fraction as a float32 (exact, < 2**23)
    # gives the leading bit's position in its exponent and the remaining bits in its fraction
    sub = b.cast(b.emit("bitcast", [b.cast(binary(b, "&", u, 0x7FFFFF), D.float32)],
                        f.type.with_element(D.uint32)), D.uint64)
    sub_bits = binary(b, "|", binary(b, "<<", binary(b, "+", binary(b, ">>", sub, 23), 747), 52),
                      binary(b, "<<", binary(b, "&", sub, 0x7FFFFF), 29))
    normal = binary(b, "|", binary(b, "<<", binary(b, "+", exp, 896), 52), frac)
    special = binary(b, "|", frac, b.const(0x7FF << 52, D.uint64))  # infinities and NaNs (payload kept)
    mag = where(b, compare(b, "==", exp, 0xFF), special, normal)
    mag = where(b, compare(b, "==", exp, 0),
                where(b, compare(b, "==", binary(b, "&", u, 0x7FFFFF), 0), b.const(0, D.uint64), sub_bits), mag)
    return binary(b, "|", sign, mag)


def _int_float64_bits(b: Builder, value: Value) -> Value:
    """float64_bits of 32- and 64-bit integers: exact up to 53 significant bits, rounded to nearest even beyond (as
    a conversion to float64 rounds)."""
    src = value.type.element
    signed = src.is_int_signed()
    v = b.cast(value, D.int64 if signed else D.uint64)
    neg = compare(b, "<", v, 0) if signed else None
    u = b.cast(v, D.uint64)
    a = where(b, neg, binary(b, "-", b.const(0, D.uint64), u), u) if signed else u  # |v| (2**63 for INT64_MIN)

    def top_bit(x: Value) -> Value:  # floor(log2(x)) of 0 < x < 2**16, from the exponent of float32(x) (exact)
        bits = b.cast(b.emit("bitcast", [b.cast(x, D.float32)], x.type.with_element(D.uint32)), D.int64)
        return binary(b, "-", binary(b, ">>", bits, 23), 127)

    p = top_bit(binary(b, "|", binary(b, "&", a, 0xFFFF), 1))
    for shift in (16, 32, 48):  # the highest non-zero 16-bit chunk decides
        chunk = binary(b, "&", binary(b, ">>", a, shift), 0xFFFF)
        p = where(b, compare(b, "!=", binary(b, ">>", a, shift), 0), binary(b, "+", top_bit(chunk), shift), p)
    p = where(b, compare(b, "==", a, 0), 0, p)
    # up to 53 significant bits: shift left into place; more: shift right by p - 52, rounding to nearest even
    small = compare(b, "<=", p, 52)
    left = b.cast(where(b, small, binary(b, "-", 52, p), 0), D.uint64)
    right = b.cast(where(b, small, 0, binary(b, "-", p, 52)), D.uint64)
    m = binary(b, ">>", binary(b, "<<", a, left), right)
    rem = binary(b, "&", a, binary(b, "-", binary(b, "<<", b.const(1, D.uint64), right), 1))
    half = binary(b, ">>", binary(b, "<<", b.const(1, D.uint64), right), 1)
    up = binary(b, "|", compare(b, ">", rem, half),
                binary(b, "&", compare(b, "==", rem, half), compare(b, "!=", binary(b, "&", m, 1), 0)))
    up = binary(b, "&", up, compare(b, "!=", right, 0))
    m = binary(b, "+", m, b.cast(up, D.uint64))
    carry = compare(b, "==", binary(b, ">>", m, 53), 1)  # rounded up to 2**53: one more in the exponent
    p = where(b, carry, binary(b, "+", p, 1), p)
    m = binary(b, "&", m, (1 << 52) - 1)
    bits = binary(b, "|", binary(b, "<<", b.cast(binary(b, "+", p, 1023), D.uint64), 52), m)
    if signed:
        bits = binary(b, "|", where(b, neg, b.const(1 << 63, D.uint64), b.const(0, D.uint64)), bits)
    return where(b, compare(b, "==", a, 0), b.const(0, D.uint64), bits)


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
    return b.emit("select", [c, b.broadcast_to(xv, shape), b.broadcast_to(yv, shape)], xv.type.with_shape(shape))


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
        r = b.emit(name, [b.cast(x, D.float32)], x.type.with_element(D.float32))
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
        r = b.emit(name, [b.cast(xv, D.float32), b.cast(yv, D.float32)], xv.type.with_element(D.float32))
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
        return b.emit(name, [b.cast(x, D.float32)], x.type.with_element(D.int1))

    RULES[name] = rule_fn


for _name in ("isnan", "isinf", "isfinite", "signbit"):
    _float_predicate(_name)


@rule("fmod")
def fmod_(b: Builder, x: Any, y: Any) -> Value:
    xv, yv = _common(b, x, y)
    if not xv.type.element.is_floating():
        raise SemanticError("fmod expects floating-point inputs", "use % for integers")
    return b.emit("fmod", [xv, yv], xv.type)


@rule("div_rn")
def div_rn(b: Builder, x: Any, y: Any) -> Value:
    return fdiv(b, x, y, ieee_rounding=True)


@rule("sqrt_rn")
def sqrt_rn(b: Builder, x: Any) -> Value:
    return RULES["sqrt"](b, x)


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


# --- reductions and scans ------------------------------------------------------------------------------

Combine = Callable[[Builder, list[Value], list[Value]], list[Any]]


def _axis_arg(axis: Any, rank: int, what: str) -> int:
    axis = _const_int(axis, f"the axis of {what}")
    if not -rank <= axis < rank:
        raise SemanticError(f"axis {axis} is out of range for a tile of rank {rank} in {what}",
                            f"use an axis from {-rank} to {rank - 1}")
    return axis % rank


def _tiles(input: Any, what: str) -> list[Value]:
    xs = list(input) if isinstance(input, tuple) else [input]
    for x in xs:
        if not isinstance(x, Value) or not x.type.is_tile:
            raise SemanticError(f"{what} expects a tile, got {x if not isinstance(x, Value) else x.type}",
                                "pass a tile (e.g. made with tl.arange, tl.load or tl.full)")
        if x.type.element.is_ptr():
            raise SemanticError(f"{what} of a tile of pointers is not supported",
                                "reduce or scan the offsets (integers) instead of the pointers")
    shape = xs[0].type.shape
    if any(x.type.shape != shape for x in xs):
        raise SemanticError(f"the tiles given to {what} must all have the same shape",
                            "broadcast the tiles to one shape first (tl.broadcast_to)")
    return xs


def _combine_region(b: Builder, xs: list[Value], combine: Combine, what: str) -> ir.Block:
    types = [Type(x.type.element) for x in xs]
    block = ir.Block([b.fn.new_value(t) for t in types + types])
    k = len(xs)
    b.fn.push_block(block)
    try:
        outs = combine(b, block.args[:k], block.args[k:])
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        if len(outs) != k:
            raise SemanticError(f"the combine function of {what} returns {len(outs)} values for {k} inputs",
                                "return one value per input tile from the combine function")
        ys = []
        for o, t in zip(outs, types):
            v = b.to_value(o, t.element) if not isinstance(o, Value) else o
            if v.type != t:
                raise SemanticError(f"the combine function of {what} returns {v.type} for an input of {t}",
                                    "return values of the same dtype as the inputs (cast with .to(...))")
            ys.append(v)
        block.ops.append(ir.Op("yield", ys, loc=b.loc))
    finally:
        b.fn.pop_block()
    return block


def build_reduce(b: Builder, input: Any, axis: Any, combine: Combine, keep_dims: Any = False,
                 what: str = "tl.reduce") -> Any:
    """Reduce a tile (or a tuple of tiles of one shape) along ``axis`` (all axes when None)."""
    xs = _tiles(input, what)
    rank = len(xs[0].type.shape)
    if axis is None:
        outs = xs
        for _ in range(rank):
            outs = build_reduce(b, tuple(outs), len(outs[0].type.shape) - 1, combine, False, what)
            outs = list(outs) if isinstance(outs, tuple) else [outs]
        if keep_dims:
            outs = [b.splat(o, (1,) * rank) for o in outs]
        return tuple(outs) if isinstance(input, tuple) else outs[0]
    axis = _axis_arg(axis, rank, what)
    region = _combine_region(b, xs, combine, what)
    shape = xs[0].type.shape[:axis] + xs[0].type.shape[axis + 1:]
    op = b.fn.append_op("reduce", xs, [Type(x.type.element, shape) for x in xs], {"axis": axis}, b.loc)
    op.regions = [region]
    outs = list(op.results)
    if keep_dims:
        outs = [b.emit("expand_dims", [o], o.type.with_shape(shape[:axis] + (1,) + shape[axis:]), axis=axis)
                if o.type.is_tile else b.splat(o, (1,)) for o in outs]
    return tuple(outs) if isinstance(input, tuple) else outs[0]


def _binary_combine(op: str) -> Combine:
    return lambda b, lhs, rhs: [b.emit(op, [lhs[0], rhs[0]], lhs[0].type)]


def sum_dtype(ty: dtype, override: Any) -> dtype:
    """Triton's ``_pick_sum_dtype``."""
    if override is not None:
        return _dtype_arg(override)
    if ty.is_int() and ty.primitive_bitwidth < 32:
        return D.int32 if ty.is_int_signed() else D.uint32
    return ty


@rule("sum")
def sum_(b: Builder, input: Any, axis: Any = None, keep_dims: Any = False, dtype: Any = None) -> Any:
    (x,) = _tiles(input, "tl.sum")
    x = b.cast(x, sum_dtype(x.type.element, dtype))
    if x.type.element.is_bool():
        x = b.cast(x, D.int32)
    return build_reduce(b, x, axis, _binary_combine("add"), keep_dims, "tl.sum")


@rule("xor_sum")
def xor_sum(b: Builder, input: Any, axis: Any = None, keep_dims: Any = False) -> Any:
    (x,) = _tiles(input, "tl.xor_sum")
    if not x.type.element.is_int():
        raise SemanticError(f"tl.xor_sum needs an integer tile, got {x.type.element}",
                            "xor_sum is for integers: bitcast with .to(tl.int32, bitcast=True) first, or use tl.sum for floats")
    return build_reduce(b, x, axis, _binary_combine("xor"), keep_dims, "tl.xor_sum")


@rule("reduce_or")
def reduce_or(b: Builder, input: Any, axis: Any, keep_dims: Any = False) -> Any:
    (x,) = _tiles(input, "tl.reduce_or")
    if not x.type.element.is_int():
        raise SemanticError(f"tl.reduce_or needs an integer tile, got {x.type.element}",
                            "cast it first, e.g. x.to(tl.int32), or reduce with tl.max for floats")
    return build_reduce(b, x, axis, _binary_combine("or"), keep_dims, "tl.reduce_or")


def _arith(op: str) -> Callable[..., Value]:
    def rule_fn(b: Builder, x: Any, y: Any, sanitize_overflow: Any = True) -> Value:
        return binary(b, op, x, y)

    return rule_fn


RULES["add"], RULES["sub"], RULES["mul"] = _arith("+"), _arith("-"), _arith("*")


@rule("to_tensor")
def to_tensor(b: Builder, x: Any) -> Value:
    if isinstance(x, Value):
        return x
    if not is_python_scalar(x):
        raise SemanticError(f"tl.to_tensor needs a number, got {x!r}", "pass an int, float or bool")
    ty = D.literal_dtype(x)
    if ty.is_fp64():
        raise SemanticError(f"tl.to_tensor({x!r}) would be float64, which Apple GPUs do not have",
                            "use a value within float32's range")
    return b.const(x, ty)


@rule("expect_zero")
def expect_zero(b: Builder, x: Any, mask: Any) -> Any:
    m = _mask(b, mask, x.type.shape if isinstance(x, Value) else (), "tl.expect_zero")  # checked in every mode
    if b.debug and isinstance(x, Value):  # as Triton: x == 0 where mask holds is asserted only in debug mode
        ok = binary(b, "|", compare(b, "==", x, 0), compare(b, "==", m, 0))
        device_assert(b, ok, "expect_zero expected x == 0 where mask is true")
    return x


@rule("item")
def item(b: Builder, input: Any) -> Value:
    if not isinstance(input, Value) or not input.type.is_tile:
        return input  # a scalar is its own item (Triton's _unsplat)
    if input.type.numel != 1:
        raise SemanticError(f"x.item() needs a single-element tile, got shape {list(input.type.shape)}",
                            "reduce the tile first (tl.max, tl.sum...), or load a scalar through a pointer")
    return build_reduce(b, input, None, lambda b, lhs, rhs: [lhs[0]], False, "x.item()")


# what a map_elementwise region may hold: scalar arithmetic, constants and structured control flow
_MAP_REGION_OPS = ir.ELEMENTWISE | {"const", "if", "for", "while", "yield"}


def build_map_elementwise(b: Builder, inputs: tuple, body: Callable[[Builder, list[Value]], Any], pack: Any) -> Any:
    """tl.map_elementwise: ``body`` (the inlined scalar function) becomes a region run on every element of the
    broadcast inputs, ``pack`` elements per call; one result tile per value it returns (per ``pack`` values)."""
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise SemanticError(f"tl.map_elementwise: pack must be a positive constexpr integer, got {pack!r}",
                            "pass pack=1 (one element per call) or a small power of two")
    if not inputs:
        raise SemanticError("tl.map_elementwise needs at least one tile to map over", "pass the tiles after the function")
    xs = [x if isinstance(x, Value) else b.const(x, D.literal_dtype(x)) for x in inputs]
    for x in xs:
        if x.type.element.is_ptr():
            raise SemanticError("tl.map_elementwise cannot map over pointers", "load the values first")
    shape = b.broadcast_shapes(*(x.type.shape for x in xs))
    if not shape:  # scalars only: the function itself (each packed slot gets the same element)
        out = body(b, [x for x in xs for _ in range(pack)])
        if pack == 1 or not isinstance(out, tuple):
            return out
        firsts = out[::pack]
        return firsts[0] if len(firsts) == 1 else tuple(firsts)
    if pack & (pack - 1) or shape[-1] % pack:
        raise SemanticError(f"tl.map_elementwise: pack={pack} must be a power of two dividing the last dimension "
                            f"of the tiles ({list(shape)})", "use pack=1, or a pack that divides the last dimension")
    xs = [b.broadcast_to(x, shape) for x in xs]
    block = ir.Block([b.fn.new_value(Type(x.type.element)) for x in xs for _ in range(pack)])
    b.fn.push_block(block)
    try:
        out = body(b, list(block.args))
        single = not isinstance(out, tuple)
        outs = [out] if single else list(out)
        if len(outs) % pack:
            raise SemanticError(f"tl.map_elementwise with pack={pack}: the function returns {len(outs)} values, "
                                f"not a multiple of {pack}", f"return {pack} values per output (one per element)")
        ys = [o if isinstance(o, Value) else b.const(o, D.literal_dtype(o)) for o in outs]
        if any(y.type.is_tile for y in ys):
            raise SemanticError("the function of tl.map_elementwise must return scalars", "return one value per element")
        types = [ys[k * pack].type for k in range(len(ys) // pack)]
        for k, t in enumerate(types):
            if any(y.type != t for y in ys[k * pack:(k + 1) * pack]):
                raise SemanticError(f"tl.map_elementwise: output {k} has different types for the {pack} packed "
                                    "elements", "return the same type for every element (cast with .to(...))")
        block.ops.append(ir.Op("yield", ys, loc=b.loc))
        for inner in ir.walk(block.ops):
            if inner.name not in _MAP_REGION_OPS:
                raise SemanticError(f"the function of tl.map_elementwise computes only on its scalar arguments; "
                                    f"'{inner.name}' (program ids, memory, printing, asserts) is not available inside it",
                                    "compute it outside tl.map_elementwise and pass it in as an argument")
    finally:
        b.fn.pop_block()
    op = b.fn.append_op("map_elementwise", xs, [Type(t.element, shape) for t in types], {"pack": pack}, b.loc)
    op.regions = [block]
    results = list(op.results)
    return results[0] if single and len(results) == 1 else tuple(results)


def _arg_combine(better: str, tie_break_left: bool) -> Combine:
    def combine(b: Builder, lhs: list[Value], rhs: list[Value]) -> list[Value]:
        (v1, i1), (v2, i2) = lhs, rhs
        bool_t = Type(D.int1)
        if v1.type.element.is_floating():
            # As Triton 3.9 (numpy's nanmax/nanargmax): the value ignores NaN, and for the index a NaN counts as
            # -inf for max (+inf for min), so argmax([1, nan, 3, 0]) == 2 and an all-NaN row gives index 0
            value = b.emit(better == "gt" and "max" or "min", [v1, v2], v1.type)
            stand_in = b.const(float("-inf") if better == "gt" else float("inf"), v1.type.element)
            v1 = b.emit("select", [RULES["isnan"](b, v1), stand_in, v1], v1.type)
            v2 = b.emit("select", [RULES["isnan"](b, v2), stand_in, v2], v2.type)
        else:
            value = None
        pick = b.emit(better, [v1, v2], bool_t)
        if tie_break_left:
            eq = b.emit("eq", [v1, v2], bool_t)
            lower = b.emit("lt", [i1, i2], bool_t)
            pick = b.emit("or", [pick, b.emit("and", [eq, lower], bool_t)], bool_t)
        if value is None:
            value = b.emit("select", [pick, v1, v2], v1.type)
        return [value, b.emit("select", [pick, i1, i2], i1.type)]

    return combine


def _indices(b: Builder, x: Value, axis: int) -> Value:
    shape = x.type.shape
    idx = b.emit("arange", [], Type(D.int32, (shape[axis],)), start=0, end=shape[axis])
    for d in range(len(shape)):
        if d < axis:
            idx = b.emit("expand_dims", [idx], idx.type.with_shape((1,) + idx.type.shape), axis=0)
        elif d > axis:
            idx = b.emit("expand_dims", [idx], idx.type.with_shape(idx.type.shape + (1,)),
                         axis=len(idx.type.shape))
    return b.broadcast_to(idx, shape)


def _minmax_reduce(name: str, b: Builder, input: Any, axis: Any, return_indices: Any, tie_break_left: Any,
                   keep_dims: Any) -> Any:
    (x,) = _tiles(input, f"tl.{name}")
    # Triton 3.9 (standard.py max/min): bf16 is reduced in fp32; without indices, every type narrower than 32 bits
    # too (floats in fp32, integers and bool in int32), so tl.max of an int8 tile is an int32 value
    element = x.type.element
    if element.name == "bf16" or (not return_indices and element.primitive_bitwidth < 32):
        x = b.cast(x, D.float32 if element.is_floating() else D.int32)
    if not return_indices:
        return build_reduce(b, x, axis, _binary_combine(name), keep_dims, f"tl.{name}")
    if x.type.element.is_bool():  # compared as integers; the value comes back as bool (Triton keeps int1)
        value, index = _minmax_reduce(name, b, b.cast(x, D.int32), axis, True, tie_break_left, keep_dims)
        return b.cast(value, D.int1), index
    if axis is None:
        raise SemanticError(f"tl.{name}(..., return_indices=True) needs an axis",
                            "pass axis=<dimension>")
    axis = _axis_arg(axis, len(x.type.shape), f"tl.{name}")
    idx = _indices(b, x, axis)
    better = "gt" if name == "max" else "lt"
    return build_reduce(b, (x, idx), axis, _arg_combine(better, bool(tie_break_left)), keep_dims, f"tl.{name}")


@rule("max")
def max_(b: Builder, input: Any, axis: Any = None, return_indices: Any = False,
         return_indices_tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    return _minmax_reduce("max", b, input, axis, return_indices, return_indices_tie_break_left, keep_dims)


@rule("min")
def min_(b: Builder, input: Any, axis: Any = None, return_indices: Any = False,
         return_indices_tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    return _minmax_reduce("min", b, input, axis, return_indices, return_indices_tie_break_left, keep_dims)


@rule("argmax")
def argmax(b: Builder, input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    return _minmax_reduce("max", b, input, axis, True, tie_break_left, keep_dims)[1]


@rule("argmin")
def argmin(b: Builder, input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    return _minmax_reduce("min", b, input, axis, True, tie_break_left, keep_dims)[1]


def build_scan(b: Builder, input: Any, axis: Any, combine: Combine, reverse: Any, what: str) -> Any:
    xs = _tiles(input, what)
    axis = _axis_arg(axis, len(xs[0].type.shape), what)
    if reverse:  # a reverse scan is the scan of the flipped tile, flipped back
        xs = [flip(b, x, axis) for x in xs]
    region = _combine_region(b, xs, combine, what)
    op = b.fn.append_op("scan", xs, [x.type for x in xs], {"axis": axis}, b.loc)
    op.regions = [region]
    outs = list(op.results)
    if reverse:
        outs = [flip(b, o, axis) for o in outs]
    return tuple(outs) if isinstance(input, tuple) else outs[0]


@rule("cumsum")
def cumsum(b: Builder, input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None) -> Any:
    (x,) = _tiles(input, "tl.cumsum")
    x = b.cast(x, sum_dtype(x.type.element, dtype))
    return build_scan(b, x, axis, _binary_combine("add"), reverse, "tl.cumsum")


@rule("cumprod")
def cumprod(b: Builder, input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None) -> Any:
    (x,) = _tiles(input, "tl.cumprod")
    x = b.cast(x, sum_dtype(x.type.element, dtype))
    return build_scan(b, x, axis, _binary_combine("mul"), reverse, "tl.cumprod")


# --- shape ops -----------------------------------------------------------------------------------------

def _tile(x: Any, what: str) -> Value:
    if not isinstance(x, Value) or not x.type.is_tile:
        raise SemanticError(f"{what} expects a tile, got {x.type if isinstance(x, Value) else repr(x)}",
                            "pass a tile (e.g. made with tl.arange, tl.load or tl.full)")
    return x


def _dims_arg(dims: tuple, what: str) -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return tuple(_const_int(d, f"each dimension of {what}") for d in dims)


@rule("permute")
def permute(b: Builder, input: Any, *dims: Any) -> Value:
    x = _tile(input, "tl.permute")
    order = _dims_arg(dims, "tl.permute")
    rank = len(x.type.shape)
    if sorted(order) != list(range(rank)):
        raise SemanticError(f"{list(order)} is not a permutation of the {rank} dimensions of the tile",
                            "pass each dimension index exactly once, e.g. (1, 0) for a 2-D tile")
    if order == tuple(range(rank)):
        return x
    shape = tuple(x.type.shape[p] for p in order)
    return b.emit("permute", [x], x.type.with_shape(shape), order=order)


@rule("trans")
def trans(b: Builder, input: Any, *dims: Any) -> Value:
    x = _tile(input, "tl.trans")
    if not dims or (len(dims) == 1 and dims[0] is None):
        if len(x.type.shape) != 2:
            raise SemanticError(f"tl.trans without dims needs a 2-D tile, got {len(x.type.shape)}-D",
                                "pass the permutation, e.g. tl.trans(x, 0, 2, 1)")
        dims = (1, 0)
    return permute(b, x, *dims)


def _shape_varargs(shape: tuple, what: str) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _shape_arg(tuple(shape))


@rule("reshape")
def reshape(b: Builder, input: Any, *shape: Any, can_reorder: Any = False) -> Value:
    x = _tile(input, "tl.reshape")
    new = _shape_varargs(shape, "tl.reshape")
    if math.prod(new) != x.type.numel:
        raise SemanticError(f"cannot reshape a tile of shape {list(x.type.shape)} ({x.type.numel} elements) "
                            f"to {list(new)} ({math.prod(new)} elements)", "keep the number of elements the same")
    if new == x.type.shape:
        return x
    if [s for s in new if s != 1] == [s for s in x.type.shape if s != 1]:
        # only size-1 dimensions change: a free view
        y = x
        while len(y.type.shape) and 1 in y.type.shape:
            axis = y.type.shape.index(1)
            y = b.emit("squeeze", [y], y.type.with_shape(y.type.shape[:axis] + y.type.shape[axis + 1:]),
                       axis=axis)
        for axis, s in enumerate(new):
            if s == 1:
                y = b.emit("expand_dims", [y], y.type.with_shape(y.type.shape[:axis] + (1,) + y.type.shape[axis:]),
                           axis=axis)
        return y
    return b.emit("reshape", [x], x.type.with_shape(new))


@rule("view")
def view(b: Builder, input: Any, *shape: Any) -> Value:
    return reshape(b, input, *shape)


@rule("ravel")
def ravel(b: Builder, x: Any, can_reorder: Any = False) -> Value:
    x = _tile(x, "tl.ravel")
    return reshape(b, x, x.type.numel)


@rule("broadcast_to")
def broadcast_to(b: Builder, input: Any, *shape: Any) -> Value:
    new = _shape_varargs(shape, "tl.broadcast_to") if shape else ()
    if not isinstance(input, Value):
        input = b.const(input, D.literal_dtype(input))
    return b.broadcast_to(input, new)


@rule("broadcast")
def broadcast(b: Builder, input: Any, other: Any) -> tuple[Value, Value]:
    shape = b.broadcast_shapes(shape_of(input), shape_of(other))
    return b.broadcast_to(input, shape), b.broadcast_to(other, shape)


@rule("expand_dims")
def expand_dims(b: Builder, input: Any, axis: Any) -> Value:
    x = input if isinstance(input, Value) else b.const(input, D.literal_dtype(input))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    rank = len(x.type.shape) + len(axes)
    axes = sorted(_axis_arg(a, rank, "tl.expand_dims") for a in axes)
    for a in axes:
        x = b.emit("expand_dims", [x], b.type(x.type.element, x.type.shape[:a] + (1,) + x.type.shape[a:]), axis=a) \
            if x.type.is_tile else b.splat(x, (1,))
    return x


@rule("squeeze")
def squeeze(b: Builder, input: Any, dim: Any) -> Value:
    x = _tile(input, "tl.squeeze")
    axis = _axis_arg(dim, len(x.type.shape), "tl.squeeze")
    if x.type.shape[axis] != 1:
        raise SemanticError(f"tl.squeeze: dimension {axis} has size {x.type.shape[axis]}, not 1",
                            "squeeze a dimension of size 1, or use tl.reshape")
    return b.emit("squeeze", [x], x.type.with_shape(x.type.shape[:axis] + x.type.shape[axis + 1:]), axis=axis)


@rule("unsqueeze")
def unsqueeze(b: Builder, input: Any, dim: Any) -> Value:
    return expand_dims(b, input, dim)


@rule("join")
def join(b: Builder, a: Any, other: Any) -> Value:
    xa, xb = _common(b, a, other)
    if not xa.type.is_tile:
        xa, xb = b.splat(xa, (1,)), b.splat(xb, (1,))
        r = b.emit("join", [xa, xb], xa.type.with_shape((1, 2)))
        return b.emit("squeeze", [r], r.type.with_shape((2,)), axis=0)
    return b.emit("join", [xa, xb], xa.type.with_shape(xa.type.shape + (2,)))


@rule("split")
def split(b: Builder, a: Any) -> tuple[Value, Value]:
    x = _tile(a, "tl.split")
    if x.type.shape[-1] != 2:
        raise SemanticError(f"tl.split needs a last dimension of size 2, got shape {list(x.type.shape)}",
                            "reshape so the last dimension has size 2 (e.g. tl.reshape(x, (n, 2))) or use tl.join's output")
    if len(x.type.shape) == 1:  # two scalars: split the (1, 2) tile, then take each half's single element
        lo, hi = split(b, reshape(b, x, (1, 2)))
        return item(b, lo), item(b, hi)
    op = b.fn.append_op("split", [x], [x.type.with_shape(x.type.shape[:-1])] * 2, {}, b.loc)
    return op.results[0], op.results[1]


@rule("interleave")
def interleave(b: Builder, a: Any, other: Any) -> Value:
    j = join(b, a, other)
    if len(j.type.shape) == 1:  # two scalars: joined they are already interleaved
        return j
    shape = j.type.shape[:-2] + (j.type.shape[-2] * 2,)
    return reshape(b, j, shape)


@rule("cat")
def cat(b: Builder, input: Any, other: Any, can_reorder: Any = False, dim: Any = 0) -> Value:
    if element_type(input).is_ptr() or element_type(other).is_ptr():  # pointers take no part in promotion
        if not (isinstance(input, Value) and isinstance(other, Value) and input.type == other.type):
            raise SemanticError(f"tl.cat of pointers needs two tiles of one pointer type, got "
                                f"{element_type(input)} and {element_type(other)}",
                                "make both operands tiles of pointers to the same element type")
        xa, xb = input, other
    else:
        xa, xb = _common(b, input, other)
    if not xa.type.is_tile or xa.type.shape != xb.type.shape:
        raise SemanticError("tl.cat needs two tiles of the same shape",
                            "both halves must have the same shape so the result stays a power of two")
    if _const_int(dim, "dim of tl.cat") != 0:
        raise SemanticError("tl.cat supports dim=0 only", "permute the tiles first")
    shape = (xa.type.shape[0] * 2,) + xa.type.shape[1:]
    return b.emit("cat", [xa, xb], xa.type.with_shape(shape))


@rule("flip")
def flip(b: Builder, x: Any, dim: Any = None) -> Value:
    t = _tile(x, "tl.flip")
    axis = len(t.type.shape) - 1 if dim is None else _axis_arg(dim, len(t.type.shape), "tl.flip")
    if t.type.shape[axis] == 1:
        return t
    return b.emit("flip", [t], t.type, axis=axis)


@rule("debug_barrier")
def debug_barrier(b: Builder) -> None:
    b.emit("barrier", [], None)


@rule("assume")
def assume(b: Builder, cond: Any) -> None:
    return None  # a promise to the optimizer; nothing to check or emit


@rule("max_constancy")
def max_constancy(b: Builder, input: Any, values: Any) -> Any:
    return input


# --- dot ---------------------------------------------------------------------------------------------------

INPUT_PRECISIONS = (None, "ieee", "tf32", "tf32x3", "hf32", "bf16", "bf16x3", "bf16x6")


@rule("dot")
def dot(b: Builder, input: Any, other: Any, acc: Any = None, input_precision: Any = None, allow_tf32: Any = None,
        max_num_imprecise_acc: Any = None, out_dtype: Any = None) -> Value:
    """Matrix product of [M, K] and [K, N] tiles (or [B, M, K] and [B, K, N]), accumulated in ``acc``."""
    a, bt = _tile(input, "tl.dot"), _tile(other, "tl.dot")
    ra, rb = len(a.type.shape), len(bt.type.shape)
    if ra not in (2, 3) or ra != rb:
        raise SemanticError(f"tl.dot needs two 2-D (or two 3-D, batched) tiles, got shapes {list(a.type.shape)} and "
                            f"{list(bt.type.shape)}",
                            "reshape the operands to [M, K] and [K, N] (or [B, M, K] and [B, K, N])")
    if a.type.shape[-1] != bt.type.shape[-2] or a.type.shape[:-2] != bt.type.shape[:-2]:
        raise SemanticError(f"tl.dot: shapes {list(a.type.shape)} and {list(bt.type.shape)} do not agree "
                            f"(the first tile's last dimension must equal the second tile's dimension -2)",
                            "transpose an operand with tl.trans(x) or fix the block sizes")
    ta, tb = a.type.element, bt.type.element
    if ta.is_fp8() and tb.is_fp8():  # any two fp8 formats, as in Triton: exact upcast to fp16 (no fp8 units)
        a, bt = b.cast(a, D.float16), b.cast(bt, D.float16)
        ta = tb = D.float16
    if ta != tb:
        raise SemanticError(f"tl.dot operands must have the same dtype, got {ta} and {tb}",
                            "convert one operand, e.g. b.to(a.dtype)")
    if ta.name not in ("fp32", "fp16", "bf16", "int8"):
        raise SemanticError(f"tl.dot does not support {ta} operands",
                            "use float32, float16, bfloat16 or int8 operands (convert with .to(...))")
    if input_precision not in INPUT_PRECISIONS:
        raise SemanticError(f"tl.dot: unknown input_precision {input_precision!r}",
                            "use 'ieee' (Apple GPUs multiply float32 exactly; 'tf32' is accepted and means the same)")
    default_out = D.int32 if ta.name == "int8" else D.float32
    shape = a.type.shape[:-1] + (bt.type.shape[-1],)
    if acc is not None:
        acc_v = acc if isinstance(acc, Value) else b.const(acc, default_out)
        out_ty = acc_v.type.element if out_dtype is None else _dtype_arg(out_dtype)
        if acc_v.type.element != out_ty:
            raise SemanticError(f"tl.dot: acc is {acc_v.type.element} but out_dtype is {out_ty}",
                                "make them agree (acc decides the result's dtype)")
        acc_v = b.broadcast_to(acc_v, shape)
    elif ta.name == "int8":  # as in Triton (and our interpreter): int8 dots give int32, whatever out_dtype says
        out_ty = D.int32
        acc_v = b.splat(b.const(0, out_ty), shape)
    else:
        out_ty = default_out if out_dtype is None else _dtype_arg(out_dtype)
        acc_v = b.splat(b.const(0, out_ty), shape)
    if ta.name == "int8" and out_ty.name != "int32":
        raise SemanticError(f"tl.dot of int8 operands accumulates in int32, not {out_ty}", "use out_dtype=tl.int32")
    if ta.is_floating() and out_ty.name not in ("fp32", "fp16", "bf16"):
        raise SemanticError(f"tl.dot of {ta} operands cannot produce {out_ty}", "use out_dtype=tl.float32")
    return b.emit("dot", [a, bt, acc_v], Type(out_ty, shape), input_precision=input_precision or "ieee")


# OCP MX element formats of tl.dot_scaled: the tile dtype (None: e2m1, two codes per uint8) and its code dtype
MX_FORMATS = {"e2m1": (None, D.uint8), "e4m3": (D.float8e4nv, D.uint8), "e5m2": (D.float8e5, D.uint8),
              "bf16": (D.bfloat16, D.uint16), "fp16": (D.float16, D.uint16)}
MX_GROUP = 32  # elements along K sharing one e8m0 scale


def _u32(b: Builder, x: Value, value: int) -> Value:
    return b.splat(b.const(value, D.uint32), x.type.shape)


def _along(b: Builder, n: int, axis: int, shape: tuple[int, ...]) -> Value:
    """0 .. n-1 along ``axis`` of an int32 tile of ``shape`` (the same along every other axis)."""
    i = arange(b, 0, n)
    for d in range(len(shape)):
        if d != axis:
            i = expand_dims(b, i, d)
    return b.broadcast_to(i, shape)


def _mx_operand(b: Builder, x: Any, scale: Any, fmt: Any, k_pack: Any, is_rhs: bool) -> Value:
    """One dot_scaled operand dequantized into a float32 tile ([..., M, K] for lhs, [..., K, N] for rhs)."""
    side = "rhs" if is_rhs else "lhs"
    if fmt not in MX_FORMATS:
        raise SemanticError(f"tl.dot_scaled: {side}_format {fmt!r} is not an MX format",
                            f"use one of {sorted(MX_FORMATS)} (a constexpr string)")
    x = _tile(x, "tl.dot_scaled")
    if len(x.type.shape) not in (2, 3):
        raise SemanticError(f"tl.dot_scaled takes 2-D (or batched 3-D) operands, got {side} of shape "
                            f"{list(x.type.shape)}", "reshape the operand to [M, K] / [K, N] (or [B, M, K] / [B, K, N])")
    ty, code_ty = MX_FORMATS[fmt]
    if not k_pack and fmt != "e2m1":
        raise SemanticError(f"tl.dot_scaled: only e2m1 operands can be packed along another dimension than K "
                            f"({side}_k_pack=False with {fmt!r})", f"drop {side}_k_pack=False")
    lead = x.type.shape[:-2]
    nl = len(lead)
    elem = x.type.element
    if fmt == "e2m1":
        if elem != D.uint8:
            raise SemanticError(f"tl.dot_scaled: e2m1 {side} must be uint8 (two 4-bit codes per byte), got {elem}",
                                "load the packed bytes from a uint8 array")
        rows, cols = x.type.shape[-2:]
        packed_last = k_pack != is_rhs  # lhs packs K (last axis), rhs packs K (axis -2); k_pack=False the other
        # element j of the packed axis is byte j // 2's low nibble (j even) or high nibble (j odd): a gather of the
        # bytes (its source in threadgroup memory is the packed uint8 tile, half the elements, one byte each)
        # rather than a join and a reshape through threadgroup memory of the whole unpacked tile
        axis = nl + 1 if packed_last else nl
        shape = (*lead, rows, cols * 2) if packed_last else (*lead, rows * 2, cols)
        j = _along(b, shape[axis], axis, shape)
        n = b.cast(gather(b, x, b.emit("shr", [j, b.splat(b.const(1, D.int32), shape)], j.type), axis), D.uint32)
        nibble = b.cast(b.emit("shl", [b.emit("and", [j, b.splat(b.const(1, D.int32), shape)], j.type),
                                       b.splat(b.const(2, D.int32), shape)], j.type), D.uint32)
        n = b.emit("and", [b.emit("shr", [n, nibble], n.type), _u32(b, n, 0xF)], n.type)
        sign = b.emit("shl", [b.emit("and", [n, _u32(b, n, 8)], n.type), _u32(b, n, 28)], n.type)
        e = b.emit("and", [b.emit("shr", [n, _u32(b, n, 1)], n.type), _u32(b, n, 3)], n.type)
        m = b.emit("and", [n, _u32(b, n, 1)], n.type)
        normal = b.emit("or", [b.emit("shl", [b.emit("add", [e, _u32(b, n, 126)], n.type), _u32(b, n, 23)], n.type),
                               b.emit("shl", [m, _u32(b, n, 22)], n.type)], n.type)
        half = b.emit("mul", [m, _u32(b, n, 0x3F000000)], n.type)  # e == 0: 0 or 0.5
        is_sub = b.emit("eq", [e, _u32(b, n, 0)], n.type.with_element(D.int1))
        bits = b.emit("or", [b.emit("select", [is_sub, half, normal], n.type), sign], n.type)
        value = b.cast(bits, D.float32, bitcast=True)
    else:
        if elem == code_ty:
            x = b.cast(x, ty, bitcast=True)
        elif elem != ty:
            raise SemanticError(f"tl.dot_scaled: {fmt} {side} must be {ty!r} (or its {code_ty!r} codes), got {elem}",
                                f"load it as {ty!r}, or pass {side}_format matching its dtype")
        value = b.cast(x, D.float32)
    if scale is None:
        return value
    s = _tile(scale, "tl.dot_scaled")
    k = value.type.shape[-2] if is_rhs else value.type.shape[-1]
    rows = value.type.shape[-1] if is_rhs else value.type.shape[-2]
    want = (*lead, rows, k // MX_GROUP)
    if s.type.shape != want or k % MX_GROUP:
        raise SemanticError(f"tl.dot_scaled: {side}_scale must have shape {list(want)} (one e8m0 scale per "
                            f"{MX_GROUP} elements along K={k}), got {list(s.type.shape)}",
                            f"pass [{'N' if is_rhs else 'M'}, K // {MX_GROUP}] scales (rhs_scale is not transposed)")
    if s.type.element not in (D.uint8, D.int8):
        raise SemanticError(f"tl.dot_scaled: scales are e8m0 bytes (uint8), got {s.type.element}",
                            "load the scales from a uint8 array")
    # scale k // 32 for each element k: a gather of the codes (bytes) along K, not a broadcast and a reshape of
    # float32 scales through threadgroup memory
    s = b.cast(s, D.uint8, bitcast=True) if s.type.element == D.int8 else s
    full = (*lead, rows, k)
    s = gather(b, s, b.emit("shr", [_along(b, k, nl + 1, full), b.splat(b.const(MX_GROUP.bit_length() - 1, D.int32), full)],
                                 Type(D.int32, full)),
               nl + 1)
    s = b.cast(s, D.uint32)
    bits = b.emit("shl", [s, _u32(b, s, 23)], s.type)  # 2**(s - 127) as float32 bits
    bits = b.emit("select", [b.emit("eq", [s, _u32(b, s, 0)], s.type.with_element(D.int1)), _u32(b, s, 0x00400000),
                             bits], s.type)  # s == 0: 2**-127, a float32 subnormal
    bits = b.emit("select", [b.emit("eq", [s, _u32(b, s, 255)], s.type.with_element(D.int1)),
                             _u32(b, s, 0x7FC00000), bits], s.type)  # 255: NaN
    sc = b.cast(bits, D.float32, bitcast=True)  # [..., rows, K]
    if is_rhs:
        sc = permute(b, sc, *range(nl), nl + 1, nl)
    return b.emit("mul", [value, sc], value.type)


@rule("dot_scaled")
def dot_scaled(b: Builder, lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any = None, fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True,
               out_dtype: Any = None) -> Value:
    """OCP MX operands dequantized into float32 tiles (integer code for e2m1 and the e8m0 scales) and multiplied
    by the existing dot; Apple GPUs have no MX units."""
    if out_dtype is not None and out_dtype != D.float32:
        raise SemanticError(f"tl.dot_scaled: out_dtype must be tl.float32, got {out_dtype!r}",
                            "drop out_dtype (Triton supports only float32) and convert the result")
    a = _mx_operand(b, lhs, lhs_scale, lhs_format, lhs_k_pack, is_rhs=False)
    w = _mx_operand(b, rhs, rhs_scale, rhs_format, rhs_k_pack, is_rhs=True)
    if a.type.shape[-1] != w.type.shape[-2]:
        raise SemanticError(f"tl.dot_scaled: the operands hold K={a.type.shape[-1]} and K={w.type.shape[-2]} elements "
                            f"(shapes {list(_tile(lhs, '').type.shape)} and {list(_tile(rhs, '').type.shape)})",
                            "e2m1 operands hold two elements per byte along the packed dimension: make K agree")
    return dot(b, a, w, acc, input_precision="ieee")


# --- atomics -------------------------------------------------------------------------------------------------

ATOMIC_SEMS = (None, "relaxed", "acquire", "release", "acq_rel")
ATOMIC_SCOPES = (None, "gpu", "cta", "sys")


# the sign-bit trick applied to the data: biased values order as unsigned ones
SIGNED_64_FIX = ("keep the values biased in a uint64 buffer (v.to(tl.uint64, bitcast=True) ^ 0x8000000000000000), "
                 "use tl.atomic_max/min on it without using the result, and flip the top bit back when reading")


def _atomic(b: Builder, kind: str, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any,
            cmp: Any = None, what: str | None = None) -> Value:
    store = what == "tl.atomic_store"  # an exchange whose old value is dropped
    what = what or f"tl.atomic_{kind}"
    if not isinstance(pointer, Value) or not pointer.type.is_ptr:
        raise SemanticError(f"{what} expects a pointer or a tile of pointers",
                            "pass a pointer argument plus offsets, e.g. counts_ptr + idx")
    if sem not in ATOMIC_SEMS:
        raise SemanticError(f"{what}: unknown sem={sem!r}", "use 'relaxed', 'acquire', 'release' or 'acq_rel'")
    _atomic_scope(scope, what)  # refuses an unknown scope and scope='sys'
    refuse_const_write(pointer, what)
    elem = pointer.type.element.element_ty
    if elem.name in ("int16", "uint16") and kind != "cas" and not store:
        raise SemanticError(f"{what} on {elem} is not supported (Triton accepts 16-bit integers only in "
                            "tl.atomic_cas)", "use an int32 buffer, or tl.atomic_cas in a loop")
    u64_minmax = elem.name == "uint64" and kind in ("max", "min") and not store
    byte_store = store and elem.name in ("int8", "uint8", "int1")  # a loop on the containing 32-bit word
    if elem.name not in ("int32", "uint32", "fp32", "fp16", "bf16", "int16", "uint16") and not u64_minmax \
            and not byte_store:
        if elem.name == "int64" and kind in ("max", "min"):
            raise SemanticError(f"{what} on int64 is not available on Apple GPUs: Metal's only 64-bit atomics are "
                                "max/min of unsigned 64-bit integers, and no sequence of them orders the stored bits "
                                "of signed values (docs/memory.md, 64-bit atomics)", SIGNED_64_FIX)
        if elem.primitive_bitwidth == 64:
            raise SemanticError(f"{what} on {elem} is not available on Apple GPUs: Metal has 64-bit atomics only for "
                                "max/min of unsigned 64-bit integers (uint64), without returning the old value",
                                "use 32-bit counters (int32/uint32/float32), or tl.atomic_max/min on a uint64 "
                                "buffer without using the result")
        raise SemanticError(f"{what} on {elem} is not supported (Metal has 32-bit integer and float32 atomics only)",
                            "accumulate in a float32 or int32 buffer and convert afterwards")
    if elem.is_floating() and kind in ("and", "or", "xor"):
        raise SemanticError(f"{what} needs an integer pointer, got {elem}", "use tl.atomic_add/max/min on floats")
    shape = b.broadcast_shapes(pointer.type.shape, shape_of(val), shape_of(mask), shape_of(cmp))
    if shape != pointer.type.shape:
        raise SemanticError(f"the value of {what} (shape {list(shape_of(val))}) does not fit the pointer tile "
                            f"{list(pointer.type.shape)}",
                            "give the value the pointer tile's shape, or broadcast it with tl.broadcast_to")
    operands = [pointer]
    if cmp is not None:
        operands.append(b.broadcast_to(b.to_value(cmp, elem), shape))
    operands.append(b.broadcast_to(b.to_value(val, elem), shape))
    mask_v = _mask(b, mask, shape, what)
    if mask_v is not None:
        operands.append(mask_v)
    # Triton's defaults: acq_rel at gpu scope (the MSL emitter fences every atomic that is not relaxed)
    return b.emit("atomic", operands, Type(elem, shape), kind=kind, masked=mask_v is not None,
                  sem=sem or "acq_rel", scope=scope or "gpu")


def _atomic_rule(kind: str):
    def rule_fn(b: Builder, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Value:
        return _atomic(b, kind, pointer, val, mask, sem, scope)

    RULES[f"atomic_{kind}"] = rule_fn


for _kind in ("add", "max", "min", "and", "or", "xor", "xchg"):
    _atomic_rule(_kind)


@rule("atomic_cas")
def atomic_cas(b: Builder, pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> Value:
    return _atomic(b, "cas", pointer, val, None, sem, scope, cmp=cmp)


def _atomic_access(b: Builder, kind: str, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any,
                   default_sem: str) -> Value:
    """tl.atomic_load / atomic_store / atomic_poll: an atomic op of kind load, xchg (its old value unused) or
    poll, with Triton's narrower choice of ``sem`` (acquire or release, or relaxed)."""
    what = {"load": "tl.atomic_load", "xchg": "tl.atomic_store", "poll": "tl.atomic_poll"}[kind]
    if sem not in (None, "relaxed", default_sem):
        raise SemanticError(f"{what} only supports {default_sem} and relaxed semantics, got sem={sem!r}",
                            f"use sem='{default_sem}' (the default) or sem='relaxed'")
    if not isinstance(pointer, Value) or not pointer.type.is_ptr:
        raise SemanticError(f"{what} expects a pointer or a tile of pointers",
                            "pass a pointer argument plus offsets, e.g. flags_ptr + idx")
    elem = pointer.type.element.element_ty
    if kind == "poll" and not (elem.is_int() and elem.primitive_bitwidth in (16, 32, 64)):
        raise SemanticError(f"{what} only supports integer elements with width {{16, 32, 64}}, got {elem}",
                            "poll an int32 flag")
    if elem.primitive_bitwidth == 64 and kind != "poll":  # (a 64-bit poll reads its two 32-bit words: memory.py)
        raise SemanticError(f"{what} on {elem} is not available on Apple GPUs: Metal has no 64-bit atomic load or "
                            "store (its only 64-bit atomics are max/min on ulong)", "use 32-bit flags and counters")
    if elem.is_fp8():
        raise SemanticError(f"{what} on {elem} is not supported: fp8 is a storage type on Apple GPUs",
                            "load and store the codes through a tl.uint8 pointer (ptr.to(tl.pointer_type(tl.uint8)))")
    if kind == "load":
        shape = b.broadcast_shapes(pointer.type.shape, shape_of(mask))
        if shape != pointer.type.shape:
            raise SemanticError(f"the mask of {what} (shape {list(shape_of(mask))}) does not fit the pointer tile "
                                f"{list(pointer.type.shape)}", "give the mask the pointer tile's shape")
        operands = [pointer]
        mask_v = _mask(b, mask, shape, what)
        if mask_v is not None:
            operands.append(mask_v)
        return b.emit("atomic", operands, Type(elem, shape), kind="load", masked=mask_v is not None,
                      sem=sem or default_sem, scope=_atomic_scope(scope, what))
    if kind == "poll":
        shape = pointer.type.shape
        if b.broadcast_shapes(shape, shape_of(val)) != shape:
            raise SemanticError(f"the expected value of {what} (shape {list(shape_of(val))}) does not fit the "
                                f"pointer tile {list(shape)}", "give it the pointer tile's shape")
        operands = [pointer, b.broadcast_to(b.to_value(val, elem), shape)]
        return b.emit("atomic", operands, Type(D.int1, shape), kind="poll", masked=False,
                      sem=sem or default_sem, scope=_atomic_scope(scope, what))
    return _atomic(b, "xchg", pointer, val, mask, sem or default_sem, scope, what=what)


def _atomic_scope(scope: Any, what: str) -> str:
    if scope not in ATOMIC_SCOPES:
        raise SemanticError(f"{what}: unknown scope={scope!r}", "use 'gpu', 'cta' or 'sys'")
    # scope='sys' compiles with device-scope fences, exact where the device is the host (the cpu backend); the
    # metal backend refuses the launch (Metal's fences reach at most the device: runtime/launch.py)
    return scope or "gpu"


@rule("atomic_load")
def atomic_load(b: Builder, pointer: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Value:
    return _atomic_access(b, "load", pointer, None, mask, sem, scope, "acquire")


@rule("atomic_store")
def atomic_store(b: Builder, pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> None:
    _atomic_access(b, "xchg", pointer, val, mask, sem, scope, "release")


@rule("atomic_poll")
def atomic_poll(b: Builder, pointer: Any, expected_value: Any, sem: Any = None, scope: Any = None,
                timeout_ns: Any = None) -> Value:
    if timeout_ns is not None:
        raise SemanticError("tl.atomic_poll(timeout_ns=...) cannot be honoured on Apple GPUs: Metal shaders have no "
                            "clock to measure the time spent polling",
                            "drop timeout_ns (the poll then waits until the value arrives), or bound the wait with "
                            "a loop of tl.atomic_load calls")
    return _atomic_access(b, "poll", pointer, expected_value, None, sem, scope, "acquire")


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


# --- data movement: gather, histogram, sort ----------------------------------------------------------------

@rule("gather")
def gather(b: Builder, src: Any, index: Any, axis: Any) -> Value:
    s, i = _tile(src, "tl.gather"), _tile(index, "tl.gather")
    rank = len(s.type.shape)
    axis = _axis_arg(axis, rank, "tl.gather")
    if len(i.type.shape) != rank:
        raise SemanticError(f"tl.gather: the index tile (rank {len(i.type.shape)}) must have the rank of the source "
                            f"({rank})", "add size-1 dimensions with x[:, None]")
    if not i.type.element.is_int():
        raise SemanticError(f"tl.gather: indices must be integers, got {i.type.element}", "cast with .to(tl.int32)")
    for d in range(rank):
        if d != axis and i.type.shape[d] not in (s.type.shape[d],):
            raise SemanticError(f"tl.gather: the index shape {list(i.type.shape)} must match the source shape "
                                f"{list(s.type.shape)} except along axis {axis}",
                                "give the index tile the source's shape except along axis")
    return b.emit("gather", [s, i], s.type.with_shape(i.type.shape), axis=axis)


@rule("histogram")
def histogram(b: Builder, input: Any, num_bins: Any, mask: Any = None) -> Value:
    x = _tile(input, "tl.histogram")
    if len(x.type.shape) != 1 or not x.type.element.is_int():
        raise SemanticError(f"tl.histogram needs a 1-D integer tile, got {x.type}", "flatten with tl.ravel first")
    bins = _const_int(num_bins, "num_bins of tl.histogram")
    _check_shape((bins,))
    operands = [b.cast(x, D.int32)]
    mask_v = _mask(b, mask, x.type.shape, "tl.histogram")
    if mask_v is not None:
        operands.append(mask_v)
    return b.emit("histogram", operands, Type(D.int32, (bins,)), bins=bins)


def _sort_last(b: Builder, x: Value, descending: bool, k: int | None) -> Value:
    shape = x.type.shape[:-1] + ((k,) if k is not None else (x.type.shape[-1],))
    return b.emit("sort", [x], x.type.with_shape(shape), descending=bool(descending),
                  k=k if k is not None else x.type.shape[-1])


def _sorted(b: Builder, x: Any, dim: Any, descending: Any, k: int | None, what: str) -> Value:
    t = _tile(x, what)
    rank = len(t.type.shape)
    if rank > 2:
        raise SemanticError(f"{what} supports 1-D and 2-D tiles", "reshape to 2-D first")
    d = rank - 1 if dim is None else _axis_arg(dim, rank, what)
    if d != rank - 1:  # sort along rows of the transpose
        return permute(b, _sort_last(b, permute(b, t, 1, 0), descending, k), 1, 0)
    return _sort_last(b, t, descending, k)


@rule("sort")
def sort(b: Builder, x: Any, dim: Any = None, descending: Any = False) -> Value:
    return _sorted(b, x, dim, descending, None, "tl.sort")


@rule("topk")
def topk(b: Builder, x: Any, k: Any, dim: Any = None, descending: Any = True) -> Value:
    t = _tile(x, "tl.topk")
    k = _const_int(k, "k of tl.topk")
    axis = len(t.type.shape) - 1 if dim is None else _axis_arg(dim, len(t.type.shape), "tl.topk")
    if not is_pow2(k) or k > t.type.shape[axis]:
        raise SemanticError(f"tl.topk: k={k} must be a power of two no larger than {t.type.shape[axis]}",
                            "use a power-of-two k no larger than the dimension")
    return _sorted(b, t, dim, descending, k, "tl.topk")


# --- block pointers and tensor descriptors ------------------------------------------------------------------

@rule("make_block_ptr")
def make_block_ptr(b: Builder, base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any) -> Any:
    from . import aggregates

    return aggregates.make_block_ptr(b, base, shape, strides, offsets, block_shape, order)


@rule("advance")
def advance(b: Builder, base: Any, offsets: Any) -> Any:
    from . import aggregates

    return aggregates.advance(b, base, offsets)


@rule("make_tensor_descriptor")
def make_tensor_descriptor(b: Builder, base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any = "zero") -> Any:
    from . import aggregates

    if padding_option not in ("zero", None, ""):
        raise SemanticError(f"tensor descriptors pad with zeros; padding_option={padding_option!r} is not supported",
                            "drop padding_option (zero padding), or load through a block pointer with padding_option='nan'")
    return aggregates.make_tensor_descriptor(b, base, shape, strides, block_shape)


def _descriptor_arg(desc: Any, name: str) -> Any:
    from .aggregates import TensorDescriptor

    if not isinstance(desc, TensorDescriptor):
        raise SemanticError(f"tl.{name} expects a tensor descriptor first, got {type(desc).__name__}",
                            "make one with tl.make_tensor_descriptor(...) or pass a TensorDescriptor argument")
    return desc


@rule("load_tensor_descriptor")
def load_tensor_descriptor(b: Builder, desc: Any, offsets: Any) -> Any:
    return _descriptor_arg(desc, "load_tensor_descriptor").load(b, offsets)


@rule("store_tensor_descriptor")
def store_tensor_descriptor(b: Builder, desc: Any, offsets: Any, value: Any) -> Any:
    return _descriptor_arg(desc, "store_tensor_descriptor").store(b, offsets, value)


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

from . import semantic_libdevice  # noqa: E402,F401  (libdevice typing rules register themselves in RULES)

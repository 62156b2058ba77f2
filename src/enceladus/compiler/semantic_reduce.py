"""Typing rules of reductions and scans (``tl.sum``, ``tl.max``, ``tl.argmax``, ``tl.reduce``, ``tl.cumsum``, ...) and of
``tl.map_elementwise``: the ops that carry a combine region. They register themselves in ``semantic.RULES``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..language import dtypes as D
from ..language.dtypes import dtype
from . import ir
from .ir import Type, Value
from .semantic import (
    RULES,
    Builder,
    SemanticError,
    _axis_arg,
    _dtype_arg,
    _mask,
    binary,
    compare,
    device_assert,
    is_python_scalar,
    rule,
)
from .semantic_shape import flip

# --- reductions and scans ------------------------------------------------------------------------------

Combine = Callable[[Builder, list[Value], list[Value]], list[Any]]


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
    types = [b.type(x.type.element) for x in xs]
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
    op = b.fn.append_op("reduce", xs, [b.type(x.type.element, shape) for x in xs], {"axis": axis}, b.loc)
    op.regions = [region]
    outs = list(op.results)
    if keep_dims:
        outs = [b.emit("expand_dims", [o], b.type(o.type.element, shape[:axis] + (1,) + shape[axis:]), axis=axis)
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

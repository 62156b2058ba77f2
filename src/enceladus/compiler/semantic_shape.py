"""Typing rules of shape ops and data movement: permute/trans, reshape, broadcast, expand_dims, join/split,
cat, flip, gather, histogram, sort, topk. They register themselves in ``semantic.RULES``."""

from __future__ import annotations

import math
from typing import Any

from ..language import dtypes as D
from .ir import Type, Value
from .semantic import (
    RULES,
    Builder,
    SemanticError,
    _axis_arg,
    _check_shape,
    _common,
    _const_int,
    _mask,
    _shape_arg,
    element_type,
    is_pow2,
    rule,
    shape_of,
)

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
        return RULES["item"](b, lo), RULES["item"](b, hi)  # (semantic_reduce: it imports this module)
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

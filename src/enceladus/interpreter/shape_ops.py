"""Shape ops, reductions, scans, sort, gather, histogram and ``dot`` on the interpreter's tiles.

Axis ``a`` of a tile is axis ``a + 1`` of its data (axis 0 is the program axis).
"""

from __future__ import annotations

import builtins as py
from collections.abc import Callable
from typing import Any

import numpy as np

from ..language import dtypes as D
from ..language.dtypes import dtype
from . import fp8
from .ops import OPS, const_int, dtype_arg, op, shape_arg
from .tensor import Tile, align, binary, broadcast_shapes, cast_array, to_tile, unwrap


def _axis(t: Tile, axis: Any, what: str) -> int:
    a = const_int(axis, f"the axis of {what}")
    rank = len(t.shape)
    if not -rank <= a < rank:
        raise ValueError(f"{what}: axis {a} is out of range for a tile of rank {rank}")
    return a % rank


def _dims(args: tuple) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(unwrap(args[0]), (tuple, list)):
        args = tuple(unwrap(args[0]))
    return tuple(const_int(d, "a dimension") for d in args)


# --- shape ops -------------------------------------------------------------------------------------------------

@op("reshape", member=True)
def reshape(input: Any, *shape: Any, can_reorder: bool = False) -> Tile:
    t = to_tile(input)
    dims = _dims(shape)
    if int(np.prod(dims, dtype=np.int64)) != t.numel:
        raise ValueError(f"cannot reshape a tile of shape {t.shape} ({t.numel} elements) to {list(dims)}")
    shape_arg(dims) if dims else None
    return t.view_of(t.data.reshape((t.data.shape[0], *dims)))


OPS["view"] = reshape


@op("ravel", member=True)
def ravel(x: Any, can_reorder: bool = False) -> Tile:
    t = to_tile(x)
    return reshape(t, t.numel)


@op("permute", member=True)
def permute(input: Any, *dims: Any) -> Tile:
    t = to_tile(input)
    order = _dims(dims)
    if sorted(order) != list(py.range(len(t.shape))):
        raise ValueError(f"permute dims {list(order)} must be a permutation of 0..{len(t.shape) - 1}")
    return t.view_of(np.ascontiguousarray(np.transpose(t.data, (0, *(d + 1 for d in order)))))


@op("trans", member=True)
def trans(input: Any, *dims: Any) -> Tile:
    t = to_tile(input)
    if not dims or (len(dims) == 1 and unwrap(dims[0]) is None):
        if len(t.shape) != 2:
            raise ValueError(f"trans() without dims needs a 2-D tile, got shape {t.shape}; pass the permutation")
        dims = (1, 0)
    return permute(t, *dims)


@op("expand_dims", member=True)
def expand_dims(input: Any, axis: Any) -> Tile:
    t = to_tile(input)
    axes = unwrap(axis)
    axes = [axes] if not isinstance(axes, (tuple, list)) else list(axes)
    rank = len(t.shape) + len(axes)
    raw = [const_int(a, "the axis of expand_dims") for a in axes]
    for a in raw:
        if not -rank <= a < rank:
            raise ValueError(f"invalid axis {a}. Expected {-rank} <= axis < {rank}")
    norm = sorted(a % rank for a in raw)
    data = t.data
    for a in norm:
        data = np.expand_dims(data, a + 1)
    return t.view_of(data)


@op("unsqueeze", member=True)
def unsqueeze(input: Any, dim: Any) -> Tile:
    return expand_dims(input, dim)


@op("squeeze", member=True)
def squeeze(input: Any, dim: Any) -> Tile:
    t = to_tile(input)
    d = _axis(t, dim, "squeeze")
    if t.shape[d] != 1:
        raise ValueError(f"squeeze: dimension {d} of a tile of shape {t.shape} has size {t.shape[d]}, not 1")
    return t.view_of(np.squeeze(t.data, axis=d + 1))


@op("broadcast_to", member=True)
def broadcast_to(input: Any, *shape: Any) -> Tile:
    t = to_tile(input)
    dims = list(_dims(shape))
    if t.shape and (len(t.shape) != len(dims) or broadcast_shapes(t.shape, dims) != dims):
        raise ValueError(f"cannot broadcast a tile of shape {t.shape} to {dims}")
    data = t.data.reshape(t.data.shape + (1,) * (len(dims) - len(t.shape)))
    return t.view_of(np.broadcast_to(data, (data.shape[0], *dims)))


@op("broadcast")
def broadcast(input: Any, other: Any) -> tuple[Tile, Tile]:
    a, b = to_tile(input), to_tile(other)
    # a tile of lower rank gains leading dimensions of size 1 first (valid in Triton)
    rank = max(len(a.shape), len(b.shape))
    a, b = (t if len(t.shape) in (0, rank) else
            t.view_of(t.data.reshape(t.data.shape[:1] + (1,) * (rank - len(t.shape)) + t.data.shape[1:]))
            for t in (a, b))
    shape = broadcast_shapes(a.shape, b.shape)
    return broadcast_to(a, *shape), broadcast_to(b, *shape)


@op("join", member=True)
def join(a: Any, b: Any) -> Tile:
    x, y = broadcast(a, b)
    if x.dtype != y.dtype:
        raise TypeError(f"tl.join needs two tiles of one dtype, got {x.dtype} and {y.dtype}")
    xd, yd = np.broadcast_arrays(x.data, y.data)
    return x.like(np.stack([xd, yd], axis=-1))


@op("split", member=True)
def split(a: Any) -> tuple[Tile, Tile]:
    t = to_tile(a)
    if not t.shape or t.shape[-1] != 2:
        raise ValueError(f"tl.split needs a tile whose last dimension is 2, got shape {t.shape}")
    return t.like(t.data[..., 0]), t.like(t.data[..., 1])


@op("interleave", member=True)
def interleave(a: Any, b: Any) -> Tile:
    j = join(a, b)
    shape = j.shape
    if len(shape) == 1:  # two scalars: joined they are already interleaved
        return j
    return reshape(j, *shape[:-2], shape[-2] * 2)


@op("cat")
def cat(input: Any, other: Any, can_reorder: bool = False, dim: int = 0) -> Tile:
    a, b = to_tile(input), to_tile(other)
    d = _axis(a, dim, "cat")
    if a.dtype != b.dtype or len(a.shape) != len(b.shape):
        raise TypeError(f"tl.cat needs tiles of one dtype and rank, got {a.dtype}{a.shape} and {b.dtype}{b.shape}")
    ad, bd = a.data, b.data
    p = max(ad.shape[0], bd.shape[0])
    ad = np.broadcast_to(ad, (p, *ad.shape[1:]))
    bd = np.broadcast_to(bd, (p, *bd.shape[1:]))
    return a.like(np.concatenate([ad, bd], axis=d + 1))


@op("flip", member=True)
def flip(x: Any, dim: Any = None) -> Tile:
    t = to_tile(x)
    d = len(t.shape) - 1 if unwrap(dim) is None else _axis(t, dim, "flip")
    return t.like(np.flip(t.data, axis=d + 1))


# --- reductions -------------------------------------------------------------------------------------------------

def _reduced(t: Tile, axis: Any, what: str) -> tuple[np.ndarray, int]:
    """The data with the reduction axis last (all axes flattened when axis is None)."""
    if unwrap(axis) is None:
        return t.data.reshape(t.data.shape[0], -1), -1
    a = _axis(t, axis, what)
    return np.moveaxis(t.data, a + 1, -1), a


def _finish(t: Tile, out: np.ndarray, axis: int, keep_dims: bool, ty: dtype) -> Tile:
    if keep_dims:
        out = np.expand_dims(out, -1)
        if axis == -1:
            out = out.reshape((out.shape[0],) + (1,) * len(t.shape))
        else:
            out = np.moveaxis(out, -1, axis + 1)
    return Tile(np.ascontiguousarray(out), ty)


def pick_sum_dtype(ty: dtype, override: Any) -> dtype:
    """Triton's ``_pick_sum_dtype``: integers narrower than 32 bits accumulate in (u)int32."""
    if unwrap(override) is not None:
        return dtype_arg(override)
    if ty.is_int() and ty.primitive_bitwidth < 32:
        return D.int32 if ty.is_int_signed() else D.uint32
    return ty


@op("sum", member=True)
def sum_(input: Any, axis: Any = None, keep_dims: bool = False, dtype: Any = None) -> Tile:
    t = to_tile(input)
    ty = pick_sum_dtype(t.dtype, dtype)
    data, a = _reduced(Tile(cast_array(t.data, t.dtype, ty), ty), axis, "sum")
    acc = np.float32 if ty.name in ("fp16", "bf16") else ty.to_numpy()
    with np.errstate(all="ignore"):
        out = np.sum(data, axis=-1, dtype=acc).astype(ty.to_numpy())
    return _finish(t, out, a, keep_dims, ty)


@op("xor_sum", member=True)
def xor_sum(input: Any, axis: Any = None, keep_dims: bool = False) -> Tile:
    t = to_tile(input)
    if not t.dtype.is_int():
        raise ValueError(f"xor_sum only supported for integers, got {t.dtype}")
    data, a = _reduced(t, axis, "xor_sum")
    return _finish(t, np.bitwise_xor.reduce(data, axis=-1), a, keep_dims, t.dtype)


@op("reduce_or", member=True)
def reduce_or(input: Any, axis: Any, keep_dims: bool = False) -> Tile:
    t = to_tile(input)
    if not t.dtype.is_int():
        raise ValueError(f"reduce_or only supported for integers, got {t.dtype}")
    data, a = _reduced(t, axis, "reduce_or")
    return _finish(t, np.bitwise_or.reduce(data, axis=-1), a, keep_dims, t.dtype)


def _extreme(name: str, fn: Callable, arg: Callable) -> None:
    def run(input: Any, axis: Any = None, return_indices: bool = False, return_indices_tie_break_left: bool = True,
            keep_dims: bool = False) -> Any:
        t = to_tile(input)
        # Triton 3.9: bf16 is reduced in fp32; without indices every type narrower than 32 bits too (floats in
        # fp32, integers and bool in int32)
        if t.dtype.name == "bf16" or (not unwrap(return_indices) and t.dtype.primitive_bitwidth < 32):
            ty = D.float32 if t.dtype.is_floating() else D.int32
            t = Tile(cast_array(t.data, t.dtype, ty), ty)
        data, a = _reduced(t, axis, name)
        wide = data.astype(np.float32) if t.dtype.name == "fp16" else data
        value = _finish(t, fn.reduce(wide, axis=-1).astype(data.dtype), a, keep_dims, t.dtype)
        if not unwrap(return_indices):
            return value
        return value, _arg_index(t, data, a, keep_dims, arg, unwrap(return_indices_tie_break_left))

    run.__name__ = name
    op(name, member=True)(run)


def _arg_index(t: Tile, data: np.ndarray, a: int, keep_dims: bool, arg: Callable, left: bool) -> Tile:
    wide = data.astype(np.float32) if t.dtype.name in ("fp16", "bf16") else data
    if not left:
        wide = wide[..., ::-1]
    if wide.dtype.kind == "f":  # NaN counts as -inf for argmax, +inf for argmin (numpy's nanargmax, Triton 3.9)
        wide = np.where(np.isnan(wide), -np.inf if arg is np.argmax else np.inf, wide)
    idx = arg(wide, axis=-1)
    if not left:
        idx = wide.shape[-1] - 1 - idx
    return _finish(t, idx.astype(np.int32), a, keep_dims, D.int32)


_extreme("max", np.fmax, np.argmax)
_extreme("min", np.fmin, np.argmin)


def _argext(name: str, arg: Callable) -> None:
    def run(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> Tile:
        t = to_tile(input)
        data, a = _reduced(t, axis, name)
        return _arg_index(t, data, a, keep_dims, arg, unwrap(tie_break_left))

    run.__name__ = name
    op(name, member=True)(run)


_argext("argmax", np.argmax)
_argext("argmin", np.argmin)


def _as_tuple(x: Any) -> tuple[Tile, ...]:
    x = unwrap(x)
    return tuple(to_tile(v) for v in x) if isinstance(x, (tuple, list)) else (to_tile(x),)


def _combine(fn: Callable, a: tuple[Tile, ...], b: tuple[Tile, ...]) -> tuple[Tile, ...]:
    out = fn(*a, *b)
    return tuple(to_tile(v) for v in out) if isinstance(out, (tuple, list)) else (to_tile(out),)


def _take(ts: tuple[Tile, ...], index: Any) -> tuple[Tile, ...]:
    return tuple(t.like(t.data[(Ellipsis, index)]) for t in ts)


def _append_last(p: Tile, v: Tile) -> Tile:
    """``p`` with the last element of ``v`` along the reduction axis appended (odd lengths)."""
    n = max(p.data.shape[0], v.data.shape[0])
    left = np.broadcast_to(p.data, (n, *p.data.shape[1:]))
    right = np.broadcast_to(v.data[..., -1:], (n, *p.data.shape[1:-1], 1)).astype(p.data.dtype)
    return p.like(np.concatenate([left, right], axis=-1))


@op("reduce", member=True)
def reduce(input: Any, axis: Any, combine_fn: Callable, keep_dims: bool = False) -> Any:
    """Order-preserving tree reduction: neighbours combine (left operand first), as on the GPU."""
    from .launch import as_callable

    fn = as_callable(combine_fn)
    ins = _as_tuple(input)
    single = not isinstance(unwrap(input), (tuple, list))
    shape: list[int] = []
    for t in ins:
        shape = broadcast_shapes(shape, t.shape)
    cur = []
    for t in ins:
        t = broadcast_to(t, *shape) if shape else t
        data, a = _reduced(t, axis, "reduce")
        cur.append(Tile(np.ascontiguousarray(data), t.dtype))
    vals = tuple(cur)
    while vals[0].shape[-1] > 1:
        n = vals[0].shape[-1]
        pairs = _combine(fn, _take(vals, slice(0, n - 1, 2)), _take(vals, slice(1, n, 2)))
        if n % 2:
            pairs = tuple(_append_last(p, v) for p, v in zip(pairs, vals))
        vals = pairs
    template = Tile(np.zeros((1, *shape), np.int8), D.int8)
    outs = tuple(_finish(template, v.data[..., 0], a, unwrap(keep_dims), v.dtype) for v in vals)
    return outs[0] if single and len(outs) == 1 else outs


@op("associative_scan", member=True)
def associative_scan(input: Any, axis: Any, combine_fn: Callable, reverse: bool = False) -> Any:
    """Inclusive scan by doubling strides (Hillis-Steele); the earlier element is the left operand.

    A reverse scan runs from the end: the later element (in the original order) is the left operand, as in
    Triton (its `get_first_element` reverse scan gives every element the last one)."""
    from .launch import as_callable

    fn = as_callable(combine_fn)
    ins = _as_tuple(input)
    single = not isinstance(unwrap(input), (tuple, list))
    a = _axis(ins[0], axis, "associative_scan")
    vals = tuple(t.like(np.ascontiguousarray(np.moveaxis(t.data, a + 1, -1))) for t in ins)
    if unwrap(reverse):
        vals = tuple(v.like(v.data[..., ::-1]) for v in vals)
    n = vals[0].shape[-1]
    d = 1
    while d < n:
        new = _combine(fn, _take(vals, slice(0, n - d)), _take(vals, slice(d, n)))
        merged = []
        for v, nv in zip(vals, new):
            p = max(v.data.shape[0], nv.data.shape[0])
            data = np.array(np.broadcast_to(v.data, (p,) + v.data.shape[1:]), dtype=nv.data.dtype)
            data[..., d:] = nv.data
            merged.append(Tile(data, nv.dtype))
        vals = tuple(merged)
        d *= 2
    if unwrap(reverse):
        vals = tuple(v.like(v.data[..., ::-1]) for v in vals)
    outs = tuple(v.like(np.ascontiguousarray(np.moveaxis(v.data, -1, a + 1))) for v in vals)
    return outs[0] if single else outs


def _scan(name: str, ufunc: np.ufunc) -> None:
    def run(input: Any, axis: Any = 0, reverse: bool = False, dtype: Any = None) -> Tile:
        t = to_tile(input)
        ty = pick_sum_dtype(t.dtype, dtype)
        a = _axis(t, axis, name)
        data = cast_array(t.data, t.dtype, ty)
        acc = np.float32 if ty.name in ("fp16", "bf16") else ty.to_numpy()
        if unwrap(reverse):
            data = np.flip(data, a + 1)
        with np.errstate(all="ignore"):
            out = ufunc.accumulate(data.astype(acc), axis=a + 1).astype(ty.to_numpy())
        if unwrap(reverse):
            out = np.flip(out, a + 1)
        return Tile(np.ascontiguousarray(out), ty)

    run.__name__ = name
    op(name, member=True)(run)


_scan("cumsum", np.add)
_scan("cumprod", np.multiply)


# --- sort, gather, histogram ------------------------------------------------------------------------------------

@op("sort", member=True)
def sort(x: Any, dim: Any = None, descending: bool = False) -> Tile:
    t = to_tile(x)
    d = len(t.shape) - 1 if unwrap(dim) is None else _axis(t, dim, "sort")
    out = np.sort(t.data.astype(np.float32) if t.dtype.name in ("fp16", "bf16") else t.data, axis=d + 1)
    if unwrap(descending):
        out = np.flip(out, d + 1)
    return t.like(np.ascontiguousarray(out).astype(t.data.dtype))


@op("bitonic_merge")
def bitonic_merge(x: Any, dim: Any = None, descending: Any = 0) -> Tile:
    """Triton's bitonic merge along the last dimension: for strides n/2 ... 1, the pairs (i, i + stride) with the
    stride's bit of i clear are compared and swapped, with Triton's where() rules (NaN pairs as it leaves them)."""
    t = to_tile(x)
    last = len(t.shape) - 1
    if unwrap(dim) not in (None, last, -1):
        raise ValueError(f"bitonic_merge: only the last dimension ({last}) is supported, got dim={unwrap(dim)}")
    n = t.shape[last]
    if n & (n - 1):
        raise ValueError(f"bitonic_merge: the last dimension must be a power of two, got {n}")
    data = t.data.copy()
    index = np.arange(n)
    stride = n // 2
    while stride >= 1:
        first = index[(index & stride) == 0]
        a, b = data[..., first], data[..., first + stride]
        a_gt, b_gt = a > b, b > a
        if unwrap(descending):
            data[..., first], data[..., first + stride] = np.where(a_gt, a, b), np.where(b_gt, a, b)
        else:
            data[..., first], data[..., first + stride] = np.where(a_gt, b, a), np.where(b_gt, b, a)
        stride //= 2
    return t.like(data)


@op("topk", member=True)
def topk(x: Any, k: Any, dim: Any = None, descending: Any = True) -> Tile:
    t = to_tile(x)
    d = len(t.shape) - 1 if unwrap(dim) is None else _axis(t, dim, "topk")
    kk = const_int(k, "k")
    if kk < 1 or kk & (kk - 1) or kk > t.shape[d]:
        raise ValueError(f"topk: k={kk} must be a power of two no larger than {t.shape[d]}")
    full = sort(t, d, descending)
    return full.like(np.ascontiguousarray(np.take(full.data, np.arange(kk), axis=d + 1)))


@op("gather", member=True)
def gather(src: Any, index: Any, axis: Any) -> Tile:
    s, i = to_tile(src), to_tile(index)
    a = _axis(s, axis, "gather")
    if len(s.shape) != len(i.shape):
        raise ValueError(f"gather: source rank {len(s.shape)} and index rank {len(i.shape)} must match")
    idx = i.data.astype(np.int64)
    if (idx < 0).any() or (idx >= s.shape[a]).any():
        raise IndexError(f"gather: index out of range for axis {a} of size {s.shape[a]}")
    p = max(s.data.shape[0], idx.shape[0])
    sd = np.broadcast_to(s.data, (p, *s.data.shape[1:]))
    idx = np.broadcast_to(idx, (p, *idx.shape[1:]))
    return s.like(np.take_along_axis(sd, idx, axis=a + 1))


@op("histogram", member=True)
def histogram(input: Any, num_bins: Any, mask: Any = None) -> Tile:
    t = to_tile(input)
    n = const_int(num_bins, "num_bins")
    data = t.data.reshape(t.data.shape[0], -1).astype(np.int64)
    keep = (data >= 0) & (data < n)
    if mask is not None:
        keep &= np.broadcast_to(to_tile(mask).data.reshape(to_tile(mask).data.shape[0], -1) != 0, data.shape)
    rows = np.broadcast_to(np.arange(data.shape[0])[:, None], data.shape)
    flat = (rows * n + data)[keep]
    counts = np.bincount(flat, minlength=data.shape[0] * n).reshape(data.shape[0], n)
    return Tile(counts.astype(np.int32), D.int32)


@op("swizzle2d")
def swizzle2d(i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> tuple[Any, Any]:
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    size_g = OPS["minimum"](size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % size_g, ij // size_g


# --- dot ------------------------------------------------------------------------------------------------------------

_DOT_INPUTS = ("int8", "uint8", "fp16", "bf16", "fp32", "fp64")


@op("dot")
def dot(input: Any, other: Any, acc: Any = None, input_precision: Any = None, allow_tf32: Any = None,
        max_num_imprecise_acc: Any = None, out_dtype: Any = None) -> Tile:
    """Matrix product with Triton's accumulator rules; fp32 inputs are multiplied exactly in fp32."""
    a, b = to_tile(input), to_tile(other)
    if fp8.is_fp8(a.dtype) and fp8.is_fp8(b.dtype):  # any two fp8 formats: exact upcast to fp16, as Triton allows
        a, b = (Tile(cast_array(t.data, t.dtype, D.float16), D.float16) for t in (a, b))
    for t in (a, b):
        if t.dtype.name not in _DOT_INPUTS:
            raise TypeError(f"tl.dot operands must be int8, fp16, bf16, fp32 or fp64, got {t.dtype}")
    if a.dtype != b.dtype:
        raise TypeError(f"Both operands must be same dtype. Got {a.dtype} and {b.dtype}")
    ra, rb = len(a.shape), len(b.shape)
    if not (ra == rb == 2 or ra == rb == 3):
        raise ValueError(f"Both inputs must be either 2D or 3D; (lhs: {a.shape} vs rhs: {b.shape})")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"First input shape ({a.shape}) and second input shape {b.shape} are not compatible for "
                         f"matmul (second index of first shape ({a.shape[-1]}) must be equal to first index of "
                         f"second shape ({b.shape[-2]})")
    acc_t = to_tile(acc) if unwrap(acc) is not None else None
    out_ty = dtype_arg(out_dtype, "out_dtype") if unwrap(out_dtype) is not None else (
        acc_t.dtype if acc_t is not None else D.float32)
    if a.dtype.is_int():
        ret = D.int32
    elif out_ty.is_bf16():
        raise ValueError("out_dtype=bfloat16 is unsupported. Please use out_dtype=float32/float16 and cast with "
                         "`.to(tl.bfloat16)`")
    elif a.dtype.name in ("fp32", "bf16"):
        ret = D.float32
    elif a.dtype.is_fp64():
        ret = D.float64
    else:
        ret = out_ty
    shape = [*a.shape[:-1], b.shape[-1]]
    if acc_t is not None:
        if acc_t.shape != shape:
            raise ValueError(f"expected accumulator shape {shape}, got {acc_t.shape}")
        if acc_t.dtype != ret:
            raise TypeError(f"expected accumulator dtype {ret}, got {acc_t.dtype}; pass out_dtype={acc_t.dtype!r}")
    if a.dtype.is_int():
        prod = np.matmul(a.data.astype(np.int64), b.data.astype(np.int64))
    else:
        wide = np.float64 if a.dtype.is_fp64() else np.float32
        prod = np.matmul(a.data.astype(wide), b.data.astype(wide))
    with np.errstate(all="ignore"):
        if acc_t is not None:
            prod = prod + acc_t.data.astype(prod.dtype)
        return Tile(prod.astype(ret.to_numpy()), ret)


OPS["binary"] = binary


@op("map_elementwise")
def map_elementwise(scalar_fn: Callable, *args: Any, pack: Any = 1) -> Any:
    """Call the interpreted ``scalar_fn`` on every element (``pack`` at a time) of each program's tiles."""
    from .launch import as_callable

    fn = as_callable(scalar_fn)
    pack = unwrap(pack)
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise ValueError(f"tl.map_elementwise: pack must be a positive constexpr integer, got {pack!r}")
    if not args:
        raise TypeError("tl.map_elementwise needs at least one tile to map over")
    tiles = [to_tile(a) for a in args]
    if any(t.dtype.is_ptr() for t in tiles):
        raise TypeError("tl.map_elementwise cannot map over pointers; load the values first")
    shape: list[int] = []
    for t in tiles:
        shape = broadcast_shapes(shape, t.shape)
    if shape and (pack & (pack - 1) or shape[-1] % pack):
        raise ValueError(f"tl.map_elementwise: pack={pack} must be a power of two dividing the last dimension of "
                         f"the tiles ({shape})")
    programs = max(t.data.shape[0] for t in tiles)
    flat = [np.broadcast_to(align(t.data, len(shape)), (programs, *shape)).reshape(programs, -1) for t in tiles]
    n = flat[0].shape[1]
    columns: list[list[Any]] = []
    dtypes: list[Any] = []
    single = True
    for p in py.range(programs):
        for start in py.range(0, n, pack):
            idx = [min(start + j, n - 1) for j in py.range(pack)]
            out = fn(*[Tile(f[p, i:i + 1].copy(), t.dtype) for f, t in zip(flat, tiles) for i in idx])
            single = not isinstance(out, tuple)
            outs = [to_tile(o) for o in ([out] if single else out)]
            if len(outs) % pack:
                raise ValueError(f"tl.map_elementwise with pack={pack}: the function returns {len(outs)} values, "
                                 f"not a multiple of {pack}")
            if not columns:
                columns = [[None] * (programs * n) for _ in py.range(len(outs) // pack)]
                dtypes = [outs[k * pack].dtype for k in py.range(len(columns))]
            for k, col in enumerate(columns):
                for j in py.range(pack):
                    if start + j < n:
                        col[p * n + start + j] = outs[k * pack + j].data.reshape(-1)[0]
    results = tuple(Tile(np.array(col, dtype=ty.to_numpy()).reshape(programs, *shape), ty)
                    for col, ty in zip(columns, dtypes))
    return results[0] if single and len(results) == 1 else results


# --- dot_scaled ------------------------------------------------------------------------------------------------

_E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], np.float32)
_MX = {"e2m1": None, "e4m3": D.float8e4nv, "e5m2": D.float8e5, "bf16": D.bfloat16, "fp16": D.float16}


def _mx_values(t: Tile, scale: Any, fmt: Any, k_pack: bool, is_rhs: bool) -> np.ndarray:
    """One operand of dot_scaled as float32 (programs first), scaled by its e8m0 scales."""
    side = "rhs" if is_rhs else "lhs"
    if fmt not in _MX:
        raise ValueError(f"Invalid float format: {fmt!r}; tl.dot_scaled takes {sorted(_MX)}")
    if len(t.shape) not in (2, 3):
        raise ValueError(f"Both inputs must be either 2D or 3D; ({side}: {t.shape})")
    if not k_pack and fmt != "e2m1":
        raise ValueError("only mxfp4 inputs can be packed along a dimension different than K")
    if fmt == "e2m1":
        if t.dtype != D.uint8:
            raise TypeError(f"e2m1 format must be packed as uint8. Got {t.dtype}")
        pairs = np.stack([_E2M1[t.data & 0xF], _E2M1[t.data >> 4]], axis=-1)  # the low nibble comes first
        *lead, r, c = t.data.shape
        if k_pack != is_rhs:  # packed along the last axis
            values = pairs.reshape(*lead, r, 2 * c)
        else:
            values = np.swapaxes(pairs, -1, -2).reshape(*lead, 2 * r, c)
    else:
        ty = _MX[fmt]
        data = t.data
        if t.dtype.name == ("uint8" if ty.primitive_bitwidth == 8 else "uint16"):
            data = cast_array(data, t.dtype, ty, bitcast=True)
        elif t.dtype != ty:
            raise TypeError(f"Unexpected dtype for {fmt}. Got {t.dtype}")
        values = cast_array(data, ty, D.float32)
    if unwrap(scale) is None:
        return values
    s = to_tile(scale)
    k = values.shape[-2] if is_rhs else values.shape[-1]
    rows = values.shape[-1] if is_rhs else values.shape[-2]
    want = [*t.shape[:-2], rows, k // 32]
    if s.shape != want or k % 32:
        raise ValueError(f"{side}_scale must be a tensor of shape {want}. Got {s.shape}")
    if s.dtype.name not in ("uint8", "int8"):
        raise TypeError(f"tl.dot_scaled scales are e8m0 bytes (uint8), got {s.dtype}")
    e = s.data.view(np.uint8).astype(np.int64)
    factor = np.where(e == 255, np.nan, np.ldexp(1.0, e - 127)).astype(np.float32)  # 2**-127 is a float32 subnormal
    factor = np.repeat(factor, 32, axis=-1)
    if is_rhs:
        factor = np.swapaxes(factor, -1, -2)
    with np.errstate(all="ignore"):
        return values * factor


@op("dot_scaled")
def dot_scaled(lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any, acc: Any = None,
               fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True, out_dtype: Any = None) -> Tile:
    """OCP MX operands decoded to float32 and multiplied exactly in float32 (as tl.dot does), plus ``acc``."""
    if unwrap(out_dtype) not in (None, D.float32):
        raise AssertionError("Only float32 is supported for out_dtype at the moment")
    a = _mx_values(to_tile(lhs), lhs_scale, unwrap(lhs_format), bool(unwrap(lhs_k_pack)), False)
    b = _mx_values(to_tile(rhs), rhs_scale, unwrap(rhs_format), bool(unwrap(rhs_k_pack)), True)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"Reduction dimension should pack the same number of elements; (lhs: {list(a.shape[1:])} "
                         f"vs rhs: {list(b.shape[1:])})")
    return dot(Tile(a, D.float32), Tile(b, D.float32), acc)


@op("softmax")
def softmax(x: Any, dim: Any = None, keep_dims: Any = None, ieee_rounding: Any = False) -> Tile:
    """exp(x - max) / sum(exp(x - max)) along ``dim`` (default 0), in x's shape."""
    axis = 0 if unwrap(dim) is None else unwrap(dim)
    z = OPS["exp"](x - OPS["max"](x, axis, keep_dims=True))
    return OPS["fdiv"](z, OPS["sum"](z, axis, keep_dims=True))

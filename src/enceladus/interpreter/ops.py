"""NumPy implementations of the elementwise builtins: one op, one entry in ``OPS``.

Shape ops, reductions, scans and ``dot`` are in ``shape_ops.py``; random numbers in ``random.py``.
"""

from __future__ import annotations

import builtins as py
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import CompilationError
from ..language import dtypes as D
from ..language.builtins import PropagateNan
from ..language.dtypes import FP32_ONLY_MATH, dtype, math_dtype_refusal
from . import fp8, memory
from .context import DeviceAssertionError, current, kernel_location, where_text
from .tensor import (
    Tile,
    align,
    binary,
    broadcast_shapes,
    cast_array,
    computation_type,
    is_literal,
    literal_array,
    literal_dtype,
    operands,
    to_tile,
    unwrap,
)

OPS: dict[str, Callable[..., Any]] = {}
MEMBERS: set[str] = {"to"}  # builtins also callable as tile methods (x.sum(0), x.exp())

MAX_TILE_NUMEL = 1 << 20  # Triton's TRITON_MAX_TENSOR_NUMEL


def op(name: str, member: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the interpreter's ``tl.<name>``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        OPS[name] = fn
        if member:
            MEMBERS.add(name)
        return fn

    return register


def const_int(x: Any, what: str) -> int:
    """A constexpr integer argument, or a clear error."""
    x = unwrap(x)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{what} must be a constexpr integer, got {x!r}; pass it as a tl.constexpr parameter")
    return x


def dtype_arg(ty: Any, what: str = "dtype") -> dtype:
    ty = unwrap(ty)
    if not isinstance(ty, dtype):
        raise TypeError(f"{what} must be a tl dtype such as tl.float32, got {ty!r}")
    return ty


def shape_arg(shape: Any) -> tuple[int, ...]:
    """A block shape: a tuple of constexpr powers of two (Triton's ``validate_block_shape``)."""
    shape = unwrap(shape)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    out = tuple(const_int(d, "every dimension of a tile shape") for d in dims)
    numel = 1
    for d in out:
        if d <= 0 or d & (d - 1):
            raise ValueError(f"Shape element {d} must be a power of 2 (shape {list(out)})")
        numel *= d
    if numel > MAX_TILE_NUMEL:
        raise ValueError(f"tile of shape {list(out)} has {numel} elements; the maximum is {MAX_TILE_NUMEL}")
    return out


def broadcast_all(*tiles: Tile) -> tuple[list[np.ndarray], list[int]]:
    """The data of several tiles aligned for NumPy broadcasting, and their common tile shape."""
    shape: list[int] = []
    for t in tiles:
        shape = broadcast_shapes(shape, t.shape)
    return [align(t.data, len(shape)) for t in tiles], shape


def full_data(arr: np.ndarray, shape: list[int]) -> np.ndarray:
    """``arr`` (aligned) broadcast to the tile ``shape`` over its own program axis, as a real array."""
    return np.ascontiguousarray(np.broadcast_to(arr, (arr.shape[0], *shape)))


# --- programs ----------------------------------------------------------------------------------------------

def _axis(axis: Any, what: str) -> int:
    axis = const_int(axis, f"the axis of {what}")
    if axis not in (0, 1, 2):
        raise ValueError(f"{what} axis must be 0, 1, or 2 but got {axis}")
    return axis


@op("program_id")
def program_id(axis: Any) -> Tile:
    return Tile(current().pids[_axis(axis, "program_id")], D.int32)


@op("num_programs")
def num_programs(axis: Any) -> Tile:
    return Tile(np.array([current().grid[_axis(axis, "num_programs")]], np.int32), D.int32)


# --- creation ------------------------------------------------------------------------------------------------

@op("arange")
def arange(start: Any, end: Any) -> Tile:
    start, end = unwrap(start), unwrap(end)
    if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool):
        raise TypeError("arange's arguments must be of type tl.constexpr")
    if end <= start:
        raise ValueError(f"arange's end argument must be greater than the start argument (got {start}, {end})")
    n = end - start
    if n & (n - 1):
        raise ValueError(f"arange's range must be a power of 2, got {n}")
    if not (start >= -(2**31) and end <= 2**31):
        raise ValueError("arange must fit in int32")
    shape_arg((n,))
    return Tile(np.arange(start, end, dtype=np.int32)[None, :], D.int32)


@op("full")
def full(shape: Any, value: Any, dtype: Any) -> Tile:
    dims = shape_arg(shape)
    ty = dtype_arg(dtype)
    value = unwrap(value)
    if isinstance(value, Tile):
        if value.shape:
            raise ValueError(f"tl.full needs a scalar value, got a tile of shape {value.shape}")
        data = cast_array(value.data, value.dtype, ty)
    elif is_literal(value):
        data = cast_array(np.array([value], literal_dtype(value).to_numpy()), literal_dtype(value), ty)
    else:
        raise TypeError(f"tl.full's value must be a scalar, got {value!r}")
    return Tile(full_data(data.reshape((data.shape[0],) + (1,) * len(dims)), list(dims)), ty)


@op("zeros")
def zeros(shape: Any, dtype: Any) -> Tile:
    return full(shape, 0, dtype)


@op("zeros_like")
def zeros_like(input: Any) -> Tile:
    t = to_tile(input)
    return Tile(np.zeros((1, *t.shape), t.dtype.to_numpy()), t.dtype)


@op("full_like")
def full_like(input: Any, value: Any, dtype: Any = None) -> Tile:
    t = to_tile(input)
    return full(tuple(t.shape), value, dtype if unwrap(dtype) is not None else t.dtype)


# --- memory ---------------------------------------------------------------------------------------------------

OPS["load"] = memory.load
OPS["store"] = memory.store
for _name in memory.ATOMIC_COMBINE:
    OPS[_name] = memory.atomic(_name)
OPS["atomic_cas"] = memory.atomic_cas
OPS["atomic_load"] = memory.atomic_load
OPS["atomic_store"] = memory.atomic_store
OPS["atomic_poll"] = memory.atomic_poll


# --- casts and selection ----------------------------------------------------------------------------------------

@op("cast", member=True)
def cast(input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> Tile:
    t = to_tile(input)
    ty = unwrap(dtype) if isinstance(unwrap(dtype), D.pointer_type) else dtype_arg(dtype)
    rounding = unwrap(fp_downcast_rounding)
    if rounding not in (None, "rtne", "rtz"):
        raise ValueError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
    if t.dtype.is_ptr() or ty.is_ptr():
        return _pointer_cast(t, ty)
    out = Tile(cast_array(t.data, t.dtype, ty, bool(unwrap(bitcast)), rounding), ty)
    if t.wrap is not None and not bitcast and t.dtype.is_int() and ty.is_int() and not ty.is_bool() \
            and ty.primitive_bitwidth >= t.dtype.primitive_bitwidth:
        out.wrap = t.wrap  # a widened wrapped value is still the wrong offset
    return out


def _pointer_cast(t: Tile, ty: Any) -> Tile:
    """Triton's pointer casts: pointer -> pointer, 64-bit integer -> pointer, pointer -> int64/uint64/int1."""
    if t.dtype.is_ptr() and ty.is_ptr():
        return memory.pointer_to_pointer(t, ty)
    if ty.is_ptr():
        if not (t.dtype.is_int() and t.dtype.primitive_bitwidth == 64):
            raise TypeError(f"cannot convert {t.dtype} to {ty}: an address is a 64-bit integer")
        return memory.addresses_to_pointer(t.data, ty)
    addresses = memory.pointer_to_addresses(t)
    if ty.is_bool():
        return Tile(addresses != 0, D.int1)
    if not (ty.is_int() and ty.primitive_bitwidth == 64):
        raise TypeError(f"cannot convert {t.dtype} to {ty}: a pointer converts to int64, uint64 or int1 only")
    return Tile(addresses.astype(ty.to_numpy()), ty)


@op("where")
def where(condition: Any, x: Any, y: Any) -> Tile:
    c = to_tile(condition)
    if not c.dtype.is_bool():
        c = Tile(c.data != 0, D.int1)
    x, y = unwrap(x), unwrap(y)
    if isinstance(x, Tile) and x.dtype.is_ptr() or isinstance(y, Tile) and y.dtype.is_ptr():
        return _where_pointers(c, x, y)
    a, b, ty, shape = operands(x, y, what=" in tl.where")
    shape = broadcast_shapes(c.shape, shape)
    cd = align(c.data, len(shape))
    return Tile(np.where(cd, align(a, len(shape)), align(b, len(shape))).astype(ty.to_numpy(), copy=False), ty)


def _where_pointers(c: Tile, x: Any, y: Any) -> Tile:
    if not (isinstance(x, Tile) and isinstance(y, Tile) and x.dtype == y.dtype):
        what = " and ".join(str(v.dtype) if isinstance(v, Tile) else type(v).__name__ for v in (x, y))
        raise TypeError(f"tl.where between pointers needs two pointers of the same type, got {what}; "
                        "cast one with .to(tl.pointer_type(...))")
    if x.buf is y.buf:
        (cd, xd, yd), _ = broadcast_all(c, x, y)
        return x.like(np.where(cd, xd, yd))
    # different arrays: select the addresses, then find the array that holds those selected (as a cast would)
    (cd, xa, ya), _ = broadcast_all(c, Tile(memory.pointer_to_addresses(x), D.uint64),
                                    Tile(memory.pointer_to_addresses(y), D.uint64))
    return memory.addresses_to_pointer(np.where(cd, xa, ya).astype(np.int64), x.dtype)


# --- arithmetic helpers ------------------------------------------------------------------------------------------

def _float_math(name: str, fn: Callable[[np.ndarray], np.ndarray]) -> None:
    def run(x: Any) -> Tile:
        t = to_tile(x)
        if name in FP32_ONLY_MATH and not (t.dtype.is_fp32() or t.dtype.is_fp64()):
            message, fix = math_dtype_refusal(name, t.dtype)
            raise ValueError(f"{message}; {fix}")
        if not t.dtype.is_floating():
            raise ValueError(f"Expected dtype ['fp16', 'bf16', 'fp32', 'fp64'] but got {t.dtype} in tl.{name}; "
                             "convert first: x.to(tl.float32)")
        wide = np.float64 if t.dtype.is_fp64() else np.float32
        with np.errstate(all="ignore"):
            return Tile(fn(t.data.astype(wide)).astype(t.dtype.to_numpy()), t.dtype)

    run.__name__ = name
    op(name, member=True)(run)


_erf = np.frompyfunc(math.erf, 1, 1)
for _n, _f in {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
    "floor": np.floor, "ceil": np.ceil, "rsqrt": lambda v: 1 / np.sqrt(v), "sqrt_rn": np.sqrt,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "erf": lambda v: _erf(v).astype(v.dtype),
}.items():
    _float_math(_n, _f)


@op("abs", member=True)
def abs_(x: Any) -> Tile:
    t = to_tile(x)
    if t.dtype.is_int() and not t.dtype.is_int_signed():
        return t
    if fp8.is_fp8(t.dtype):  # a bit operation on the codes: clear the sign bit (an fnuz NaN, 0x80, stays NaN)
        cleared = t.data & np.uint8(0x7F)
        if t.dtype.name in D.FP8_FNUZ_NAMES:
            cleared = np.where(t.data == 0x80, t.data, cleared)
        return t.like(cleared.astype(np.uint8))
    with np.errstate(all="ignore"):
        return t.like(np.abs(t.data))


@op("fma", member=True)
def fma(x: Any, y: Any, z: Any) -> Tile:
    xt, yt, zt = (to_tile(v) if isinstance(unwrap(v), Tile) else unwrap(v) for v in (x, y, z))
    tiles = [v for v in (xt, yt, zt) if isinstance(v, Tile)]
    ty = tiles[0].dtype if tiles else D.float32
    for v in (xt, yt, zt):
        vt = v.dtype if isinstance(v, Tile) else literal_dtype(v)
        ty = computation_type(ty, False, vt, not isinstance(v, Tile), False)
    arrs = [cast_array(v.data, v.dtype, ty) if isinstance(v, Tile) else literal_array(v, ty) for v in (xt, yt, zt)]
    shape: list[int] = []
    for v in (xt, yt, zt):
        if isinstance(v, Tile):
            shape = broadcast_shapes(shape, v.shape)
    a, b, c = (align(v, len(shape)) for v in arrs)
    with np.errstate(all="ignore"):
        if ty.is_floating() and not ty.is_fp64():
            r = a.astype(np.float64) * b + c  # one rounding: the fp32 product is exact in fp64
        else:
            r = a * b + c
    return Tile(r.astype(ty.to_numpy()), ty)


def _minmax(name: str, nan_fn: Callable, num_fn: Callable) -> None:
    def run(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE) -> Tile:
        a, b, ty, _ = operands(x, y)
        fn = nan_fn if unwrap(propagate_nan) == PropagateNan.ALL else num_fn
        return Tile(fn(a, b), ty)

    run.__name__ = name
    op(name)(run)


_minmax("maximum", np.maximum, np.fmax)
_minmax("minimum", np.minimum, np.fmin)


@op("clamp")
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = PropagateNan.NONE) -> Tile:
    return OPS["minimum"](OPS["maximum"](x, min, propagate_nan), max, propagate_nan)


@op("fdiv")
def fdiv(x: Any, y: Any, ieee_rounding: bool = False) -> Tile:
    for v in (x, y):
        if isinstance(unwrap(v), Tile) and not unwrap(v).dtype.is_floating():
            raise TypeError(f"tl.fdiv needs floating-point operands, got {unwrap(v).dtype}")
    return binary("/", x, y)


OPS["div_rn"] = fdiv


@op("umulhi")
def umulhi(x: Any, y: Any) -> Tile:
    a, b, ty, _ = operands(x, y)
    if ty.name not in ("int32", "uint32", "int64", "uint64"):
        raise ValueError(f"Expected dtype ['int32', 'int64', 'uint32', 'uint64'] but got {ty} in tl.umulhi")
    bits = ty.primitive_bitwidth
    if bits == 32:  # the unsigned product's high word, whatever the signedness (Triton: umulhi(-5, 3) == 2)
        ua, ub = a.view(np.uint32).astype(np.uint64), b.view(np.uint32).astype(np.uint64)
        return Tile(((ua * ub) >> np.uint64(32)).astype(np.uint32).view(ty.to_numpy()), ty)
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a_lo, a_hi, b_lo, b_hi = ua & mask, ua >> s32, ub & mask, ub >> s32
    lo_lo = a_lo * b_lo
    mid1 = a_hi * b_lo + (lo_lo >> s32)
    mid2 = a_lo * b_hi + (mid1 & mask)
    hi = a_hi * b_hi + (mid1 >> s32) + (mid2 >> s32)
    return Tile(hi.view(ty.to_numpy()), ty)


@op("cdiv", member=True)
def cdiv(x: Any, div: Any) -> Any:
    x, div = unwrap(x), unwrap(div)
    if not isinstance(x, Tile) and not isinstance(div, Tile):
        return (x + div - 1) // div
    return (x + div - 1) // div


@op("logical_and", member=True)
def logical_and(x: Any, y: Any) -> Tile:
    return binary("&", OPS["cast"](x, D.int1), OPS["cast"](y, D.int1))


@op("logical_or", member=True)
def logical_or(x: Any, y: Any) -> Tile:
    return binary("|", OPS["cast"](x, D.int1), OPS["cast"](y, D.int1))


# --- hints --------------------------------------------------------------------------------------------------------

def _hint(name: str) -> None:
    def run(input: Any, values: Any) -> Any:
        return input

    run.__name__ = name
    op(name)(run)


for _n in ("multiple_of", "max_contiguous", "max_constancy"):
    _hint(_n)


@op("assume")
def assume(cond: Any) -> None:
    return None


@op("debug_barrier")
def debug_barrier() -> None:
    return None


# --- compile-time helpers and debugging ----------------------------------------------------------------------------

def _compile_error(message: str) -> CompilationError:
    loc = kernel_location()
    if loc is None:
        return CompilationError(message, kernel=current().kernel)
    fname, line, text = loc
    return CompilationError(message, filename=fname, lineno=line, source_line=text, kernel=current().kernel)


@op("static_assert")
def static_assert(cond: Any, msg: Any = "") -> None:
    cond = unwrap(cond)
    if isinstance(cond, Tile):
        raise _compile_error("tl.static_assert needs a constexpr condition, got a runtime value; "
                             "use tl.device_assert for runtime checks")
    if not cond:
        raise _compile_error(f"Static assertion failed: {unwrap(msg)}" if unwrap(msg) else "Static assertion failed")


@op("static_print")
def static_print(*values: Any, sep: str = " ", end: str = "\n", file: Any = None, flush: bool = False) -> None:
    launch = current()
    loc = kernel_location()
    key = (loc[0], loc[1]) if loc else ("", 0)
    if key in launch.static_printed:  # compile-time output: once per launch, as once per compilation
        return
    launch.static_printed.add(key)
    py.print(*(unwrap(v) for v in values), sep=sep, end=end, file=file, flush=flush)


def format_value(v: Any, b: int) -> str:
    """How ``print`` shows a value in the batch's ``b``-th program."""
    v = unwrap(v)
    if isinstance(v, Tile):
        if v.dtype.is_ptr():
            off = v.program_value(b)
            return f"{v.buf.name} + {off.item() if off.ndim == 0 else off}"
        val = v.program_value(b)
        return str(val.item()) if val.ndim == 0 else np.array2string(val, threshold=64)
    return str(v)


def kernel_print(*args: Any, sep: str = " ", end: str = "\n", file: Any = None, flush: bool = False) -> None:
    """``print`` inside kernels: each running program's values, prefixed with its program id."""
    launch = current()
    for b in py.range(launch.batch):
        text = sep.join(format_value(a, b) for a in args)
        py.print(f"pid {launch.program(b)} {text}", end=end, file=file or sys.stdout, flush=flush)


@op("device_print")
def device_print(prefix: Any, *args: Any, hex: bool = False) -> None:
    launch = current()
    prefix = str(unwrap(prefix))
    tiles = [to_tile(a) for a in args]
    if not tiles:
        for b in py.range(launch.batch):
            py.print(f"pid {launch.program(b)} {prefix}")
        return
    datas, shape = broadcast_all(*tiles)
    for b in py.range(launch.batch):
        vals = [np.broadcast_to(d[b if d.shape[0] > 1 else 0], shape) for d in datas]
        for index in np.ndindex(*shape):
            parts = [_fmt_elem(v[index], hex) for v in vals]
            idx = ", ".join(str(i) for i in index)
            py.print(f"pid {launch.program(b)} idx ({idx}) {prefix}{' '.join(parts)}")


def _fmt_elem(v: np.generic, hex_: bool) -> str:
    if hex_:
        raw = np.asarray(v)
        return "0x" + raw.tobytes()[::-1].hex()
    return str(v.item())


@op("device_assert")
def device_assert(cond: Any, msg: Any = "", mask: Any = None) -> None:
    c = to_tile(cond)
    if not current().debug:  # as Triton: checked only in debug mode
        return
    ok = c.data != 0
    if mask is not None:
        (okd, md), _ = broadcast_all(Tile(ok, D.int1), to_tile(mask))
        ok = okd | ~(md != 0)
    if ok.all():
        return
    first = np.unravel_index(int(np.argmin(ok)), ok.shape)
    launch = current()
    raise DeviceAssertionError(
        f"device_assert failed in kernel '{launch.kernel}', program {launch.program(int(first[0]))}, "
        f"tile index {tuple(int(i) for i in first[1:])}: {unwrap(msg)}{where_text()}")


@op("to_tensor")
def to_tensor(x: Any) -> Tile:
    return to_tile(x)


def _arith(sym: str) -> Callable[..., Tile]:
    def fn(x: Any, y: Any, sanitize_overflow: Any = True) -> Tile:
        return binary(sym, x, y)

    return fn


OPS["add"], OPS["sub"], OPS["mul"] = _arith("+"), _arith("-"), _arith("*")


@op("expect_zero")
def expect_zero(x: Any, mask: Any) -> Any:
    """``x``; in debug mode, a device assert that x == 0 where ``mask`` holds (Triton's debug-mode check)."""
    m = to_tile(mask)
    if not m.dtype.is_bool():
        raise TypeError(f"the mask of tl.expect_zero must be a boolean tile, got {m.dtype}")
    if current().debug:
        t = to_tile(x)
        device_assert((t == 0) | (m == 0), "expect_zero expected x == 0 where mask is true")
    return x


# --- inline code ------------------------------------------------------------------------------------------------

_PTX_SIGNS = ("mov.", "cvt.", "ld.", "st.", "add.", "mul.", "shl.", "shr.", "and.b", "or.b", "xor.b", "prmt.",
              "lop3.", "fma.rn", ".reg", ".b32", ".b16", ".u32", ".s32", ".f32", ".f16", "%r", "%f", "{", ";")


@op("inline_asm_elementwise")
def inline_asm_elementwise(asm: Any, constraints: Any, args: Any, dtype: Any, is_pure: Any, pack: Any) -> Tile:
    """One MSL expression, elementwise (``$i``: the i-th operand, outputs first). NumPy cannot run MSL: the
    expression runs as a small kernel on the backend the runtime hands over (the cpu backend off a Mac)."""
    from .context import current

    asm, constraints, pack = unwrap(asm), unwrap(constraints), unwrap(pack)
    sign = next((t for t in _PTX_SIGNS if isinstance(asm, str) and t in asm), None)
    if sign is not None:
        raise TypeError(f"tl.inline_asm_elementwise: this looks like PTX (it contains {sign!r}); Apple GPUs run no "
                        "PTX, and on Apple the inline code is one Metal Shading Language expression in which $i "
                        "names the i-th operand (outputs first, as in Triton)")
    dtype = unwrap(dtype)
    if isinstance(dtype, (tuple, list)):
        if len(dtype) != 1:
            raise TypeError(f"tl.inline_asm_elementwise: an MSL expression has one result, not {len(dtype)}")
        dtype = unwrap(dtype[0])
    if pack != 1:
        raise ValueError(f"tl.inline_asm_elementwise: pack={pack!r}; an MSL expression computes one element at a time")
    ty = dtype_arg(dtype)
    tiles = [to_tile(a) for a in (unwrap(args) if isinstance(unwrap(args), (tuple, list)) else [args])]
    import re

    outputs = sum(1 for c in str(constraints).split(",") if c.strip().startswith("="))
    if outputs != 1:
        raise ValueError(f"tl.inline_asm_elementwise: constraints {constraints!r} name {outputs} outputs; the MSL "
                         "expression gives exactly one")
    bad = sorted(i for i in {int(m) for m in re.findall(r"\$(\d+)", asm)} if not 1 <= i <= len(tiles))
    if bad:
        raise ValueError(f"tl.inline_asm_elementwise: ${bad[0]} names no argument (there are {len(tiles)}: "
                         f"$1..${len(tiles)})")
    shape: list[int] = []
    for t in tiles:
        shape = broadcast_shapes(shape, t.shape)
    run = current().run_msl
    if run is None:
        raise TypeError("tl.inline_asm_elementwise: the interpreter cannot run MSL text by itself and was given no "
                        "backend to run it on; launch through @enceladus.jit (the interpreter then runs the "
                        "expression on the cpu backend)")
    arrays = [np.broadcast_to(align(t.data, len(shape)), np.broadcast_shapes(*(align(u.data, len(shape)).shape
                                                                              for u in tiles))) for t in tiles]
    out = run(asm, [(a, t.dtype.name) for a, t in zip(arrays, tiles)], ty.name)
    return Tile(out, ty)

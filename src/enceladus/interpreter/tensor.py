"""Tiles of the interpreter: NumPy arrays with a tile-language dtype, and Triton's typing rules.

Every tile holds ``data`` with one leading *program axis*: ``data.shape == (P, *tile_shape)`` where
P is the number of programs run together (see ``launch.py``), or 1 when the value is the same for
all of them (``tl.arange``, constexpr-derived values). NumPy broadcasting over that axis is what
runs many programs at once. Promotion follows ``computation_type_impl`` of Triton 3.x
(``triton/language/semantic.py``), written out here independently of the compiler.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..language import dtypes as D
from ..language.core import constexpr
from ..language.core import tensor as tl_tensor
from ..language.dtypes import dtype, pointer_type
from . import fp8


class Divergence(Exception):
    """Programs of one batch disagree on a Python-level decision (``if``, loop bounds...).

    ``key`` holds each program's value of the deciding quantity; the launcher reruns the batch
    split into groups that agree on it.
    """

    def __init__(self, key: np.ndarray):
        super().__init__("programs diverge")
        self.key = key


# --- literals -----------------------------------------------------------------------------------------

def unwrap(x: Any) -> Any:
    """A constexpr's value or a NumPy scalar as the Python scalar; anything else unchanged."""
    if isinstance(x, constexpr):
        x = x.value
    if isinstance(x, np.generic):
        return x.item()
    return x


def is_literal(x: Any) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, Tile)


def literal_dtype(x: Any) -> dtype:
    """The dtype of a Python scalar (Triton 3.x ``to_tensor_type``)."""
    if isinstance(x, bool):
        return D.int1
    if isinstance(x, int):
        if -(2**31) <= x < 2**31:
            return D.int32
        if 2**31 <= x < 2**32:
            return D.uint32
        if -(2**63) <= x < 2**63:
            return D.int64
        if 2**63 <= x < 2**64:
            return D.uint64
        raise ValueError(f"Nonrepresentable integer {x}.")
    if isinstance(x, float):
        ax = abs(x)
        if ax == float("inf") or ax == 0.0 or x != x or 2.0**-126 <= ax <= (2 - 2.0**-23) * 2.0**127:
            return D.float32
        return D.float64
    raise TypeError(f"cannot convert {x!r} of type {type(x).__name__} to a tile")


_KIND = {"bool": 0, "uint": 1, "int": 1, "float": 2}  # Triton 3.x: bool < integral < floating


def _int_range(ty: dtype) -> tuple[int, int]:
    bits = ty.primitive_bitwidth
    if ty.is_int_signed():
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return 0, 2**bits - 1


def integer_promote(a: dtype, b: dtype) -> dtype:
    """C's usual arithmetic conversions on Triton integer types (int1 counts as unsigned)."""
    a_uns, b_uns = not a.is_int_signed(), not b.is_int_signed()
    ar, br = a.primitive_bitwidth, b.primitive_bitwidth
    if a_uns == b_uns:
        return a if ar > br else b
    if a_uns:
        return a if ar >= br else b
    return b if br >= ar else a


def computation_type(a: dtype, a_lit: bool, b: dtype, b_lit: bool, div_or_mod: bool) -> dtype:
    """The dtype both operands of an arithmetic op convert to (Triton 3.x rules, in order)."""
    if a_lit != b_lit:
        lit, ten = (a, b) if a_lit else (b, a)
        if _KIND[lit.kind] <= _KIND[ten.kind]:
            a = b = ten
    if (a_lit and a.is_fp64()) or (b_lit and b.is_fp64()):
        # Triton would compute in fp64; the compiler refuses it, so the interpreter does too
        raise TypeError("a float literal outside float32's range is fp64 in Triton, and Apple GPUs have no fp64; "
                        "write the literal within float32's range (or 0.0, inf, nan)")
    if a.is_fp64() or b.is_fp64():
        return D.float64
    if div_or_mod and (a.is_floating() or b.is_floating()):
        return D.float32
    if a.is_fp32() or b.is_fp32():
        return D.float32
    if a.is_fp16() or b.is_fp16():
        return D.float16
    if a.is_bf16() and b.is_bf16():
        return D.bfloat16
    if a.is_bf16() or b.is_bf16():
        return D.float32
    if fp8.is_fp8(a) or fp8.is_fp8(b):  # two fp8 tiles: the same type stays, different ones meet in fp16
        if not (fp8.is_fp8(a) and fp8.is_fp8(b)):
            raise TypeError(f"unexpected type {a} and {b}: convert the fp8 tile first, e.g. x.to(tl.float16)")
        return a if a == b else D.float16
    if div_or_mod and a.is_int_signed() != b.is_int_signed():
        raise TypeError(f"Cannot use /, //, or % with {a!r} and {b!r} because they have different signedness; "
                        "cast them to the same signedness with .to(...)")
    return integer_promote(a, b)


def literal_array(value: Any, ty: dtype) -> np.ndarray:
    """A Python scalar as a 1-element program-axis array of ``ty``, with Triton's range checks."""
    if ty.is_int() and not ty.is_bool():
        if value < 0 and not ty.is_int_signed():
            raise ValueError("Cannot perform a binary operation between an unsigned tensor and a negative scalar. "
                             "Perform an explicit cast on one of them.")
        lo, hi = _int_range(ty)
        if isinstance(value, float):
            value = int(value)
        elif not lo <= value <= hi:
            raise ValueError(f"Scalar {value} is out of range for type {ty}")
    if fp8.is_fp8(ty):
        return fp8.from_float32(np.array([value], np.float32), ty)
    return np.array([value], dtype=ty.to_numpy())


# --- casts -----------------------------------------------------------------------------------------------

def _round_toward_zero(x: np.ndarray, out: np.ndarray, bits: str) -> np.ndarray:
    back = out.astype(np.float64)
    too_big = np.isfinite(x) & (np.abs(back) > np.abs(x.astype(np.float64)))
    if too_big.any():
        raw = out.view(bits).copy()
        raw[too_big] -= 1  # one step toward zero in magnitude
        out = raw.view(out.dtype)
    return out


def cast_array(arr: np.ndarray, src: dtype, dst: dtype, bitcast: bool = False,
               rounding: str | None = None) -> np.ndarray:
    """Convert an array holding ``src`` values to ``dst`` (C conversion rules, as on the GPU)."""
    if src == dst:
        return arr
    if bitcast:
        if src.primitive_bitwidth != dst.primitive_bitwidth:
            raise ValueError(f"Cannot bitcast data-type of size {src.primitive_bitwidth} to data-type of size "
                             f"{dst.primitive_bitwidth}")
        return np.ascontiguousarray(arr).view(dst.to_numpy())
    if fp8.is_fp8(src):  # exact to float32, then on as from float32
        return cast_array(fp8.to_float32(arr, src), D.float32, dst, rounding=rounding)
    if fp8.is_fp8(dst):
        if rounding == "rtz" and dst.name not in ("fp8e5", "fp8e4b15"):
            raise ValueError(f"fp_downcast_rounding='rtz' to {dst!r} does not exist in Triton (its GPU backends "
                             "convert to float8e5 toward zero, and ignore the mode for float8e4b15); use 'rtne'")
        with np.errstate(all="ignore"):
            wide = arr if src.is_floating() and not src.is_fp64() else arr.astype(np.float64)
            return fp8.from_float32(wide.astype(np.float32), dst, rounding)
    target = dst.to_numpy()
    with np.errstate(all="ignore"):
        if dst.is_bool():
            return arr != 0
        if src.is_floating() and dst.is_int():
            # float -> int truncates toward zero; NaN and out-of-range values are undefined on GPUs.
            wide = arr.astype(np.float64)
            lo, hi = _int_range(dst)
            wide = np.where(np.isnan(wide), 0, np.clip(np.trunc(wide), lo, hi))
            return wide.astype(target)
        if src.is_bf16():
            arr = arr.astype(np.float32)
        out = arr.astype(target)
        if rounding == "rtz" and dst.is_floating() and src.is_floating() and \
                dst.primitive_bitwidth < src.primitive_bitwidth:
            out = _round_toward_zero(arr, out, "uint16" if dst.primitive_bitwidth == 16 else "uint32")
        return out


# --- tiles ---------------------------------------------------------------------------------------------------

class block_type:
    """The type of a tile: element type and shape (``x.type.element_ty``, ``x.type.shape``)."""

    def __init__(self, element_ty: Any, shape: tuple[int, ...]):
        self.element_ty = element_ty
        self.scalar = element_ty
        self.shape = list(shape)
        self.numel = int(np.prod(shape, dtype=np.int64))

    def get_block_shapes(self) -> list[int]:
        return self.shape

    def is_block(self) -> bool:
        return True

    def is_ptr(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<{self.shape}, {self.element_ty}>"


PEAK = [0]  # the largest tile data created so far (elements): sizes the program batches


class Tile:
    """A tile-language tensor (or scalar) during interpretation.

    ``wrap``: None, or the first int32 add/sub/mul/shl on the way to this value that wrapped (a ``Wrap``).
    It follows the value through views, integer widening casts and further integer + - * <<, the way the
    compiler's ``passes/offset_arith.py`` follows offset arithmetic; adding such a value to a pointer is
    reported (``pointer_arith``)."""

    __slots__ = ("data", "dtype", "wrap")
    __array_ufunc__ = None  # keep NumPy from swallowing tiles in mixed expressions

    def __init__(self, data: np.ndarray, ty: dtype | pointer_type):
        self.data = data
        self.dtype = ty
        self.wrap: Wrap | None = None
        if data.size > PEAK[0]:
            PEAK[0] = data.size

    def like(self, data: np.ndarray, ty: Any = None) -> Tile:
        """A tile of the same kind (pointer tiles keep their buffer) with new data."""
        return Tile(data, self.dtype if ty is None else ty)

    def view_of(self, data: np.ndarray) -> Tile:
        """``like`` for a view of this tile's elements (reshape, broadcast, ``x[:, None]``...): keeps ``wrap``."""
        t = self.like(data)
        t.wrap = self.wrap
        return t

    # --- introspection ---------------------------------------------------------------------------
    @property
    def shape(self) -> list[int]:
        return list(self.data.shape[1:])

    @property
    def numel(self) -> int:
        return int(np.prod(self.data.shape[1:], dtype=np.int64))

    @property
    def type(self) -> Any:
        return block_type(self.dtype, tuple(self.shape)) if self.data.ndim > 1 else self.dtype

    @property
    def T(self) -> Tile:
        from .ops import OPS

        return OPS["trans"](self)

    def item(self) -> Tile:
        """``x.item()``: the scalar of a single-element tile (a scalar is its own item)."""
        if self.numel != 1:
            raise ValueError(f"x.item() needs a single-element tile, got shape {self.shape}; reduce it first "
                             "(tl.max, tl.sum...)")
        return self.like(self.data.reshape(self.data.shape[0]))

    def program_value(self, i: int = 0) -> np.ndarray:
        """This tile's value in the batch's ``i``-th program."""
        return self.data[i if self.data.shape[0] > 1 else 0]

    def __repr__(self) -> str:
        if self.data.shape[0] == 1:
            value = self.data[0]
            text = str(value.item()) if value.ndim == 0 else np.array2string(value, threshold=64, separator=", ")
            return f"tensor({text}, dtype={self.dtype})"
        return (f"tensor(<one value per program for {self.data.shape[0]} programs>, dtype={self.dtype}, "
                f"shape={self.shape}; set ENCELADUS_INTERPRET_SEQUENTIAL=1 to see one program at a time)")

    def __getattr__(self, name: str) -> Any:
        from .ops import MEMBERS, OPS

        if name in MEMBERS:
            fn = fp8.guard(name, OPS[name])
            return lambda *a, **k: fn(self, *a, **k)
        raise AttributeError(f"tile has no attribute '{name}'")

    # --- Python-level decisions --------------------------------------------------------------------
    def _uniform_scalar(self, what: str, single_element_tile: bool = False) -> Any:
        if single_element_tile and self.data.ndim > 1 and self.data[0].size == 1:
            d = self.data.reshape(self.data.shape[0])  # a single-element tile steers like its element (Triton)
        elif self.data.ndim != 1:
            raise ValueError(f"{what} of a tile of shape {self.shape} is ambiguous; only scalars can steer Python "
                             "control flow (use a mask and tl.where for tiles)")
        else:
            d = self.data
        if d.shape[0] > 1 and not (d == d[0]).all():
            raise Divergence(d)
        return d[0].item()

    def __bool__(self) -> bool:
        return bool(self._uniform_scalar("the truth value", single_element_tile=True))

    def __index__(self) -> int:
        if not self.dtype.is_int():
            raise TypeError(f"a {self.dtype} scalar cannot be used as an integer")
        return int(self._uniform_scalar("the integer value"))

    __hash__ = None  # type: ignore[assignment]

    # --- methods ------------------------------------------------------------------------------------
    def to(self, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> Tile:
        """Convert to ``dtype`` (``bitcast=True`` reinterprets the bits)."""
        from .ops import OPS

        return OPS["cast"](self, dtype, fp_downcast_rounding=fp_downcast_rounding, bitcast=bitcast)

    def __getitem__(self, key: Any) -> Tile:
        key = key if isinstance(key, tuple) else (key,)
        index: list[Any] = [slice(None)]
        for k in key:
            k = unwrap(k)
            if k is None:
                index.append(None)
            elif isinstance(k, slice) and k == slice(None):
                index.append(k)
            else:
                raise ValueError(f"unsupported tensor index: {k!r}; tiles accept only None and ':' (x[:, None])")
        if sum(1 for k in index[1:] if k is not None) > len(self.shape):
            raise ValueError(f"too many ':' indices for a tile of shape {self.shape}")
        return self.view_of(self.data[tuple(index)])

    # --- operators -------------------------------------------------------------------------------------
    def __add__(self, o: Any) -> Tile:
        return binary("+", self, o)

    def __radd__(self, o: Any) -> Tile:
        return binary("+", o, self)

    def __sub__(self, o: Any) -> Tile:
        return binary("-", self, o)

    def __rsub__(self, o: Any) -> Tile:
        return binary("-", o, self)

    def __mul__(self, o: Any) -> Tile:
        return binary("*", self, o)

    def __rmul__(self, o: Any) -> Tile:
        return binary("*", o, self)

    def __truediv__(self, o: Any) -> Tile:
        return binary("/", self, o)

    def __rtruediv__(self, o: Any) -> Tile:
        return binary("/", o, self)

    def __floordiv__(self, o: Any) -> Tile:
        return binary("//", self, o)

    def __rfloordiv__(self, o: Any) -> Tile:
        return binary("//", o, self)

    def __mod__(self, o: Any) -> Tile:
        return binary("%", self, o)

    def __rmod__(self, o: Any) -> Tile:
        return binary("%", o, self)

    def __and__(self, o: Any) -> Tile:
        return binary("&", self, o)

    def __rand__(self, o: Any) -> Tile:
        return binary("&", o, self)

    def __or__(self, o: Any) -> Tile:
        return binary("|", self, o)

    def __ror__(self, o: Any) -> Tile:
        return binary("|", o, self)

    def __xor__(self, o: Any) -> Tile:
        return binary("^", self, o)

    def __rxor__(self, o: Any) -> Tile:
        return binary("^", o, self)

    def __lshift__(self, o: Any) -> Tile:
        return binary("<<", self, o)

    def __rlshift__(self, o: Any) -> Tile:
        return binary("<<", o, self)

    def __rshift__(self, o: Any) -> Tile:
        return binary(">>", self, o)

    def __rrshift__(self, o: Any) -> Tile:
        return binary(">>", o, self)

    def __lt__(self, o: Any) -> Tile:
        return binary("<", self, o)

    def __le__(self, o: Any) -> Tile:
        return binary("<=", self, o)

    def __gt__(self, o: Any) -> Tile:
        return binary(">", self, o)

    def __ge__(self, o: Any) -> Tile:
        return binary(">=", self, o)

    def __eq__(self, o: object) -> Tile:  # type: ignore[override]
        return binary("==", self, o)

    def __ne__(self, o: object) -> Tile:  # type: ignore[override]
        return binary("!=", self, o)

    def __neg__(self) -> Tile:
        fp8.refuse_compute(self.dtype, "-x")
        if self.dtype.is_ptr():
            raise TypeError("cannot negate a pointer")
        if self.dtype.is_bool():  # -x of a 1-bit integer is x (mod 2)
            return self
        return binary("-", 0, self) if self.dtype.is_int() else self.like(-self.data)

    def __pos__(self) -> Tile:
        return self

    def __invert__(self) -> Tile:
        if not self.dtype.is_int():
            raise TypeError(f"operator ~ needs an integer tile, got {self.dtype}")
        return self.like(~self.data)

    def __pow__(self, o: Any) -> Tile:
        raise TypeError("tiles have no ** operator; use tl.exp2(y * tl.log2(x)) or repeated multiplication")

    __rpow__ = __pow__

    def __matmul__(self, o: Any) -> Tile:
        raise TypeError("tiles have no @ operator; use tl.dot(a, b)")

    __rmatmul__ = __matmul__

    def __abs__(self) -> Tile:
        raise TypeError("tiles do not support abs(); use tl.abs(x)")


tl_tensor.register(Tile)  # isinstance(x, tl.tensor) holds for every runtime value in a kernel, as in Triton


class PointerTile(Tile):
    """A tile of pointers: a buffer plus element offsets (int64) into it."""

    __slots__ = ("buf",)

    def __init__(self, data: np.ndarray, ty: pointer_type, buf: Any):
        super().__init__(data, ty)
        self.buf = buf

    def like(self, data: np.ndarray, ty: Any = None) -> Tile:
        if ty is not None and not getattr(ty, "is_ptr", lambda: False)():
            return Tile(data, ty)
        return PointerTile(data, self.dtype if ty is None else ty, self.buf)

    def __repr__(self) -> str:
        return f"pointer({self.buf.name} + {self.data[0] if self.data.shape[0] == 1 else '...'}, {self.dtype})"


# --- broadcasting ----------------------------------------------------------------------------------------------

def broadcast_shapes(a: list[int], b: list[int]) -> list[int]:
    """Triton's implicit broadcast of two tile shapes: scalars broadcast to anything, and the tile of lower rank
    gets leading size-1 dimensions first (as Triton 3.9 and the compiler do: [N] with [M, N] gives [M, N])."""
    if not a:
        return list(b)
    if not b:
        return list(a)
    a = [1] * (len(b) - len(a)) + list(a)
    b = [1] * (len(a) - len(b)) + list(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"Cannot make_shape_compatible: incompatible dimensions at index {i}: {x} and {y}")
        out.append(max(x, y) if min(x, y) != 0 else 0)
    return out


def align(data: np.ndarray, rank: int) -> np.ndarray:
    """Give a tile's data leading unit axes (after the program axis) so that it broadcasts against a tile of
    ``rank`` dimensions (a scalar's data gets them all)."""
    extra = rank - (data.ndim - 1)
    return data.reshape(data.shape[:1] + (1,) * extra + data.shape[1:]) if extra > 0 else data


def to_tile(x: Any, ty: dtype | None = None) -> Tile:
    """A tile from a tile or a Python scalar (of its own literal type unless ``ty`` is given)."""
    x = unwrap(x)
    if isinstance(x, Tile):
        return x
    if not is_literal(x):
        raise TypeError(f"expected a tile or a scalar, got {type(x).__name__} {x!r}")
    t = ty or literal_dtype(x)
    return Tile(np.array([x], dtype=t.to_numpy()), t)


# --- binary operators ------------------------------------------------------------------------------------------

_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
        "!=": np.not_equal}
_BIT = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor, "<<": np.left_shift, ">>": np.right_shift}


def operands(x: Any, y: Any, div_or_mod: bool = False, what: str = "") -> tuple[np.ndarray, np.ndarray, dtype, list[int]]:
    """Both operands converted to their computation type, aligned for broadcasting; also the result shape."""
    x, y = unwrap(x), unwrap(y)
    xl, yl = not isinstance(x, Tile), not isinstance(y, Tile)
    for v in (x, y):
        if not isinstance(v, Tile) and not is_literal(v):
            raise TypeError(f"unsupported operand {v!r} of type {type(v).__name__}{what}; expected a tile or a scalar")
    xt = literal_dtype(x) if xl else x.dtype
    yt = literal_dtype(y) if yl else y.dtype
    ty = computation_type(xt, xl, yt, yl, div_or_mod)
    if what != " in tl.where":
        fp8.refuse_compute(ty, f"arithmetic{what}")
    shape = broadcast_shapes([] if xl else x.shape, [] if yl else y.shape)
    xa = literal_array(x, ty) if xl else cast_array(x.data, xt, ty)
    ya = literal_array(y, ty) if yl else cast_array(y.data, yt, ty)
    return align(xa, len(shape)), align(ya, len(shape)), ty, shape


def _c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.floor_divide(a, b)
    if a.dtype.kind == "i":
        r = a - q * b
        q = q + ((r != 0) & ((a < 0) != (b < 0))).astype(q.dtype)
    return q


def binary(op: str, x: Any, y: Any) -> Tile:
    """``x <op> y`` for the Python operators, with Triton's typing."""
    x, y = unwrap(x), unwrap(y)
    xp = isinstance(x, Tile) and x.dtype.is_ptr()
    yp = isinstance(y, Tile) and y.dtype.is_ptr()
    if xp or yp:
        return pointer_arith(op, x, y)
    with np.errstate(all="ignore"):
        if op == "/":
            a, b, ty, _ = operands(x, y, div_or_mod=True)
            if not ty.is_floating():
                a, b, ty = a.astype(np.float32), b.astype(np.float32), D.float32
            return Tile(np.true_divide(a, b).astype(ty.to_numpy()), ty)
        if op in ("//", "%"):
            a, b, ty, _ = operands(x, y, div_or_mod=True)
            if ty.is_floating():
                if op == "//":
                    raise TypeError(f"unexpected type {ty}: // is defined on integers only; use tl.floor(x / y)")
                return Tile(np.fmod(a, b).astype(ty.to_numpy()), ty)
            safe_b = np.where(b == 0, 1, b).astype(b.dtype)
            r = _c_div(a, safe_b) if op == "//" else np.fmod(a, safe_b)
            return Tile(np.where(b == 0, 0, r).astype(ty.to_numpy()), ty)
        if op in _BIT:
            a, b, ty, _ = operands(x, y)
            if not ty.is_int():
                raise TypeError(f"invalid operands of type {ty} for operator {op}: it needs integer operands; "
                                "cast with .to(...) first")
            if op in ("<<", ">>"):
                return _shift(op, x if isinstance(x, Tile) else y, a, b, ty, x)
            return Tile(_BIT[op](a, b), ty)
        if op in _CMP:
            a, b, ty, _ = operands(x, y)
            return Tile(_CMP[op](a, b), D.int1)
        a, b, ty, _ = operands(x, y)
        if ty.is_bool():
            a, b = a.astype(np.uint8), b.astype(np.uint8)
        if op not in _ARITH:
            raise TypeError(f"unsupported operator {op}")
        if ty == D.int32:  # computed exactly, so that a wrap can be reported if the result becomes an offset
            exact = _ARITH[op](a.astype(np.int64), b.astype(np.int64))
            r = exact.astype(np.int32)
            return _wrapped(Tile(r, ty), x, y, op, a, b, exact, r)
        r = _ARITH[op](a, b)
        if ty.is_bool():
            r = (r & 1).astype(bool)
        return _wrapped(Tile(r, ty), x, y) if ty.is_int() else Tile(r, ty)


_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply}


class Wrap:
    """An int32 add/sub/mul/shl that wrapped: its first wrapped element (program and values, as text) and where
    it was computed."""

    __slots__ = ("text", "where")

    def __init__(self, text: str, where: str):
        self.text = text
        self.where = where


def _wrapped(t: Tile, x: Any, y: Any, op: str = "", a: Any = None, b: Any = None, exact: Any = None,
             r: Any = None) -> Tile:
    """``t`` (the integer result of ``x op y``) with the wrap it inherits from its operands, or the one this
    operation makes (``exact`` differs from the int32 result ``r``)."""
    if exact is not None:
        bad = exact != r
        if bad.any():
            from .context import current, where_text

            i = np.unravel_index(int(np.argmax(bad)), bad.shape)
            av, bv = np.broadcast_to(a, bad.shape)[i], np.broadcast_to(b, bad.shape)[i]
            launch = current()
            program = f", program {launch.program(int(i[0]))}" if bad.shape[0] > 1 or launch.batch == 1 else ""
            t.wrap = Wrap(f"{program}: {int(av)} {op} {int(bv)} = {int(exact[i])} does not fit in int32 (compiled "
                          f"code wraps it to {int(r[i])} and addresses the wrong element)", where_text())
            return t
    t.wrap = (x.wrap if isinstance(x, Tile) else None) or (y.wrap if isinstance(y, Tile) else None)
    return t


def _shift(op: str, decides: Any, a: np.ndarray, b: np.ndarray, ty: dtype, left: Any = None) -> Tile:
    """``<<`` and ``>>`` in the common type ``ty``; ``>>`` is arithmetic when the left tile is signed (the right
    tile decides when the left is a literal), as in Triton, whatever the signedness of ``ty``."""
    if ty.is_bool():  # a 1-bit integer: 1 << 1 wraps to 0
        r = _BIT[op](a.astype(np.uint8), b.astype(np.uint8)) & 1
        return Tile(r.astype(bool), ty)
    work = a.dtype
    if op == ">>":
        signed = decides.dtype.is_int_signed() if isinstance(decides, Tile) else ty.is_int_signed()
        work = np.dtype(f"{'i' if signed else 'u'}{a.dtype.itemsize}")
    r = _BIT[op](a.view(work), b.astype(work))
    out = Tile(r.astype(work).view(a.dtype), ty)
    if op != "<<" or not isinstance(left, Tile):
        return out
    if ty == D.int32:  # a shift by 0..31 wraps like a multiplication by 2**b
        amount = np.broadcast_to(b, out.data.shape if out.data.shape else b.shape).astype(np.int64)
        ok = (amount >= 0) & (amount < 32)
        exact = np.where(ok, a.astype(np.int64) * (np.int64(1) << np.where(ok, amount, 0)), out.data)
        return _wrapped(out, left, None, "<<", a, b, exact, out.data)
    return _wrapped(out, left, None)


def pointer_arith(op: str, x: Any, y: Any) -> Tile:
    """``pointer + offsets`` and ``pointer - offsets``."""
    if op == "+" and not (isinstance(x, Tile) and x.dtype.is_ptr()):
        x, y = y, x
    if op not in ("+", "-") or (isinstance(y, Tile) and y.dtype.is_ptr()):
        yt = y.dtype if isinstance(y, Tile) else type(y).__name__
        raise TypeError(f"operator {op} is not defined between {x.dtype} and {yt}; pointers support only "
                        "pointer + integer offsets and pointer - integer offsets")
    off = to_tile(y)
    if not off.dtype.is_int():
        raise TypeError(f"cannot offset a pointer by a {off.dtype} value; offsets must be integers "
                        "(e.g. offs.to(tl.int32))")
    if off.wrap is not None:
        _report_wrap(x, off.wrap)
    shape = broadcast_shapes(x.shape, off.shape)
    o = align(off.data, len(shape)).astype(np.int64) * getattr(x.buf, "offset_unit", 1)  # byte addresses: RawBytes
    base = align(x.data, len(shape))
    return x.like(base + o if op == "+" else base - o)


def _report_wrap(ptr: Any, wrap: Wrap) -> None:
    """A pointer offset computed with int32 arithmetic that wrapped: report it (unless ``ENCELADUS_CHECKS=0``)."""
    import os

    from .context import OffsetOverflowError, current, where_text

    if os.environ.get("ENCELADUS_CHECKS", "1").strip().lower() in ("0", "false", "no", "off"):
        return
    name = getattr(getattr(ptr, "buf", None), "name", "?")
    computed = f"\n  computed{wrap.where.replace(chr(10) + '  ', ' ', 1)}" if wrap.where else ""
    raise OffsetOverflowError(
        f"int32 overflow in pointer-offset arithmetic in kernel '{current().kernel}'{wrap.text}{computed}"
        f"\n  used as an offset of '{name}'{where_text().replace(chr(10) + '  ', ' ', 1)}"
        "\n  fix: compute the offset in int64, e.g. row.to(tl.int64) * stride (or pass the stride as an int64)")

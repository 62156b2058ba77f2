"""Data types of the tile language and Triton's promotion rules.

These rules are part of the language definition, so the compiler and the interpreter both use them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class derived:
    """A value derived from an immutable object's fields, computed on first read and kept on the instance, as
    ``functools.cached_property`` does, but set with ``object.__setattr__`` (a frozen dataclass's own way): an
    instance whose ``__dict__`` is read keeps a dict of its own, and every later attribute read of it takes the
    interpreter's slow path (several times the work of a read from a plain instance; dtypes and layouts are read
    on every op the compiler handles)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self
        value = self.fn(obj)
        object.__setattr__(obj, self.name, value)  # an instance attribute from now on: found before this descriptor
        return value


@dataclass(frozen=True)
class dtype:
    """A scalar element type (``tl.float32``, ``tl.int8``, ...). ``str(tl.float32) == 'fp32'``."""

    name: str

    # Triton's groupings of type names (``tl.dtype.SINT_TYPES``...); ``tl.dtype(name)`` makes one.
    SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP_TYPES = ("fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64")
    STANDARD_FP_TYPES = ("fp16", "bf16", "fp32", "fp64")

    # --- classification (computed once per dtype object: the compiler asks them of every value) -----------------
    @derived
    def kind(self) -> str:
        """'bool', 'uint', 'int' or 'float' (the order Triton promotes Python scalars in)."""
        return _INFO[self.name][0]

    @derived
    def primitive_bitwidth(self) -> int:
        return _INFO[self.name][1]

    @derived
    def itemsize(self) -> int:
        return max(1, self.primitive_bitwidth // 8)

    def is_floating(self) -> bool:
        return self.kind == "float"

    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    def is_int_signed(self) -> bool:
        return self.kind == "int"

    def is_int_unsigned(self) -> bool:
        return self.kind in ("uint", "bool")

    def is_bool(self) -> bool:
        return self.name == "int1"

    def is_void(self) -> bool:
        return self.name == "void"

    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def is_ptr(self) -> bool:
        return False

    @property
    def int_bitwidth(self) -> int:
        return self.primitive_bitwidth

    @property
    def fp_mantissa_width(self) -> int:
        """Stored mantissa bits of a floating-point type (Triton's ``dtype.fp_mantissa_width``)."""
        return self._fp_layout("fp_mantissa_width")[0]

    @property
    def exponent_bias(self) -> int:
        """Exponent bias of a floating-point type (Triton's ``dtype.exponent_bias``)."""
        return self._fp_layout("exponent_bias")[1]

    def _fp_layout(self, what: str) -> tuple[int, int]:
        if self.name not in _FP_LAYOUT:
            raise AttributeError(f"'{self.name}' is not a floating-point type: it has no {what}")
        return _FP_LAYOUT[self.name]

    def to_numpy(self) -> np.dtype:
        """The NumPy dtype that holds this type (bfloat16 needs the optional ``ml_dtypes``)."""
        if self.name == "bf16":
            return bfloat16_numpy()
        if self.name in FP8_NAMES:
            return fp8_storage(self)
        return np.dtype(_INFO[self.name][2])

    def is_fp8(self) -> bool:
        return self.name in FP8_NAMES

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"tl.{_PUBLIC_NAME[self.name]}"

    def __call__(self, value):  # tl.float32(x) inside kernels is a cast; outside it is not meaningful
        raise RuntimeError(f"tl.{_PUBLIC_NAME[self.name]}(...) can only be used inside a @enceladus.jit kernel")


@dataclass(frozen=True)
class pointer_type:
    """The type of a pointer to ``element_ty`` in device memory (``*fp32`` in signatures).

    ``const=True`` (``*kfp32``; a kernel parameter annotated ``tl.const``) points to constant data, as in Triton:
    loads through it are allowed, stores and atomics that write are refused when the kernel is compiled."""

    element_ty: dtype
    const: bool = False

    @property
    def name(self) -> str:
        return ("*k" if self.const else "*") + self.element_ty.name

    def is_ptr(self) -> bool:
        return True

    def is_const(self) -> bool:
        return self.const

    def is_fp8(self) -> bool:
        return False

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def __str__(self) -> str:
        return self.name


# name -> (kind, bits, numpy dtype name)
_INFO: dict[str, tuple[str, int, str]] = {
    "int1": ("bool", 1, "bool"),
    "int8": ("int", 8, "int8"),
    "int16": ("int", 16, "int16"),
    "int32": ("int", 32, "int32"),
    "int64": ("int", 64, "int64"),
    "uint8": ("uint", 8, "uint8"),
    "uint16": ("uint", 16, "uint16"),
    "uint32": ("uint", 32, "uint32"),
    "uint64": ("uint", 64, "uint64"),
    "fp16": ("float", 16, "float16"),
    "bf16": ("float", 16, "bfloat16"),
    "fp32": ("float", 32, "float32"),
    "fp64": ("float", 64, "float64"),
    # Triton's fp8 formats: storage types (their codes travel as uint8; the name is the ml_dtypes/torch type)
    "fp8e4nv": ("float", 8, "float8_e4m3fn"),
    "fp8e5": ("float", 8, "float8_e5m2"),
    "fp8e4b15": ("float", 8, ""),  # bias 15: no NumPy, ml_dtypes or torch type has it
    "fp8e4b8": ("float", 8, "float8_e4m3fnuz"),
    "fp8e5b16": ("float", 8, "float8_e5m2fnuz"),
    "void": ("void", 0, ""),  # tl.void: the type of no value (Triton's dtype('void')); values never have it
}
FP8_NAMES = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")
FP8_FNUZ_NAMES = ("fp8e4b8", "fp8e5b16")  # 0x80 is their only NaN; they have no negative zero
_PUBLIC_NAME = {
    "int1": "int1", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
    "fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp8e4b15": "float8e4b15", "fp8e4b8": "float8e4b8",
    "fp8e5b16": "float8e5b16", "void": "void",
}

int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
# fp8: storage types (loads, stores, casts, tl.dot by upcast); not in ALL_DTYPES, the dtypes kernels compute in.
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b15 = dtype("fp8e4b15")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
void = dtype("void")

ALL_DTYPES = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, float64)
BY_NAME: dict[str, dtype] = {d.name: d for d in ALL_DTYPES}
# Triton signature spellings that differ from the canonical names.
BY_NAME.update({"i1": int1, "i8": int8, "i16": int16, "i32": int32, "i64": int64, "u1": int1,
                "u8": uint8, "u16": uint16, "u32": uint32, "u64": uint64, "f16": float16,
                "f32": float32, "f64": float64, "bfloat16": bfloat16, "float16": float16,
                "float32": float32, "float64": float64, "bool": int1})
FP8_DTYPES = (float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16)
BY_NAME.update({d.name: d for d in FP8_DTYPES})
# Triton's other spellings of them (triton/_utils.py type_canonicalisation_dict): tl names and torch's names
BY_NAME.update({"float8e4nv": float8e4nv, "float8e5": float8e5, "float8e4b15": float8e4b15, "float8e4b8": float8e4b8,
                "float8e5b16": float8e5b16, "float8_e4m3fn": float8e4nv, "float8_e5m2": float8e5,
                "float8_e4m3fnuz": float8e4b8, "float8_e5m2fnuz": float8e5b16})
_FP8_BY_NUMPY_NAME = {_INFO[d.name][2]: d for d in FP8_DTYPES if _INFO[d.name][2]}


def bfloat16_numpy() -> np.dtype:
    try:
        import ml_dtypes
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise TypeError(
            "bfloat16 needs the optional 'ml_dtypes' package for NumPy arrays: pip install 'enceladus[bfloat16]'"
        ) from exc
    return np.dtype(ml_dtypes.bfloat16)


def fp8_storage(ty: dtype) -> np.dtype:
    """The NumPy dtype of arrays of ``ty`` codes: uint8 tagged with the fp8 type (``dtype.metadata``), so that a
    kernel argument of it is typed ``*fp8...``. ``arr.view(tl.float8e5.to_numpy())`` tags a uint8 array."""
    return np.dtype(np.uint8, metadata={"enceladus_dtype": ty.name})


def from_numpy(np_dtype: np.dtype) -> dtype | None:
    """The tile-language dtype for a NumPy dtype, or None if there is none.

    fp8: ml_dtypes' float8_e4m3fn, float8_e5m2, float8_e4m3fnuz and float8_e5m2fnuz arrays, and uint8 arrays
    tagged by ``fp8_storage`` (the only way to hold float8e4b15, which no library has a type for)."""
    np_dtype = np.dtype(np_dtype)
    tagged = (np_dtype.metadata or {}).get("enceladus_dtype")
    if tagged in FP8_NAMES:
        return BY_NAME[tagged]
    if np_dtype.name == "bfloat16":
        return bfloat16
    if np_dtype.name in _FP8_BY_NUMPY_NAME:
        return _FP8_BY_NUMPY_NAME[np_dtype.name]
    for d in ALL_DTYPES:
        if d.name != "bf16" and np.dtype(_INFO[d.name][2]) == np_dtype:
            return d
    return None


# --- promotion (triton/language/semantic.py: computation_type_impl) ---------------------------------

# Triton's dtype.KIND: BOOLEAN < INTEGRAL (signed and unsigned alike) < FLOATING
_KIND_RANK = {"bool": 0, "uint": 1, "int": 1, "float": 2}


class NoFloat64Error(TypeError):
    """An operation would compute in fp64 (Triton's type for float literals outside fp32's range)."""

    fix = "write the literal within float32's range (or 0.0, inf, nan), e.g. 3.0e38 or 1.0e-30"


def integer_promote(a: dtype, b: dtype) -> dtype:
    """Triton's integer promotion: wider wins; same width: unsigned wins; bool takes the other side."""
    if a.is_bool():
        return b
    if b.is_bool():
        return a
    if a.primitive_bitwidth != b.primitive_bitwidth:
        return a if a.primitive_bitwidth > b.primitive_bitwidth else b
    if a.is_int_unsigned():
        return a
    return b


def computation_type(a: dtype, a_is_literal: bool, b: dtype, b_is_literal: bool, div_or_mod: bool) -> dtype:
    """The dtype both operands of a binary arithmetic op are converted to.

    ``*_is_literal`` marks a Python scalar (a "weak" type): it does not take part when its kind is
    lower than or equal to the other operand's kind.
    """
    if a_is_literal != b_is_literal:
        literal, other = (a, b) if a_is_literal else (b, a)
        # an integer literal never widens an integer tile: `255 - x_uint8` stays uint8 (range-checked)
        if _KIND_RANK[literal.kind] <= _KIND_RANK[other.kind]:
            # `/` and `%` of half-precision floats compute in fp32, as in Triton.
            if div_or_mod and other.name in ("fp16", "bf16"):
                return float32
            return other
    if a.is_fp64() or b.is_fp64():
        if (a_is_literal and a.is_fp64()) or (b_is_literal and b.is_fp64()):
            raise NoFloat64Error(
                "a float literal outside float32's range (magnitude below 1.2e-38 or above 3.4e38) is fp64 in "
                "Triton, and Apple GPUs have no fp64")
        return float64
    if a.is_fp32() or b.is_fp32():
        return float32
    if a.is_fp16() or b.is_fp16():
        return float32 if div_or_mod else float16
    if a.is_bf16() or b.is_bf16():
        return bfloat16 if (a.is_bf16() and b.is_bf16() and not div_or_mod) else float32
    if a.is_fp8() or b.is_fp8():  # two fp8 tiles: the same type stays, different formats meet in fp16
        if not (a.is_fp8() and b.is_fp8()):
            raise TypeError(f"unexpected type {a} and {b}")  # Triton's words
        return a if a == b else float16
    if div_or_mod and a.is_int_signed() != b.is_int_signed():  # bool counts as unsigned (Triton 3.9)
        raise TypeError(
            f"Cannot use /, //, or % with {a!r} and {b!r} because they have different signedness; cast one side "
            "with .to()"
        )
    return integer_promote(a, b)


def literal_dtype(value: object) -> dtype:
    """The dtype a Python scalar gets when it stands alone (Triton's rules for literals)."""
    if isinstance(value, bool):
        return int1
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return int32
        if 2**31 <= value < 2**32:
            return uint32
        if -(2**63) <= value < 2**63:
            return int64
        if 0 <= value < 2**64:
            return uint64
        raise ValueError(f"integer {value} does not fit in 64 bits")
    if isinstance(value, float):
        ax = abs(value)
        # Triton types a float literal outside fp32's normal range as fp64 (refused where it would compute)
        if ax == float("inf") or ax == 0.0 or value != value or 2.0**-126 <= ax <= (2 - 2.0**-23) * 2.0**127:
            return float32
        return float64
    raise TypeError(f"{value!r} is not a scalar")


def fits(value: float | bool, ty: dtype) -> bool:
    """Whether a Python scalar can be represented in ``ty`` (Triton refuses `x_uint8 + 300`)."""
    if ty.is_floating():
        return True
    if isinstance(value, float):
        return True
    value = int(value)
    bits = ty.primitive_bitwidth
    if ty.is_bool():
        return value in (0, 1)
    if ty.is_int_signed():
        return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)
    return 0 <= value < 2**bits


# tl.math functions Triton 3.9 takes only on fp32 (and fp64) tiles (its @_check_dtype): fp16, bf16 and integer tiles
# are refused on every path, with Triton's wording (math_dtype_refusal)
FP32_ONLY_MATH = frozenset({"exp", "exp2", "log", "log2", "cos", "sin", "sqrt", "rsqrt", "erf", "floor", "ceil",
                            "sigmoid"})


def math_dtype_refusal(name: str, ty: dtype) -> tuple[str, str]:
    """(message, fix) for ``tl.<name>`` of a ``ty`` tile that Triton refuses."""
    return (f"Expected dtype ['fp32', 'fp64'] but got {ty} in tl.{name}",
            f"convert first, as Triton requires: tl.{name}(x.to(tl.float32)) (and .to(...) the result back)")


# --- Triton's type strings ---------------------------------------------------------------------------------

_FP8_BY_NAME = {"fp8e4nv": float8e4nv, "fp8e5": float8e5, "fp8e4b15": float8e4b15, "fp8e4b8": float8e4b8,
                "fp8e5b16": float8e5b16}


def str_to_ty(name: Any, c: Any = None) -> Any:
    """The type a Triton signature string names: ``tl.str_to_ty("fp32") is tl.float32``, ``"*i8"`` a pointer to
    int8 (``"*k..."``: a pointer to constant data), a tuple of strings a tuple of types. ``c`` is accepted for
    Triton's signature (its constexpr value) and unused."""
    if isinstance(name, tuple):
        return tuple(str_to_ty(x, c) for x in name)
    if not isinstance(name, str) or not name:
        raise TypeError(f"tl.str_to_ty needs a type string such as 'fp32', 'i32' or '*fp16', got {name!r}")
    if name.startswith("*"):
        inner = name[1:]
        if inner.startswith("k"):  # Triton's constant pointers
            return pointer_type(str_to_ty(inner[1:], c), const=True)
        return pointer_type(str_to_ty(inner, c))
    ty = BY_NAME.get(name) or _FP8_BY_NAME.get(name) or {"B": int1}.get(name)
    if ty is None:
        raise ValueError(f"tl.str_to_ty: unknown type string {name!r}; use a Triton signature spelling such as "
                         "'fp32', 'bf16', 'i32', 'u8', 'i1' or '*fp16' (tensor descriptors and constexprs are "
                         "passed as arguments, not named by strings)")
    return ty


@dataclass(frozen=True)
class block_type:
    """The type of a tile (``x.type`` of a tile): ``element_ty`` and ``shape``, as Triton's ``tl.block_type``."""

    element_ty: Any
    shape: tuple

    @property
    def scalar(self) -> Any:
        return self.element_ty

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_block(self) -> bool:
        return True

    def is_ptr(self) -> bool:
        return False

    def get_block_shapes(self) -> tuple:
        return self.shape

    def __str__(self) -> str:
        return f"<{list(self.shape)}, {self.element_ty}>"


# (stored mantissa bits, exponent bias) of each floating-point type, as Triton's dtype reports them
_FP_LAYOUT = {"fp8e4b15": (3, 15), "fp8e4nv": (3, 7), "fp8e4b8": (3, 8), "fp8e5": (2, 15), "fp8e5b16": (2, 16),
              "fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127), "fp64": (52, 1023)}

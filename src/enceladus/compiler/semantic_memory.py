"""Typing rules of memory access: ``tl.load``/``tl.store`` (masks, ``other``, float64 stores), atomics, block
pointers and tensor descriptors. They register themselves in ``semantic.RULES``."""

from __future__ import annotations

from typing import Any

from ..language import dtypes as D
from ..language.dtypes import pointer_type
from .ir import Type, Value
from .semantic import RULES, Builder, SemanticError, _mask, binary, compare, rule, shape_of, where


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

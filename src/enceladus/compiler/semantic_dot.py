"""Typing rules of ``tl.dot`` and ``tl.dot_scaled`` (input precisions, accumulators, OCP MX operands). They register
themselves in ``semantic.RULES``."""

from __future__ import annotations

from typing import Any

from ..language import dtypes as D
from .ir import Type, Value
from .semantic import Builder, SemanticError, _dtype_arg, arange, rule
from .semantic_shape import _tile, expand_dims, gather, permute

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
    return b.emit("dot", [a, bt, acc_v], b.type(out_ty, shape), input_precision=input_precision or "ieee")


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

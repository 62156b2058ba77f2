"""How tile-language types and constants are spelled in MSL."""

from __future__ import annotations

import math
import struct

import numpy as np

from ..language.dtypes import dtype, pointer_type

MSL_TYPE = {
    "int1": "bool", "int8": "char", "int16": "short", "int32": "int", "int64": "long",
    "uint8": "uchar", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
    "fp16": "half", "bf16": "bfloat", "fp32": "float",
    # fp8: their codes (Metal has no 8-bit float type; codegen_msl/fp8.py converts them)
    "fp8e4nv": "uchar", "fp8e5": "uchar", "fp8e4b15": "uchar", "fp8e4b8": "uchar", "fp8e5b16": "uchar",
    # float64 arrays are storage only (Apple GPUs have no fp64): stores write their bits (semantic_memory.float64_bits)
    "fp64": "ulong",
}

# Words of MSL (and C++) that user names must not collide with.
RESERVED = set(MSL_TYPE.values()) | {
    "kernel", "device", "constant", "threadgroup", "thread", "vertex", "fragment", "using", "namespace",
    "metal", "struct", "class", "template", "typename", "return", "if", "else", "for", "while", "do", "const",
    "static", "inline", "void", "auto", "int", "unsigned", "signed", "char", "short", "long", "float", "double",
    "switch", "case", "default", "break", "continue", "goto", "sizeof", "new", "delete", "this", "true",
    "false", "union", "enum", "operator", "private", "public", "protected", "virtual", "volatile", "register",
    "extern", "typedef", "friend", "mutable", "explicit", "export", "asm", "try", "catch", "throw", "bool",
    "size_t", "ptrdiff_t", "vec", "min", "max", "select", "args", "and", "or", "not", "xor", "bitand", "bitor",
}


def msl_type(t: dtype | pointer_type, const: bool = False) -> str:
    if isinstance(t, pointer_type):
        return f"device {'const ' if const else ''}{MSL_TYPE[t.element_ty.name]}*"
    return MSL_TYPE[t.name]


def safe_name(name: str) -> str:
    """A user identifier made safe for MSL (reserved words and our own prefixes get a suffix)."""
    if name in RESERVED or name.startswith(("enc_", "v_", "L_")) or name.startswith("__"):
        return name + "_"
    return name


def _round_half(x: float, ty: str) -> float:
    if ty == "fp16":
        return float(np.float16(x))
    # bfloat16: round-to-nearest-even on the float32 bits
    f = np.float32(x)
    if math.isnan(f):
        return float("nan")
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


_F32 = struct.Struct("<f")


def float_literal(x: float) -> str:
    """An exact float32 literal (non-finite values as bit patterns)."""
    try:  # x rounded to float32 as a C cast rounds it (as np.float32 does), without making a NumPy scalar
        f = _F32.unpack(_F32.pack(x))[0]
    except (OverflowError, TypeError):  # beyond float32's range (NumPy gives inf) or not a number: as before
        f = float(np.float32(x))
    if math.isnan(f):
        return "as_type<float>(0x7fc00000u)"
    if math.isinf(f):
        return "as_type<float>(0xff800000u)" if f < 0 else "as_type<float>(0x7f800000u)"
    text = repr(f)
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def const_literal(value: object, t: dtype) -> str:
    """An MSL expression for the constant ``value`` of type ``t``."""
    name = t.name
    if name == "int1":
        return "true" if value else "false"
    if t.is_floating():
        if name == "fp32":
            return float_literal(value)
        return f"static_cast<{MSL_TYPE[name]}>({float_literal(_round_half(float(value), name))})"
    v = int(value)
    if name == "int32":
        return f"({v + 1} - 1)" if v == -(2**31) else (f"({v})" if v < 0 else str(v))
    if name == "int64":
        return f"({v + 1}L - 1L)" if v == -(2**63) else (f"({v}L)" if v < 0 else f"{v}L")
    if name == "uint32":
        return f"{v & 0xFFFFFFFF}u"
    if name == "uint64":
        return f"{v & 0xFFFFFFFFFFFFFFFF}UL"
    return f"static_cast<{MSL_TYPE[name]}>({v})"

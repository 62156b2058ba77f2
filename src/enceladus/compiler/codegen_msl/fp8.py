"""fp8 conversions in MSL: Metal has no 8-bit float type, so fp8 values are their codes in a ``uchar`` and
convert to and from float32 in integer code, by Triton's GPU rules (round to nearest even with saturation;
float8e5 toward zero keeping infinities; float8e4b15 clamped to 1.75 and rounded half away from zero; the
fnuz formats' only NaN 0x80 and no negative zero). ``tests/conformance/test_fp8_table.py`` checks them bit
for bit against the committed table of those rules. The interpreter has its own implementation.
"""

from __future__ import annotations

from ...language.dtypes import dtype

# name -> encoder arguments (mantissa bits, bias, largest finite code, NaN code, infinity code, kind) and the
# decoder's kind; kind: 0 OCP (e4nv, e5), 1 fnuz, 2 e4b15 (rounded half away from zero, no inf or NaN)
_ENCODE = {
    "fp8e4nv": "3u, 7, 0x7Eu, 0x7Fu, 0x7Eu, 0u",
    "fp8e5": "2u, 15, 0x7Bu, 0x7Fu, 0x7Bu, 0u",
    "fp8e4b15": "3u, 15, 0x7Eu, 0x7Eu, 0x7Eu, 2u",
    "fp8e4b8": "3u, 8, 0x7Fu, 0x80u, 0x80u, 1u",
    "fp8e5b16": "2u, 16, 0x7Fu, 0x80u, 0x80u, 1u",
}
# decoder kind: 0 NaN is S.1111.111 (e4nv), 1 NaN is 0x80 (fnuz), 2 every code finite (e4b15), 3 IEEE (e5)
_DECODE = {"fp8e4nv": "3u, 7, 0u", "fp8e5": "2u, 15, 3u", "fp8e4b15": "3u, 15, 2u", "fp8e4b8": "3u, 8, 1u",
           "fp8e5b16": "2u, 16, 1u"}

_GENERIC = """// fp8 <-> float32 by Triton's GPU rules, in integer code (Metal has no 8-bit float type; fp8 travels as uchar).
// mode: 0 to nearest even, 1 toward zero, 2 half away from zero (float8e4b15)
static inline uchar enc_f32_to_fp8(float x, uint mbits, int bias, uint cmax, uint nanc, uint infc, uint kind,
                                   uint mode) {
    const uint u = as_type<uint>(x);
    const uint sign = (u >> 24) & 0x80u;
    const uint a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return uchar(nanc);
    if (a == 0x7F800000u) return uchar(kind == 1u ? nanc : (sign | infc));
    if (a < 0x00800000u) return uchar(kind == 1u ? 0u : sign);  // float32 subnormals are below every fp8 value
    const int e = int(a >> 23) - 127;
    const int te = max(e, 1 - bias);  // the fp8 exponent the value lands in (the subnormal one below the normals)
    const uint shift = uint(min(23 + te - int(mbits) - e, 31));  // significand bits below the fp8 quantum
    const uint mant = (a & 0x7FFFFFu) | 0x800000u;
    uint units = mant >> shift;
    const uint rem = mant & ((1u << shift) - 1u);
    const uint half = 1u << (shift - 1u);
    if (mode == 2u) units += rem >= half ? 1u : 0u;
    else if (mode == 0u) units += (rem > half || (rem == half && (units & 1u) != 0u)) ? 1u : 0u;
    const int code = ((te + bias - 1) << mbits) + int(units);  // a mantissa carry moves into the exponent
    const uint c = uint(min(code, int(cmax)));  // saturate finite overflow
    return uchar(kind == 1u && c == 0u ? 0u : (sign | c));
}
static inline float enc_fp8_to_f32(uchar c8, uint mbits, int bias, uint kind) {
    const uint c = uint(c8);
    const uint sign = (c & 0x80u) << 24;
    const uint ef = (c >> mbits) & ((1u << (7u - mbits)) - 1u);
    uint mf = c & ((1u << mbits) - 1u);
    if ((kind == 0u && (c & 0x7Fu) == 0x7Fu) || (kind == 1u && c == 0x80u) || (kind == 3u && ef == 31u && mf != 0u))
        return as_type<float>(0x7FC00000u);
    if (kind == 3u && ef == 31u) return as_type<float>(sign | 0x7F800000u);
    if (ef == 0u) {
        if (mf == 0u) return as_type<float>(sign);
        int e = 1 - bias;
        while ((mf & (1u << mbits)) == 0u) { mf <<= 1; e -= 1; }  // normalize the subnormal (exact in float32)
        return as_type<float>(sign | (uint(e + 127) << 23) | ((mf & ((1u << mbits) - 1u)) << (23u - mbits)));
    }
    return as_type<float>(sign | (uint(int(ef) - bias + 127) << 23) | (mf << (23u - mbits)));
}"""


def _wrappers() -> str:
    lines = []
    for name, args in _ENCODE.items():
        lines.append(f"static inline uchar enc_f32_to_{name}(float x) {{ return enc_f32_to_fp8(x, {args}, "
                     f"{'2u' if name == 'fp8e4b15' else '0u'}); }}")
    lines.append("static inline uchar enc_f32_to_fp8e5_rtz(float x) { "
                 "return enc_f32_to_fp8(x, 2u, 15, 0x7Bu, 0x7Fu, 0x7Cu, 0u, 1u); }")
    for name, args in _DECODE.items():
        lines.append(f"static inline float enc_{name}_to_f32(uchar c) {{ return enc_fp8_to_f32(c, {args}); }}")
    return "\n".join(lines)


FP8_HELPERS = {"enc_fp8": _GENERIC + "\n" + _wrappers()}


def decode(src: dtype, x: str) -> str:
    """MSL for the float32 value of the fp8 code ``x``."""
    return f"enc_{src.name}_to_f32({x})"


def encode(dst: dtype, x: str, rounding: str | None) -> str:
    """MSL for the ``dst`` code of the float32 ``x`` (``rounding='rtz'``: float8e5 toward zero)."""
    return f"enc_f32_to_{dst.name}{'_rtz' if rounding == 'rtz' and dst.name == 'fp8e5' else ''}({x})"

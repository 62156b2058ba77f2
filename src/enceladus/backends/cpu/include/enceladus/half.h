// half (IEEE binary16) and bfloat (bfloat16) with Metal semantics: every arithmetic operation is
// computed in float and rounded back with round-to-nearest-even. float has enough precision
// (24 >= 2*11+2) that this double rounding equals a correctly rounded fp16/bf16 operation.
#ifndef ENCELADUS_HALF_H
#define ENCELADUS_HALF_H
#include "core.h"

namespace metal {
namespace __enc {
// The conversions in software: every build has them (the generic target uses them; the tests compare).
__ENC_INLINE ushort f32_to_f16_soft(float f) {
  uint x = __builtin_bit_cast(uint, f);
  uint sign = (x >> 16) & 0x8000u;
  uint ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return ushort(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));  // nan, inf
  if (ax >= 0x477ff000u) return ushort(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (ax < 0x38800000u) {
    // Below the smallest normal half: adding 0.5 makes the FPU round at the half-subnormal ulp 2^-24.
    float t = __builtin_bit_cast(float, ax) + 0.5f;
    return ushort(sign | (__builtin_bit_cast(uint, t) - 0x3f000000u));
  }
  uint odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + odd;  // rebias exponent 127 -> 15 and round to nearest even
  return ushort(sign | (ax >> 13));
}
__ENC_INLINE float f16_to_f32_soft(ushort h) {
  uint sign = uint(h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return __builtin_bit_cast(float, sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    float f = float(m) * 5.9604644775390625e-8f;  // m * 2^-24
    return sign ? -f : f;
  }
  return __builtin_bit_cast(float, sign | ((e + 112u) << 23) | (m << 13));
}
#if defined(__F16C__)
// x86 F16C (kernels built with -mf16c when the building machine has it: toolchain.target_flags): one
// instruction each way, rounding to nearest even by its immediate (not MXCSR). Bit-identical to the software
// rules above, NaNs included: the instructions keep a NaN's payload bits (and vcvtph2ps quiets a signalling
// NaN), so NaNs take the software result (tests/backends/cpu/test_half_conversion.py: all 65,536 halfs, every
// rounding midpoint and a float sample, on both builds).
typedef float __enc_v4sf __attribute__((vector_size(16)));
typedef short __enc_v8hi __attribute__((vector_size(16)));
__ENC_INLINE ushort f32_to_f16(float f) {
  uint x = __builtin_bit_cast(uint, f);
  ushort h = ushort(__builtin_ia32_vcvtps2ph(__enc_v4sf{f, 0.0f, 0.0f, 0.0f}, 0)[0]);
  return (x & 0x7fffffffu) > 0x7f800000u ? ushort(((x >> 16) & 0x8000u) | 0x7e00u) : h;
}
__ENC_INLINE float f16_to_f32(ushort h) {
  float f = __builtin_ia32_vcvtph2ps(__enc_v8hi{short(h), 0, 0, 0, 0, 0, 0, 0})[0];
  return (h & 0x7fffu) > 0x7c00u ? __builtin_bit_cast(float, (uint(h & 0x8000u) << 16) | 0x7f800000u | (uint(h & 0x3ffu) << 13))
                                 : f;
}
#else
__ENC_INLINE ushort f32_to_f16(float f) { return f32_to_f16_soft(f); }
__ENC_INLINE float f16_to_f32(ushort h) { return f16_to_f32_soft(h); }
#endif
__ENC_INLINE ushort f32_to_bf16(float f) {
  uint x = __builtin_bit_cast(uint, f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return ushort((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return ushort(x >> 16);
}
__ENC_INLINE float bf16_to_f32(ushort b) { return __builtin_bit_cast(float, uint(b) << 16); }
struct raw_bits_tag {};
}  // namespace __enc
}  // namespace metal

struct bfloat;

struct half {
  ushort __bits;
  half() = default;
  __ENC_INLINE half(float f) : __bits(metal::__enc::f32_to_f16(f)) {}
  template <class I, metal::__enc::enable_if_t<metal::__enc::is_integral<I>::value, int> = 0>
  __ENC_INLINE half(I i) : __bits(metal::__enc::f32_to_f16(float(i))) {}
  __ENC_INLINE constexpr half(metal::__enc::raw_bits_tag, ushort b) : __bits(b) {}
  explicit half(bfloat b);
  __ENC_INLINE operator float() const { return metal::__enc::f16_to_f32(__bits); }
};

struct bfloat {
  ushort __bits;
  bfloat() = default;
  __ENC_INLINE bfloat(float f) : __bits(metal::__enc::f32_to_bf16(f)) {}
  // Metal: bfloat converts implicitly only to and from float; everything else needs a cast.
  template <class I, metal::__enc::enable_if_t<metal::__enc::is_integral<I>::value, int> = 0>
  __ENC_INLINE explicit bfloat(I i) : __bits(metal::__enc::f32_to_bf16(float(i))) {}
  __ENC_INLINE explicit bfloat(half h) : __bits(metal::__enc::f32_to_bf16(float(h))) {}
  __ENC_INLINE constexpr bfloat(metal::__enc::raw_bits_tag, ushort b) : __bits(b) {}
  template <class T, metal::__enc::enable_if_t<metal::__enc::is_same<T, float>::value, int> = 0>
  __ENC_INLINE operator T() const { return metal::__enc::bf16_to_f32(__bits); }
  template <class T, metal::__enc::enable_if_t<!metal::__enc::is_same<T, float>::value &&
                                                   (metal::__enc::is_integral<T>::value ||
                                                    metal::__enc::is_same<T, half>::value), int> = 0>
  __ENC_INLINE explicit operator T() const { return T(metal::__enc::bf16_to_f32(__bits)); }
};
__ENC_INLINE half::half(bfloat b) : __bits(metal::__enc::f32_to_f16(float(b))) {}

namespace metal { namespace __enc {
template <> struct is_enc_fp<half> { static constexpr bool value = true; };
template <> struct is_enc_fp<bfloat> { static constexpr bool value = true; };
template <class T> constexpr bool is_int_v = is_integral<T>::value;
}}  // namespace metal::__enc

// Arithmetic. (H, H) -> H rounded; (H, float) -> float; (half, int) -> half (C rules for _Float16).
#define __ENC_H_ARITH(H, OP)                                                                        \
  __ENC_INLINE H operator OP(H a, H b) { return H(float(a) OP float(b)); }                          \
  __ENC_INLINE float operator OP(H a, float b) { return float(a) OP b; }                            \
  __ENC_INLINE float operator OP(float a, H b) { return a OP float(b); }                            \
  __ENC_INLINE H& operator OP##=(H& a, H b) { return a = a OP b; }                                  \
  __ENC_INLINE H& operator OP##=(H& a, float b) { return a = H(float(a) OP b); }
#define __ENC_H_CMP(H, OP)                                                                          \
  __ENC_INLINE bool operator OP(H a, H b) { return float(a) OP float(b); }                          \
  __ENC_INLINE bool operator OP(H a, float b) { return float(a) OP b; }                             \
  __ENC_INLINE bool operator OP(float a, H b) { return a OP float(b); }
#define __ENC_HALF_INT_ARITH(OP)                                                                    \
  template <class I, metal::__enc::enable_if_t<metal::__enc::is_int_v<I>, int> = 0>                 \
  __ENC_INLINE half operator OP(half a, I b) { return half(float(a) OP float(b)); }                 \
  template <class I, metal::__enc::enable_if_t<metal::__enc::is_int_v<I>, int> = 0>                 \
  __ENC_INLINE half operator OP(I a, half b) { return half(float(a) OP float(b)); }                 \
  template <class I, metal::__enc::enable_if_t<metal::__enc::is_int_v<I>, int> = 0>                 \
  __ENC_INLINE half& operator OP##=(half& a, I b) { return a = a OP b; }
#define __ENC_HALF_INT_CMP(OP)                                                                      \
  template <class I, metal::__enc::enable_if_t<metal::__enc::is_int_v<I>, int> = 0>                 \
  __ENC_INLINE bool operator OP(half a, I b) { return float(a) OP float(b); }                       \
  template <class I, metal::__enc::enable_if_t<metal::__enc::is_int_v<I>, int> = 0>                 \
  __ENC_INLINE bool operator OP(I a, half b) { return float(a) OP float(b); }

#define __ENC_H_ALL(H)                                                                              \
  __ENC_H_ARITH(H, +) __ENC_H_ARITH(H, -) __ENC_H_ARITH(H, *) __ENC_H_ARITH(H, /)                   \
  __ENC_H_CMP(H, ==) __ENC_H_CMP(H, !=) __ENC_H_CMP(H, <) __ENC_H_CMP(H, >) __ENC_H_CMP(H, <=)      \
  __ENC_H_CMP(H, >=)                                                                                \
  __ENC_INLINE H operator-(H a) { return H(metal::__enc::raw_bits_tag{}, ushort(a.__bits ^ 0x8000u)); } \
  __ENC_INLINE H operator+(H a) { return a; }                                                       \
  __ENC_INLINE H& operator++(H& a) { return a = H(float(a) + 1.0f); }                               \
  __ENC_INLINE H& operator--(H& a) { return a = H(float(a) - 1.0f); }                               \
  __ENC_INLINE H operator++(H& a, int) { H t = a; ++a; return t; }                                  \
  __ENC_INLINE H operator--(H& a, int) { H t = a; --a; return t; }
__ENC_H_ALL(half)
__ENC_H_ALL(bfloat)
__ENC_HALF_INT_ARITH(+) __ENC_HALF_INT_ARITH(-) __ENC_HALF_INT_ARITH(*) __ENC_HALF_INT_ARITH(/)
__ENC_HALF_INT_CMP(==) __ENC_HALF_INT_CMP(!=) __ENC_HALF_INT_CMP(<) __ENC_HALF_INT_CMP(>)
__ENC_HALF_INT_CMP(<=) __ENC_HALF_INT_CMP(>=)
#undef __ENC_H_ARITH
#undef __ENC_H_CMP
#undef __ENC_HALF_INT_ARITH
#undef __ENC_HALF_INT_CMP
#undef __ENC_H_ALL

static_assert(sizeof(half) == 2 && alignof(half) == 2, "half must be 2 bytes");
static_assert(sizeof(bfloat) == 2 && alignof(bfloat) == 2, "bfloat must be 2 bytes");

#define HALF_MAX half(metal::__enc::raw_bits_tag{}, 0x7bffu)
#define HALF_MIN half(metal::__enc::raw_bits_tag{}, 0x0400u)
#define HALF_EPSILON half(metal::__enc::raw_bits_tag{}, 0x1400u)
#define FLT_MAX 3.40282347e+38f
#define FLT_MIN 1.17549435e-38f
#define FLT_EPSILON 1.1920929e-7f
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define MAXFLOAT 3.40282347e+38f
#define HUGE_VALF __builtin_huge_valf()
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 4294967295u
#define M_PI_F 3.14159265358979323846f
#define M_E_F 2.71828182845904523536f
#define M_LN2_F 0.693147180559945309417f
#define M_LOG2E_F 1.44269504088896340736f
#define M_SQRT2_F 1.41421356237309504880f
#endif

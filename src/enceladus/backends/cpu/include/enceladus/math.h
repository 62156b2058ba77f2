// Metal math library on the host: metal::precise:: is the reference; metal:: and metal::fast::
// resolve to the same precise implementations (documented difference from the GPU's fast math), except
// fast::rsqrt, which the emitter uses (docs/floating_point.md).
// Float functions use __builtin_* so no C library header is pulled into the kernel.
//
// ENCELADUS_PERTURB_MATH (ENCELADUS_CPU_PERTURB=1): every float function whose Apple bound exceeds 0.5 ulp
// (MSL spec section 8.4, Table 8.1 for precise::, Table 8.2 for fast::) returns a result moved away from the
// exact value by as many ulps as the bound allows (direction from a hash of the arguments: deterministic),
// so tests see the worst error an Apple GPU may give instead of the host's nearly exact libm.
#ifndef ENCELADUS_MATH_H
#define ENCELADUS_MATH_H
#include "vec.h"

namespace metal {
namespace __enc {
template <class T, int N, class F> __ENC_INLINE vec<T, N> map1(const vec<T, N>& a, F f) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.__e[i] = f(a.__e[i]);
  return r;
}
template <class T, int N, class F> __ENC_INLINE vec<T, N> map2(const vec<T, N>& a, const vec<T, N>& b, F f) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.__e[i] = f(a.__e[i], b.__e[i]);
  return r;
}
template <class T, int N, class F>
__ENC_INLINE vec<T, N> map3(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c, F f) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.__e[i] = f(a.__e[i], b.__e[i], c.__e[i]);
  return r;
}
// a * b + c rounded to odd at float precision, for operands of at most 12 significant bits (half, bfloat):
// the product is exact in double, the sum's rounding error is recovered exactly (two-sum) and both narrowings
// round to odd, so the one round-to-nearest that follows (to half or bfloat) is the correctly rounded fma, as
// Metal's fma is. Rounding through float alone would round twice.
__ENC_INLINE float fma_to_odd(float a, float b, float c) {
  const double p = double(a) * double(b), dc = double(c);
  double s = p + dc;
  const double bb = s - p;
  const double err = (p - (s - bb)) + (dc - bb);
  if (err != 0.0 && __builtin_isfinite(s) && (__builtin_bit_cast(unsigned long long, s) & 1ull) == 0)
    s = __builtin_nextafter(s, err > 0.0 ? __builtin_inf() : -__builtin_inf());
  float f = float(s);
  if (double(f) != s && __builtin_isfinite(f) && (__builtin_bit_cast(unsigned int, f) & 1u) == 0)
    f = __builtin_nextafterf(f, s > double(f) ? __builtin_inff() : -__builtin_inff());
  return f;
}
// sin(pi x), cos(pi x) in double (Table 8.1: <= 4 ulp; sin(x * pi) in float is thousands of ulp off near the
// zeros) with the exact zeros of the functions: x reduced modulo 2 exactly, so the
// product with pi (rounded) never turns an exact 0 into a small non-zero "exact" value
__ENC_INLINE double sinpi_d(float x) {
  const double r = __builtin_fmod(double(x), 2.0);
  return r == __builtin_trunc(r) ? 0.0 : __builtin_sin(3.14159265358979323846 * r);
}
__ENC_INLINE double cospi_d(float x) {
  const double r = __builtin_fmod(double(x), 2.0);
  return r - __builtin_trunc(r) == 0.5 || r - __builtin_trunc(r) == -0.5 ? 0.0 : __builtin_cos(3.14159265358979323846 * r);
}
#ifdef ENCELADUS_PERTURB_MATH
// The float ulp at the exact value r: the gap of its binade; at a power of two the smaller (lower) gap, the
// strictest reading of the spec's definition, so a perturbed result is within the bound under every reading.
__ENC_INLINE double ulp_at(double r) {
  const double a = __builtin_fabs(r);
  if (a < 0x1p-126) return 0x1p-149;
  int e = 0;
  const double m = __builtin_frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  return m == 0.5 ? __builtin_ldexp(1.0, e - 25) : __builtin_ldexp(1.0, e - 24);
}
__ENC_INLINE unsigned mix_bits(unsigned h) {
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
  return h;
}
// `exact` (the function in double) moved by up to `ulps` float ulps, rounded to float and checked to stay within
// `ulps` of it. Results that are not normal finite floats (0, subnormal, INF, NaN) are left as rounded: their
// handling is a matter of flush-to-zero and special values, not of the ulp bound.
__ENC_INLINE float perturbed(double exact, unsigned seed, int ulps) {
  const float r = float(exact);
  if (!__builtin_isfinite(r) || __builtin_fabsf(r) < 0x1p-126f) return r;
  const double u = ulp_at(exact), dir = (mix_bits(seed) & 1u) ? 1.0 : -1.0;
  for (int m = ulps; m > 0; --m) {
    const float c = float(exact + dir * m * u);
    if (__builtin_isfinite(c) && __builtin_fabsf(c) >= 0x1p-126f && __builtin_signbit(c) == __builtin_signbit(r) &&
        __builtin_fabs(double(c) - exact) <= ulps * u)
      return c;
  }
  return r;
}
__ENC_INLINE unsigned bits_of(float x) { return __builtin_bit_cast(unsigned, x); }
#endif
}  // namespace __enc

// __ENC_A1/__ENC_A2(ulps, float expression, double expression): a function with an Apple bound of `ulps`; the
// float expression normally, the double one perturbed in ENCELADUS_PERTURB_MATH mode (__LINE__ salts the hash
// per function). The ulps given are the largest whole number of steps that stays within the bound: a bound of
// N ulp allows N steps from the exact value (the result is then rounded to float and checked).
#ifdef ENCELADUS_PERTURB_MATH
#define __ENC_A1(ULPS, FEXPR, DEXPR) __enc::perturbed((DEXPR), __enc::bits_of(x) ^ (__LINE__ * 0x9e3779b9u), (ULPS))
#define __ENC_A2(ULPS, FEXPR, DEXPR)                                                                 \
  __enc::perturbed((DEXPR), __enc::bits_of(x) ^ __enc::mix_bits(__enc::bits_of(y) ^ (__LINE__ * 0x9e3779b9u)), (ULPS))
#else
#define __ENC_A1(ULPS, FEXPR, DEXPR) (FEXPR)
#define __ENC_A2(ULPS, FEXPR, DEXPR) (FEXPR)
#endif

namespace precise {
// One float implementation per function; half and bfloat compute in float and round once.
#define __ENC_M1(NAME, EXPR)                                                                        \
  __ENC_INLINE float NAME(float x) { return EXPR; }                                                 \
  __ENC_INLINE half NAME(half x) { return half(NAME(float(x))); }                                   \
  __ENC_INLINE bfloat NAME(bfloat x) { return bfloat(NAME(float(x))); }                             \
  template <class T, int N> __ENC_INLINE vec<T, N> NAME(const vec<T, N>& v) {                       \
    return __enc::map1(v, [](T e) { return T(NAME(e)); });                                          \
  }
#define __ENC_M2(NAME, EXPR)                                                                        \
  __ENC_INLINE float NAME(float x, float y) { return EXPR; }                                        \
  __ENC_INLINE half NAME(half x, half y) { return half(NAME(float(x), float(y))); }                 \
  __ENC_INLINE bfloat NAME(bfloat x, bfloat y) { return bfloat(NAME(float(x), float(y))); }         \
  template <class T, int N> __ENC_INLINE vec<T, N> NAME(const vec<T, N>& a, const vec<T, N>& b) {   \
    return __enc::map2(a, b, [](T e, T f) { return T(NAME(e, f)); });                               \
  }
__ENC_M1(exp, __ENC_A1(4, __builtin_expf(x), __builtin_exp(double(x))))
__ENC_M1(exp2, __ENC_A1(4, __builtin_exp2f(x), __builtin_exp2(double(x))))
__ENC_M1(exp10, __ENC_A1(4, __builtin_powf(10.0f, x), __builtin_pow(10.0, double(x))))
__ENC_M1(log, __ENC_A1(4, __builtin_logf(x), __builtin_log(double(x))))
__ENC_M1(log2, __ENC_A1(4, __builtin_log2f(x), __builtin_log2(double(x))))
__ENC_M1(log10, __ENC_A1(4, __builtin_log10f(x), __builtin_log10(double(x))))
__ENC_M1(sqrt, __builtin_sqrtf(x))
__ENC_M1(rsqrt, float(1.0 / __builtin_sqrt(double(x))))  // correctly rounded (Table 8.1)
__ENC_M1(cbrt, __builtin_cbrtf(x))
__ENC_M1(sin, __ENC_A1(4, __builtin_sinf(x), __builtin_sin(double(x))))
__ENC_M1(cos, __ENC_A1(4, __builtin_cosf(x), __builtin_cos(double(x))))
__ENC_M1(tan, __ENC_A1(6, __builtin_tanf(x), __builtin_tan(double(x))))
__ENC_M1(asin, __ENC_A1(4, __builtin_asinf(x), __builtin_asin(double(x))))
__ENC_M1(acos, __ENC_A1(4, __builtin_acosf(x), __builtin_acos(double(x))))
__ENC_M1(atan, __ENC_A1(5, __builtin_atanf(x), __builtin_atan(double(x))))
__ENC_M1(sinh, __ENC_A1(4, __builtin_sinhf(x), __builtin_sinh(double(x))))
__ENC_M1(cosh, __ENC_A1(4, __builtin_coshf(x), __builtin_cosh(double(x))))
__ENC_M1(tanh, __ENC_A1(5, __builtin_tanhf(x), __builtin_tanh(double(x))))
__ENC_M1(asinh, __ENC_A1(4, __builtin_asinhf(x), __builtin_asinh(double(x))))
__ENC_M1(acosh, __ENC_A1(4, __builtin_acoshf(x), __builtin_acosh(double(x))))
__ENC_M1(atanh, __ENC_A1(5, __builtin_atanhf(x), __builtin_atanh(double(x))))
__ENC_M1(sinpi, __ENC_A1(4, float(__enc::sinpi_d(x)), __enc::sinpi_d(x)))
__ENC_M1(cospi, __ENC_A1(4, float(__enc::cospi_d(x)), __enc::cospi_d(x)))
__ENC_M1(floor, __builtin_floorf(x))
__ENC_M1(ceil, __builtin_ceilf(x))
__ENC_M1(trunc, __builtin_truncf(x))
__ENC_M1(round, __builtin_roundf(x))
__ENC_M1(rint, __builtin_rintf(x))
__ENC_M1(fabs, __builtin_fabsf(x))
__ENC_M1(fract, x - __builtin_floorf(x) < 0x1.fffffep-1f ? x - __builtin_floorf(x) : 0x1.fffffep-1f)
__ENC_M1(saturate, __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f))
__ENC_M1(sign, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x != x ? 0.0f : x)))
__ENC_M2(pow, __ENC_A2(16, __builtin_powf(x, y), __builtin_pow(double(x), double(y))))
__ENC_M2(powr, __ENC_A2(16, __builtin_powf(x, y), __builtin_pow(double(x), double(y))))
__ENC_M2(atan2, __ENC_A2(6, __builtin_atan2f(x, y), __builtin_atan2(double(x), double(y))))
__ENC_M2(fmod, __builtin_fmodf(x, y))
__ENC_M2(fmin, __builtin_fminf(x, y))
__ENC_M2(fmax, __builtin_fmaxf(x, y))
__ENC_M2(copysign, __builtin_copysignf(x, y))
__ENC_M2(fdim, __builtin_fdimf(x, y))
__ENC_M2(hypot, __builtin_hypotf(x, y))
__ENC_M2(divide, x / y)
__ENC_M2(step, y < x ? 0.0f : 1.0f)

__ENC_INLINE float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__ENC_INLINE half fma(half a, half b, half c) { return half(__enc::fma_to_odd(float(a), float(b), float(c))); }
__ENC_INLINE bfloat fma(bfloat a, bfloat b, bfloat c) {
  return bfloat(__enc::fma_to_odd(float(a), float(b), float(c)));
}
template <class T, int N> __ENC_INLINE vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  return __enc::map3(a, b, c, [](T x, T y, T z) { return fma(x, y, z); });
}
template <class T> __ENC_INLINE T mad(T a, T b, T c) { return a * b + c; }
template <class T> __ENC_INLINE T mix(T x, T y, T a) { return x + (y - x) * a; }
__ENC_INLINE float ldexp(float x, int k) { return __builtin_ldexpf(x, k); }
}  // namespace precise

namespace fast {
using namespace precise;
// fast::rsqrt is <= 2 ulp (Table 8.2); the emitter calls it only on normal finite inputs (enc_rsqrt).
__ENC_M1(rsqrt, __ENC_A1(2, 1.0f / __builtin_sqrtf(x), 1.0 / __builtin_sqrt(double(x))))
}  // namespace fast
#undef __ENC_M1
#undef __ENC_M2
#undef __ENC_A1
#undef __ENC_A2
using namespace precise;

// abs / min / max / clamp for every scalar type and vectors.
__ENC_INLINE float abs(float x) { return __builtin_fabsf(x); }
__ENC_INLINE half abs(half x) { return half(__enc::raw_bits_tag{}, ushort(x.__bits & 0x7fffu)); }
__ENC_INLINE bfloat abs(bfloat x) { return bfloat(__enc::raw_bits_tag{}, ushort(x.__bits & 0x7fffu)); }
template <class I, __enc::enable_if_t<__enc::is_integral<I>::value, int> = 0>
__ENC_INLINE I abs(I x) { return x < I(0) ? I(-x) : x; }
__ENC_INLINE float min(float a, float b) { return __builtin_fminf(a, b); }
__ENC_INLINE float max(float a, float b) { return __builtin_fmaxf(a, b); }
__ENC_INLINE half min(half a, half b) { return half(__builtin_fminf(float(a), float(b))); }
__ENC_INLINE half max(half a, half b) { return half(__builtin_fmaxf(float(a), float(b))); }
__ENC_INLINE bfloat min(bfloat a, bfloat b) { return bfloat(__builtin_fminf(float(a), float(b))); }
__ENC_INLINE bfloat max(bfloat a, bfloat b) { return bfloat(__builtin_fmaxf(float(a), float(b))); }
template <class I, __enc::enable_if_t<__enc::is_integral<I>::value, int> = 0>
__ENC_INLINE I min(I a, I b) { return b < a ? b : a; }
template <class I, __enc::enable_if_t<__enc::is_integral<I>::value, int> = 0>
__ENC_INLINE I max(I a, I b) { return a < b ? b : a; }
template <class T, int N> __ENC_INLINE vec<T, N> abs(const vec<T, N>& a) {
  return __enc::map1(a, [](T x) { return abs(x); });
}
template <class T, int N> __ENC_INLINE vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) {
  return __enc::map2(a, b, [](T x, T y) { return min(x, y); });
}
template <class T, int N> __ENC_INLINE vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) {
  return __enc::map2(a, b, [](T x, T y) { return max(x, y); });
}
template <class T, int N> __ENC_INLINE vec<T, N> min(const vec<T, N>& a, T b) { return min(a, vec<T, N>(b)); }
template <class T, int N> __ENC_INLINE vec<T, N> max(const vec<T, N>& a, T b) { return max(a, vec<T, N>(b)); }
template <class T> __ENC_INLINE T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class T, int N> __ENC_INLINE vec<T, N> clamp(const vec<T, N>& x, T lo, T hi) {
  return min(max(x, vec<T, N>(lo)), vec<T, N>(hi));
}
template <class I, __enc::enable_if_t<__enc::is_integral<I>::value, int> = 0>
__ENC_INLINE I absdiff(I a, I b) { return a > b ? I(a - b) : I(b - a); }

// Classification: scalar -> bool, vector -> bool vector.
__ENC_INLINE bool isnan(float x) { return __builtin_isnan(x); }
__ENC_INLINE bool isinf(float x) { return __builtin_isinf(x); }
__ENC_INLINE bool isfinite(float x) { return __builtin_isfinite(x); }
__ENC_INLINE bool signbit(float x) { return __builtin_signbit(x); }
__ENC_INLINE bool isnan(half x) { return (x.__bits & 0x7fffu) > 0x7c00u; }
__ENC_INLINE bool isinf(half x) { return (x.__bits & 0x7fffu) == 0x7c00u; }
__ENC_INLINE bool isfinite(half x) { return (x.__bits & 0x7c00u) != 0x7c00u; }
__ENC_INLINE bool signbit(half x) { return (x.__bits & 0x8000u) != 0; }
__ENC_INLINE bool isnan(bfloat x) { return (x.__bits & 0x7fffu) > 0x7f80u; }
__ENC_INLINE bool isinf(bfloat x) { return (x.__bits & 0x7fffu) == 0x7f80u; }
__ENC_INLINE bool isfinite(bfloat x) { return (x.__bits & 0x7f80u) != 0x7f80u; }
__ENC_INLINE bool signbit(bfloat x) { return (x.__bits & 0x8000u) != 0; }
#define __ENC_CLASSIFY_VEC(NAME)                                                                    \
  template <class T, int N> __ENC_INLINE vec<bool, N> NAME(const vec<T, N>& v) {                    \
    vec<bool, N> r;                                                                                 \
    for (int i = 0; i < N; ++i) r.__e[i] = NAME(v.__e[i]);                                          \
    return r;                                                                                       \
  }
__ENC_CLASSIFY_VEC(isnan) __ENC_CLASSIFY_VEC(isinf) __ENC_CLASSIFY_VEC(isfinite) __ENC_CLASSIFY_VEC(signbit)
#undef __ENC_CLASSIFY_VEC

// select(a, b, c) = c ? b : a, element-wise for vectors.
template <class T> __ENC_INLINE T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N> __ENC_INLINE vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.__e[i] = c.__e[i] ? b.__e[i] : a.__e[i];
  return r;
}

// Integer helpers.
__ENC_INLINE int mulhi(int a, int b) { return int((long(a) * long(b)) >> 32); }
__ENC_INLINE uint mulhi(uint a, uint b) { return uint((ulong(a) * ulong(b)) >> 32); }
__ENC_INLINE long mulhi(long a, long b) { return long((__int128(a) * __int128(b)) >> 64); }
__ENC_INLINE ulong mulhi(ulong a, ulong b) {
  return ulong((static_cast<unsigned __int128>(a) * static_cast<unsigned __int128>(b)) >> 64);
}
__ENC_INLINE short mulhi(short a, short b) { return short((int(a) * int(b)) >> 16); }
__ENC_INLINE ushort mulhi(ushort a, ushort b) { return ushort((uint(a) * uint(b)) >> 16); }
__ENC_INLINE char mulhi(char a, char b) { return char((int(a) * int(b)) >> 8); }
__ENC_INLINE uchar mulhi(uchar a, uchar b) { return uchar((uint(a) * uint(b)) >> 8); }
template <class I> __ENC_INLINE I popcount(I x) {
  return I(sizeof(I) == 8 ? __builtin_popcountl(ulong(x)) : __builtin_popcount(uint(x) & (~0u >> (32 - 8 * (sizeof(I) < 4 ? sizeof(I) : 4)))));
}
template <class I> __ENC_INLINE I clz(I x) {
  constexpr int bits = 8 * sizeof(I);
  if (x == I(0)) return I(bits);
  return I(sizeof(I) == 8 ? __builtin_clzl(ulong(x)) : __builtin_clz(uint(x) & (~0u >> (32 - bits))) - (32 - bits));
}
template <class I> __ENC_INLINE I ctz(I x) {
  constexpr int bits = 8 * sizeof(I);
  if (x == I(0)) return I(bits);
  return I(sizeof(I) == 8 ? __builtin_ctzl(ulong(x)) : __builtin_ctz(uint(x)));
}

// Geometric helpers on float vectors.
template <class T, int N> __ENC_INLINE T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = a.__e[0] * b.__e[0];
  for (int i = 1; i < N; ++i) s = s + a.__e[i] * b.__e[i];
  return s;
}
template <class T, int N> __ENC_INLINE T length(const vec<T, N>& a) { return sqrt(dot(a, a)); }
}  // namespace metal
#endif

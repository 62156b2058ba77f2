// Metal Shading Language on CUDA: the compatibility header of the GPU proxy (benchmarks/gpu_proxy).
//
// The proxy rewrites the exact MSL Enceladus emits into CUDA (rewrite.py) and places the kernel code
// inside `namespace metal`, so that every unqualified call (floor, max, simd_sum, ...) resolves to the
// definitions below and never to CUDA's global overloads. Semantics follow Metal:
//   * plain math functions behave as precise:: (the generated MSL sets math_mode(safe)); precise:: maps to
//     CUDA's IEEE-accurate library (no fast-math flags); fast:: maps to CUDA's approximate intrinsics;
//   * half and bfloat are 16-bit storage types whose arithmetic rounds once per operation (Metal's rules);
//   * simd_* functions are warp shuffles over all 32 lanes (full mask: the compiler calls them in uniform
//     control flow; compute-sanitizer's synccheck reports any call that is not);
//   * threadgroup_barrier is __syncthreads, threadgroup arrays are __shared__ (done by the rewrite);
//   * atomics are relaxed CUDA atomics; simdgroup_matrix and matmul2d are emulated with shuffles and
//     scalar loops: correct, but their speed says nothing about Apple's matrix hardware.
// Whatever is not defined here fails to compile: the proxy never falls back silently.
#pragma once

#ifndef __CUDACC__
#error "metal_cuda.cuh is compiled by nvcc (or checked with the stub header cuda_stub.h)"
#endif

#include <stdint.h>
#include <type_traits>

#define ENC_D __device__ __forceinline__
#define ENC_FULL_MASK 0xffffffffu

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef MAXFLOAT
#define MAXFLOAT 3.402823466e+38f
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38f
#endif
#ifndef M_PI_F
#define M_PI_F 3.14159265358979323846f
#endif

namespace metal {
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;  // 64-bit on the Linux/CUDA LP64 model, as Metal's ulong
static_assert(sizeof(ulong) == 8 && sizeof(long) == 8, "Metal's long/ulong are 64-bit");

// ---------------------------------------------------------------------------------------------------
// half and bfloat: 16-bit storage, float arithmetic rounded once per operation.
namespace __enc {
ENC_D ushort f32_to_f16(float f) {
#ifdef __CUDA_ARCH__
  ushort h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  (void)f;
  return 0;  // host syntax check only
#endif
}
ENC_D float f16_to_f32(ushort h) {
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  (void)h;
  return 0.0f;
#endif
}
ENC_D ushort f32_to_bf16(float f) {
  uint x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return ushort((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);                                       // round to nearest even
  return ushort(x >> 16);
}
ENC_D float bf16_to_f32(ushort b) { return __uint_as_float(uint(b) << 16); }
struct raw_bits_tag {};
}  // namespace __enc

struct bfloat;
struct half {
  ushort __bits;
  half() = default;
  ENC_D half(float f) : __bits(__enc::f32_to_f16(f)) {}
  ENC_D half(double f) : __bits(__enc::f32_to_f16(float(f))) {}
  template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
  ENC_D half(I i) : __bits(__enc::f32_to_f16(float(i))) {}
  ENC_D constexpr half(__enc::raw_bits_tag, ushort b) : __bits(b) {}
  ENC_D explicit half(bfloat b);
  ENC_D operator float() const { return __enc::f16_to_f32(__bits); }
};
struct bfloat {
  ushort __bits;
  bfloat() = default;
  ENC_D bfloat(float f) : __bits(__enc::f32_to_bf16(f)) {}
  ENC_D explicit bfloat(double f) : __bits(__enc::f32_to_bf16(float(f))) {}
  template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
  ENC_D explicit bfloat(I i) : __bits(__enc::f32_to_bf16(float(i))) {}
  ENC_D explicit bfloat(half h) : __bits(__enc::f32_to_bf16(float(h))) {}
  ENC_D constexpr bfloat(__enc::raw_bits_tag, ushort b) : __bits(b) {}
  template <class T, typename std::enable_if<std::is_same<T, float>::value, int>::type = 0>
  ENC_D operator T() const { return __enc::bf16_to_f32(__bits); }
  template <class T, typename std::enable_if<!std::is_same<T, float>::value &&
                                                 (std::is_integral<T>::value || std::is_same<T, half>::value),
                                             int>::type = 0>
  ENC_D explicit operator T() const { return T(__enc::bf16_to_f32(__bits)); }
};
ENC_D half::half(bfloat b) : __bits(__enc::f32_to_f16(float(b))) {}

namespace __enc {
template <class T> struct is_enc_fp : std::false_type {};
template <> struct is_enc_fp<half> : std::true_type {};
template <> struct is_enc_fp<bfloat> : std::true_type {};
template <class T> struct is_scalar {
  static constexpr bool value = std::is_arithmetic<T>::value || is_enc_fp<typename std::remove_cv<T>::type>::value;
};
template <class T> struct type_identity { typedef T type; };
}  // namespace __enc

#define ENC_H_ARITH(H, OP)                                                                           \
  ENC_D H operator OP(H a, H b) { return H(float(a) OP float(b)); }                                   \
  ENC_D float operator OP(H a, float b) { return float(a) OP b; }                                     \
  ENC_D float operator OP(float a, H b) { return a OP float(b); }                                     \
  ENC_D H& operator OP##=(H& a, H b) { return a = a OP b; }                                           \
  ENC_D H& operator OP##=(H& a, float b) { return a = H(float(a) OP b); }
#define ENC_H_CMP(H, OP)                                                                             \
  ENC_D bool operator OP(H a, H b) { return float(a) OP float(b); }                                   \
  ENC_D bool operator OP(H a, float b) { return float(a) OP b; }                                      \
  ENC_D bool operator OP(float a, H b) { return a OP float(b); }
#define ENC_H_INT(OP)                                                                                \
  template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>              \
  ENC_D half operator OP(half a, I b) { return half(float(a) OP float(b)); }                          \
  template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>              \
  ENC_D half operator OP(I a, half b) { return half(float(a) OP float(b)); }
#define ENC_H_INT_CMP(H, OP)                                                                         \
  template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>              \
  ENC_D bool operator OP(H a, I b) { return float(a) OP float(b); }                                   \
  template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>              \
  ENC_D bool operator OP(I a, H b) { return float(a) OP float(b); }
#define ENC_H_ALL(H)                                                                                 \
  ENC_H_ARITH(H, +) ENC_H_ARITH(H, -) ENC_H_ARITH(H, *) ENC_H_ARITH(H, /)                            \
  ENC_H_CMP(H, ==) ENC_H_CMP(H, !=) ENC_H_CMP(H, <) ENC_H_CMP(H, >) ENC_H_CMP(H, <=) ENC_H_CMP(H, >=) \
  ENC_D H operator-(H a) { return H(__enc::raw_bits_tag{}, ushort(a.__bits ^ 0x8000u)); }             \
  ENC_D H operator+(H a) { return a; }
ENC_H_ALL(half)
ENC_H_ALL(bfloat)
ENC_H_INT(+) ENC_H_INT(-) ENC_H_INT(*) ENC_H_INT(/)
ENC_H_INT_CMP(half, ==) ENC_H_INT_CMP(half, !=) ENC_H_INT_CMP(half, <) ENC_H_INT_CMP(half, >)
ENC_H_INT_CMP(half, <=) ENC_H_INT_CMP(half, >=) ENC_H_INT_CMP(bfloat, ==) ENC_H_INT_CMP(bfloat, !=)
ENC_H_INT_CMP(bfloat, <) ENC_H_INT_CMP(bfloat, >) ENC_H_INT_CMP(bfloat, <=) ENC_H_INT_CMP(bfloat, >=)
#undef ENC_H_ARITH
#undef ENC_H_CMP
#undef ENC_H_INT
#undef ENC_H_INT_CMP
#undef ENC_H_ALL

// ---------------------------------------------------------------------------------------------------
// Vectors vec<T, N>: .x .y .z .w / .r .g .b .a, [i], element-wise operators, scalar broadcast. A
// 3-vector occupies a 4-vector's storage (Metal). packed_vec<T, N> has the alignment of T.
template <class T, int N> struct vec;
namespace __enc {
template <class U> constexpr bool is_scalar_v = is_scalar<typename std::remove_cv<U>::type>::value;
}
#define ENC_VEC_COMMON(N)                                                                            \
  typedef T value_type;                                                                              \
  vec() = default;                                                                                   \
  template <class U, typename std::enable_if<__enc::is_scalar_v<U>, int>::type = 0>                  \
  ENC_D vec(U s) { for (int i = 0; i < N; ++i) __e[i] = T(s); }                                      \
  template <class U, typename std::enable_if<!std::is_same<U, T>::value, int>::type = 0>             \
  ENC_D explicit vec(const vec<U, N>& o) { for (int i = 0; i < N; ++i) __e[i] = T(o.__e[i]); }       \
  ENC_D T& operator[](int i) { return __e[i]; }                                                      \
  ENC_D const T& operator[](int i) const { return __e[i]; }

template <class T> struct alignas(sizeof(T) * 2) vec<T, 2> {
  union { T __e[2]; struct { T x, y; }; struct { T r, g; }; };
  ENC_VEC_COMMON(2)
  template <class A, class B> ENC_D vec(A a, B b) : __e{T(a), T(b)} {}
};
template <class T> struct alignas(sizeof(T) * 4) vec<T, 3> {
  union { T __e[3]; struct { T x, y, z; }; struct { T r, g, b; }; };
  ENC_VEC_COMMON(3)
  template <class A, class B, class C> ENC_D vec(A a, B b, C c) : __e{T(a), T(b), T(c)} {}
  template <class A> ENC_D vec(vec<T, 2> a, A c) : __e{a.x, a.y, T(c)} {}
};
template <class T> struct alignas(sizeof(T) * 4) vec<T, 4> {
  union { T __e[4]; struct { T x, y, z, w; }; struct { T r, g, b, a; }; };
  ENC_VEC_COMMON(4)
  template <class A, class B, class C, class D> ENC_D vec(A a, B b, C c, D d) : __e{T(a), T(b), T(c), T(d)} {}
  ENC_D vec(vec<T, 2> a, vec<T, 2> b) : __e{a.x, a.y, b.x, b.y} {}
  template <class A> ENC_D vec(vec<T, 3> a, A d) : __e{a.x, a.y, a.z, T(d)} {}
};
#undef ENC_VEC_COMMON

template <class T, int N> struct packed_vec {
  T __e[N];
  packed_vec() = default;
  ENC_D packed_vec(const vec<T, N>& v) { for (int i = 0; i < N; ++i) __e[i] = v.__e[i]; }
  ENC_D operator vec<T, N>() const {
    vec<T, N> v;
    for (int i = 0; i < N; ++i) v.__e[i] = __e[i];
    return v;
  }
  ENC_D T& operator[](int i) { return __e[i]; }
  ENC_D const T& operator[](int i) const { return __e[i]; }
};

#define ENC_VEC_BINOP(OP, R)                                                                         \
  template <class T, int N> ENC_D vec<R, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {    \
    vec<R, N> r;                                                                                     \
    for (int i = 0; i < N; ++i) r.__e[i] = R(a.__e[i] OP b.__e[i]);                                  \
    return r;                                                                                        \
  }                                                                                                  \
  template <class T, int N, class U, typename std::enable_if<__enc::is_scalar_v<U>, int>::type = 0>  \
  ENC_D vec<R, N> operator OP(const vec<T, N>& a, U s) { return a OP vec<T, N>(T(s)); }              \
  template <class T, int N, class U, typename std::enable_if<__enc::is_scalar_v<U>, int>::type = 0>  \
  ENC_D vec<R, N> operator OP(U s, const vec<T, N>& b) { return vec<T, N>(T(s)) OP b; }
#define ENC_VEC_ASSIGN(OP)                                                                           \
  template <class T, int N, class U> ENC_D vec<T, N>& operator OP##=(vec<T, N>& a, const U& b) {     \
    return a = vec<T, N>(a OP b);                                                                    \
  }
ENC_VEC_BINOP(+, T) ENC_VEC_BINOP(-, T) ENC_VEC_BINOP(*, T) ENC_VEC_BINOP(/, T) ENC_VEC_BINOP(%, T)
ENC_VEC_BINOP(&, T) ENC_VEC_BINOP(|, T) ENC_VEC_BINOP(^, T) ENC_VEC_BINOP(<<, T) ENC_VEC_BINOP(>>, T)
ENC_VEC_BINOP(==, bool) ENC_VEC_BINOP(!=, bool) ENC_VEC_BINOP(<, bool) ENC_VEC_BINOP(>, bool)
ENC_VEC_BINOP(<=, bool) ENC_VEC_BINOP(>=, bool) ENC_VEC_BINOP(&&, bool) ENC_VEC_BINOP(||, bool)
ENC_VEC_ASSIGN(+) ENC_VEC_ASSIGN(-) ENC_VEC_ASSIGN(*) ENC_VEC_ASSIGN(/) ENC_VEC_ASSIGN(%)
ENC_VEC_ASSIGN(&) ENC_VEC_ASSIGN(|) ENC_VEC_ASSIGN(^) ENC_VEC_ASSIGN(<<) ENC_VEC_ASSIGN(>>)
#undef ENC_VEC_BINOP
#undef ENC_VEC_ASSIGN
#define ENC_VEC_UNOP(OP, R)                                                                          \
  template <class T, int N> ENC_D vec<R, N> operator OP(const vec<T, N>& a) {                        \
    vec<R, N> r;                                                                                     \
    for (int i = 0; i < N; ++i) r.__e[i] = R(OP a.__e[i]);                                           \
    return r;                                                                                        \
  }
ENC_VEC_UNOP(-, T) ENC_VEC_UNOP(+, T) ENC_VEC_UNOP(~, T) ENC_VEC_UNOP(!, bool)
#undef ENC_VEC_UNOP
template <int N> ENC_D bool all(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i) if (!v.__e[i]) return false;
  return true;
}
template <int N> ENC_D bool any(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i) if (v.__e[i]) return true;
  return false;
}
ENC_D bool all(bool b) { return b; }
ENC_D bool any(bool b) { return b; }

#define ENC_VEC_TYPEDEFS(T, NAME)                                                                    \
  typedef vec<T, 2> NAME##2; typedef vec<T, 3> NAME##3; typedef vec<T, 4> NAME##4;                   \
  typedef packed_vec<T, 2> packed_##NAME##2; typedef packed_vec<T, 3> packed_##NAME##3;              \
  typedef packed_vec<T, 4> packed_##NAME##4;
ENC_VEC_TYPEDEFS(bool, bool) ENC_VEC_TYPEDEFS(char, char) ENC_VEC_TYPEDEFS(uchar, uchar)
ENC_VEC_TYPEDEFS(short, short) ENC_VEC_TYPEDEFS(ushort, ushort) ENC_VEC_TYPEDEFS(int, int)
ENC_VEC_TYPEDEFS(uint, uint) ENC_VEC_TYPEDEFS(long, long) ENC_VEC_TYPEDEFS(ulong, ulong)
ENC_VEC_TYPEDEFS(half, half) ENC_VEC_TYPEDEFS(bfloat, bfloat) ENC_VEC_TYPEDEFS(float, float)
#undef ENC_VEC_TYPEDEFS
static_assert(sizeof(float3) == 16 && alignof(float4) == 16 && sizeof(half2) == 4, "Metal vector layout");

// as_type<T>(x): bit cast between types of equal size.
template <class To, class From> ENC_D To as_type(const From& x) {
  static_assert(sizeof(To) == sizeof(From), "as_type<T>(x): sizes of T and x must match");
  To r;
  memcpy(&r, &x, sizeof(To));
  return r;
}

// ---------------------------------------------------------------------------------------------------
// Math. precise:: is CUDA's accurate library (nvcc without fast-math flags: IEEE division and sqrt,
// no flush to zero); fast:: uses CUDA's approximate intrinsics; plain names are precise:: (the kernels
// declare math_mode(safe)). half and bfloat compute in float and round once.
namespace __enc {
template <class T, int N, class F> ENC_D vec<T, N> map1(const vec<T, N>& a, F f) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.__e[i] = f(a.__e[i]);
  return r;
}
template <class T, int N, class F> ENC_D vec<T, N> map2(const vec<T, N>& a, const vec<T, N>& b, F f) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.__e[i] = f(a.__e[i], b.__e[i]);
  return r;
}
}  // namespace __enc

#define ENC_M1(NAME, EXPR)                                                                           \
  ENC_D float NAME(float x) { return EXPR; }                                                         \
  ENC_D half NAME(half x) { return half(NAME(float(x))); }                                           \
  ENC_D bfloat NAME(bfloat x) { return bfloat(NAME(float(x))); }                                     \
  template <class T, int N> ENC_D vec<T, N> NAME(const vec<T, N>& v) {                               \
    return __enc::map1(v, [](T e) { return T(NAME(e)); });                                           \
  }
#define ENC_M2(NAME, EXPR)                                                                           \
  ENC_D float NAME(float x, float y) { return EXPR; }                                                \
  ENC_D half NAME(half x, half y) { return half(NAME(float(x), float(y))); }                         \
  ENC_D bfloat NAME(bfloat x, bfloat y) { return bfloat(NAME(float(x), float(y))); }                 \
  template <class T, int N> ENC_D vec<T, N> NAME(const vec<T, N>& a, const vec<T, N>& b) {           \
    return __enc::map2(a, b, [](T e, T f) { return T(NAME(e, f)); });                                \
  }
#define ENC_PRECISE_FUNCTIONS                                                                        \
  ENC_M1(exp, ::expf(x)) ENC_M1(exp2, __enc::ex2_approx_ftz(x)) ENC_M1(exp10, ::exp10f(x))          \
  ENC_M1(log, ::logf(x))                                                                             \
  ENC_M1(log2, ::log2f(x)) ENC_M1(log10, ::log10f(x)) ENC_M1(sqrt, ::sqrtf(x))                       \
  ENC_M1(rsqrt, 1.0f / ::sqrtf(x)) ENC_M1(cbrt, ::cbrtf(x)) ENC_M1(sin, ::sinf(x))                   \
  ENC_M1(cos, ::cosf(x)) ENC_M1(tan, ::tanf(x)) ENC_M1(asin, ::asinf(x)) ENC_M1(acos, ::acosf(x))    \
  ENC_M1(atan, ::atanf(x)) ENC_M1(sinh, ::sinhf(x)) ENC_M1(cosh, ::coshf(x)) ENC_M1(tanh, ::tanhf(x)) \
  ENC_M1(asinh, ::asinhf(x)) ENC_M1(acosh, ::acoshf(x)) ENC_M1(atanh, ::atanhf(x))                   \
  ENC_M1(sinpi, ::sinpif(x)) ENC_M1(cospi, ::cospif(x))                                              \
  ENC_M2(pow, ::powf(x, y)) ENC_M2(powr, ::powf(x, y)) ENC_M2(atan2, ::atan2f(x, y))                 \
  ENC_M2(fmod, ::fmodf(x, y)) ENC_M2(hypot, ::hypotf(x, y)) ENC_M2(divide, x / y)
#define ENC_COMMON_FUNCTIONS                                                                         \
  ENC_M1(floor, ::floorf(x)) ENC_M1(ceil, ::ceilf(x)) ENC_M1(trunc, ::truncf(x))                     \
  ENC_M1(round, ::roundf(x)) ENC_M1(rint, ::rintf(x)) ENC_M1(fabs, ::fabsf(x))                       \
  ENC_M1(fract, ::fminf(x - ::floorf(x), 0x1.fffffep-1f))                                            \
  ENC_M1(saturate, ::fminf(::fmaxf(x, 0.0f), 1.0f))                                                  \
  ENC_M1(sign, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x != x ? 0.0f : x)))                           \
  ENC_M2(fmin, ::fminf(x, y)) ENC_M2(fmax, ::fmaxf(x, y)) ENC_M2(copysign, ::copysignf(x, y))        \
  ENC_M2(fdim, ::fdimf(x, y)) ENC_M2(step, y < x ? 0.0f : 1.0f)

namespace __enc {
// exp2, precise:: and fast::: PTX ex2.approx.ftz.f32 (2 ulp, subnormal inputs and results flushed to zero), what
// exp2f becomes under -use_fast_math and what Triton's tl.exp2 is on NVIDIA. It is within Apple's precise::exp2
// contract (MSL Table 8.1: 4 ulp; section 8.1: denormals may be flushed to zero, and Apple GPUs flush fp32
// subnormals even in safe mode, METAL_FACTS), so the proxy does not charge our precise exp2 for what Apple does
// not promise: ::exp2f keeps subnormal results (a compare and two predicated multiplies around MUFU.EX2). The
// other precise:: functions stay CUDA's own (1-2 ulp, tighter than Apple's 4): no cheaper CUDA form is within
// Apple's precise bound over the whole range (docs/floating_point.md), a cost the proxy charges us.
ENC_D float ex2_approx_ftz(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return ::exp2f(x);
#endif
}
}  // namespace __enc
namespace precise { ENC_PRECISE_FUNCTIONS ENC_COMMON_FUNCTIONS }
namespace fast {
ENC_M1(exp, __expf(x)) ENC_M1(exp2, __enc::ex2_approx_ftz(x)) ENC_M1(exp10, __exp10f(x)) ENC_M1(log, __logf(x))
ENC_M1(log2, __log2f(x)) ENC_M1(log10, __log10f(x)) ENC_M1(sqrt, ::sqrtf(x)) ENC_M1(rsqrt, ::rsqrtf(x))
ENC_M1(cbrt, ::cbrtf(x)) ENC_M1(sin, __sinf(x)) ENC_M1(cos, __cosf(x)) ENC_M1(tan, __tanf(x))
ENC_M1(asin, ::asinf(x)) ENC_M1(acos, ::acosf(x)) ENC_M1(atan, ::atanf(x)) ENC_M1(sinh, ::sinhf(x))
ENC_M1(cosh, ::coshf(x)) ENC_M1(tanh, ::tanhf(x)) ENC_M1(asinh, ::asinhf(x)) ENC_M1(acosh, ::acoshf(x))
ENC_M1(atanh, ::atanhf(x)) ENC_M1(sinpi, ::sinpif(x)) ENC_M1(cospi, ::cospif(x))
ENC_M2(pow, __powf(x, y)) ENC_M2(powr, __powf(x, y)) ENC_M2(atan2, ::atan2f(x, y))
ENC_M2(fmod, ::fmodf(x, y)) ENC_M2(hypot, ::hypotf(x, y)) ENC_M2(divide, __fdividef(x, y))
ENC_COMMON_FUNCTIONS
}  // namespace fast
ENC_PRECISE_FUNCTIONS
ENC_COMMON_FUNCTIONS
#undef ENC_PRECISE_FUNCTIONS
#undef ENC_COMMON_FUNCTIONS
#undef ENC_M1
#undef ENC_M2

ENC_D float fma(float a, float b, float c) { return ::fmaf(a, b, c); }
ENC_D half fma(half a, half b, half c) { return half(::fmaf(float(a), float(b), float(c))); }
ENC_D bfloat fma(bfloat a, bfloat b, bfloat c) { return bfloat(::fmaf(float(a), float(b), float(c))); }
template <class T, int N> ENC_D vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.__e[i] = fma(a.__e[i], b.__e[i], c.__e[i]);
  return r;
}
namespace precise { using metal::fma; }
namespace fast { using metal::fma; }
template <class T> ENC_D T mad(T a, T b, T c) { return a * b + c; }
template <class T> ENC_D T mix(T x, T y, T a) { return x + (y - x) * a; }

// abs / min / max / clamp for every scalar type and vectors (float min/max are fmin/fmax, as in Metal).
ENC_D float abs(float x) { return ::fabsf(x); }
ENC_D half abs(half x) { return half(__enc::raw_bits_tag{}, ushort(x.__bits & 0x7fffu)); }
ENC_D bfloat abs(bfloat x) { return bfloat(__enc::raw_bits_tag{}, ushort(x.__bits & 0x7fffu)); }
template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
ENC_D I abs(I x) { return x < I(0) ? I(-x) : x; }
ENC_D float min(float a, float b) { return ::fminf(a, b); }
ENC_D float max(float a, float b) { return ::fmaxf(a, b); }
ENC_D half min(half a, half b) { return half(::fminf(float(a), float(b))); }
ENC_D half max(half a, half b) { return half(::fmaxf(float(a), float(b))); }
ENC_D bfloat min(bfloat a, bfloat b) { return bfloat(::fminf(float(a), float(b))); }
ENC_D bfloat max(bfloat a, bfloat b) { return bfloat(::fmaxf(float(a), float(b))); }
template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
ENC_D I min(I a, I b) { return b < a ? b : a; }
template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
ENC_D I max(I a, I b) { return a < b ? b : a; }
template <class T, int N> ENC_D vec<T, N> abs(const vec<T, N>& a) {
  return __enc::map1(a, [](T x) { return abs(x); });
}
template <class T, int N> ENC_D vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) {
  return __enc::map2(a, b, [](T x, T y) { return min(x, y); });
}
template <class T, int N> ENC_D vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) {
  return __enc::map2(a, b, [](T x, T y) { return max(x, y); });
}
template <class T> ENC_D T clamp(T x, T lo, T hi) { return min(max(x, lo), hi); }
template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
ENC_D I absdiff(I a, I b) { return a > b ? I(a - b) : I(b - a); }

ENC_D bool isnan(float x) { return (__float_as_uint(x) & 0x7fffffffu) > 0x7f800000u; }
ENC_D bool isinf(float x) { return (__float_as_uint(x) & 0x7fffffffu) == 0x7f800000u; }
ENC_D bool isfinite(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }
ENC_D bool signbit(float x) { return (__float_as_uint(x) >> 31) != 0u; }
ENC_D bool isnan(half x) { return (x.__bits & 0x7fffu) > 0x7c00u; }
ENC_D bool isinf(half x) { return (x.__bits & 0x7fffu) == 0x7c00u; }
ENC_D bool isfinite(half x) { return (x.__bits & 0x7c00u) != 0x7c00u; }
ENC_D bool signbit(half x) { return (x.__bits & 0x8000u) != 0; }
ENC_D bool isnan(bfloat x) { return (x.__bits & 0x7fffu) > 0x7f80u; }
ENC_D bool isinf(bfloat x) { return (x.__bits & 0x7fffu) == 0x7f80u; }
ENC_D bool isfinite(bfloat x) { return (x.__bits & 0x7f80u) != 0x7f80u; }
ENC_D bool signbit(bfloat x) { return (x.__bits & 0x8000u) != 0; }
#define ENC_CLASSIFY_VEC(NAME)                                                                       \
  template <class T, int N> ENC_D vec<bool, N> NAME(const vec<T, N>& v) {                            \
    vec<bool, N> r;                                                                                  \
    for (int i = 0; i < N; ++i) r.__e[i] = NAME(v.__e[i]);                                           \
    return r;                                                                                        \
  }
ENC_CLASSIFY_VEC(isnan) ENC_CLASSIFY_VEC(isinf) ENC_CLASSIFY_VEC(isfinite) ENC_CLASSIFY_VEC(signbit)
#undef ENC_CLASSIFY_VEC

template <class T> ENC_D T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N> ENC_D vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r.__e[i] = c.__e[i] ? b.__e[i] : a.__e[i];
  return r;
}

// Integer helpers.
ENC_D int mulhi(int a, int b) { return __mulhi(a, b); }
ENC_D uint mulhi(uint a, uint b) { return __umulhi(a, b); }
ENC_D long mulhi(long a, long b) { return long(__mul64hi((long long)a, (long long)b)); }
ENC_D ulong mulhi(ulong a, ulong b) { return ulong(__umul64hi((unsigned long long)a, (unsigned long long)b)); }
ENC_D short mulhi(short a, short b) { return short((int(a) * int(b)) >> 16); }
ENC_D ushort mulhi(ushort a, ushort b) { return ushort((uint(a) * uint(b)) >> 16); }
ENC_D char mulhi(char a, char b) { return char((int(a) * int(b)) >> 8); }
ENC_D uchar mulhi(uchar a, uchar b) { return uchar((uint(a) * uint(b)) >> 8); }
template <class I> ENC_D I popcount(I x) {
  return I(sizeof(I) == 8 ? __popcll((unsigned long long)x)
                          : __popc(uint(x) & (~0u >> (32 - 8 * (sizeof(I) < 4 ? sizeof(I) : 4)))));
}
template <class I> ENC_D I clz(I x) {
  constexpr int bits = 8 * sizeof(I);
  if (x == I(0)) return I(bits);
  return I(sizeof(I) == 8 ? __clzll((long long)x) : __clz(int(uint(x) & (~0u >> (32 - bits)))) - (32 - bits));
}
template <class I> ENC_D I ctz(I x) {
  constexpr int bits = 8 * sizeof(I);
  if (x == I(0)) return I(bits);
  return I(sizeof(I) == 8 ? __ffsll((long long)x) - 1 : __ffs(int(uint(x))) - 1);
}

// ---------------------------------------------------------------------------------------------------
// Barriers.
enum class mem_flags : uint { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4,
                              mem_threadgroup_imageblock = 8, mem_object_data = 16 };
ENC_D constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint(a) | uint(b)); }
ENC_D constexpr mem_flags operator&(mem_flags a, mem_flags b) { return mem_flags(uint(a) & uint(b)); }
// __syncthreads orders the block's global and shared accesses, which covers every mem_flags value.
ENC_D void threadgroup_barrier(mem_flags) { __syncthreads(); }
ENC_D void simdgroup_barrier(mem_flags) { __syncwarp(ENC_FULL_MASK); }

// ---------------------------------------------------------------------------------------------------
// SIMD-group functions as warp shuffles over all 32 lanes.
namespace __enc {
ENC_D uint lane_id() { return threadIdx.x & 31u; }
template <class T, class F> ENC_D T shuffle_words(T v, F f) {
  constexpr int words = (int(sizeof(T)) + 3) / 4;
  uint w[words] = {};
  memcpy(w, &v, sizeof(T));
  for (int i = 0; i < words; ++i) w[i] = f(w[i]);
  memcpy(&v, w, sizeof(T));
  return v;
}
}  // namespace __enc
template <class T> ENC_D T simd_shuffle_xor(T x, ushort m) {
  return __enc::shuffle_words(x, [m](uint w) { return __shfl_xor_sync(ENC_FULL_MASK, w, int(m & 31u)); });
}
template <class T> ENC_D T simd_shuffle_up(T x, ushort d) {
  return __enc::shuffle_words(x, [d](uint w) { return __shfl_up_sync(ENC_FULL_MASK, w, uint(d)); });
}
template <class T> ENC_D T simd_shuffle_down(T x, ushort d) {
  return __enc::shuffle_words(x, [d](uint w) { return __shfl_down_sync(ENC_FULL_MASK, w, uint(d)); });
}
template <class T> ENC_D T simd_shuffle(T x, ushort lane) {
  return __enc::shuffle_words(x, [lane](uint w) { return __shfl_sync(ENC_FULL_MASK, w, int(lane)); });
}
template <class T> ENC_D T simd_broadcast(T x, ushort lane) { return simd_shuffle(x, lane); }
template <class T> ENC_D T simd_shuffle_rotate_down(T x, ushort d) {
  return simd_shuffle(x, ushort((__enc::lane_id() + d) & 31u));
}
template <class T> ENC_D T simd_shuffle_rotate_up(T x, ushort d) {
  return simd_shuffle(x, ushort((__enc::lane_id() + 32u - (d & 31u)) & 31u));
}
template <class T> ENC_D T simd_broadcast_first(T x) {
  const uint active = __activemask();
  return __enc::shuffle_words(x, [active](uint w) { return __shfl_sync(active, w, __ffs(int(active)) - 1); });
}
#define ENC_SIMD_REDUCE(NAME, EXPR)                                                                  \
  template <class T> ENC_D T NAME(T x) {                                                             \
    for (int m = 16; m > 0; m >>= 1) {                                                               \
      T b = simd_shuffle_xor(x, ushort(m));                                                          \
      T acc = x;                                                                                     \
      x = EXPR;                                                                                      \
    }                                                                                                \
    return x;                                                                                        \
  }
ENC_SIMD_REDUCE(simd_sum, T(acc + b))
ENC_SIMD_REDUCE(simd_product, T(acc * b))
ENC_SIMD_REDUCE(simd_min, min(acc, b))
ENC_SIMD_REDUCE(simd_max, max(acc, b))
ENC_SIMD_REDUCE(simd_and, T(acc & b))
ENC_SIMD_REDUCE(simd_or, T(acc | b))
ENC_SIMD_REDUCE(simd_xor, T(acc ^ b))
#undef ENC_SIMD_REDUCE
#define ENC_SIMD_SCAN(NAME, INCL, INIT, OP)                                                          \
  template <class T> ENC_D T NAME(T x) {                                                             \
    const uint lane = __enc::lane_id();                                                              \
    T v = x;                                                                                         \
    for (uint d = 1; d < 32u; d <<= 1) {                                                             \
      T o = simd_shuffle_up(v, ushort(d));                                                           \
      if (lane >= d) v = T(o OP v);                                                                  \
    }                                                                                                \
    if (INCL) return v;                                                                              \
    T e = simd_shuffle_up(v, ushort(1));                                                             \
    return lane == 0 ? T(INIT) : e;                                                                  \
  }
ENC_SIMD_SCAN(simd_prefix_inclusive_sum, true, 0, +)
ENC_SIMD_SCAN(simd_prefix_exclusive_sum, false, 0, +)
ENC_SIMD_SCAN(simd_prefix_inclusive_product, true, 1, *)
ENC_SIMD_SCAN(simd_prefix_exclusive_product, false, 1, *)
#undef ENC_SIMD_SCAN
struct simd_vote {
  typedef ulong vote_t;
  vote_t __v;
  ENC_D explicit constexpr simd_vote(vote_t v = 0) : __v(v) {}
  ENC_D explicit operator vote_t() const { return __v; }
  ENC_D bool all() const { return __v == 0xffffffffull; }
  ENC_D bool any() const { return __v != 0; }
};
ENC_D simd_vote simd_ballot(bool b) { return simd_vote(ulong(__ballot_sync(ENC_FULL_MASK, b))); }
ENC_D bool simd_all(bool b) { return __all_sync(ENC_FULL_MASK, b) != 0; }
ENC_D bool simd_any(bool b) { return __any_sync(ENC_FULL_MASK, b) != 0; }
ENC_D bool simd_is_first() { return __enc::lane_id() == uint(__ffs(int(__activemask())) - 1); }

// ---------------------------------------------------------------------------------------------------
// Atomics (relaxed, the order Metal's atomic functions take) and fences.
enum memory_order { memory_order_relaxed = 0, memory_order_acquire, memory_order_release, memory_order_acq_rel,
                    memory_order_seq_cst };
enum class thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };
using thread_scope::thread_scope_device;
using thread_scope::thread_scope_simdgroup;
using thread_scope::thread_scope_thread;
using thread_scope::thread_scope_threadgroup;
// atomic_thread_fence as C++/Metal define it, on PTX fences: a relaxed fence (or one ordering no memory) does
// nothing; seq_cst is fence.sc (what __threadfence / __threadfence_block compile to), acquire, release and acq_rel
// are fence.acq_rel (PTX has no one-sided fence; acq_rel is the weakest that gives either side). The scope is
// the GPU when device memory is ordered at device scope, else the block (a threadgroup or SIMD-group scope, or
// threadgroup memory alone, is ordered within the block).
ENC_D void atomic_thread_fence(mem_flags flags, memory_order order = memory_order_seq_cst,
                               thread_scope scope = thread_scope::thread_scope_device) {
  if (order == memory_order_relaxed || flags == mem_flags::mem_none) return;
  const bool gpu = (uint(flags) & uint(mem_flags::mem_device)) != 0 && scope == thread_scope::thread_scope_device;
  if (order == memory_order_seq_cst) {
    if (gpu) __threadfence(); else __threadfence_block();
  } else if (gpu) {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  } else {
    asm volatile("fence.acq_rel.cta;" ::: "memory");
  }
}
template <class T> struct atomic {
  static_assert(std::is_same<T, int>::value || std::is_same<T, uint>::value || std::is_same<T, bool>::value ||
                    std::is_same<T, float>::value || std::is_same<T, ulong>::value,
                "Metal atomics exist for int, uint, bool, float and (max/min only) ulong");
  T __v;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<ulong> atomic_ulong;
namespace __enc {
template <class T> ENC_D T* addr(volatile atomic<T>* a) { return const_cast<T*>(&a->__v); }
template <class T> struct cuda_word { typedef T type; };
template <> struct cuda_word<ulong> { typedef unsigned long long type; };
template <class T> ENC_D typename cuda_word<T>::type* word(volatile atomic<T>* a) {
  return reinterpret_cast<typename cuda_word<T>::type*>(addr(a));
}
}  // namespace __enc
#define ENC_ATOMIC_VALUE typename __enc::type_identity<T>::type
template <class T> ENC_D T atomic_load_explicit(volatile atomic<T>* a, memory_order = memory_order_relaxed) {
  return *reinterpret_cast<volatile T*>(__enc::addr(a));
}
template <class T>
ENC_D void atomic_store_explicit(volatile atomic<T>* a, ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {
  *reinterpret_cast<volatile T*>(__enc::addr(a)) = v;
}
template <class T>
ENC_D T atomic_exchange_explicit(volatile atomic<T>* a, ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {
  static_assert(!std::is_same<T, bool>::value && !std::is_same<T, ulong>::value, "atomic_exchange: int, uint, float");
  return atomicExch(__enc::word(a), v);
}
template <class T>
ENC_D bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* a, T* expected, ENC_ATOMIC_VALUE desired,
                                                 memory_order = memory_order_relaxed,
                                                 memory_order = memory_order_relaxed) {
  static_assert(std::is_same<T, int>::value || std::is_same<T, uint>::value, "compare_exchange: int or uint");
  const T old = atomicCAS(__enc::word(a), *expected, desired);
  if (old == *expected) return true;
  *expected = old;
  return false;
}
#define ENC_ATOMIC_RMW(NAME, CUDA_FN)                                                                \
  template <class T>                                                                                 \
  ENC_D T NAME(volatile atomic<T>* a, ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {     \
    static_assert(std::is_same<T, int>::value || std::is_same<T, uint>::value, #NAME ": int or uint"); \
    return CUDA_FN(__enc::word(a), v);                                                               \
  }
ENC_ATOMIC_RMW(atomic_fetch_and_explicit, atomicAnd)
ENC_ATOMIC_RMW(atomic_fetch_or_explicit, atomicOr)
ENC_ATOMIC_RMW(atomic_fetch_xor_explicit, atomicXor)
ENC_ATOMIC_RMW(atomic_fetch_min_explicit, atomicMin)
ENC_ATOMIC_RMW(atomic_fetch_max_explicit, atomicMax)
#undef ENC_ATOMIC_RMW
template <class T>
ENC_D T atomic_fetch_add_explicit(volatile atomic<T>* a, ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {
  static_assert(!std::is_same<T, bool>::value && !std::is_same<T, ulong>::value, "atomic_fetch_add: int, uint, float");
  return atomicAdd(__enc::word(a), v);
}
template <class T>
ENC_D T atomic_fetch_sub_explicit(volatile atomic<T>* a, ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {
  static_assert(!std::is_same<T, bool>::value && !std::is_same<T, ulong>::value, "atomic_fetch_sub: int, uint, float");
  if constexpr (std::is_same<T, float>::value) {
    return atomicAdd(__enc::word(a), -v);
  } else {
    return atomicSub(__enc::word(a), v);
  }
}
ENC_D void atomic_max_explicit(volatile atomic<ulong>* a, ulong v, memory_order = memory_order_relaxed) {
  atomicMax(__enc::word(a), (unsigned long long)v);
}
ENC_D void atomic_min_explicit(volatile atomic<ulong>* a, ulong v, memory_order = memory_order_relaxed) {
  atomicMin(__enc::word(a), (unsigned long long)v);
}
#undef ENC_ATOMIC_VALUE

// ---------------------------------------------------------------------------------------------------
// simdgroup_matrix 8x8, emulated with shuffles in the lane layout the cpu backend uses (each lane holds
// two adjacent elements of one row). Correct, slow: its speed means nothing for Apple GPUs.
template <class T, int R, int C> struct simdgroup_matrix {
  static_assert(R == 8 && C == 8, "Metal simdgroup_matrix supports only 8x8");
  vec<T, 2> __e;
  simdgroup_matrix() = default;
  ENC_D explicit simdgroup_matrix(T diag);
  ENC_D vec<T, 2>& thread_elements() { return __e; }
  ENC_D const vec<T, 2>& thread_elements() const { return __e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;
namespace __enc {
ENC_D uint sgm_row(uint lane) { return 4u * ((lane >> 4) & 1u) + 2u * ((lane >> 2) & 1u) + ((lane >> 1) & 1u); }
ENC_D uint sgm_col(uint lane) { return 4u * ((lane >> 3) & 1u) + 2u * (lane & 1u); }
// The lane that holds element (r, c), and which of its two elements it is.
ENC_D uint sgm_lane(uint r, uint c) {
  return ((r >> 2) & 1u) << 4 | ((r >> 1) & 1u) << 2 | (r & 1u) << 1 | ((c >> 2) & 1u) << 3 | ((c >> 1) & 1u);
}
}  // namespace __enc
template <class T, int R, int C> ENC_D simdgroup_matrix<T, R, C>::simdgroup_matrix(T diag) {
  const uint lane = __enc::lane_id(), r = __enc::sgm_row(lane), c = __enc::sgm_col(lane);
  __e = vec<T, 2>(r == c ? diag : T(0), r == c + 1 ? diag : T(0));
}
template <class T, int R = 8, int C = 8> ENC_D simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, R, C> m;
  m.__e = vec<T, 2>(value, value);
  return m;
}
template <class T, int R, int C, class S>
ENC_D void simdgroup_load(simdgroup_matrix<T, R, C>& m, const S* src, ulong elements_per_row = 8,
                          ulong2 matrix_origin = ulong2(0), bool transpose = false) {
  const uint lane = __enc::lane_id(), r = __enc::sgm_row(lane), c = __enc::sgm_col(lane);
  for (uint e = 0; e < 2; ++e) {
    const ulong i = transpose ? c + e : r, j = transpose ? r : c + e;
    m.__e[int(e)] = T(src[(matrix_origin.y + i) * elements_per_row + matrix_origin.x + j]);
  }
  __syncwarp(ENC_FULL_MASK);
}
template <class T, int R, int C, class D>
ENC_D void simdgroup_store(const simdgroup_matrix<T, R, C>& m, D* dst, ulong elements_per_row = 8,
                           ulong2 matrix_origin = ulong2(0), bool transpose = false) {
  const uint lane = __enc::lane_id(), r = __enc::sgm_row(lane), c = __enc::sgm_col(lane);
  for (uint e = 0; e < 2; ++e) {
    const ulong i = transpose ? c + e : r, j = transpose ? r : c + e;
    dst[(matrix_origin.y + i) * elements_per_row + matrix_origin.x + j] = m.__e[int(e)];
  }
  __syncwarp(ENC_FULL_MASK);
}
template <class TD, class TA, class TB, class TC>
ENC_D void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                         const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c) {
  const uint lane = __enc::lane_id(), r = __enc::sgm_row(lane), col = __enc::sgm_col(lane);
  float acc[2] = {float(c.__e.x), float(c.__e.y)};
  float prod[2] = {0.0f, 0.0f};
  for (uint k = 0; k < 8; ++k) {
    // A[r][k] and B[k][col + e], fetched from the lanes that hold them (every lane takes part).
    const uint la = __enc::sgm_lane(r, k);
    const float a0 = __shfl_sync(ENC_FULL_MASK, float(a.__e.x), int(la));
    const float a1 = __shfl_sync(ENC_FULL_MASK, float(a.__e.y), int(la));
    const float av = (k & 1u) ? a1 : a0;
    for (uint e = 0; e < 2; ++e) {
      const uint lb = __enc::sgm_lane(k, col + e);
      const float b0 = __shfl_sync(ENC_FULL_MASK, float(b.__e.x), int(lb));
      const float b1 = __shfl_sync(ENC_FULL_MASK, float(b.__e.y), int(lb));
      prod[e] += av * (((col + e) & 1u) ? b1 : b0);
    }
  }
  d.__e = vec<TD, 2>(TD(prod[0] + acc[0]), TD(prod[1] + acc[1]));
}
template <class TD, class TA, class TB>
ENC_D void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                              const simdgroup_matrix<TB, 8, 8>& b) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<TD, 8, 8>(TD(0)));
}
}  // namespace metal

#include "metal_cuda_tensor.cuh"

// Metal vector types vec<T, N> (N = 2, 3, 4): .x .y .z .w / .r .g .b .a, [i], element-wise
// operators, scalar broadcast, explicit element-type conversion. Size and alignment follow Metal
// (a 3-vector occupies the storage of a 4-vector).
#ifndef ENCELADUS_VEC_H
#define ENCELADUS_VEC_H
#include "half.h"

namespace metal {
template <class T, int N> struct vec;
namespace __enc {
template <class T> struct is_vec { static constexpr bool value = false; };
template <class T, int N> struct is_vec<vec<T, N>> { static constexpr bool value = true; };
template <class U> constexpr bool is_scalar_v = is_scalar<typename remove_cv<U>::type>::value;
constexpr int vec_storage(int n) { return n == 3 ? 4 : n; }
}  // namespace __enc

#define __ENC_VEC_COMMON(N)                                                                         \
  typedef T value_type;                                                                             \
  static constexpr int size = N;                                                                    \
  vec() = default;                                                                                  \
  template <class U, __enc::enable_if_t<__enc::is_scalar_v<U>, int> = 0>                            \
  __ENC_INLINE vec(U s) { for (int i = 0; i < N; ++i) __e[i] = T(s); }                              \
  template <class U, __enc::enable_if_t<!__enc::is_same<U, T>::value, int> = 0>                     \
  __ENC_INLINE explicit vec(const vec<U, N>& o) { for (int i = 0; i < N; ++i) __e[i] = T(o.__e[i]); } \
  __ENC_INLINE T& operator[](int i) { return __e[i]; }                                              \
  __ENC_INLINE const T& operator[](int i) const { return __e[i]; }

template <class T> struct alignas(sizeof(T) * 2) vec<T, 2> {
  union { T __e[2]; struct { T x, y; }; struct { T r, g; }; };
  __ENC_VEC_COMMON(2)
  template <class A, class B>
  __ENC_INLINE vec(A a, B b) : __e{T(a), T(b)} {}
};
template <class T> struct alignas(sizeof(T) * 4) vec<T, 3> {
  union { T __e[3]; struct { T x, y, z; }; struct { T r, g, b; }; };
  __ENC_VEC_COMMON(3)
  template <class A, class B, class C>
  __ENC_INLINE vec(A a, B b, C c) : __e{T(a), T(b), T(c)} {}
  template <class A> __ENC_INLINE vec(vec<T, 2> a, A c) : __e{a.x, a.y, T(c)} {}
  template <class A> __ENC_INLINE vec(A a, vec<T, 2> c) : __e{T(a), c.x, c.y} {}
};
template <class T> struct alignas(sizeof(T) * 4) vec<T, 4> {
  union { T __e[4]; struct { T x, y, z, w; }; struct { T r, g, b, a; }; };
  __ENC_VEC_COMMON(4)
  template <class A, class B, class C, class D>
  __ENC_INLINE vec(A a, B b, C c, D d) : __e{T(a), T(b), T(c), T(d)} {}
  __ENC_INLINE vec(vec<T, 2> a, vec<T, 2> b) : __e{a.x, a.y, b.x, b.y} {}
  template <class A> __ENC_INLINE vec(vec<T, 3> a, A d) : __e{a.x, a.y, a.z, T(d)} {}
  template <class A> __ENC_INLINE vec(A a, vec<T, 3> b) : __e{T(a), b.x, b.y, b.z} {}
  template <class A, class B> __ENC_INLINE vec(vec<T, 2> a, A c, B d) : __e{a.x, a.y, T(c), T(d)} {}
  template <class A, class B> __ENC_INLINE vec(A a, B b, vec<T, 2> c) : __e{T(a), T(b), c.x, c.y} {}
  template <class A, class B> __ENC_INLINE vec(A a, vec<T, 2> b, B d) : __e{T(a), b.x, b.y, T(d)} {}
};
#undef __ENC_VEC_COMMON

// Element-wise binary operators: vec op vec, vec op scalar, scalar op vec. Arithmetic keeps the
// element type (char4 + char4 is char4, as in Metal); comparisons give bool vectors.
#define __ENC_VEC_BINOP(OP, R)                                                                      \
  template <class T, int N>                                                                         \
  __ENC_INLINE vec<R, N> operator OP(const vec<T, N>& a, const vec<T, N>& b) {                      \
    vec<R, N> r;                                                                                    \
    for (int i = 0; i < N; ++i) r.__e[i] = R(a.__e[i] OP b.__e[i]);                                 \
    return r;                                                                                       \
  }                                                                                                 \
  template <class T, int N, class U, __enc::enable_if_t<__enc::is_scalar_v<U>, int> = 0>            \
  __ENC_INLINE vec<R, N> operator OP(const vec<T, N>& a, U s) { return a OP vec<T, N>(T(s)); }      \
  template <class T, int N, class U, __enc::enable_if_t<__enc::is_scalar_v<U>, int> = 0>            \
  __ENC_INLINE vec<R, N> operator OP(U s, const vec<T, N>& b) { return vec<T, N>(T(s)) OP b; }
#define __ENC_VEC_ASSIGN(OP)                                                                        \
  template <class T, int N, class U>                                                                \
  __ENC_INLINE vec<T, N>& operator OP##=(vec<T, N>& a, const U& b) { return a = vec<T, N>(a OP b); }
__ENC_VEC_BINOP(+, T) __ENC_VEC_BINOP(-, T) __ENC_VEC_BINOP(*, T) __ENC_VEC_BINOP(/, T)
__ENC_VEC_BINOP(%, T) __ENC_VEC_BINOP(&, T) __ENC_VEC_BINOP(|, T) __ENC_VEC_BINOP(^, T)
__ENC_VEC_BINOP(<<, T) __ENC_VEC_BINOP(>>, T)
__ENC_VEC_BINOP(==, bool) __ENC_VEC_BINOP(!=, bool) __ENC_VEC_BINOP(<, bool) __ENC_VEC_BINOP(>, bool)
__ENC_VEC_BINOP(<=, bool) __ENC_VEC_BINOP(>=, bool) __ENC_VEC_BINOP(&&, bool) __ENC_VEC_BINOP(||, bool)
__ENC_VEC_ASSIGN(+) __ENC_VEC_ASSIGN(-) __ENC_VEC_ASSIGN(*) __ENC_VEC_ASSIGN(/) __ENC_VEC_ASSIGN(%)
__ENC_VEC_ASSIGN(&) __ENC_VEC_ASSIGN(|) __ENC_VEC_ASSIGN(^) __ENC_VEC_ASSIGN(<<) __ENC_VEC_ASSIGN(>>)
#undef __ENC_VEC_BINOP
#undef __ENC_VEC_ASSIGN

#define __ENC_VEC_UNOP(OP, R)                                                                       \
  template <class T, int N>                                                                         \
  __ENC_INLINE vec<R, N> operator OP(const vec<T, N>& a) {                                          \
    vec<R, N> r;                                                                                    \
    for (int i = 0; i < N; ++i) r.__e[i] = R(OP a.__e[i]);                                          \
    return r;                                                                                       \
  }
__ENC_VEC_UNOP(-, T) __ENC_VEC_UNOP(+, T) __ENC_VEC_UNOP(~, T) __ENC_VEC_UNOP(!, bool)
#undef __ENC_VEC_UNOP
template <class T, int N> __ENC_INLINE vec<T, N>& operator++(vec<T, N>& a) { return a += T(1); }
template <class T, int N> __ENC_INLINE vec<T, N>& operator--(vec<T, N>& a) { return a -= T(1); }

// all/any over boolean vectors (and scalars, as Metal allows).
template <int N> __ENC_INLINE bool all(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i) if (!v.__e[i]) return false;
  return true;
}
template <int N> __ENC_INLINE bool any(const vec<bool, N>& v) {
  for (int i = 0; i < N; ++i) if (v.__e[i]) return true;
  return false;
}
__ENC_INLINE bool all(bool b) { return b; }
__ENC_INLINE bool any(bool b) { return b; }
}  // namespace metal

#define __ENC_VEC_TYPEDEFS(T, NAME)                                                                 \
  typedef metal::vec<T, 2> NAME##2;                                                                 \
  typedef metal::vec<T, 3> NAME##3;                                                                 \
  typedef metal::vec<T, 4> NAME##4;
__ENC_VEC_TYPEDEFS(bool, bool)
__ENC_VEC_TYPEDEFS(char, char)
__ENC_VEC_TYPEDEFS(uchar, uchar)
__ENC_VEC_TYPEDEFS(short, short)
__ENC_VEC_TYPEDEFS(ushort, ushort)
__ENC_VEC_TYPEDEFS(int, int)
__ENC_VEC_TYPEDEFS(uint, uint)
__ENC_VEC_TYPEDEFS(long, long)
__ENC_VEC_TYPEDEFS(ulong, ulong)
__ENC_VEC_TYPEDEFS(half, half)
__ENC_VEC_TYPEDEFS(bfloat, bfloat)
__ENC_VEC_TYPEDEFS(float, float)
#undef __ENC_VEC_TYPEDEFS
using metal::vec;
static_assert(sizeof(float3) == 16 && alignof(float4) == 16 && sizeof(half2) == 4, "Metal vector layout");
#endif

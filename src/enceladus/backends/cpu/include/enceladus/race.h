// Debug builds only (ENCELADUS_DEBUG): threadgroup memory is reached through small proxy types that
// report every element read and write to the runtime, which detects a read of bytes another thread
// wrote since the last threadgroup_barrier, and a write of bytes another thread read since then (see
// runtime.cpp api_tg_access). translate.py rewrites
// `threadgroup T* p` to tg_ptr<T> and function-scope `threadgroup T x[N]` to tg_var<T[N]>.
// Constructs the proxies cannot express (member access on elements, template deduction through a
// proxy) make the instrumented build fail; the launch then runs without race checks and warns.
#ifndef ENCELADUS_RACE_H
#define ENCELADUS_RACE_H
#include "matrix.h"

namespace metal {
namespace __enc {
template <class T> struct tg_ptr;
// Whether a U* converts implicitly to a T* (no <type_traits> here).
template <class U, class T> struct tg_converts {
  static char test(T*);
  static long test(...);
  static constexpr bool value = sizeof(test(static_cast<U*>(nullptr))) == 1;
};
template <bool B> struct tg_enable {};
template <> struct tg_enable<true> { using type = int; };

// One element of threadgroup memory.
template <class T> struct tg_ref {
  T* __p;
  const void* __base;
  const char* __name;
  __ENC_INLINE tg_ref(T* p, const void* base, const char* name) : __p(p), __base(base), __name(name) {}
  __ENC_INLINE tg_ref(const tg_ref&) = default;
  __ENC_INLINE T __get() const {
    rt->tg_access(__base, __p, sizeof(T), 0, __name);
    return *__p;
  }
  __ENC_INLINE void __set(const T& v) const {
    // 2: the bytes already hold this value (unordered writes of one value are not a write-write race)
    rt->tg_access(__base, __p, sizeof(T), __builtin_memcmp(__p, &v, sizeof(T)) == 0 ? 2 : 1, __name);
    *__p = v;
  }
  __ENC_INLINE operator T() const { return __get(); }
  __ENC_INLINE tg_ref& operator=(const tg_ref& o) { __set(o.__get()); return *this; }
  template <class U> __ENC_INLINE tg_ref& operator=(const U& v) { __set(T(v)); return *this; }
#define __ENC_TG_COMPOUND(OP)                                                                        \
  template <class U> __ENC_INLINE tg_ref& operator OP##=(const U& v) {                               \
    T t = __get();                                                                                   \
    t OP##= v;                                                                                       \
    __set(t);                                                                                        \
    return *this;                                                                                    \
  }
  __ENC_TG_COMPOUND(+) __ENC_TG_COMPOUND(-) __ENC_TG_COMPOUND(*) __ENC_TG_COMPOUND(/) __ENC_TG_COMPOUND(%)
  __ENC_TG_COMPOUND(&) __ENC_TG_COMPOUND(|) __ENC_TG_COMPOUND(^) __ENC_TG_COMPOUND(<<) __ENC_TG_COMPOUND(>>)
#undef __ENC_TG_COMPOUND
  __ENC_INLINE tg_ref& operator++() { T t = __get(); ++t; __set(t); return *this; }
  __ENC_INLINE tg_ref& operator--() { T t = __get(); --t; __set(t); return *this; }
  __ENC_INLINE T operator++(int) { T t = __get(); T u = t; ++u; __set(u); return t; }
  __ENC_INLINE T operator--(int) { T t = __get(); T u = t; --u; __set(u); return t; }
  // Atomics and helper calls take the raw address: accesses through it are not tracked.
  __ENC_INLINE T* operator&() const { return __p; }
};

// A pointer into threadgroup memory that remembers which variable it points into.
template <class T> struct tg_ptr {
  T* __p;
  const void* __base;
  const char* __name;
  __ENC_INLINE tg_ptr() : __p(nullptr), __base(nullptr), __name("threadgroup pointer") {}
  __ENC_INLINE tg_ptr(T* p, const char* name) : __p(p), __base(p), __name(name) {}
  __ENC_INLINE tg_ptr(T* p, const void* base, const char* name) : __p(p), __base(base), __name(name) {}
  template <class U, typename tg_enable<tg_converts<U, T>::value>::type = 0>
  __ENC_INLINE tg_ptr(const tg_ptr<U>& o) : __p(o.__p), __base(o.__base), __name(o.__name) {}
  // An explicit cast to another element type (the pool of bytes that pooled kernels carve into typed arrays):
  // the same bytes of the same variable.
  template <class U, typename tg_enable<!tg_converts<U, T>::value>::type = 0>
  __ENC_INLINE explicit tg_ptr(const tg_ptr<U>& o) : __p((T*)o.__p), __base(o.__base), __name(o.__name) {}
  __ENC_INLINE tg_ref<T> operator*() const { return tg_ref<T>(__p, __base, __name); }
  __ENC_INLINE tg_ref<T> operator[](long i) const { return tg_ref<T>(__p + i, __base, __name); }
  __ENC_INLINE T* operator->() const { return __p; }
  __ENC_INLINE tg_ptr operator+(long i) const { return tg_ptr(__p + i, __base, __name); }
  __ENC_INLINE tg_ptr operator-(long i) const { return tg_ptr(__p - i, __base, __name); }
  __ENC_INLINE long operator-(const tg_ptr& o) const { return __p - o.__p; }
  __ENC_INLINE tg_ptr& operator+=(long i) { __p += i; return *this; }
  __ENC_INLINE tg_ptr& operator-=(long i) { __p -= i; return *this; }
  __ENC_INLINE tg_ptr& operator++() { ++__p; return *this; }
  __ENC_INLINE tg_ptr operator++(int) { tg_ptr t = *this; ++__p; return t; }
  __ENC_INLINE bool operator==(const tg_ptr& o) const { return __p == o.__p; }
  __ENC_INLINE bool operator!=(const tg_ptr& o) const { return __p != o.__p; }
  __ENC_INLINE operator T*() const { return __p; }
};

// A function-scope threadgroup variable (array of any rank, or a single object).
template <class A> struct tg_var : tg_ref<A> {
  __ENC_INLINE tg_var(A* p, const char* name) : tg_ref<A>(p, p, name) {}
  __ENC_INLINE tg_var(A* p, const void* base, const char* name) : tg_ref<A>(p, base, name) {}
  __ENC_INLINE tg_var& operator=(const tg_var& o) { this->__set(o.__get()); return *this; }
  using tg_ref<A>::operator=;
};
template <class T, unsigned long N> struct tg_var<T[N]> {
  T (*__p)[N];
  const void* __base;
  const char* __name;
  __ENC_INLINE tg_var(T (*p)[N], const char* name) : __p(p), __base(p), __name(name) {}
  __ENC_INLINE tg_var(T (*p)[N], const void* base, const char* name) : __p(p), __base(base), __name(name) {}
  template <class U = T>
  __ENC_INLINE auto operator[](long i) const -> tg_var<U> {
    return tg_var<U>(&(*__p)[i], __base, __name);
  }
  __ENC_INLINE operator tg_ptr<T>() const { return tg_ptr<T>(&(*__p)[0], __base, __name); }
  template <class U> __ENC_INLINE explicit operator tg_ptr<U>() const {
    return tg_ptr<U>((U*)&(*__p)[0], __base, __name);
  }
  __ENC_INLINE operator T*() const { return &(*__p)[0]; }
  __ENC_INLINE tg_ptr<T> operator+(long i) const { return tg_ptr<T>(&(*__p)[0] + i, __base, __name); }
};
}  // namespace __enc

namespace __enc {
// The two elements of the 8x8 tile that a lane's simdgroup_load or simdgroup_store holds, reported as reads
// (is_write 0) or writes (1): the 32 lanes together report the whole tile, so a matrix load is checked like
// element reads (read after write, uninitialised, and the write-after-read of a later write) and later
// reads of a stored tile are not taken for reads of uninitialised memory.
template <class D>
__ENC_INLINE void record_matrix_access(D* p, const void* base, const char* name, ulong elements_per_row,
                                       ulong2 matrix_origin, bool transpose, int is_write) {
  unsigned lane = rt->current_thread()->lane;
  unsigned r = sgm_row(lane), col = sgm_col(lane);
  for (unsigned e = 0; e < 2; ++e) {
    ulong i = transpose ? col + e : r, j = transpose ? r : col + e;
    rt->tg_access(base, p + (matrix_origin.y + i) * elements_per_row + matrix_origin.x + j, sizeof(D), is_write,
                  name);
  }
}
}  // namespace __enc
// simdgroup_matrix loads and stores through proxies: the raw pointer, and the lane's elements reported.
template <class T, int R, int C, class S>
__ENC_INLINE void simdgroup_load(thread simdgroup_matrix<T, R, C>& m, __enc::tg_ptr<S> src, ulong elements_per_row = 8,
                                 ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                 unsigned __line = __builtin_LINE()) {
  __enc::record_matrix_access(src.__p, src.__base, src.__name, elements_per_row, matrix_origin, transpose, 0);
  simdgroup_load(m, static_cast<const S*>(src.__p), elements_per_row, matrix_origin, transpose, __line);
}
template <class T, int R, int C, class D>
__ENC_INLINE void simdgroup_store(const simdgroup_matrix<T, R, C>& m, __enc::tg_ptr<D> dst, ulong elements_per_row = 8,
                                  ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                  unsigned __line = __builtin_LINE()) {
  simdgroup_store(m, dst.__p, elements_per_row, matrix_origin, transpose, __line);
  __enc::record_matrix_access(dst.__p, dst.__base, dst.__name, elements_per_row, matrix_origin, transpose, 1);
}
template <class T, int R, int C, class S, unsigned long N>
__ENC_INLINE void simdgroup_load(thread simdgroup_matrix<T, R, C>& m, const __enc::tg_var<S[N]>& src,
                                 ulong elements_per_row = 8, ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                 unsigned __line = __builtin_LINE()) {
  __enc::record_matrix_access(&(*src.__p)[0], src.__base, src.__name, elements_per_row, matrix_origin, transpose, 0);
  simdgroup_load(m, static_cast<const S*>(&(*src.__p)[0]), elements_per_row, matrix_origin, transpose, __line);
}
template <class T, int R, int C, class D, unsigned long N>
__ENC_INLINE void simdgroup_store(const simdgroup_matrix<T, R, C>& m, const __enc::tg_var<D[N]>& dst,
                                  ulong elements_per_row = 8, ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                  unsigned __line = __builtin_LINE()) {
  simdgroup_store(m, &(*dst.__p)[0], elements_per_row, matrix_origin, transpose, __line);
  __enc::record_matrix_access(&(*dst.__p)[0], dst.__base, dst.__name, elements_per_row, matrix_origin, transpose, 1);
}
}  // namespace metal
#endif

// Checked builds (the cpu backend's default): every `device`, `constant` and `threadgroup` pointer of
// the MSL is rewritten (translate.py) to cptr<T>, which carries the byte range its argument may touch
// and checks each access with an inline compare before it happens. A failing check calls the runtime
// (check_access), which either allows it (an element of a strided view) or fails the launch naming
// kernel, program, thread, argument, element and MSL line; the access itself never happens.
// Function-scope `threadgroup T x[N]` arrays become tg_array<T[N]>, checked against their declared size.
// The line of an access is captured where the pointer is indexed or offset (`p[i]`, `p + i`) through a
// default argument of __enc::ix (operators cannot take default arguments themselves).
#ifndef ENCELADUS_CHECKED_H
#define ENCELADUS_CHECKED_H
#include "matrix.h"

namespace metal {
template <class T> struct atomic;
namespace __enc {

template <class T> struct tg_ref;  // race.h (debug builds): an element of threadgroup memory

// An index (or offset) together with the source line of the expression that uses it.
struct ix {
  long v;
  unsigned line;
  template <class I, class = enable_if_t<is_integral<I>::value>>
  __ENC_INLINE ix(I i, unsigned l = __builtin_LINE()) : v(long(i)), line(l) {}
  // an offset read from threadgroup memory in a debug build (a tile of pointers moved between threads)
  template <class I, class = enable_if_t<is_integral<I>::value>>
  __ENC_INLINE ix(const tg_ref<I>& i, unsigned l = __builtin_LINE()) : v(long(I(i))), line(l) {}
};

template <class T> struct cptr;

#ifdef ENCELADUS_DEVICE_RACE
// Debug builds of compiler-generated kernels: device memory reached through cptr reports each element read
// and write to the runtime's device-memory race check (runtime.cpp api_device_access). Reads through
// `const` pointers are reported at once; other accesses return this proxy, which tells a read (conversion
// to T) from a write (assignment).
template <class T> struct dev_ref {
  T* __p;
  unsigned __line;
  __ENC_INLINE dev_ref(T* p, unsigned line) : __p(p), __line(line) {}
  __ENC_INLINE dev_ref(const dev_ref&) = default;
  __ENC_INLINE T __get() const {
    if (rt->device_races) rt->device_access(__p, sizeof(T), 0, __line);
    return *__p;
  }
  __ENC_INLINE operator T() const { return __get(); }
  __ENC_INLINE dev_ref& operator=(const T& v) {
    // 2: the bytes already hold this value (unordered writes of one value are not a write-write race)
    if (rt->device_races)
      rt->device_access(__p, sizeof(T), __builtin_memcmp(__p, &v, sizeof(T)) == 0 ? 2 : 1, __line);
    *__p = v;
    return *this;
  }
  __ENC_INLINE dev_ref& operator=(const dev_ref& o) { return *this = o.__get(); }
  // Atomics and helpers take the address: accesses through it are not tracked.
  __ENC_INLINE T* operator&() const { return __p; }
};
template <class T> struct device_tracked { static constexpr bool value = true; };
template <class T> struct device_tracked<::metal::atomic<T>> { static constexpr bool value = false; };
template <class T> struct device_tracked<const ::metal::atomic<T>> { static constexpr bool value = false; };
#endif

// The MSL line of the first integer-made pointer into unknown memory since the launcher last asked.
static unsigned __unknown_address_line = 0;
// The device argument of this launch, else the live enceladus.Tensor allocation, whose bytes hold `address`
// (null: none, after noting the line).
__ENC_INLINE const EncArg* address_owner(unsigned long address, unsigned line = __builtin_LINE()) {
  const EncThread* t = rt->current_thread();
  if (t && t->args)
    for (unsigned i = 0; i < ENC_MAX_BUFFERS; ++i) {
      const EncArg& g = t->args[i];
      // one past the end belongs to the argument (as in C): accesses through it fail its check
      if (g.kind == ENC_ARG_DEVICE && g.hi > g.lo && g.hi != ~0ul && address >= g.lo && address <= g.hi) return &g;
    }
  if (address == 0) return nullptr;  // a null pointer (a masked-off lane's address) is never dereferenced
  if (const EncArg* live = rt->live_allocation(address)) return live;
  unsigned none = 0;
  __atomic_compare_exchange_n(&__unknown_address_line, &none, line, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return nullptr;
}
template <class T> struct is_cptr { static constexpr bool value = false; };
template <class T> struct is_cptr<cptr<T>> { static constexpr bool value = true; };
template <class T> struct add_const { typedef const T type; };

template <class T> struct cptr {
  T* __p;
  unsigned long __lo, __hi;
  const EncArg* __a;
  unsigned __line;

  __ENC_INLINE cptr() : __p(nullptr), __lo(0), __hi(0), __a(nullptr), __line(0) {}
  __ENC_INLINE cptr(decltype(nullptr)) : cptr() {}
  // A strided argument gets an empty inline range: every access takes the slow path, which checks that
  // its bytes lie in elements of the view.
  __ENC_INLINE cptr(T* p, const EncArg* a, unsigned line = 0)
      : __p(p), __lo(a ? a->lo : 0), __hi(a ? (a->layout ? 0 : a->hi) : ~0ul), __a(a), __line(line) {}
  __ENC_INLINE cptr(T* p, unsigned long lo, unsigned long hi, const EncArg* a, unsigned line)
      : __p(p), __lo(lo), __hi(hi), __a(a), __line(line) {}
  // T* -> const T*: implicit; any other pointer conversion only by an explicit cast, as in MSL.
  template <class U, enable_if_t<is_same<T, U>::value || is_same<T, typename add_const<U>::type>::value, int> = 0>
  __ENC_INLINE cptr(const cptr<U>& o) : __p(o.__p), __lo(o.__lo), __hi(o.__hi), __a(o.__a), __line(o.__line) {}
  template <class U, enable_if_t<!(is_same<T, U>::value || is_same<T, typename add_const<U>::type>::value), int> = 0>
  __ENC_INLINE explicit cptr(const cptr<U>& o)
      : __p((T*)(o.__p)), __lo(o.__lo), __hi(o.__hi), __a(o.__a), __line(o.__line) {}
  // An integer made into a pointer (x.to(tl.pointer_type(...)) of a loaded address): checked like the argument
  // of this launch whose elements hold the address; an address in memory Enceladus does not know is left
  // unchecked and reported once (its MSL line; the launcher warns naming the kernel line).
  __ENC_INLINE explicit cptr(unsigned long address, unsigned line = __builtin_LINE())
      : __p((T*)address), __lo(0), __hi(~0ul), __a(nullptr), __line(line) {
    const EncArg* g = address_owner(address, line);
    if (g) {
      __lo = g->layout ? 0 : g->lo;
      __hi = g->layout ? 0 : g->hi;
      __a = g;
    }
  }

  // The check: one range compare and an alignment test per access (the slow path is out of line).
  __ENC_INLINE T* __checked(unsigned kind, unsigned line) const {
    const unsigned long a = (unsigned long)(__p);
    if (__builtin_expect((a < __lo) | (a + sizeof(T) > __hi) | ((a & (alignof(T) - 1)) != 0), 0))
      rt->check_access(__a, __p, sizeof(T), alignof(T), kind, line);
    return __p;
  }
  static constexpr unsigned __kind = is_same<T, typename add_const<typename remove_cv<T>::type>::type>::value
                                         ? ENC_ACC_READ : ENC_ACC_ACCESS;
#ifdef ENCELADUS_DEVICE_RACE
  template <class U = T, enable_if_t<device_tracked<U>::value && is_same<U, typename add_const<typename remove_cv<U>::type>::type>::value, int> = 0>
  __ENC_INLINE T& __at(unsigned line) const {
    T* p = __checked(__kind, line);
    if (rt->device_races) rt->device_access(p, sizeof(T), 0, line);
    return *p;
  }
  template <class U = T, enable_if_t<device_tracked<U>::value && !is_same<U, typename add_const<typename remove_cv<U>::type>::type>::value, int> = 0>
  __ENC_INLINE dev_ref<T> __at(unsigned line) const {
    return dev_ref<T>(__checked(__kind, line), line);
  }
  template <class U = T, enable_if_t<!device_tracked<U>::value, int> = 0>
  __ENC_INLINE T& __at(unsigned line) const { return *__checked(__kind, line); }
  __ENC_INLINE decltype(auto) operator*() const { return __at(__line); }
  __ENC_INLINE decltype(auto) operator[](ix i) const { return cptr(__p + i.v, __lo, __hi, __a, i.line).__at(i.line); }
#else
  __ENC_INLINE T& operator*() const { return *__checked(__kind, __line); }
  __ENC_INLINE T& operator[](ix i) const { return *cptr(__p + i.v, __lo, __hi, __a, i.line).__checked(__kind, i.line); }
#endif
  __ENC_INLINE T* operator->() const { return __checked(__kind, __line); }
  __ENC_INLINE cptr operator+(ix i) const { return cptr(__p + i.v, __lo, __hi, __a, i.line); }
  __ENC_INLINE cptr operator-(ix i) const { return cptr(__p - i.v, __lo, __hi, __a, i.line); }
  __ENC_INLINE long operator-(const cptr& o) const { return __p - o.__p; }
  __ENC_INLINE cptr& operator+=(ix i) { __p += i.v; __line = i.line; return *this; }
  __ENC_INLINE cptr& operator-=(ix i) { __p -= i.v; __line = i.line; return *this; }
  __ENC_INLINE cptr& operator++() { ++__p; return *this; }
  __ENC_INLINE cptr& operator--() { --__p; return *this; }
  __ENC_INLINE cptr operator++(int) { cptr t = *this; ++__p; return t; }
  __ENC_INLINE cptr operator--(int) { cptr t = *this; --__p; return t; }
  __ENC_INLINE explicit operator bool() const { return __p != nullptr; }
  __ENC_INLINE explicit operator unsigned long() const { return (unsigned long)__p; }
  __ENC_INLINE explicit operator long() const { return (long)__p; }
  template <class U> __ENC_INLINE bool operator==(const cptr<U>& o) const { return (const void*)__p == (const void*)o.__p; }
  template <class U> __ENC_INLINE bool operator!=(const cptr<U>& o) const { return (const void*)__p != (const void*)o.__p; }
  template <class U> __ENC_INLINE bool operator<(const cptr<U>& o) const { return (const void*)__p < (const void*)o.__p; }
  template <class U> __ENC_INLINE bool operator<=(const cptr<U>& o) const { return (const void*)__p <= (const void*)o.__p; }
  template <class U> __ENC_INLINE bool operator>(const cptr<U>& o) const { return (const void*)__p > (const void*)o.__p; }
  template <class U> __ENC_INLINE bool operator>=(const cptr<U>& o) const { return (const void*)__p >= (const void*)o.__p; }
  __ENC_INLINE bool operator==(decltype(nullptr)) const { return __p == nullptr; }
  __ENC_INLINE bool operator!=(decltype(nullptr)) const { return __p != nullptr; }
};
template <class T> __ENC_INLINE cptr<T> operator+(ix i, const cptr<T>& p) { return p + i; }

// A tile access whose pointers the compiler proved to lie in [start, start + n) elements (metadata["tile_checks"],
// translate.apply_tile_checks): whether that whole extent is in bounds and `align`-byte aligned, in which case the
// access runs on raw pointers; otherwise each access is checked. (A strided argument's empty inline range fails.)
template <class T> __ENC_INLINE bool tile_in_bounds(const cptr<T>& start, long n, unsigned long align) {
  const unsigned long a = (unsigned long)(start.__p), end = a + (unsigned long)n * sizeof(T);
  return (a >= start.__lo) & (end <= start.__hi) & (end >= a) & ((a & (align - 1)) == 0);
}
template <class T> __ENC_INLINE T* raw(const cptr<T>& p) { return p.__p; }

// The raw pointer after checking that `n` elements from p are in bounds (library helpers that
// take raw pointers: atomics, simdgroup matrices, tensors).
template <class T> __ENC_INLINE T* checked_span(const cptr<T>& p, unsigned long n, unsigned kind, unsigned line) {
  if (n == 0) return p.__p;
  p.__checked(kind, line);
  if (n > 1) cptr<T>(p.__p + (n - 1), p.__lo, p.__hi, p.__a, line).__checked(kind, line);
  return p.__p;
}

// A [[buffer(i)]] reference parameter (constant T&): the bound memory must hold a T.
template <class T> __ENC_INLINE T& checked_ref(void* p, const EncArg* a, const char* type) {
  if (__builtin_expect(a->hi - a->lo < sizeof(T), 0)) rt->check_ref(a, sizeof(T), type);
  return *(T*)p;
}

// int32 arithmetic that feeds a pointer offset (the compiler lists it in metadata["offset_checks"];
// translate.py substitutes these for the MSL's wrapping `as_type<int>(uint(a) OP uint(b))`): computed
// exactly, a result outside int32 fails the launch instead of wrapping to another element's offset.
// (The operands are the MSL's int32 values; __builtin_*_overflow is one instruction and a branch.)
__ENC_INLINE int ofs32_add(int a, int b, unsigned line = __builtin_LINE()) {
  int r;
  if (__builtin_expect(__builtin_add_overflow(a, b, &r), 0)) rt->offset_overflow('+', a, b, line);
  return r;
}
__ENC_INLINE int ofs32_sub(int a, int b, unsigned line = __builtin_LINE()) {
  int r;
  if (__builtin_expect(__builtin_sub_overflow(a, b, &r), 0)) rt->offset_overflow('-', a, b, line);
  return r;
}
__ENC_INLINE int ofs32_mul(int a, int b, unsigned line = __builtin_LINE()) {
  int r;
  if (__builtin_expect(__builtin_mul_overflow(a, b, &r), 0)) rt->offset_overflow('*', a, b, line);
  return r;
}
// A shift by 0..31 is checked like a multiplication by 2^b; other amounts keep the MSL's unsigned shift.
__ENC_INLINE int ofs32_shl(int a, int b, unsigned line = __builtin_LINE()) {
  if (b < 0 || b > 31) return as_type<int>(uint(a) << uint(b));
  const long r = long(a) * (1L << b);
  if (__builtin_expect(r < -2147483648L || r > 2147483647L, 0)) rt->offset_overflow('<', a, b, line);
  return int(r);
}

// Whether a op b leaves int32: branch-free, so that the check of a whole tile (translate.py: an OR over its
// elements, then ofs32_* on the elements only when one is bad) vectorizes like the arithmetic itself.
__ENC_INLINE bool ofs32_bad_add(int a, int b) { const long r = long(a) + long(b); return r != long(int(r)); }
__ENC_INLINE bool ofs32_bad_sub(int a, int b) { const long r = long(a) - long(b); return r != long(int(r)); }
__ENC_INLINE bool ofs32_bad_mul(int a, int b) { const long r = long(a) * long(b); return r != long(int(r)); }
__ENC_INLINE bool ofs32_bad_shl(int a, int b) {
  const long r = long(a) * (1L << (b & 31));
  return (b >= 0) & (b <= 31) & (r != long(int(r)));
}

// A function-scope threadgroup array: indexing checks against the declared size.
template <class A> struct tg_array;
template <class T, unsigned long N> struct tg_array<T[N]> {
  T (*__p)[N];
  EncArg __arg;
  __ENC_INLINE tg_array(T (&a)[N], const char* name) : __p(&a) {
    __arg.lo = (unsigned long)&a;
    __arg.hi = __arg.lo + sizeof(T[N]);
    __arg.base = __arg.lo;
    __arg.layout = nullptr;
    __arg.name = name;
    __arg.itemsize = sizeof(T);
    __arg.kind = ENC_ARG_TG_VAR;
  }
  tg_array(const tg_array&) = delete;
  // An element index in [0, N) is in bounds (and aligned): one compare with a constant; any other index is
  // checked (and reported) as an access through the array's extent.
  __ENC_INLINE T* __at(ix i) const {
    if (__builtin_expect((unsigned long)i.v < N, 1)) return &(*__p)[0] + i.v;
    return cptr<T>(&(*__p)[0] + i.v, &__arg, i.line).__checked(ENC_ACC_ACCESS, i.line);
  }
  __ENC_INLINE T& operator[](ix i) const { return *__at(i); }
  __ENC_INLINE cptr<T> __ptr(unsigned line = 0) const { return cptr<T>(&(*__p)[0], &__arg, line); }
  template <class U> __ENC_INLINE operator cptr<U>() const { return cptr<U>(__ptr()); }
  __ENC_INLINE cptr<T> operator+(ix i) const { return __ptr(i.line) + i; }
  __ENC_INLINE T& operator*() const { return *__at(ix(0, 0)); }
};
// A threadgroup array of arrays (T x[M][N]): each index is checked against its own dimension.
template <class T, unsigned long M, unsigned long N> struct tg_array<T[M][N]> {
  T (*__p)[M][N];
  EncArg __arg;
  __ENC_INLINE tg_array(T (&a)[M][N], const char* name) : __p(&a) {
    __arg.lo = (unsigned long)&a;
    __arg.hi = __arg.lo + sizeof(T[M][N]);
    __arg.base = __arg.lo;
    __arg.layout = nullptr;
    __arg.name = name;
    __arg.itemsize = sizeof(T);
    __arg.kind = ENC_ARG_TG_VAR;
  }
  tg_array(const tg_array&) = delete;
  struct row {
    T* __r;
    const EncArg* __a;
    __ENC_INLINE T& operator[](ix j) const { return *cptr<T>(__r + j.v, __a, j.line).__checked(ENC_ACC_ACCESS, j.line); }
    template <class U> __ENC_INLINE operator cptr<U>() const { return cptr<U>(cptr<T>(__r, __a)); }
  };
  __ENC_INLINE row operator[](ix i) const { return row{(*__p)[0] + i.v * long(N), &__arg}; }
  template <class U> __ENC_INLINE operator cptr<U>() const { return cptr<U>(cptr<T>(&(*__p)[0][0], &__arg)); }
};
}  // namespace __enc

// ---- library functions that take device or threadgroup pointers --------------------------------------
#define __ENC_CHECKED_ATOMIC(NAME)                                                                        \
  template <class A, class... R> __ENC_INLINE auto NAME(__enc::cptr<A> a, R... r) {                       \
    return NAME(a.__checked(ENC_ACC_ATOMIC, a.__line), r...);                                             \
  }
__ENC_CHECKED_ATOMIC(atomic_store_explicit)
__ENC_CHECKED_ATOMIC(atomic_load_explicit)
__ENC_CHECKED_ATOMIC(atomic_exchange_explicit)
__ENC_CHECKED_ATOMIC(atomic_compare_exchange_weak_explicit)
__ENC_CHECKED_ATOMIC(atomic_compare_exchange_strong_explicit)
__ENC_CHECKED_ATOMIC(atomic_fetch_add_explicit)
__ENC_CHECKED_ATOMIC(atomic_fetch_sub_explicit)
__ENC_CHECKED_ATOMIC(atomic_fetch_and_explicit)
__ENC_CHECKED_ATOMIC(atomic_fetch_or_explicit)
__ENC_CHECKED_ATOMIC(atomic_fetch_xor_explicit)
__ENC_CHECKED_ATOMIC(atomic_fetch_min_explicit)
__ENC_CHECKED_ATOMIC(atomic_fetch_max_explicit)
__ENC_CHECKED_ATOMIC(atomic_max_explicit)
__ENC_CHECKED_ATOMIC(atomic_min_explicit)
#undef __ENC_CHECKED_ATOMIC

// simdgroup_load/store: the 8x8 tile's first and last element are checked (rows in between lie between
// them in memory for any elements_per_row >= 8): one range test of the whole extent (tile_in_bounds), and only
// when it fails, the two elements' checks that report the access (checked_span).
namespace __enc {
template <class T> __ENC_INLINE void check_matrix_tile(const cptr<T>& first, ulong elements_per_row, unsigned kind,
                                                       unsigned line) {
  const unsigned long n = 7 * elements_per_row + 8;
  if (__builtin_expect(!tile_in_bounds(first, long(n), alignof(T)), 0)) (void)checked_span(first, n, kind, line);
}
}  // namespace __enc
template <class T, int R, int C, class S>
__ENC_INLINE void simdgroup_load(thread simdgroup_matrix<T, R, C>& m, __enc::cptr<S> src, ulong elements_per_row = 8,
                                 ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                 unsigned __line = __builtin_LINE()) {
  __enc::cptr<S> first = src + long(matrix_origin.y * elements_per_row + matrix_origin.x);
  __enc::check_matrix_tile(first, elements_per_row, ENC_ACC_READ, __line);
  simdgroup_load(m, static_cast<const S*>(src.__p), elements_per_row, matrix_origin, transpose, __line);
}
template <class T, int R, int C, class D>
__ENC_INLINE void simdgroup_store(const simdgroup_matrix<T, R, C>& m, __enc::cptr<D> dst, ulong elements_per_row = 8,
                                  ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                  unsigned __line = __builtin_LINE()) {
  __enc::cptr<D> first = dst + long(matrix_origin.y * elements_per_row + matrix_origin.x);
  __enc::check_matrix_tile(first, elements_per_row, ENC_ACC_WRITE, __line);
  simdgroup_store(m, dst.__p, elements_per_row, matrix_origin, transpose, __line);
}
// A threadgroup array's tile: in bounds when its element offsets lie in [0, N) (compares with constants; the
// tile's extent computed as above); any other tile is checked (and reported) as above.
namespace __enc {
template <unsigned long N> __ENC_INLINE bool tile_in_array(ulong elements_per_row, ulong2 matrix_origin) {
  const ulong first = matrix_origin.y * elements_per_row + matrix_origin.x, n = 7 * elements_per_row + 8;
  return first < N && n <= N - first;
}
}  // namespace __enc
template <class T, int R, int C, class S, unsigned long N>
__ENC_INLINE void simdgroup_load(thread simdgroup_matrix<T, R, C>& m, const __enc::tg_array<S[N]>& src,
                                 ulong elements_per_row = 8, ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                 unsigned __line = __builtin_LINE()) {
  if (__builtin_expect(__enc::tile_in_array<N>(elements_per_row, matrix_origin), 1))
    simdgroup_load(m, static_cast<const S*>(&(*src.__p)[0]), elements_per_row, matrix_origin, transpose, __line);
  else
    simdgroup_load(m, src.__ptr(__line), elements_per_row, matrix_origin, transpose, __line);
}
template <class T, int R, int C, class D, unsigned long N>
__ENC_INLINE void simdgroup_store(const simdgroup_matrix<T, R, C>& m, const __enc::tg_array<D[N]>& dst,
                                  ulong elements_per_row = 8, ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                  unsigned __line = __builtin_LINE()) {
  if (__builtin_expect(__enc::tile_in_array<N>(elements_per_row, matrix_origin), 1))
    simdgroup_store(m, &(*dst.__p)[0], elements_per_row, matrix_origin, transpose, __line);
  else
    simdgroup_store(m, dst.__ptr(__line), elements_per_row, matrix_origin, transpose, __line);
}
}  // namespace metal
// Read (and reset) by the launcher after a launch of a kernel that makes pointers from integers.
extern "C" __attribute__((visibility("default"))) unsigned enceladus_take_unknown_address_line(void) {
  return __atomic_exchange_n(&metal::__enc::__unknown_address_line, 0u, __ATOMIC_RELAXED);
}
#endif

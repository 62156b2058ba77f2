// Barriers, SIMD-group functions and function-scope threadgroup variables. Lanes exchange values
// through the runtime (fibers, see runtime.cpp); the arithmetic over the exchanged values is done
// here, typed, by every participating lane on the same snapshot.
#ifndef ENCELADUS_SYNC_H
#define ENCELADUS_SYNC_H
#include "abi.h"
#include "math.h"

namespace metal {
namespace __enc {
inline const EncRuntimeApi* rt = nullptr;  // set once by the generated __enc_bind()

template <class T> struct simd_type_ok { static constexpr bool value = false; };
#define __ENC_SIMD_OK(T) template <> struct simd_type_ok<T> { static constexpr bool value = true; };
__ENC_SIMD_OK(char) __ENC_SIMD_OK(uchar) __ENC_SIMD_OK(short) __ENC_SIMD_OK(ushort) __ENC_SIMD_OK(int)
__ENC_SIMD_OK(uint) __ENC_SIMD_OK(float) __ENC_SIMD_OK(half) __ENC_SIMD_OK(bfloat) __ENC_SIMD_OK(signed char)
#undef __ENC_SIMD_OK
template <class T, int N> struct simd_type_ok<vec<T, N>> : simd_type_ok<T> {};

struct simd_call {
  const EncSimdSnapshot* snap;
  unsigned lane;
  template <class T> __ENC_INLINE T at(unsigned l) const {
    T r;
    __builtin_memcpy(&r, snap->data[l], sizeof(T));
    return r;
  }
  __ENC_INLINE bool active(unsigned l) const { return l < 32u && ((snap->active >> l) & 1u); }
};
template <class T> __ENC_INLINE simd_call simd_exchange(const T& v, const char* what, unsigned line) {
  static_assert(simd_type_ok<typename remove_cv<T>::type>::value,
                "Metal SIMD-group functions take int, uint, short, ushort, char, uchar, float, half or bfloat "
                "scalars and vectors; bool, long and ulong are not allowed");
  static_assert(sizeof(T) <= ENC_SIMD_SLOT, "SIMD value too large");
  simd_call c;
  c.snap = rt->simd_exchange(&v, sizeof(T), what, line, 0, &c.lane);
  return c;
}
template <class T, class F>
__ENC_INLINE T simd_fold(const simd_call& c, unsigned upto, bool inclusive, T init, F f) {
  T acc = init;
  for (unsigned l = 0; l < upto + (inclusive ? 1u : 0u) && l < 32u; ++l)
    if (c.active(l)) acc = f(acc, c.at<T>(l));
  return acc;
}
template <class T> __ENC_INLINE T simd_first_active(const simd_call& c) {
  return c.at<T>(unsigned(__builtin_ctz(c.snap->active)));
}
template <class T> T max_value();
template <class T> T min_value();
}  // namespace __enc

__ENC_INLINE void threadgroup_barrier(mem_flags f, unsigned __line = __builtin_LINE()) {
  __enc::rt->barrier(ENC_BARRIER_THREADGROUP, uint(f), "threadgroup_barrier", __line);
}
__ENC_INLINE void simdgroup_barrier(mem_flags f, unsigned __line = __builtin_LINE()) {
  __enc::rt->barrier(ENC_BARRIER_SIMDGROUP, uint(f), "simdgroup_barrier", __line);
}

// Reductions over the active lanes, in ascending lane order; the first lane to resume computes the result
// for all (the snapshot's memo).
#define __ENC_SIMD_REDUCE(NAME, EXPR)                                                               \
  template <class T> __ENC_INLINE T NAME(T x, unsigned __line = __builtin_LINE()) {                 \
    __enc::simd_call c = __enc::simd_exchange(x, #NAME, __line);                                     \
    EncSimdSnapshot* s = const_cast<EncSimdSnapshot*>(c.snap);                                      \
    T acc;                                                                                          \
    if (s->memo_set) {                                                                              \
      __builtin_memcpy(&acc, s->memo, sizeof(T));                                                   \
      return acc;                                                                                   \
    }                                                                                               \
    acc = __enc::simd_first_active<T>(c);                                                           \
    for (unsigned l = unsigned(__builtin_ctz(c.snap->active)) + 1; l < 32u; ++l)                    \
      if (c.active(l)) { T b = c.at<T>(l); acc = EXPR; }                                            \
    __builtin_memcpy(s->memo, &acc, sizeof(T));                                                     \
    s->memo_set = 1;                                                                                \
    return acc;                                                                                     \
  }
__ENC_SIMD_REDUCE(simd_sum, T(acc + b))
__ENC_SIMD_REDUCE(simd_product, T(acc * b))
__ENC_SIMD_REDUCE(simd_min, min(acc, b))
__ENC_SIMD_REDUCE(simd_max, max(acc, b))
__ENC_SIMD_REDUCE(simd_and, T(acc & b))
__ENC_SIMD_REDUCE(simd_or, T(acc | b))
__ENC_SIMD_REDUCE(simd_xor, T(acc ^ b))
#undef __ENC_SIMD_REDUCE

// Prefix operations over the active lanes with a lower lane index.
#define __ENC_SIMD_SCAN(NAME, INCL, INIT, OP)                                                       \
  template <class T> __ENC_INLINE T NAME(T x, unsigned __line = __builtin_LINE()) {                 \
    __enc::simd_call c = __enc::simd_exchange(x, #NAME, __line);                                     \
    return __enc::simd_fold(c, c.lane, INCL, T(INIT), [](T a, T b) { return T(a OP b); });         \
  }
__ENC_SIMD_SCAN(simd_prefix_inclusive_sum, true, 0, +)
__ENC_SIMD_SCAN(simd_prefix_exclusive_sum, false, 0, +)
__ENC_SIMD_SCAN(simd_prefix_inclusive_product, true, 1, *)
__ENC_SIMD_SCAN(simd_prefix_exclusive_product, false, 1, *)
#undef __ENC_SIMD_SCAN

// Shuffles: reading an inactive lane is undefined in Metal; here it returns the caller's own value.
#define __ENC_SIMD_SHUFFLE(NAME, ARG_T, SRC)                                                        \
  template <class T> __ENC_INLINE T NAME(T x, ARG_T arg, unsigned __line = __builtin_LINE()) {      \
    __enc::simd_call c = __enc::simd_exchange(x, #NAME, __line);                                     \
    long src = (SRC);                                                                               \
    return (src >= 0 && c.active(unsigned(src))) ? c.at<T>(unsigned(src)) : x;                      \
  }
__ENC_SIMD_SHUFFLE(simd_shuffle, ushort, long(arg))
__ENC_SIMD_SHUFFLE(simd_broadcast, ushort, long(arg))
__ENC_SIMD_SHUFFLE(simd_shuffle_up, ushort, long(c.lane) - long(arg))
__ENC_SIMD_SHUFFLE(simd_shuffle_down, ushort, long(c.lane) + long(arg) < 32 ? long(c.lane) + long(arg) : -1)
__ENC_SIMD_SHUFFLE(simd_shuffle_xor, ushort, long(c.lane ^ (uint(arg) & 31u)))
__ENC_SIMD_SHUFFLE(simd_shuffle_rotate_up, ushort, long((c.lane + 32u - (uint(arg) & 31u)) & 31u))
__ENC_SIMD_SHUFFLE(simd_shuffle_rotate_down, ushort, long((c.lane + uint(arg)) & 31u))
#undef __ENC_SIMD_SHUFFLE
template <class T> __ENC_INLINE T simd_broadcast_first(T x, unsigned __line = __builtin_LINE()) {
  return __enc::simd_first_active<T>(__enc::simd_exchange(x, "simd_broadcast_first", __line));
}

// Votes. bool is not a SIMD data type in Metal, but these functions take it by definition.
struct simd_vote {
  typedef ulong vote_t;
  vote_t __v;
  __ENC_INLINE explicit constexpr simd_vote(vote_t v = 0) : __v(v) {}
  __ENC_INLINE explicit operator vote_t() const { return __v; }
  __ENC_INLINE bool all() const { return __v == 0xffffffffull; }
  __ENC_INLINE bool any() const { return __v != 0; }
};
__ENC_INLINE simd_vote simd_ballot(bool b, unsigned __line = __builtin_LINE()) {
  __enc::simd_call c = __enc::simd_exchange(uint(b), "simd_ballot", __line);
  ulong v = 0;
  for (unsigned l = 0; l < 32u; ++l) if (c.active(l) && c.at<uint>(l)) v |= 1ull << l;
  return simd_vote(v);
}
__ENC_INLINE bool simd_all(bool b, unsigned __line = __builtin_LINE()) {
  __enc::simd_call c = __enc::simd_exchange(uint(b), "simd_all", __line);
  for (unsigned l = 0; l < 32u; ++l) if (c.active(l) && !c.at<uint>(l)) return false;
  return true;
}
__ENC_INLINE bool simd_any(bool b, unsigned __line = __builtin_LINE()) {
  __enc::simd_call c = __enc::simd_exchange(uint(b), "simd_any", __line);
  for (unsigned l = 0; l < 32u; ++l) if (c.active(l) && c.at<uint>(l)) return true;
  return false;
}
__ENC_INLINE bool simd_is_first(unsigned __line = __builtin_LINE()) {
  __enc::simd_call c = __enc::simd_exchange(uint(0), "simd_is_first", __line);
  return c.lane == unsigned(__builtin_ctz(c.snap->active));
}

namespace __enc {
// The builtins of thread (x, y, z) of the running threadgroup, from those of its thread (0, 0, 0) (whose
// thread_position_in_grid is b0, b1, b2): the generated enceladus_group_NAME loop (translate.py).
__ENC_INLINE void set_thread_position(EncThread* t, unsigned x, unsigned y, unsigned z, unsigned b0, unsigned b1,
                                      unsigned b2) {
  t->tpitg[0] = x;
  t->tpitg[1] = y;
  t->tpitg[2] = z;
  t->tpig[0] = b0 + x;
  t->tpig[1] = b1 + y;
  t->tpig[2] = b2 + z;
  unsigned i = x + t->tptg[0] * (y + t->tptg[1] * z);
  t->tiitg = i;
  t->lane = i % ENC_SIMD_WIDTH;
  t->sg = i / ENC_SIMD_WIDTH;
}
// Function-scope `threadgroup T x[N];` becomes a reference to one instance per running threadgroup.
template <class T> __ENC_INLINE T& threadgroup_static(unsigned slot, const char* name) {
  return *static_cast<T*>(rt->threadgroup_static(slot, sizeof(T), alignof(T), name));
}
}  // namespace __enc
}  // namespace metal
#endif

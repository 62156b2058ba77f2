// Metal atomics on host memory: genuinely atomic across the pool's OS threads (GCC/Clang __atomic
// builtins). Metal allows only memory_order_relaxed on atomic operations (ordering comes from
// atomic_thread_fence). Types and operations follow Metal: float supports add/sub (plus
// load/store/exchange), 64-bit ulong only atomic_max/min_explicit.
#ifndef ENCELADUS_ATOMIC_H
#define ENCELADUS_ATOMIC_H
#include "core.h"

namespace metal {
// Atomic operations take memory_order_relaxed only; atomic_thread_fence (MSL 3.2) also takes seq_cst.
enum memory_order { memory_order_relaxed = 0, memory_order_seq_cst = 5 };
// Unscoped, so that both `thread_scope_device` and `thread_scope::thread_scope_device` name it, as in Metal.
enum thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };

// atomic_thread_fence (MSL 3.2): orders this thread's memory operations around it for the threads of `scope`.
// Here threadgroups run on several OS threads, so a seq_cst fence is a real host fence (with relaxed
// atomics it gives the C++ fence-to-fence synchronization that generated kernels rely on).
__ENC_INLINE void atomic_thread_fence(mem_flags flags, memory_order order, thread_scope scope = thread_scope_device) {
  (void)flags;
  (void)scope;
  if (order != memory_order_relaxed) __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

template <class T> struct atomic {
  static_assert(__enc::is_same<T, int>::value || __enc::is_same<T, uint>::value || __enc::is_same<T, bool>::value ||
                    __enc::is_same<T, float>::value || __enc::is_same<T, ulong>::value,
                "Metal atomics exist for int, uint, bool, float and (max/min only) ulong");
  T __v;
};

namespace __enc {
template <class T> struct atomic_int_like {
  static constexpr bool value = is_same<T, int>::value || is_same<T, uint>::value;
};
template <class T> __ENC_INLINE T* atomic_addr(volatile atomic<T>* a) { return const_cast<T*>(&a->__v); }
template <class T, class F> __ENC_INLINE T atomic_float_rmw(volatile atomic<T>* a, F f) {
  uint* p = reinterpret_cast<uint*>(atomic_addr(a));
  uint old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    uint desired = __builtin_bit_cast(uint, f(__builtin_bit_cast(float, old)));
    if (__atomic_compare_exchange_n(p, &old, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return __builtin_bit_cast(float, old);
  }
}
}  // namespace __enc

#define __ENC_ATOMIC_VALUE typename __enc::type_identity<T>::type
template <class T>
__ENC_INLINE void atomic_store_explicit(volatile atomic<T>* a, __ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {
  static_assert(!__enc::is_same<T, ulong>::value, "Metal: atomic_ulong supports only atomic_max/min_explicit");
  __atomic_store(__enc::atomic_addr(a), &v, __ATOMIC_RELAXED);
}
template <class T> __ENC_INLINE T atomic_load_explicit(volatile atomic<T>* a, memory_order = memory_order_relaxed) {
  static_assert(!__enc::is_same<T, ulong>::value, "Metal: atomic_ulong supports only atomic_max/min_explicit");
  T r;
  __atomic_load(__enc::atomic_addr(a), &r, __ATOMIC_RELAXED);
  return r;
}
template <class T>
__ENC_INLINE T atomic_exchange_explicit(volatile atomic<T>* a, __ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {
  static_assert(!__enc::is_same<T, ulong>::value, "Metal: atomic_ulong supports only atomic_max/min_explicit");
  T r;
  __atomic_exchange(__enc::atomic_addr(a), &v, &r, __ATOMIC_RELAXED);
  return r;
}
template <class T>
__ENC_INLINE bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* a, T* expected, __ENC_ATOMIC_VALUE desired,
                                                        memory_order = memory_order_relaxed,
                                                        memory_order = memory_order_relaxed) {
  static_assert(!__enc::is_same<T, ulong>::value, "Metal: atomic_ulong supports only atomic_max/min_explicit");
  return __atomic_compare_exchange(__enc::atomic_addr(a), expected, &desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

#define __ENC_ATOMIC_INT_OP(NAME, BUILTIN)                                                          \
  template <class T>                                                                                \
  __ENC_INLINE T NAME(volatile atomic<T>* a, __ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) { \
    static_assert(__enc::atomic_int_like<T>::value, "Metal: " #NAME " needs atomic_int or atomic_uint"); \
    return BUILTIN(__enc::atomic_addr(a), v, __ATOMIC_RELAXED);                                     \
  }
__ENC_ATOMIC_INT_OP(atomic_fetch_and_explicit, __atomic_fetch_and)
__ENC_ATOMIC_INT_OP(atomic_fetch_or_explicit, __atomic_fetch_or)
__ENC_ATOMIC_INT_OP(atomic_fetch_xor_explicit, __atomic_fetch_xor)
#undef __ENC_ATOMIC_INT_OP

template <class T>
__ENC_INLINE T atomic_fetch_add_explicit(volatile atomic<T>* a, __ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {
  if constexpr (__enc::is_same<T, float>::value) {
    return __enc::atomic_float_rmw(a, [v](float x) { return x + v; });
  } else {
    static_assert(__enc::atomic_int_like<T>::value, "Metal: atomic_fetch_add_explicit needs atomic_int, atomic_uint or atomic_float");
    return __atomic_fetch_add(__enc::atomic_addr(a), v, __ATOMIC_RELAXED);
  }
}
template <class T>
__ENC_INLINE T atomic_fetch_sub_explicit(volatile atomic<T>* a, __ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) {
  if constexpr (__enc::is_same<T, float>::value) {
    return __enc::atomic_float_rmw(a, [v](float x) { return x - v; });
  } else {
    static_assert(__enc::atomic_int_like<T>::value, "Metal: atomic_fetch_sub_explicit needs atomic_int, atomic_uint or atomic_float");
    return __atomic_fetch_sub(__enc::atomic_addr(a), v, __ATOMIC_RELAXED);
  }
}
#define __ENC_ATOMIC_MINMAX(NAME, CMP)                                                              \
  template <class T>                                                                                \
  __ENC_INLINE T NAME(volatile atomic<T>* a, __ENC_ATOMIC_VALUE v, memory_order = memory_order_relaxed) { \
    static_assert(__enc::atomic_int_like<T>::value, "Metal: " #NAME " needs atomic_int or atomic_uint"); \
    T* p = __enc::atomic_addr(a);                                                                   \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                                   \
    while ((v CMP old) && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
    }                                                                                               \
    return old;                                                                                     \
  }
__ENC_ATOMIC_MINMAX(atomic_fetch_min_explicit, <)
__ENC_ATOMIC_MINMAX(atomic_fetch_max_explicit, >)
#undef __ENC_ATOMIC_MINMAX
// 64-bit: Metal has only these two, on device atomic_ulong, without a return value.
#define __ENC_ATOMIC_U64(NAME, CMP)                                                                 \
  __ENC_INLINE void NAME(volatile atomic<ulong>* a, ulong v, memory_order = memory_order_relaxed) { \
    ulong* p = __enc::atomic_addr(a);                                                               \
    ulong old = __atomic_load_n(p, __ATOMIC_RELAXED);                                               \
    while ((v CMP old) && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
    }                                                                                               \
  }
__ENC_ATOMIC_U64(atomic_max_explicit, >)
__ENC_ATOMIC_U64(atomic_min_explicit, <)
#undef __ENC_ATOMIC_U64
#undef __ENC_ATOMIC_VALUE
}  // namespace metal

typedef metal::atomic<int> atomic_int;
typedef metal::atomic<uint> atomic_uint;
typedef metal::atomic<bool> atomic_bool;
typedef metal::atomic<float> atomic_float;
typedef metal::atomic<ulong> atomic_ulong;
#endif

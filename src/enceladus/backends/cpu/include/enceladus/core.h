// Enceladus Metal compatibility layer: keywords, scalar types, type traits, as_type.
// No C++ standard library is included anywhere in these headers (Metal has none).
#ifndef ENCELADUS_CORE_H
#define ENCELADUS_CORE_H

// Metal keywords. Address spaces are empty: clang's C++ address spaces cannot bind class
// objects (half, vectors, user structs) to implicit copy constructors, see docs/cpu_backend.md.
#define kernel __attribute__((used))
#define device
#define constant
#define threadgroup
#define thread
#define threadgroup_imageblock
#define ray_data
#define object_data
// coherent(device) (MSL 3.2): host memory is coherent across the pool's threads; ordering comes from fences.
#define coherent(scope)
#define __ENC_INLINE __attribute__((always_inline)) inline

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;

static_assert(sizeof(long) == 8, "Enceladus cpu backend needs an LP64 host (long is 64-bit in Metal)");

namespace metal {
namespace __enc {
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;
template <class A, class B> struct is_same { static constexpr bool value = false; };
template <class A> struct is_same<A, A> { static constexpr bool value = true; };
template <class T> struct remove_cv { typedef T type; };
template <class T> struct remove_cv<const T> { typedef T type; };
template <class T> struct remove_cv<volatile T> { typedef T type; };
template <class T> struct remove_cv<const volatile T> { typedef T type; };
template <class T> struct remove_ref { typedef T type; };
template <class T> struct remove_ref<T&> { typedef T type; };

template <class T> struct is_int_impl { static constexpr bool value = false; };
#define __ENC_INT(T) template <> struct is_int_impl<T> { static constexpr bool value = true; };
__ENC_INT(bool) __ENC_INT(char) __ENC_INT(signed char) __ENC_INT(unsigned char)
__ENC_INT(short) __ENC_INT(unsigned short) __ENC_INT(int) __ENC_INT(unsigned int)
__ENC_INT(long) __ENC_INT(unsigned long) __ENC_INT(long long) __ENC_INT(unsigned long long)
#undef __ENC_INT
template <class T> struct is_integral : is_int_impl<typename remove_cv<T>::type> {};
template <class T> struct is_signed_int { static constexpr bool value = is_integral<T>::value && T(-1) < T(0); };
template <class T> struct is_fp_native { static constexpr bool value = is_same<typename remove_cv<T>::type, float>::value; };
template <class T> struct is_enc_fp { static constexpr bool value = false; };  // half, bfloat specialise
template <class T> struct is_floating {
  static constexpr bool value = is_fp_native<T>::value || is_enc_fp<typename remove_cv<T>::type>::value;
};
template <class T> struct is_scalar {
  static constexpr bool value = is_integral<T>::value || is_floating<T>::value;
};
template <class T> T&& declval();
template <class T> struct type_identity { typedef T type; };
}  // namespace __enc

// as_type<T>(x): bit cast between types of equal size (Metal reinterpret).
template <class To, class From>
__ENC_INLINE To as_type(const From& x) {
  static_assert(sizeof(To) == sizeof(From), "as_type<T>(x): sizes of T and x must match");
  To r;
  __builtin_memcpy(&r, &x, sizeof(To));
  return r;
}

enum class mem_flags : uint { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4,
                              mem_threadgroup_imageblock = 8, mem_object_data = 16 };
__ENC_INLINE constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint(a) | uint(b)); }
__ENC_INLINE constexpr mem_flags operator&(mem_flags a, mem_flags b) { return mem_flags(uint(a) & uint(b)); }
}  // namespace metal

#endif

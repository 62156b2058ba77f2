// simdgroup_matrix 8x8 (float, half, bfloat). Each lane holds two adjacent elements of one row, in
// the lane layout observed on Apple GPUs (METAL_FACTS.md; Apple calls it unspecified):
//   row = 4*((lane>>4)&1) + 2*((lane>>2)&1) + ((lane>>1)&1),  col = 4*((lane>>3)&1) + 2*(lane&1) + e.
// Every operation is a SIMD-group rendezvous that requires all 32 lanes (uniform control flow).
// multiply_accumulate computes in float and rounds once to the destination type.
#ifndef ENCELADUS_MATRIX_H
#define ENCELADUS_MATRIX_H
#include "sync.h"

namespace metal {
template <class T, int R, int C> struct simdgroup_matrix {
  static_assert(R == 8 && C == 8, "Metal simdgroup_matrix supports only 8x8");
  static_assert(__enc::is_same<T, float>::value || __enc::is_same<T, half>::value || __enc::is_same<T, bfloat>::value,
                "simdgroup_matrix element type must be float, half or bfloat");
  vec<T, 2> __e;
  simdgroup_matrix() = default;
  // Metal: constructing from a value gives a diagonal matrix.
  __ENC_INLINE explicit simdgroup_matrix(T diag, unsigned __line = __builtin_LINE());
  __ENC_INLINE vec<T, 2>& thread_elements() { return __e; }
  __ENC_INLINE const vec<T, 2>& thread_elements() const { return __e; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

namespace __enc {
#ifdef ENC_TEST_PERMUTED_FRAGMENT_LANES
// a deliberately wrong twin for the probe tests: another (self-consistent) element-to-lane mapping (MSL_AUDIT D4)
__ENC_INLINE unsigned sgm_lane(unsigned lane) { return lane ^ 1u; }
#else
__ENC_INLINE unsigned sgm_lane(unsigned lane) { return lane; }
#endif
__ENC_INLINE unsigned sgm_row(unsigned lane) {
  lane = sgm_lane(lane);
  return 4u * ((lane >> 4) & 1u) + 2u * ((lane >> 2) & 1u) + ((lane >> 1) & 1u);
}
__ENC_INLINE unsigned sgm_col(unsigned lane) {
  lane = sgm_lane(lane);
  return 4u * ((lane >> 3) & 1u) + 2u * (lane & 1u);
}
// Rendezvous of the whole SIMD group; returns this lane's index.
__ENC_INLINE simd_call sgm_sync(const void* data, unsigned n, const char* what, unsigned line) {
  simd_call c;
  c.snap = rt->simd_exchange(data, n, what, line, 1, &c.lane);
  return c;
}
template <class T> struct sgm_payload { vec<T, 2> a, b, c; };
}  // namespace __enc

template <class T, int R, int C>
__ENC_INLINE simdgroup_matrix<T, R, C>::simdgroup_matrix(T diag, unsigned __line) {
  __enc::simd_call c = __enc::sgm_sync(nullptr, 0, "simdgroup_matrix(diagonal)", __line);
  unsigned r = __enc::sgm_row(c.lane), col = __enc::sgm_col(c.lane);
  __e = vec<T, 2>(r == col ? diag : T(0), r == col + 1 ? diag : T(0));
}

template <class T, int R = 8, int C = 8>
__ENC_INLINE simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, R, C> m;
  m.__e = vec<T, 2>(value, value);
  return m;
}

template <class T, int R, int C, class S>
__ENC_INLINE void simdgroup_load(thread simdgroup_matrix<T, R, C>& m, const S* src, ulong elements_per_row = 8,
                                 ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                 unsigned __line = __builtin_LINE()) {
  static_assert(__enc::is_same<typename __enc::remove_cv<S>::type, T>::value,
                "simdgroup_load: the source pointer's element type must match the matrix's");
  __enc::simd_call c = __enc::sgm_sync(nullptr, 0, "simdgroup_load", __line);
  unsigned r = __enc::sgm_row(c.lane), col = __enc::sgm_col(c.lane);
  for (unsigned e = 0; e < 2; ++e) {
    ulong i = transpose ? col + e : r, j = transpose ? r : col + e;
    m.__e[int(e)] = src[(matrix_origin.y + i) * elements_per_row + matrix_origin.x + j];
  }
}

template <class T, int R, int C, class D>
__ENC_INLINE void simdgroup_store(const simdgroup_matrix<T, R, C>& m, D* dst, ulong elements_per_row = 8,
                                  ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                  unsigned __line = __builtin_LINE()) {
  static_assert(__enc::is_same<D, T>::value, "simdgroup_store: the destination element type must match the matrix's");
  __enc::simd_call c = __enc::sgm_sync(nullptr, 0, "simdgroup_store", __line);
  unsigned r = __enc::sgm_row(c.lane), col = __enc::sgm_col(c.lane);
  for (unsigned e = 0; e < 2; ++e) {
    ulong i = transpose ? col + e : r, j = transpose ? r : col + e;
    dst[(matrix_origin.y + i) * elements_per_row + matrix_origin.x + j] = m.__e[int(e)];
  }
}

template <class TD, class TA, class TB, class TC>
__ENC_INLINE void simdgroup_multiply_accumulate(thread simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                                const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c,
                                                unsigned __line = __builtin_LINE()) {
  struct Payload { float a[2], b[2], c[2]; } mine = {{float(a.__e.x), float(a.__e.y)},
                                                     {float(b.__e.x), float(b.__e.y)},
                                                     {float(c.__e.x), float(c.__e.y)}};
  static_assert(sizeof(Payload) <= ENC_SIMD_SLOT, "payload");
  __enc::simd_call s = __enc::sgm_sync(&mine, sizeof mine, "simdgroup_multiply_accumulate", __line);
  float A[8][8], B[8][8], Cm[8][8];
  for (unsigned l = 0; l < 32u; ++l) {
    Payload p = s.at<Payload>(l);
    unsigned r = __enc::sgm_row(l), col = __enc::sgm_col(l);
    for (unsigned e = 0; e < 2; ++e) {
      A[r][col + e] = p.a[e];
      B[r][col + e] = p.b[e];
      Cm[r][col + e] = p.c[e];
    }
  }
  unsigned r = __enc::sgm_row(s.lane), col = __enc::sgm_col(s.lane);
  for (unsigned e = 0; e < 2; ++e) {
    float acc = 0.0f;
    for (unsigned k = 0; k < 8; ++k) acc += A[r][k] * B[k][col + e];
    d.__e[int(e)] = TD(acc + Cm[r][col + e]);
  }
}
template <class TD, class TA, class TB>
__ENC_INLINE void simdgroup_multiply(thread simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                     const simdgroup_matrix<TB, 8, 8>& b, unsigned __line = __builtin_LINE()) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<TD, 8, 8>(TD(0)), __line);
}
}  // namespace metal
#endif

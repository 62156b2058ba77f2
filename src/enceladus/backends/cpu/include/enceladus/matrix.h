#include <metal_stdlib>
// simdgroup_matrix 8x8 (float, half, bfloat). Each lane holds two adjacent elements of one row, in
// the lane layout observed on Apple GPUs (METAL_FACTS.md; Apple calls it unspecified):
//   row = 4*((lane>>4)&1) + 2*((lane>>2)&1) + ((lane>>1)&1),  col = 4*((lane>>3)&1) + 2*(lane&1) + e.
// Every operation must be reached by all 32 lanes (uniform control flow). None switches fibers:
// - loads, stores and the diagonal constructor touch only the lane's own two elements; each lane
//   appends the operation to its SIMD group's log (abi.h EncSgLog), which the runtime checks when no
//   lane of the group can run (every lane executed every entry, or the launch fails);
// - multiplies are deferred: each lane deposits its two elements of an operand (as float) into a slot of
//   the SIMD group's batch, where the 32 lanes' elements make up the whole 8x8 matrix, and later multiplies
//   reuse the slot while the lane's fragment keeps the bits it deposited (a fragment loaded once and used by
//   four multiplies is deposited once); an operand that is the pending result of an earlier multiply of the
//   batch is referred to. The destination becomes "pending". The first lane that needs a pending value
//   (thread_elements(), a store, a copy, an operand) meets the other lanes once (a SIMD-group rendezvous: by
//   then every lane has run up to its next stop, past the multiply) and computes every complete multiply of
//   the batch for all 32 lanes, reading each operand as one matrix (lanes normally deposit in the same slot;
//   a lane whose slot differs is read from its own), and writes each lane's destination. One rendezvous per
//   batch instead of one per operation per lane; the result is the same (an operand's value is taken when
//   the lane executes the multiply).
// multiply_accumulate computes in float and rounds once to the destination type.
#ifndef ENCELADUS_MATRIX_H
#define ENCELADUS_MATRIX_H
#include "sync.h"

namespace metal {
template <class T, int R, int C> struct simdgroup_matrix;
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

// One deferred multiply-accumulate D = A*B + C of a SIMD group: its result and each lane's destination.
// The destination type (`kind`) decides the rounding of results written back and read as another C.
enum : unsigned char { sgm_float = 0, sgm_half = 1, sgm_bfloat = 2 };
enum : unsigned { sgm_a = 0, sgm_b = 1, sgm_c = 2 };
struct sgm_op {
  float D[8][8];
  void* dst[ENC_SIMD_WIDTH];  // each lane's destination matrix (null: overwritten or destroyed since)
  int src[3];                 // the first lane's A, B, C: a slot (>= 0) or, for C, multiply -1 - src of the batch
  unsigned mixed[3];          // lanes whose operand is elsewhere: theirs is in lsrc[lane][op]
  unsigned char kind;         // the destination's element type
};
constexpr unsigned sgm_max_ops = ENC_SG_MMA;
constexpr unsigned sgm_max_slots = 3 * ENC_SG_MMA;  // a lane deposits at most 3 per multiply: never full first
static_assert(sgm_max_ops <= 32767 && sgm_max_slots <= 32767, "lsrc holds op and slot numbers");
struct sgm_batch {
  unsigned serial;  // EncSgLog::serial this batch belongs to (another: stale, start empty)
  unsigned done;    // multiplies computed so far
  unsigned lpos[ENC_SIMD_WIDTH];  // each lane's next slot
  float slot[sgm_max_slots][8][8];  // deposited operands, each lane's elements at their place in the matrix
  sgm_op ops[sgm_max_ops];
  short lsrc[ENC_SIMD_WIDTH][sgm_max_ops][4];  // a lane in an op's `mixed`: where its operands are
};

struct sgm_msg {
  char b[360];
  unsigned n = 0;
  __ENC_INLINE sgm_msg() { b[0] = 0; }
  __ENC_INLINE sgm_msg& s(const char* t) {
    while (t && *t && n + 1 < sizeof b) b[n++] = *t++;
    b[n] = 0;
    return *this;
  }
  __ENC_INLINE sgm_msg& u(unsigned long v, unsigned base = 10) {
    char d[24];
    int k = 0;
    do { d[k++] = "0123456789abcdef"[v % base]; v /= base; } while (v);
    if (base == 16) { s("0x"); while (k < 8) d[k++] = '0'; }
    while (k && n + 1 < sizeof b) b[n++] = d[--k];
    b[n] = 0;
    return *this;
  }
};

struct sgm_ctx {
  EncSgLog* g;
  unsigned lane;
};
template <class T> __ENC_INLINE bool same_bits(const T& a, const T& b) {
  return __builtin_memcmp(&a, &b, sizeof(T)) == 0;
}
__ENC_INLINE sgm_batch* sgm_batch_of(EncSgLog* g) {
  sgm_batch* b = static_cast<sgm_batch*>(g->scratch);
  if (__builtin_expect(b->serial != g->serial, 0)) {  // a batch of an earlier threadgroup: start empty
    b->serial = g->serial;
    b->done = 0;
    for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) b->lpos[l] = 0;
  }
  return b;
}
// The calling fiber's log and lane, read from the top of its stack (abi.h EncFiberTop): kernels that use
// simdgroup_matrix always run on fibers (translate.py needs_fibers). The same for every call in one thread (a
// fiber runs one thread of one threadgroup), hence `const`: the compiler reads it once per function (or loop)
// instead of once per operation; the launcher of a kernel that uses simdgroup_matrix calls it before the kernel
// (translate.py launcher), so that every call inlined into the kernel is merged with that one. Any call also makes the SIMD group's batch current (sgm_batch_of), and the
// batch stays current for the threadgroup (sgm_reset keeps the serials equal), so operations find it with
// sgm_current, without the test.
[[gnu::const, gnu::noinline]] inline sgm_ctx sgm_get() {
  unsigned long a = rt->fiber_stack_align;
  unsigned long top = (reinterpret_cast<unsigned long>(__builtin_frame_address(0)) | (a - 1)) + 1;
  const EncFiberTop* t = reinterpret_cast<const EncFiberTop*>(top - ENC_FIBER_TOP);
  sgm_ctx c;
  c.g = t->sg;
  c.lane = t->lane;
  if (__builtin_expect(c.g->scratch_size < sizeof(sgm_batch), 0)) c.g = rt->sg_log(sizeof(sgm_batch), &c.lane);
  sgm_batch_of(c.g);
  return c;
}
__ENC_INLINE sgm_batch* sgm_current(EncSgLog* g) { return static_cast<sgm_batch*>(g->scratch); }

// Waits until every other lane of the SIMD group has stopped (a rendezvous of the lanes that call it here).
__ENC_INLINE void sgm_meet(const char* what, unsigned line) {
  unsigned lane;
  rt->simd_exchange(nullptr, 0, what, line, 0, &lane);
}

// Error paths, out of line (cold): the operations' inline code keeps only the test.
[[gnu::noinline, gnu::cold]] inline void sgm_fail_unreached(const char* what, unsigned lane, const char* count,
                                                           unsigned n, unsigned line) {
  sgm_msg m;
  m.s(what).s(": lane ").u(lane).s(" executed ").u(n).s(count)
      .s(" that other lanes of its SIMD group did not execute: simdgroup_matrix operations must be reached by all "
         "32 lanes of the SIMD group (uniform control flow)");
  rt->fail(m.b, line);
}
[[gnu::noinline, gnu::cold]] inline void sgm_fail_line(const char* what, unsigned lane, unsigned line,
                                                      unsigned other) {
  sgm_msg m;
  m.s(what).s(": lane ").u(lane).s(" executes it at line ").u(line).s(" where other lanes of its SIMD group "
      "executed one at line ").u(other).s(": simdgroup_matrix operations must be reached by all 32 lanes of the "
      "SIMD group (uniform control flow)");
  rt->fail(m.b, line);
}

// (The context goes by value: a reference would keep it in memory, reloaded after every store of the kernel.)
inline void sgm_record_slow(sgm_ctx c, const char* what, unsigned line);
// Appends (or marks) this lane's entry in the group's log.
__ENC_INLINE void sgm_record(sgm_ctx c, const char* what, unsigned line) {
  EncSgLog* g = c.g;
  unsigned k = g->pos[c.lane];
  if (k < g->count) {  // another lane was here first: the common case
    EncSgEntry& e = g->e[k];
    if (__builtin_expect(e.line == line && e.what == what, 1)) {
      e.mask |= 1u << c.lane;
      g->pos[c.lane] = k + 1;
      return;
    }
  }
  sgm_record_slow(c, what, line);
}
inline void sgm_record_slow(sgm_ctx c, const char* what, unsigned line) {
  EncSgLog* g = c.g;
  if (g->pos[c.lane] == ENC_SG_LOG) {
    sgm_meet(what, line);  // the runtime retires the entries every lane executed
    if (g->pos[c.lane] == ENC_SG_LOG) {
      sgm_fail_unreached(what, c.lane, " simdgroup_matrix operations", ENC_SG_LOG, line);
      return;
    }
  }
  unsigned k = g->pos[c.lane]++;
  EncSgEntry& e = g->e[k];
  if (k == g->count) {
    g->count++;
    e.what = what;
    e.line = line;
    e.mask = 1u << c.lane;
  } else if (e.line != line || e.what != what) {
    sgm_msg m;
    m.s("lane ").u(c.lane).s(" executes ").s(what).s(" (line ").u(line).s(") where lanes ").u(e.mask, 16)
        .s(" of its SIMD group executed ").s(e.what).s(" (line ").u(e.line)
        .s("): simdgroup_matrix operations must be reached by all 32 lanes of the SIMD group (uniform control flow)");
    rt->fail(m.b, line);
  } else {
    e.mask |= 1u << c.lane;
  }
}

// float -> the destination type of kind `k` -> float (one value, a whole matrix); and a lane's two results
// stored into its destination.
__ENC_INLINE float sgm_round(unsigned char k, float x);
inline void sgm_round_all(unsigned char k, const float (&D)[8][8], float (&C)[8][8]);
__ENC_INLINE void sgm_write(unsigned char k, void* m, float d0, float d1);

// Operand A or B (x) of multiply k as an 8x8 matrix: the slot all lanes deposited it in, else gathered from
// each lane's slot.
__ENC_INLINE const float (*sgm_operand(const sgm_batch* bt, unsigned k, unsigned x, float (&M)[8][8]))[8] {
  const sgm_op& op = bt->ops[k];
  if (!op.mixed[x]) return bt->slot[op.src[x]];
  for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) {
    int s = (op.mixed[x] >> l) & 1u ? bt->lsrc[l][k][x] : op.src[x];
    unsigned r = sgm_row(l), col = sgm_col(l);
    M[r][col] = bt->slot[s][r][col];
    M[r][col + 1] = bt->slot[s][r][col + 1];
  }
  return M;
}
// Operand C of multiply k: a slot, or an earlier multiply's result rounded to its type.
inline const float (*sgm_operand_c(const sgm_batch* bt, unsigned k, float (&C)[8][8]))[8] {
  const sgm_op& op = bt->ops[k];
  int s = op.src[sgm_c];
  if (!op.mixed[sgm_c]) {
    if (s >= 0) return bt->slot[s];
    const sgm_op& src = bt->ops[-1 - s];
    if (src.kind == sgm_float) return src.D;  // float: no rounding
    sgm_round_all(src.kind, src.D, C);
    return C;
  }
  for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) {
    if ((op.mixed[sgm_c] >> l) & 1u) s = bt->lsrc[l][k][sgm_c];
    else s = op.src[sgm_c];
    unsigned r = sgm_row(l), col = sgm_col(l);
    for (unsigned e = 0; e < 2; ++e)
      C[r][col + e] = s >= 0 ? bt->slot[s][r][col + e] : sgm_round(bt->ops[-1 - s].kind, bt->ops[-1 - s].D[r][col + e]);
  }
  return C;
}

// Starts an empty batch.
__ENC_INLINE void sgm_reset(EncSgLog* g, sgm_batch* bt) {
  g->mma_count = 0;
  for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) g->mma_pos[l] = bt->lpos[l] = 0;
  bt->serial = ++g->serial;
  bt->done = 0;
}

// A matrix row as one vector (an AVX register where the target has AVX; two SSE registers otherwise).
typedef float sgm_row8 __attribute__((vector_size(32)));

// Computes the multiplies of the batch that every lane has executed, in order; empties the batch when
// all are done.
inline void sgm_compute(EncSgLog* g) {
  sgm_batch* bt = sgm_batch_of(g);
  unsigned ready = g->mma_count;
  for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) ready = g->mma_pos[l] < ready ? g->mma_pos[l] : ready;
  for (unsigned k = bt->done; k < ready; ++k) {
    sgm_op& op = bt->ops[k];
    float Am[8][8], Bm[8][8], Cm[8][8];
    const float(*A)[8] = sgm_operand(bt, k, sgm_a, Am);
    const float(*B)[8] = sgm_operand(bt, k, sgm_b, Bm);
    const float(*C)[8] = sgm_operand_c(bt, k, Cm);
    sgm_row8 b[8];
    for (unsigned q = 0; q < 8; ++q) __builtin_memcpy(&b[q], B[q], sizeof(sgm_row8));
    for (unsigned i = 0; i < 8; ++i) {  // per element: ((0 + a0*b0) + a1*b1 ...) + c, a row at a time
      sgm_row8 acc = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, c;
      for (unsigned q = 0; q < 8; ++q) acc += A[i][q] * b[q];
      __builtin_memcpy(&c, C[i], sizeof c);
      acc += c;
      __builtin_memcpy(op.D[i], &acc, sizeof acc);
    }
    for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) {
      if (!op.dst[l]) continue;
      unsigned r = sgm_row(l), col = sgm_col(l);
      sgm_write(op.kind, op.dst[l], op.D[r][col], op.D[r][col + 1]);
      op.dst[l] = nullptr;
    }
  }
  bt->done = ready;
  if (ready == g->mma_count) sgm_reset(g, bt);  // every lane is past every multiply: start a new batch
}

}  // namespace __enc

template <class T, int R, int C> struct simdgroup_matrix {
  static_assert(R == 8 && C == 8, "Metal simdgroup_matrix supports only 8x8");
  static_assert(__enc::is_same<T, float>::value || __enc::is_same<T, half>::value || __enc::is_same<T, bfloat>::value,
                "simdgroup_matrix element type must be float, half or bfloat");
  vec<T, 2> __e;
  int __op = -1;                  // >= 0: the pending multiply of this SIMD group's batch that produces the value
  mutable int __slot = -1;        // >= 0: the batch's slot holding __deposited (the value while __e keeps its bits)
  mutable unsigned __serial = 0;  // the batch of __op or __slot
  mutable vec<T, 2> __deposited;

  __ENC_INLINE simdgroup_matrix() {}
  // Metal: constructing from a value gives a diagonal matrix.
  __ENC_INLINE explicit simdgroup_matrix(T diag, unsigned __line = __builtin_LINE());
  __ENC_INLINE simdgroup_matrix(const simdgroup_matrix& o, unsigned __line = __builtin_LINE()) {
    o.__resolve("simdgroup_matrix (copy of a multiply's result)", __line);
    __copy(o);
  }
  __ENC_INLINE simdgroup_matrix& operator=(const simdgroup_matrix& o) {
    if (this == &o) return *this;
    o.__resolve("simdgroup_matrix (copy of a multiply's result)", __builtin_LINE());
    __forget();
    __copy(o);
    return *this;
  }
  __ENC_INLINE ~simdgroup_matrix() { __forget(); }
  __ENC_INLINE vec<T, 2>& thread_elements(unsigned __line = __builtin_LINE()) {
    __resolve("thread_elements", __line);
    return __e;
  }
  __ENC_INLINE const vec<T, 2>& thread_elements(unsigned __line = __builtin_LINE()) const {
    __resolve("thread_elements", __line);
    return __e;
  }

  // A resolved value and, with it, its slot.
  __ENC_INLINE void __copy(const simdgroup_matrix& o) {
    __e = o.__e;
    __slot = o.__slot;
    __serial = o.__serial;
    __deposited = o.__deposited;
  }
  // The slot of the batch (of serial `serial`) that holds this lane's elements, deposited there now unless
  // an earlier multiply of the batch did (there is room: sgm_max_slots).
  // (The pair is compared, copied and stored whole: one access each instead of one per element.)
  __ENC_INLINE int __slot_in(__enc::sgm_batch* bt, unsigned serial, unsigned lane) const {
    const vec<T, 2> v = __e;
    if (__slot >= 0 && __serial == serial && __enc::same_bits(v, __deposited)) return __slot;
    unsigned s = bt->lpos[lane]++;
    unsigned r = __enc::sgm_row(lane), col = __enc::sgm_col(lane);
    const float f[2] = {float(v.x), float(v.y)};
    __builtin_memcpy(&bt->slot[s][r][col], f, sizeof f);
    __deposited = v;
    __slot = int(s);
    __serial = serial;
    return __slot;
  }
  // Makes the value available: a pending multiply is computed (with the rest of the batch) first.
  __ENC_INLINE void __resolve(const char* what, unsigned line) const {
    if (__op >= 0) const_cast<simdgroup_matrix*>(this)->__wait(what, line);
  }
  // The matrix gets another value: a pending multiply no longer writes it.
  __ENC_INLINE void __forget() {
    if (__op >= 0) __unlink();
  }
  void __wait(const char* what, unsigned line) {
    __enc::sgm_ctx c = __enc::sgm_get();
    if (__serial != c.g->serial) {  // not of the running batch (cannot happen in a live threadgroup)
      __op = -1;
      return;
    }
    unsigned op = unsigned(__op);
    __enc::sgm_meet(what, line);
    if (__op >= 0 && __serial == c.g->serial) __enc::sgm_compute(c.g);
    if (__op >= 0) {
      unsigned missing = 0;
      for (unsigned l = 0; l < ENC_SIMD_WIDTH; ++l) missing |= (c.g->mma_pos[l] <= op ? 1u : 0u) << l;
      __enc::sgm_msg m;
      m.s(what).s(": lane ").u(c.lane).s(" needs the result of a simdgroup_multiply_accumulate that lanes ")
          .u(missing, 16).s(" of its SIMD group have not executed: simdgroup_matrix operations must be reached "
                            "by all 32 lanes of the SIMD group (uniform control flow)");
      __op = -1;
      __enc::rt->fail(m.b, line);
    }
  }
  void __unlink() {
    __enc::sgm_ctx c = __enc::sgm_get();
    if (__serial == c.g->serial) __enc::sgm_batch_of(c.g)->ops[__op].dst[c.lane] = nullptr;
    __op = -1;
  }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

namespace __enc {
template <class TD> void sgm_write(void* m, float d0, float d1) {
  simdgroup_matrix<TD, 8, 8>* x = static_cast<simdgroup_matrix<TD, 8, 8>*>(m);
  x->__e = vec<TD, 2>(TD(d0), TD(d1));
  x->__op = -1;
}
template <class TD> float sgm_round(float x) { return float(TD(x)); }
template <class TD> constexpr unsigned char sgm_kind() {
  return is_same<TD, float>::value ? sgm_float : is_same<TD, half>::value ? sgm_half : sgm_bfloat;
}
__ENC_INLINE float sgm_round(unsigned char k, float x) {
  return k == sgm_float ? x : k == sgm_half ? sgm_round<half>(x) : sgm_round<bfloat>(x);
}
template <class TD> __ENC_INLINE void sgm_round_all(const float (&D)[8][8], float (&C)[8][8]) {
  for (unsigned i = 0; i < 8; ++i)
    for (unsigned j = 0; j < 8; ++j) C[i][j] = sgm_round<TD>(D[i][j]);
}
inline void sgm_round_all(unsigned char k, const float (&D)[8][8], float (&C)[8][8]) {
  if (k == sgm_float) sgm_round_all<float>(D, C);
  else if (k == sgm_half) sgm_round_all<half>(D, C);
  else sgm_round_all<bfloat>(D, C);
}
__ENC_INLINE void sgm_write(unsigned char k, void* m, float d0, float d1) {
  if (k == sgm_float) sgm_write<float>(m, d0, d1);
  else if (k == sgm_half) sgm_write<half>(m, d0, d1);
  else sgm_write<bfloat>(m, d0, d1);
}
}  // namespace __enc

template <class T, int R, int C>
__ENC_INLINE simdgroup_matrix<T, R, C>::simdgroup_matrix(T diag, unsigned __line) {
  __enc::sgm_ctx c = __enc::sgm_get();
  __enc::sgm_record(c, "simdgroup_matrix(diagonal)", __line);
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
  __enc::sgm_ctx c = __enc::sgm_get();
  __enc::sgm_record(c, "simdgroup_load", __line);
  m.__forget();
  unsigned r = __enc::sgm_row(c.lane), col = __enc::sgm_col(c.lane);
  vec<T, 2> v;
  for (unsigned e = 0; e < 2; ++e) {
    ulong i = transpose ? col + e : r, j = transpose ? r : col + e;
    v[int(e)] = src[(matrix_origin.y + i) * elements_per_row + matrix_origin.x + j];
  }
  m.__e = v;  // one store
  m.__slot = -1;
}

template <class T, int R, int C, class D>
__ENC_INLINE void simdgroup_store(const simdgroup_matrix<T, R, C>& m, D* dst, ulong elements_per_row = 8,
                                  ulong2 matrix_origin = ulong2(0), bool transpose = false,
                                  unsigned __line = __builtin_LINE()) {
  static_assert(__enc::is_same<D, T>::value, "simdgroup_store: the destination element type must match the matrix's");
  m.__resolve("simdgroup_store", __line);
  __enc::sgm_ctx c = __enc::sgm_get();
  __enc::sgm_record(c, "simdgroup_store", __line);
  unsigned r = __enc::sgm_row(c.lane), col = __enc::sgm_col(c.lane);
  for (unsigned e = 0; e < 2; ++e) {
    ulong i = transpose ? col + e : r, j = transpose ? r : col + e;
    dst[(matrix_origin.y + i) * elements_per_row + matrix_origin.x + j] = m.__e[int(e)];
  }
}

namespace __enc {
// Where this lane's operand x of multiply op is (a slot, or -1 - a multiply), beside the first lane's.
__ENC_INLINE void sgm_note(sgm_batch* bt, sgm_op& op, unsigned k, unsigned x, int src, unsigned lane) {
  if (__builtin_expect(src != op.src[x], 0)) {
    op.mixed[x] |= 1u << lane;
    bt->lsrc[lane][k][x] = short(src);
  }
}
}  // namespace __enc

template <class TD, class TA, class TB, class TC>
__ENC_INLINE void simdgroup_multiply_accumulate(thread simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                                const simdgroup_matrix<TB, 8, 8>& b, const simdgroup_matrix<TC, 8, 8>& c,
                                                unsigned __line = __builtin_LINE()) {
  const char* what = "simdgroup_multiply_accumulate";
  a.__resolve(what, __line);
  b.__resolve(what, __line);
  __enc::sgm_ctx x = __enc::sgm_get();
  __enc::sgm_batch* bt = __enc::sgm_current(x.g);
  if (__builtin_expect(x.g->mma_pos[x.lane] == __enc::sgm_max_ops, 0)) {
    // the batch is full: compute it (every lane arrives here after the same multiplies)
    __enc::sgm_meet(what, __line);
    if (x.g->mma_pos[x.lane] == __enc::sgm_max_ops) __enc::sgm_compute(x.g);
    if (x.g->mma_pos[x.lane] == __enc::sgm_max_ops) {
      __enc::sgm_fail_unreached(what, x.lane, " multiplies", __enc::sgm_max_ops, __line);
      return;
    }
  }
  const unsigned serial = x.g->serial;
  const int sa = a.__slot_in(bt, serial, x.lane), sb = b.__slot_in(bt, serial, x.lane);
  const int sc = c.__op >= 0 && c.__serial == serial ? -1 - c.__op : c.__slot_in(bt, serial, x.lane);
  unsigned k = x.g->mma_pos[x.lane]++;
  __enc::sgm_op& op = bt->ops[k];
  if (k == x.g->mma_count) {  // the first lane here: its operands' places are the op's
    x.g->mma_count++;
    x.g->mma_line[k] = __line;
    op.kind = __enc::sgm_kind<TD>();
    op.src[__enc::sgm_a] = sa;
    op.src[__enc::sgm_b] = sb;
    op.src[__enc::sgm_c] = sc;
    op.mixed[0] = op.mixed[1] = op.mixed[2] = 0;
  } else if (__builtin_expect(x.g->mma_line[k] != __line, 0)) {
    __enc::sgm_fail_line(what, x.lane, __line, x.g->mma_line[k]);
    return;
  } else {
    __enc::sgm_note(bt, op, k, __enc::sgm_a, sa, x.lane);
    __enc::sgm_note(bt, op, k, __enc::sgm_b, sb, x.lane);
    __enc::sgm_note(bt, op, k, __enc::sgm_c, sc, x.lane);
  }
  if (d.__op >= 0 && d.__serial == serial) bt->ops[d.__op].dst[x.lane] = nullptr;  // d.__forget()
  op.dst[x.lane] = &d;
  d.__op = int(k);
  d.__slot = -1;
  d.__serial = serial;
}
template <class TD, class TA, class TB>
__ENC_INLINE void simdgroup_multiply(thread simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                     const simdgroup_matrix<TB, 8, 8>& b, unsigned __line = __builtin_LINE()) {
  simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<TD, 8, 8>(TD(0)), __line);
}
}  // namespace metal
#endif

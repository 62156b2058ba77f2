// MetalPerformancePrimitives: mpp::tensor_ops::matmul2d (Metal 4), the subset a GEMM needs.
// destination (=|+=) left * right over an m x n tile, K from the descriptor or the left operand.
// Operands are rank-2 tensors (extent 0 innermost): left is (K, M), or (M, K) when transposed;
// right is (N, K), or (K, N) when transposed; the destination is (N, M), a tensor or a
// cooperative_tensor from get_destination_cooperative_tensor(). Elements outside an operand's
// extents read as 0 and destination elements outside its extents are not written (Apple's edge
// checking). Products accumulate in float (int for int8 operands), in ascending k, and are rounded
// once to the destination type; relaxed_precision changes nothing here.
// Every thread of the execution scope must call run(): a call by part of the scope is reported.
// Debug builds report the threadgroup elements run() reads and writes to the race detector (tensor.h).
#ifndef ENCELADUS_MATMUL2D_H
#define ENCELADUS_MATMUL2D_H
#include "tensor.h"

namespace mpp {
namespace tensor_ops {
struct matmul2d_descriptor {
  enum class mode { multiply, multiply_accumulate };
  int m, n, k;
  bool transpose_left, transpose_right;
  bool relaxed_precision;
  mode matmul_mode;
  constexpr matmul2d_descriptor(int __m, int __n, int __k = static_cast<int>(metal::dynamic_extent),
                                bool __transpose_left = false, bool __transpose_right = false,
                                bool __relaxed_precision = false, mode __matmul_mode = mode::multiply)
      : m(__m), n(__n), k(__k), transpose_left(__transpose_left), transpose_right(__transpose_right),
        relaxed_precision(__relaxed_precision), matmul_mode(__matmul_mode) {}
};

namespace __mm {
using namespace metal::__enc;

// Element types (left, right, destination) of Apple's table for macOS 26.x (bfloat: 26.1+).
template <class L, class R, class D> struct combo { static constexpr bool value = false; };
#define __ENC_MM_COMBO(L, R, D) template <> struct combo<L, R, D> { static constexpr bool value = true; };
__ENC_MM_COMBO(half, half, half) __ENC_MM_COMBO(half, half, float) __ENC_MM_COMBO(half, float, float)
__ENC_MM_COMBO(float, half, float) __ENC_MM_COMBO(float, float, float)
__ENC_MM_COMBO(bfloat, bfloat, bfloat) __ENC_MM_COMBO(bfloat, bfloat, float) __ENC_MM_COMBO(bfloat, float, float)
__ENC_MM_COMBO(float, bfloat, float) __ENC_MM_COMBO(bfloat, half, bfloat) __ENC_MM_COMBO(bfloat, half, half)
__ENC_MM_COMBO(bfloat, half, float) __ENC_MM_COMBO(half, bfloat, bfloat) __ENC_MM_COMBO(half, bfloat, half)
__ENC_MM_COMBO(half, bfloat, float)
__ENC_MM_COMBO(int8_t, int8_t, int32_t) __ENC_MM_COMBO(uint8_t, uint8_t, int32_t)
__ENC_MM_COMBO(char, char, int32_t)
#undef __ENC_MM_COMBO

template <class D> struct acc_type { typedef float type; };
template <> struct acc_type<int32_t> { typedef int type; };

// Implementation-defined distribution of the destination tile over the scope's threads: element i
// of thread t is tile element i * Threads + t in row-major (row, column) order. Generated code must
// not assume it: use get_multidimensional_index / is_valid_element, load and store.
template <matmul2d_descriptor D, int Threads, class LE, class RE> struct dest_layout {
  static constexpr int M = D.m, N = D.n;
  static constexpr unsigned capacity = unsigned((M * N + Threads - 1) / Threads);
  __ENC_INLINE static bool coord(unsigned tid, unsigned i, int* i0, int* i1) {
    long lin = long(i) * Threads + long(tid);
    if (i >= capacity || tid >= unsigned(Threads) || lin >= long(M) * N) return false;
    *i0 = int(lin % N);
    *i1 = int(lin / N);
    return true;
  }
};
template <class T> struct is_coop { static constexpr bool value = false; };
template <class E, class X, class Lay> struct is_coop<metal::cooperative_tensor<E, X, Lay>> {
  static constexpr bool value = true;
};
template <class T, bool Coop = is_coop<T>::value> struct dest_elem { typedef typename T::element_type type; };

// Rendezvous of the execution scope at run(); returns this thread's index in the scope.
template <class Scope> __ENC_INLINE unsigned enter(unsigned line) {
  if (is_same<Scope, metal::execution_thread>::value) return 0;
  if (is_same<Scope, metal::execution_simdgroup>::value) {
    unsigned lane;
    rt->simd_exchange(nullptr, 0, "matmul2d::run (execution_simdgroup)", line, 1, &lane);
    return lane;
  }
  const EncThread* t = rt->current_thread();
  unsigned total = t->tptg[0] * t->tptg[1] * t->tptg[2];
  if (total != unsigned(Scope::__threads)) {
    msg m;
    m.s("matmul2d with execution_simdgroups<").i(Scope::__threads / 32).s("> run by a threadgroup of ").i(total)
        .s(" threads: the threadgroup must consist of exactly that many SIMD groups of 32 threads "
           "(undefined behaviour on a GPU)");
    rt->fail(m.b, line);
  }
  rt->barrier(ENC_BARRIER_SCOPE, 0, "matmul2d::run", line);
  return t->tiitg;
}
}  // namespace __mm

template <matmul2d_descriptor Descriptor, typename Scope, class... Args> class matmul2d {
  static_assert(metal::__enc::is_scope<Scope>::value,
                "matmul2d: Scope must be execution_thread, execution_simdgroup or execution_simdgroups<N>");
  static_assert(Descriptor.m > 0 && Descriptor.n > 0, "matmul2d_descriptor: m and n must be positive");
  static_assert(Descriptor.k == -1 || Descriptor.k > 0,
                "matmul2d_descriptor: k must be positive or dynamic_extent");
  static_assert(Descriptor.k == -1 || Descriptor.k % 32 == 0,
                "matmul2d_descriptor: a static k must be a multiple of 32 (macOS 26.1 Metal compiler); "
                "use 32, 64, ... or static_cast<int>(dynamic_extent) and slice the operands");
#ifdef ENC_TEST_MATMUL2D_REJECTS_8X8
  // a deliberately wrong twin for the probe tests: a matmul2d that refuses 8x8 tiles (as Apple's may, MSL_AUDIT D1)
  static_assert(!(Descriptor.m == 8 && Descriptor.n == 8), "matmul2d (test twin): 8x8 tiles are not supported");
#endif
  static constexpr int __threads = Scope::__threads;

 public:
  static constexpr matmul2d_descriptor descriptor = Descriptor;
  using scope = Scope;
  matmul2d() = default;

  template <class LeftOperand, class RightOperand, class ElementType, class CoordType = int>
  using cooperative_tensor_destination_t = metal::cooperative_tensor<
      ElementType, metal::dextents<CoordType, 2>,
      __mm::dest_layout<Descriptor, __threads,
                        typename metal::__enc::remove_cv<LeftOperand>::type::element_type,
                        typename metal::__enc::remove_cv<RightOperand>::type::element_type>>;

  template <class LeftOperand, class RightOperand, class ElementType, class CoordType = int>
  __ENC_INLINE cooperative_tensor_destination_t<LeftOperand, RightOperand, ElementType, CoordType>
  get_destination_cooperative_tensor() const {
    typedef typename metal::__enc::remove_cv<LeftOperand>::type LT;
    typedef typename metal::__enc::remove_cv<RightOperand>::type RT;
    static_assert(metal::__enc::is_tensor<LT>::value && metal::__enc::is_tensor<RT>::value,
                  "get_destination_cooperative_tensor<Left, Right, ElementType>: Left and Right must be the "
                  "operand tensor types (e.g. decltype(mA)); cooperative operands are not supported here");
    static_assert(__mm::combo<typename LT::element_type, typename RT::element_type, ElementType>::value,
                  "matmul2d: unsupported (left, right, destination) element types; Metal supports e.g. "
                  "half*half->half/float, float*float->float, half*float->float, bfloat*bfloat->bfloat/float "
                  "(macOS 26.1), int8*int8->int32");
    return cooperative_tensor_destination_t<LeftOperand, RightOperand, ElementType, CoordType>(
        metal::__enc::scope_thread_index<Scope>());
  }

  // Apple's run() takes its operands by non-const lvalue reference: name the slices first.
  template <class LeftOperand, class RightOperand, class DestinationOperand>
  __ENC_INLINE void run(LeftOperand& left, RightOperand& right, DestinationOperand& destination,
                        unsigned __line = __builtin_LINE()) const {
    using namespace metal::__enc;
    typedef typename remove_cv<LeftOperand>::type LT;
    typedef typename remove_cv<RightOperand>::type RT;
    typedef typename remove_cv<DestinationOperand>::type DT;
    static_assert(is_tensor<LT>::value && is_tensor<RT>::value,
                  "matmul2d::run: left and right must be tensors (cooperative operand tensors are not supported "
                  "by the Enceladus cpu backend)");
    static_assert(LT::__rank == 2 && RT::__rank == 2, "matmul2d::run: operands must be rank-2 tensors");
    typedef typename LT::element_type LE;
    typedef typename RT::element_type RE;
    static_assert(!is_const<LE>::value && !is_const<RE>::value,
                  "matmul2d::run: operand tensors with a const element type (tensor<device const half, ...>) are "
                  "rejected by the Metal compiler (macOS 26.x); use a non-const element type");
    constexpr bool coop = __mm::is_coop<DT>::value;
    static_assert(coop || is_tensor<DT>::value, "matmul2d::run: the destination must be a tensor or a cooperative_tensor");
    typedef typename remove_cv<typename __mm::dest_elem<DT>::type>::type DE;
    static_assert(!is_const<typename __mm::dest_elem<DT>::type>::value, "matmul2d::run: the destination is const");
    static_assert(__mm::combo<typename remove_cv<LE>::type, typename remove_cv<RE>::type, DE>::value,
                  "matmul2d: unsupported (left, right, destination) element types; Metal supports e.g. "
                  "half*half->half/float, float*float->float, half*float->float, bfloat*bfloat->bfloat/float "
                  "(macOS 26.1), int8*int8->int32");
    typedef typename __mm::acc_type<DE>::type Acc;
    constexpr bool accumulate = Descriptor.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
    if constexpr (coop) {
      static_assert(is_same<typename DT::__layout, __mm::dest_layout<Descriptor, __threads, LE, RE>>::value,
                    "matmul2d::run: the destination cooperative_tensor comes from another matmul2d (other "
                    "descriptor, scope or operand types): create it with this op's get_destination_cooperative_tensor");
    }
    unsigned tid = __mm::enter<Scope>(__line);
    if constexpr (coop) {
      if (destination.__tid != tid) {
        rt->fail("matmul2d::run: the destination cooperative_tensor belongs to another thread of the scope", __line);
      }
    } else {
      static_assert(DT::__rank == 2, "matmul2d::run: the destination must be a rank-2 tensor");
    }
    const long KL = long(Descriptor.transpose_left ? left.__ext.extent(1) : left.__ext.extent(0));
    const long KR = long(Descriptor.transpose_right ? right.__ext.extent(0) : right.__ext.extent(1));
    const long K = Descriptor.k >= 0 ? long(Descriptor.k) : KL;
    if (Descriptor.k >= 0 ? (KL < K || KR < K) : KL != KR) {
      msg m;
      if (Descriptor.k >= 0)
        m.s("matmul2d::run with a static k = ").i(K).s(" on operands with K extents ").i(KL).s(" (left) and ").i(KR)
            .s(" (right): with a static k Metal does not bounds-check K and reads past the operand "
               "(undefined behaviour on a GPU); use a dynamic k (static_cast<int>(dynamic_extent)) for a partial K tile");
      else
        m.s("matmul2d::run with a dynamic k: the left operand's K extent (").i(KL)
            .s(") differs from the right operand's (").i(KR).s("); slice both to the same K extent");
      rt->fail(m.b, __line);
    }
    typedef __mm::dest_layout<Descriptor, __threads, LE, RE> Layout;
    for (unsigned i = 0; i < Layout::capacity; ++i) {
      int col, row;
      if (!Layout::coord(tid, i, &col, &row)) continue;
      Acc acc = Acc(0);
      for (long k = 0; k < K; ++k) {
        const LE* a = Descriptor.transpose_left ? element_ptr(left, row, k, "matmul2d::run (left)", __line)
                                                : element_ptr(left, k, row, "matmul2d::run (left)", __line);
        const RE* b = Descriptor.transpose_right ? element_ptr(right, k, col, "matmul2d::run (right)", __line)
                                                 : element_ptr(right, col, k, "matmul2d::run (right)", __line);
        tensor_access(a, 0, "matmul2d::run (left operand)");
        tensor_access(b, 0, "matmul2d::run (right operand)");
        if (a && b) acc += Acc(*a) * Acc(*b);
      }
      if constexpr (coop) {
        destination.__v[i] = DE(accumulate ? Acc(destination.__v[i]) + acc : acc);
      } else {
        DE* c = element_ptr(destination, col, row, "matmul2d::run (destination)", __line);
        if (accumulate) tensor_access(c, 0, "matmul2d::run (destination)");
        if (c) *c = DE(accumulate ? Acc(*c) + acc : acc);
        tensor_access(c, 1, "matmul2d::run (destination)");
      }
    }
  }
};
}  // namespace tensor_ops
}  // namespace mpp
#endif

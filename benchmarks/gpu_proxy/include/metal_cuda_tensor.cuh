// Metal 4 tensors and mpp::tensor_ops::matmul2d on CUDA, for the GPU proxy: rank-2 tensors over
// threadgroup or device memory (tensor_inline), execution scopes, the destination cooperative_tensor
// (element i of thread t is linear element i * threads + t, as in the cpu backend), and run() as a scalar
// loop after a threadgroup barrier. Correct, slow: says nothing about Apple's tensor hardware.
#pragma once

namespace metal {
typedef unsigned long size_t_enc;
constexpr size_t_enc dynamic_extent = size_t_enc(-1);
struct tensor_inline {};
template <class I, size_t_enc... E> struct extents {
  static constexpr int __rank = int(sizeof...(E));
  I __e[sizeof...(E)];
  ENC_D constexpr extents() : __e{} {}
  template <class... A> ENC_D constexpr extents(A... a) : __e{I(a)...} {}
  ENC_D constexpr I extent(int r) const { return __e[r]; }
  ENC_D static constexpr int rank() { return __rank; }
};
template <class I, int R> struct dext;
template <class I> struct dext<I, 1> { typedef extents<I, dynamic_extent> type; };
template <class I> struct dext<I, 2> { typedef extents<I, dynamic_extent, dynamic_extent> type; };
template <class I, int R> using dextents = typename dext<I, R>::type;

template <class T, class Extents, class Layout = tensor_inline> struct tensor {
  typedef T element_type;
  typedef typename std::remove_cv<T>::type value_type;
  static constexpr int __rank = Extents::__rank;
  T* __data;
  Extents __ext;
  long __stride[Extents::__rank];
  ENC_D tensor(T* data, Extents ext) : __data(data), __ext(ext) {
    long s = 1;
    for (int r = 0; r < __rank; ++r) {
      __stride[r] = s;
      s *= long(ext.extent(r));
    }
  }
  template <class S> ENC_D tensor(T* data, Extents ext, const S& strides) : __data(data), __ext(ext) {
    for (int r = 0; r < __rank; ++r) __stride[r] = long(strides[r]);
  }
  ENC_D Extents get_extents() const { return __ext; }
  ENC_D long get_extent(int r) const { return long(__ext.extent(r)); }
};

struct execution_thread { static constexpr int __threads = 1; };
struct execution_simdgroup { static constexpr int __threads = 32; };
template <int N> struct execution_simdgroups { static constexpr int __threads = 32 * N; };

namespace __enc {
template <class Tn> ENC_D typename Tn::element_type* element_ptr(const Tn& t, long i0, long i1) {
  if (i0 < 0 || i1 < 0 || i0 >= long(t.__ext.extent(0)) || i1 >= long(t.__ext.extent(1))) return nullptr;
  return t.__data + i0 * t.__stride[0] + i1 * t.__stride[1];
}
template <class Scope> ENC_D uint scope_thread_index() {
  if (Scope::__threads == 1) return 0;
  if (Scope::__threads == 32) return threadIdx.x & 31u;
  return threadIdx.x;
}
}  // namespace __enc

template <class ElementType, class Extents, class Layout> struct cooperative_tensor {
  typedef ElementType element_type;
  typedef Layout __layout;
  ElementType __v[Layout::capacity];
  uint __tid;
  ENC_D explicit cooperative_tensor(uint tid = 0) : __v{}, __tid(tid) {}
  ENC_D static constexpr ushort get_capacity() { return ushort(Layout::capacity); }
  ENC_D bool is_valid_element(ushort i) const {
    int a, b;
    return Layout::coord(__tid, i, &a, &b);
  }
  ENC_D vec<int, 2> get_multidimensional_index(ushort i) const {
    int a = 0, b = 0;
    Layout::coord(__tid, i, &a, &b);
    return vec<int, 2>(a, b);
  }
  ENC_D ElementType& operator[](ushort i) { return __v[i]; }
  ENC_D const ElementType& operator[](ushort i) const { return __v[i]; }
};
}  // namespace metal

namespace mpp {
namespace tensor_ops {
struct matmul2d_descriptor {
  enum class mode { multiply, multiply_accumulate };
  int m, n, k;
  bool transpose_left, transpose_right, relaxed_precision;
  mode matmul_mode;
  __host__ __device__ constexpr matmul2d_descriptor(int m_, int n_, int k_ = -1, bool tl = false, bool tr = false, bool rp = false,
                                mode md = mode::multiply)
      : m(m_), n(n_), k(k_), transpose_left(tl), transpose_right(tr), relaxed_precision(rp), matmul_mode(md) {}
};
namespace __mm {
template <matmul2d_descriptor D, int Threads> struct dest_layout {
  static constexpr int M = D.m, N = D.n;
  static constexpr unsigned capacity = unsigned((M * N + Threads - 1) / Threads);
  ENC_D static bool coord(unsigned tid, unsigned i, int* i0, int* i1) {
    const long lin = long(i) * Threads + long(tid);
    if (i >= capacity || tid >= unsigned(Threads) || lin >= long(M) * N) return false;
    *i0 = int(lin % N);
    *i1 = int(lin / N);
    return true;
  }
};
template <class D> struct acc_type { typedef float type; };
template <> struct acc_type<int32_t> { typedef int type; };
}  // namespace __mm

template <matmul2d_descriptor Descriptor, typename Scope, class... Args> class matmul2d {
  static constexpr int __threads = Scope::__threads;
  typedef __mm::dest_layout<Descriptor, __threads> Layout;

 public:
  matmul2d() = default;
  template <class L, class R, class E, class CoordType = int>
  ENC_D metal::cooperative_tensor<E, metal::dextents<CoordType, 2>, Layout> get_destination_cooperative_tensor() const {
    return metal::cooperative_tensor<E, metal::dextents<CoordType, 2>, Layout>(metal::__enc::scope_thread_index<Scope>());
  }
  template <class LT, class RT, class DT> ENC_D void run(LT& left, RT& right, DT& destination) const {
    typedef typename std::remove_cv<typename DT::element_type>::type DE;
    typedef typename __mm::acc_type<DE>::type Acc;
    constexpr bool accumulate = Descriptor.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
    if (__threads > 32) {
      __syncthreads();  // the operands were written by other SIMD groups
    } else if (__threads == 32) {
      __syncwarp(ENC_FULL_MASK);
    }
    const long KL = long(Descriptor.transpose_left ? left.__ext.extent(1) : left.__ext.extent(0));
    const long K = Descriptor.k >= 0 ? long(Descriptor.k) : KL;
    const uint tid = destination.__tid;
    for (unsigned i = 0; i < Layout::capacity; ++i) {
      int col, row;
      if (!Layout::coord(tid, i, &col, &row)) continue;
      Acc acc = Acc(0);
      for (long k = 0; k < K; ++k) {
        const auto* a = Descriptor.transpose_left ? metal::__enc::element_ptr(left, row, k)
                                                  : metal::__enc::element_ptr(left, k, row);
        const auto* b = Descriptor.transpose_right ? metal::__enc::element_ptr(right, k, col)
                                                   : metal::__enc::element_ptr(right, col, k);
        if (a && b) acc += Acc(*a) * Acc(*b);
      }
      destination.__v[i] = DE(accumulate ? Acc(destination.__v[i]) + acc : acc);
    }
  }
};
}  // namespace tensor_ops
}  // namespace mpp

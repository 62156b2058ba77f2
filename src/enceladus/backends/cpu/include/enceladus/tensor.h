// Metal 4 tensors (<metal_tensor>): extents, dextents, array, tensor<...> views of device or
// threadgroup memory (tensor_inline), slices, execution scopes and cooperative_tensor.
// Spellings follow Apple's MetalPerformancePrimitives header comments and public code that uses
// them; where Apple does not document a name (accessors), docs/cpu_backend.md says what we chose.
// Extent 0 is the innermost (fastest varying) dimension: a row-major M x K matrix is
// dextents<int32_t, 2>(K, M) with strides {1, K}.
#ifndef ENCELADUS_TENSOR_H
#define ENCELADUS_TENSOR_H
#include "sync.h"
#include "checked.h"

namespace metal {
constexpr size_t dynamic_extent = size_t(-1);
template <class T> constexpr T dynamic_length_v = T(-1);
template <class T> using __remove_addrspace_t = T;  // address spaces are empty here (core.h)

// metal::array (aggregate: array<int, 2>{1, stride} and array<int, 2>({1, stride}) both work).
template <class T, size_t N> struct array {
  T __elems[N];
  __ENC_INLINE constexpr T& operator[](size_t i) { return __elems[i]; }
  __ENC_INLINE constexpr const T& operator[](size_t i) const { return __elems[i]; }
  __ENC_INLINE static constexpr size_t size() { return N; }
  __ENC_INLINE constexpr T* data() { return __elems; }
  __ENC_INLINE constexpr const T* data() const { return __elems; }
};

template <class I, size_t... E> struct extents {
  static_assert(__enc::is_integral<I>::value, "extents: the index type must be an integer type");
  static_assert(sizeof...(E) >= 1, "extents: rank 0 tensors are not supported");
  typedef I index_type;
  static constexpr size_t __st[sizeof...(E)] = {E...};
  I __e[sizeof...(E)];
  __ENC_INLINE static constexpr size_t rank() { return sizeof...(E); }
  __ENC_INLINE static constexpr size_t rank_dynamic() {
    size_t n = 0;
    for (size_t r = 0; r < sizeof...(E); ++r) n += __st[r] == dynamic_extent;
    return n;
  }
  __ENC_INLINE static constexpr size_t static_extent(size_t r) { return __st[r]; }
  __ENC_INLINE constexpr I extent(size_t r) const { return __e[r]; }
  __ENC_INLINE constexpr extents() : __e{} {
    for (size_t r = 0; r < rank(); ++r) __e[r] = __st[r] == dynamic_extent ? I(0) : I(__st[r]);
  }
  // Either one value per dynamic extent or one value per extent (as std::extents).
  template <class... J, class = __enc::enable_if_t<sizeof...(J) != 0 &&
                                                  (sizeof...(J) == rank_dynamic() || sizeof...(J) == rank())>>
  __ENC_INLINE constexpr extents(J... values) : __e{} {
    const I v[] = {I(values)...};
    size_t d = 0;
    for (size_t r = 0; r < rank(); ++r) {
      if (sizeof...(J) == rank()) __e[r] = v[r];
      else __e[r] = __st[r] == dynamic_extent ? v[d++] : I(__st[r]);
    }
  }
};

namespace __enc {
template <class I, size_t R, size_t... E> struct dext : dext<I, R - 1, dynamic_extent, E...> {};
template <class I, size_t... E> struct dext<I, 0, E...> { typedef extents<I, E...> type; };
template <class T> struct is_const { static constexpr bool value = false; };
template <class T> struct is_const<const T> { static constexpr bool value = true; };
}  // namespace __enc
template <class I, size_t R> using dextents = typename __enc::dext<I, R>::type;

// Descriptor types. Only tensor_inline (a view built in the shader from a pointer) is backed here;
// tensor_handle parameters bound from an MTLTensor are not supported by the cpu launcher.
struct tensor_handle {};
struct tensor_inline {};
struct tensor_offset {};

template <class ElementType, class Extents, class Descriptor = tensor_handle, class... Tags> struct tensor {
  typedef ElementType element_type;
  typedef Extents extents_type;
  typedef typename Extents::index_type index_type;
  static constexpr size_t __rank = Extents::rank();

  ElementType* __data;
  Extents __ext;
  index_type __stride[__rank];
  // Elements that exist from this view's origin on (the root's extents minus the slice origins).
  // A static slice may claim more than exists: touching that part fails loudly (undefined on a GPU).
  index_type __lim[__rank];

  __ENC_INLINE tensor() : __data(nullptr), __ext(), __stride{}, __lim{} {}
  // Packed strides: stride(0) = 1, stride(d) = stride(d-1) * extent(d-1).
  __ENC_INLINE tensor(ElementType* data, const Extents& e) : __data(data), __ext(e), __stride{}, __lim{} {
    index_type s = 1;
    for (size_t d = 0; d < __rank; ++d) {
      __stride[d] = s;
      s *= e.extent(d);
      __lim[d] = e.extent(d);
    }
  }
  template <class S>
  __ENC_INLINE tensor(ElementType* data, const Extents& e, const array<S, __rank>& strides)
      : __data(data), __ext(e), __stride{}, __lim{} {
    for (size_t d = 0; d < __rank; ++d) {
      __stride[d] = index_type(strides[d]);
      __lim[d] = e.extent(d);
    }
  }

  // Checked builds: a tensor over a checked pointer must lie within what the pointer may touch.
  __ENC_INLINE tensor(__enc::cptr<ElementType> data, const Extents& e) : tensor(data.__p, e) { __check_span(data); }
  template <class S>
  __ENC_INLINE tensor(__enc::cptr<ElementType> data, const Extents& e, const array<S, __rank>& strides)
      : tensor(data.__p, e, strides) {
    __check_span(data);
  }
  __ENC_INLINE void __check_span(const __enc::cptr<ElementType>& p) const {
    long last = 0;
    for (size_t d = 0; d < __rank; ++d) {
      if (__ext.extent(d) == 0) return;  // no elements
      last += long(__ext.extent(d) - 1) * long(__stride[d]);
    }
    (void)__enc::checked_span(p, (unsigned long)(last + 1), ENC_ACC_ACCESS, p.__line);
  }

  __ENC_INLINE Extents get_extents() const { return __ext; }
  __ENC_INLINE Extents extents() const { return __ext; }
  __ENC_INLINE index_type get_extent(size_t d) const { return __ext.extent(d); }
  __ENC_INLINE index_type get_stride(size_t d) const { return __stride[d]; }
  __ENC_INLINE array<index_type, __rank> get_strides() const {
    array<index_type, __rank> s;
    for (size_t d = 0; d < __rank; ++d) s[d] = __stride[d];
    return s;
  }
  __ENC_INLINE ElementType* get_data_pointer() const { return __data; }

  // slice(o0, o1, ...): same rank, origin moved; dynamic extents = what remains after the origin.
  template <class... O, class = __enc::enable_if_t<sizeof...(O) == __rank>>
  __ENC_INLINE tensor<ElementType, dextents<index_type, __rank>, Descriptor, Tags...> slice(O... origin) const {
    const index_type o[] = {index_type(origin)...};
    return __slice<dextents<index_type, __rank>>(o);
  }
  // slice<E0, E1, ...>(o0, o1, ...): static extents (dynamic_extent: what remains).
  template <size_t... E, class... O, class = __enc::enable_if_t<sizeof...(E) == __rank && sizeof...(O) == __rank>>
  __ENC_INLINE tensor<ElementType, metal::extents<index_type, E...>, Descriptor, Tags...> slice(O... origin) const {
    const index_type o[] = {index_type(origin)...};
    return __slice<metal::extents<index_type, E...>>(o);
  }
  template <size_t... E, class... O, class = __enc::enable_if_t<sizeof...(E) == __rank && sizeof...(O) == __rank>>
  __ENC_INLINE tensor<ElementType, metal::extents<index_type, E...>, Descriptor, Tags...> static_slice(O... origin) const {
    const index_type o[] = {index_type(origin)...};
    return __slice<metal::extents<index_type, E...>>(o);
  }

  template <class NE> __ENC_INLINE tensor<ElementType, NE, Descriptor, Tags...> __slice(const index_type* o) const {
    tensor<ElementType, NE, Descriptor, Tags...> t;
    long off = 0;
    for (size_t d = 0; d < __rank; ++d) {
      off += long(o[d]) * long(__stride[d]);
      index_type rest = __ext.extent(d) > o[d] ? index_type(__ext.extent(d) - o[d]) : index_type(0);
      t.__ext.__e[d] = NE::static_extent(d) == dynamic_extent ? rest : index_type(NE::static_extent(d));
      t.__stride[d] = __stride[d];
      t.__lim[d] = __lim[d] > o[d] ? index_type(__lim[d] - o[d]) : index_type(0);
    }
    t.__data = __data + off;
    return t;
  }
};

template <class T, class I, size_t... E> tensor(T*, extents<I, E...>) -> tensor<T, extents<I, E...>, tensor_inline>;
template <class T, class I, size_t... E>
tensor(__enc::cptr<T>, extents<I, E...>) -> tensor<T, extents<I, E...>, tensor_inline>;
template <class T, class I, size_t... E, class S, size_t R>
tensor(__enc::cptr<T>, extents<I, E...>, array<S, R>) -> tensor<T, extents<I, E...>, tensor_inline>;
template <class T, class I, size_t... E, class S, size_t R>
tensor(T*, extents<I, E...>, array<S, R>) -> tensor<T, extents<I, E...>, tensor_inline>;

// Execution scopes: which threads run one tensor operation together.
struct execution_thread {
  static constexpr int __threads = 1;
};
struct execution_simdgroup {
  static constexpr int __threads = 32;
};
template <int N> struct execution_simdgroups {
  static_assert(N >= 1, "execution_simdgroups<N>: N must be at least 1");
  static constexpr int __threads = 32 * N;
  static constexpr int __simdgroups = N;
};

namespace __enc {
template <class T> struct is_tensor { static constexpr bool value = false; };
template <class T, class E, class D, class... G> struct is_tensor<tensor<T, E, D, G...>> {
  static constexpr bool value = true;
};
template <class T> struct is_simdgroups_scope { static constexpr bool value = false; };
template <int N> struct is_simdgroups_scope<execution_simdgroups<N>> { static constexpr bool value = true; };
template <class T> struct is_scope { static constexpr bool value = is_simdgroups_scope<T>::value; };
template <> struct is_scope<execution_thread> { static constexpr bool value = true; };
template <> struct is_scope<execution_simdgroup> { static constexpr bool value = true; };

// A small message builder for runtime errors (no C library here).
struct msg {
  char b[320];
  unsigned n = 0;
  __ENC_INLINE msg() { b[0] = 0; }
  __ENC_INLINE msg& s(const char* t) {
    while (*t && n + 1 < sizeof b) b[n++] = *t++;
    b[n] = 0;
    return *this;
  }
  __ENC_INLINE msg& i(long v) {
    char d[24];
    int k = 0;
    unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
    do { d[k++] = char('0' + u % 10); u /= 10; } while (u);
    if (v < 0) d[k++] = '-';
    while (k && n + 1 < sizeof b) b[n++] = d[--k];
    b[n] = 0;
    return *this;
  }
};

// This thread's index within an execution scope.
template <class Scope> __ENC_INLINE unsigned scope_thread_index() {
  const EncThread* t = rt->current_thread();
  if (is_same<Scope, execution_thread>::value) return 0;
  if (is_same<Scope, execution_simdgroup>::value) return t->lane;
  return t->tiitg;
}

// Element of a rank-2 tensor at (i0, i1) (extent-0 index first), or 0 outside its extents (the
// edge checking of tensor operations). Outside the memory that exists behind a static slice: loud.
// Debug builds (race.h included before this header): a tensor operation reports each threadgroup element it reads
// (is_write 0) or writes (1) to the race detector, as the threadgroup proxies do for element accesses, so a barrier
// missing between a staging write and a matmul2d::run reading it (or between run and the next staging) is
// reported. The runtime ignores addresses outside threadgroup memory; other builds compile this to nothing.
template <class T> __ENC_INLINE void tensor_access(const T* p, int is_write, const char* what) {
#ifdef ENCELADUS_RACE_H
  if (p) rt->tg_access(p, p, sizeof(T), is_write, what);
#else
  (void)p; (void)is_write; (void)what;
#endif
}

template <class Tn> __ENC_INLINE typename Tn::element_type* element_ptr(const Tn& t, long i0, long i1, const char* what,
                                                                      unsigned line) {
  if (i0 < 0 || i1 < 0 || i0 >= long(t.__ext.extent(0)) || i1 >= long(t.__ext.extent(1))) return nullptr;
  if (i0 >= long(t.__lim[0]) || i1 >= long(t.__lim[1])) {
    msg m;
    m.s(what).s(" touches element (").i(i0).s(", ").i(i1)
        .s(") of a tensor slice whose static extents reach past the end of the tensor it was sliced from "
           "(undefined behaviour on a GPU)");
    rt->fail(m.b, line);
    return nullptr;
  }
  return t.__data + i0 * long(t.__stride[0]) + i1 * long(t.__stride[1]);
}
}  // namespace __enc

// A tensor whose elements are spread over the threads of an execution scope. Layout supplies
// `capacity` and `coord(thread, i, &i0, &i1)` (false: element i of that thread does not exist).
template <class ElementType, class Extents, class Layout> struct cooperative_tensor {
  typedef ElementType element_type;
  typedef Extents extents_type;
  typedef Layout __layout;
  ElementType __v[Layout::capacity];
  unsigned __tid;

  __ENC_INLINE explicit cooperative_tensor(unsigned tid = 0) : __v{}, __tid(tid) {}
  __ENC_INLINE static constexpr uint16_t get_capacity() { return uint16_t(Layout::capacity); }
  __ENC_INLINE bool is_valid_element(uint16_t i) const {
    int a, b;
    return i < Layout::capacity && Layout::coord(__tid, i, &a, &b);
  }
  __ENC_INLINE bool get_mask(uint16_t i) const { return is_valid_element(i); }
  __ENC_INLINE ElementType& operator[](uint16_t i) { return __v[i]; }
  __ENC_INLINE const ElementType& operator[](uint16_t i) const { return __v[i]; }
  // (extent-0 index, extent-1 index) = (column, row) of element i in the operation's tile.
  __ENC_INLINE array<int, 2> get_multidimensional_index(uint16_t i) const {
    array<int, 2> r = {{-1, -1}};
    Layout::coord(__tid, i, &r[0], &r[1]);
    return r;
  }
  // Loads/stores this thread's valid elements from/to a rank-2 tensor with the tile's origin at
  // the tensor's origin; elements outside the tensor's extents are skipped (store) or 0 (load).
  template <class Tn> __ENC_INLINE void load(const Tn& src, unsigned __line = __builtin_LINE()) {
    static_assert(__enc::is_tensor<Tn>::value && Tn::__rank == 2, "cooperative_tensor::load: source must be a rank-2 tensor");
    for (unsigned i = 0; i < Layout::capacity; ++i) {
      int a, b;
      if (!Layout::coord(__tid, i, &a, &b)) continue;
      auto* p = __enc::element_ptr(src, a, b, "cooperative_tensor::load", __line);
      __enc::tensor_access(p, 0, "cooperative_tensor::load (source)");
      __v[i] = p ? ElementType(*p) : ElementType(0);
    }
  }
  template <class Tn> __ENC_INLINE void store(const Tn& dst, unsigned __line = __builtin_LINE()) const {
    static_assert(__enc::is_tensor<Tn>::value && Tn::__rank == 2, "cooperative_tensor::store: destination must be a rank-2 tensor");
    static_assert(!__enc::is_const<typename Tn::element_type>::value,
                  "cooperative_tensor::store: the destination tensor's element type is const");
    for (unsigned i = 0; i < Layout::capacity; ++i) {
      int a, b;
      if (!Layout::coord(__tid, i, &a, &b)) continue;
      auto* p = __enc::element_ptr(dst, a, b, "cooperative_tensor::store", __line);
      if (p) *p = typename __enc::remove_cv<typename Tn::element_type>::type(__v[i]);
      __enc::tensor_access(p, 1, "cooperative_tensor::store (destination)");
    }
  }
};
}  // namespace metal
#endif

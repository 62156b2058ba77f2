"""The MSL spelling of each op, and the helper functions emitted into kernels that need them."""

from __future__ import annotations

from .fp8 import FP8_HELPERS
from .libdevice import LIBDEVICE_MSL, LIBDEVICE_SPECIAL_MSL

BINARY_INFIX = {"add": "+", "sub": "-", "mul": "*", "fdiv": "/", "and": "&", "or": "|", "xor": "^",
                "shl": "<<", "shr": ">>", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
FLOAT_CALL = {"exp": "precise::exp({0})", "exp2": "precise::exp2({0})", "log": "precise::log({0})",
              "log2": "precise::log2({0})", "sqrt": "precise::sqrt({0})", "rsqrt": "enc_rsqrt({0})",
              "sin": "precise::sin({0})", "cos": "precise::cos({0})", "floor": "floor({0})", "ceil": "ceil({0})",
              "erf": "enc_erf({0})", "sigmoid": "(1.0f / (1.0f + precise::exp(-({0}))))",
              "tanh": "precise::tanh({0})", "tan": "precise::tan({0})", "asin": "precise::asin({0})",
              "acos": "precise::acos({0})", "atan": "precise::atan({0})", "sinh": "precise::sinh({0})",
              "cosh": "precise::cosh({0})", "asinh": "precise::asinh({0})", "acosh": "precise::acosh({0})",
              "atanh": "precise::atanh({0})", "log10": "precise::log10({0})", "exp10": "precise::exp10({0})",
              "log1p": "enc_log1p({0})", "expm1": "enc_expm1({0})", "cbrt": "enc_cbrt({0})", "erfc": "enc_erfc({0})",
              "trunc": "trunc({0})", "round": "round({0})", "rint": "rint({0})", "nearbyint": "rint({0})",
              "fabs": "fabs({0})", "isnan": "isnan({0})", "isinf": "isinf({0})", "isfinite": "isfinite({0})",
              "signbit": "signbit({0})", "recip": "enc_recip({0})"}
FLOAT_CALL2 = {"pow": "precise::pow({0}, {1})", "atan2": "precise::atan2({0}, {1})", "copysign": "copysign({0}, {1})",
               "hypot": "enc_hypot({0}, {1})", "fmin": "fmin({0}, {1})", "fmax": "fmax({0}, {1})"}
# fp32 division by a shared divisor (passes/reciprocal_division.py)
FLOAT_CALL3 = {"fdiv_recip": "enc_div_recip({0}, {1}, {2})"}
# helpers a table entry needs (emitted once into kernels that use them)
NEEDS = {"rsqrt": "enc_rsqrt", "erf": "enc_erf", "erfc": "enc_erf", "log1p": "enc_extra", "expm1": "enc_extra", "cbrt": "enc_extra",
         "hypot": "enc_extra", "recip": "enc_recip", "fdiv_recip": "enc_recip"}

HELPERS = {
    "enc_libdevice": LIBDEVICE_MSL,
    "enc_libdevice_special": LIBDEVICE_SPECIAL_MSL,
    "enc_rsqrt": """// tl.rsqrt: fast::rsqrt, whose bound (MSL Table 8.2: <= 2 ulp) equals that of CUDA's rsqrtf, Triton's lowering.
// Only on normal finite inputs: fast math leaves INF/NaN undefined (MSL 8.1), so 0, subnormals, INF, negative
// inputs and NaN take precise::rsqrt (correctly rounded, Table 8.1). docs/floating_point.md has every function.
static inline float enc_rsqrt(float x) {
    return (x >= 1.17549435e-38f && x <= 3.40282347e38f) ? fast::rsqrt(x) : precise::rsqrt(x);
}""",
    "enc_recip": """// fp32 division by a divisor many elements share (compiler/passes/reciprocal_division.py): a thread takes
// the reciprocal once per divisor value it holds, and each quotient is one multiply, within 1.5 ulp of the exact
// quotient (Triton's div.full.f32: 2 ulp). Divisors outside [2^-126, 2^126], infinite or NaN operands and
// quotients near overflow take IEEE division, so they get its exact answer. Proof: docs/floating_point.md.
static inline float enc_recip(float d) {
    const float a = fabs(d);  // 2^-126 <= |d| <= 2^126: 1/d is a normal float, rounded once
    return (a >= 1.17549435e-38f && a <= 8.50705917e37f) ? 1.0f / d : INFINITY;
}
static inline float enc_div_recip(float x, float d, float r) {
    const float q = x * r;
    if (fabs(q) < 1.70141183e38f) return q;  // |q| < 2^127: x / d does not overflow
    return x / d;  // r = inf (d out of range), x infinite or NaN, or |x / d| near 2^128
}
// |x| <= enc_div_limit(d, r) proves |x * r| < 2^127, so enc_div_recip(x, d, r) = x * r (the emitter tests a
// thread's whole tile this way, then multiplies); r = inf (d out of range) gives -1: no x passes.
static inline float enc_div_limit(float d, float r) {
    return r != INFINITY ? 8.50705917e37f * fabs(d) : -1.0f;  // 2^126 |d|, exact (or inf where |d| >= 4)
}""",
    "enc_umulhi64": """// The high 64 bits of a 64x64-bit unsigned product, from 32-bit halves.
static inline ulong enc_umulhi64(ulong a, ulong b) {
    const ulong al = a & 0xFFFFFFFFul, ah = a >> 32, bl = b & 0xFFFFFFFFul, bh = b >> 32;
    const ulong ll = al * bl, m1 = ah * bl + (ll >> 32), m2 = al * bh + (m1 & 0xFFFFFFFFul);
    return ah * bh + (m1 >> 32) + (m2 >> 32);
}""",
    "enc_atomic": """// Atomics on device memory, relaxed order (the only order Metal's atomic operations take; Triton's acquire
// and release come from fences around them). Floats other than add go through the bits with a compare-and-swap loop.
template <typename T, typename A> static inline T enc_atomic_cas_loop(device A* a, T cmp, T val) {
    T expected = cmp;
    while (!atomic_compare_exchange_weak_explicit(a, &expected, val, memory_order_relaxed, memory_order_relaxed)) {
        if (expected != cmp) return expected;  // a real mismatch, not a spurious failure
        expected = cmp;
    }
    return cmp;
}
static inline float enc_atomic_fminmax(device float* p, float v, bool is_max) {
    device atomic_uint* a = (device atomic_uint*)p;
    uint old = atomic_load_explicit(a, memory_order_relaxed);
    while (true) {
        const float cur = as_type<float>(old);
        if (!(is_max ? v > cur : v < cur)) return cur;
        if (atomic_compare_exchange_weak_explicit(a, &old, as_type<uint>(v), memory_order_relaxed,
                                                  memory_order_relaxed)) return cur;
    }
}""",
    "enc_atomic16": """// 16-bit atomics (Metal's atomic types are 32 bits and wider): a compare-and-swap loop on the aligned 32-bit
// word that holds the element, writing the word's other half back unchanged. The runtime binds every 16-bit
// buffer of such a kernel so that this word lies inside memory it owns (docs/memory.md, sub-word atomics).
// OP: 0 add, 1 max, 2 min, 3 exchange (and atomic_store), 4 compare-and-swap (compared bit for bit, as Triton's
// atomic_cas). enc_atomic16_load: one atomic load of the word (the buffer may be const: only loaded).
template <int OP, typename T> static inline T enc_atomic16(device T* p, T v, T cmp) {
    const uint shift = ((ulong)(p) & 2ul) ? 16u : 0u;
    device atomic_uint* w = (device atomic_uint*)((device uchar*)(p) - (shift >> 3));
    uint old = atomic_load_explicit(w, memory_order_relaxed);
    while (true) {
        const ushort bits = ushort(old >> shift);
        const T cur = as_type<T>(bits);
        T next = v;
        if (OP == 0) next = T(cur + v);
        if (OP == 1 && !(v > cur)) return cur;
        if (OP == 2 && !(v < cur)) return cur;
        if (OP == 4 && bits != as_type<ushort>(cmp)) return cur;
        const uint word = (old & ~(0xFFFFu << shift)) | (uint(as_type<ushort>(next)) << shift);
        if (atomic_compare_exchange_weak_explicit(w, &old, word, memory_order_relaxed, memory_order_relaxed)) return cur;
    }
}
template <typename T, typename P> static inline T enc_atomic16_load(P p) {  // P: (const) device T*
    const uint shift = ((ulong)(p) & 2ul) ? 16u : 0u;
    device atomic_uint* w = (device atomic_uint*)((device uchar*)(p) - (shift >> 3));
    return as_type<T>(ushort(atomic_load_explicit(w, memory_order_relaxed) >> shift));
}
// tl.atomic_poll on 16 bits (here, beside the load it uses: g++ rejects a call to an undeclared template even in
// a template never instantiated, so it must not sit in enc_atomic_poll, which 32-bit polls include alone)
template <typename T, typename P> static inline bool enc_atomic_poll16(P p, T expected) {
    while (as_type<ushort>(enc_atomic16_load<T>(p)) != as_type<ushort>(expected)) {}
    return true;
}""",
    "enc_atomic8": """// 8-bit atomic load and store (int8, uint8, bool: Metal's atomic types are 32 bits and wider): the aligned
// 32-bit word that holds the byte is loaded atomically, or swapped by a compare-and-swap loop that writes the word's
// other three bytes back unchanged. The runtime binds every such buffer so that the word lies in memory it owns.
template <typename P> static inline uchar enc_atomic8_load(P p) {  // P: (const) device T* of a 1-byte T
    const uint shift = uint((ulong)(p) & 3ul) * 8u;
    device atomic_uint* w = (device atomic_uint*)((device uchar*)(p) - (shift >> 3));
    return uchar(atomic_load_explicit(w, memory_order_relaxed) >> shift);
}
template <typename P> static inline uchar enc_atomic8_store(P p, uchar v) {  // returns the byte it replaced
    const uint shift = uint((ulong)(p) & 3ul) * 8u;
    device atomic_uint* w = (device atomic_uint*)((device uchar*)(p) - (shift >> 3));
    uint old = atomic_load_explicit(w, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(w, &old, (old & ~(0xFFu << shift)) | (uint(v) << shift),
                                                 memory_order_relaxed, memory_order_relaxed)) {}
    return uchar(old >> shift);
}""",
    "enc_atomic_poll": """// tl.atomic_poll: spin on relaxed atomic loads until the element holds the expected value (Metal shaders
// have no clock, so there is no timeout; the acquire fence, if any, follows the loop).
template <typename A, typename T> static inline bool enc_atomic_poll(device A* a, T expected) {
    while (atomic_load_explicit(a, memory_order_relaxed) != expected) {}
    return true;
}
// 64 bits (Metal has no 64-bit atomic load): the high word, the low word and the high word again with 32-bit atomic
// loads; a value counts only when both reads of the high word agree (words of one 64-bit store, little-endian).
static inline bool enc_atomic_poll64(device atomic_uint* w, ulong expected) {
    while (true) {
        const uint hi = atomic_load_explicit(w + 1, memory_order_relaxed);
        const uint lo = atomic_load_explicit(w, memory_order_relaxed);
        if (atomic_load_explicit(w + 1, memory_order_relaxed) == hi && ((ulong(hi) << 32) | ulong(lo)) == expected)
            return true;
    }
}""",
    "enc_div": """// -a wrapping (INT_MIN / -1 == INT_MIN): in the unsigned type, as MSL leaves signed overflow undefined
template <typename T> static inline T enc_wrapneg(T a) { return T(T(0) - a); }  // char, short: computed in int
static inline int enc_wrapneg(int a) { return as_type<int>(0u - as_type<uint>(a)); }
static inline long enc_wrapneg(long a) { return as_type<long>(0ul - as_type<ulong>(a)); }
template <typename T> static inline T enc_sdiv(T a, T b) {
    // Division by zero is undefined in Triton; Enceladus defines it as 0 (never a trap). INT_MIN / -1 wraps.
    return b == T(0) ? T(0) : (b == T(-1) ? enc_wrapneg(a) : T(a / b));
}
template <typename T> static inline T enc_srem(T a, T b) {
    return (b == T(0) || b == T(-1)) ? T(0) : T(a % b);
}
template <typename T> static inline T enc_udiv(T a, T b) { return b == T(0) ? T(0) : T(a / b); }
template <typename T> static inline T enc_urem(T a, T b) { return b == T(0) ? T(0) : T(a % b); }""",
    "enc_erf": """static inline float enc_erf(float x) {
    // MSL has no erf. |x| <= 1: Maclaurin series to x^25; |x| > 1: 1 - erfc(|x|) from a rational
    // Chebyshev fit (relative error < 1.2e-7).
    float ax = fabs(x);
    if (ax <= 1.0f) {
        float x2 = x * x, term = x, sum = x;
        for (int n = 1; n <= 12; ++n) {
            term *= -x2 / float(n);
            sum += term / float(2 * n + 1);
        }
        return 1.1283791670955126f * sum;
    }
    float t = 1.0f / (1.0f + 0.5f * ax);
    float p = -ax * ax - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
              t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
              t * (-0.82215223f + t * 0.17087277f))))))));
    float r = 1.0f - t * precise::exp(p);
    return x < 0.0f ? -r : r;
}
static inline float enc_erfc(float x) {
    // for x > 1 the rational fit gives erfc directly (no cancellation); below, 1 - erf(x)
    if (x <= 1.0f) return 1.0f - enc_erf(x);
    float t = 1.0f / (1.0f + 0.5f * x);
    float p = -x * x - 1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f +
              t * (-0.18628806f + t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f +
              t * (-0.82215223f + t * 0.17087277f))))))));
    return t * precise::exp(p);
}""",
    "enc_extra": """// Functions Metal's library does not have, in float32.
static inline float enc_log1p(float x) {
    const float u = 1.0f + x;  // log(u) * x / (u - 1) cancels the rounding error of 1 + x
    return u == 1.0f ? x : precise::log(u) * (x / (u - 1.0f));
}
static inline float enc_expm1(float x) {
    const float u = precise::exp(x);
    if (u == 1.0f) return x;
    const float um1 = u - 1.0f;
    if (um1 == -1.0f) return -1.0f;
    return isinf(u) ? u : um1 * (x / precise::log(u));  // corrects the rounding error of exp(x) - 1
}
static inline float enc_cbrt(float x) {
    if (x == 0.0f || isinf(x) || isnan(x)) return x;
    float y = copysign(precise::pow(fabs(x), 1.0f / 3.0f), x);
    return y - (y * y * y - x) / (3.0f * y * y);  // one Newton step
}
static inline float enc_hypot(float x, float y) {
    const float a = fabs(x), b = fabs(y);
    if (isinf(a) || isinf(b)) return INFINITY;
    if (isnan(a) || isnan(b)) return a + b;  // fmax/fmin below would drop the NaN
    const float m = fmax(a, b), n = fmin(a, b);
    if (m == 0.0f) return 0.0f;
    const float r = n / m;
    return m * precise::sqrt(1.0f + r * r);
}""",
    "enc_shfl": """// simd_shuffle_xor for every element type (Metal has none for bool, long, ulong and bfloat; the spec types it
// for integers only, so float and half move as their bits too: MSL_AUDIT D3)
template <typename T> static inline T enc_shfl_xor(T v, ushort m) { return simd_shuffle_xor(v, m); }
static inline float enc_shfl_xor(float v, ushort m) { return as_type<float>(simd_shuffle_xor(as_type<uint>(v), m)); }
static inline half enc_shfl_xor(half v, ushort m) { return as_type<half>(simd_shuffle_xor(as_type<ushort>(v), m)); }
static inline bool enc_shfl_xor(bool v, ushort m) { return simd_shuffle_xor(ushort(v), m) != 0; }
static inline long enc_shfl_xor(long v, ushort m) {
    const uint2 u = as_type<uint2>(v);
    return as_type<long>(uint2(simd_shuffle_xor(u.x, m), simd_shuffle_xor(u.y, m)));
}
static inline ulong enc_shfl_xor(ulong v, ushort m) {
    const uint2 u = as_type<uint2>(v);
    return as_type<ulong>(uint2(simd_shuffle_xor(u.x, m), simd_shuffle_xor(u.y, m)));
}
static inline bfloat enc_shfl_xor(bfloat v, ushort m) {
    return as_type<bfloat>(simd_shuffle_xor(as_type<ushort>(v), m));
}""",
    "enc_shfl_up": """// simd_shuffle_up for every element type (Metal has none for bool, long, ulong and bfloat)
template <typename T> static inline T enc_shfl_up(T v, ushort d) { return simd_shuffle_up(v, d); }
static inline bool enc_shfl_up(bool v, ushort d) { return simd_shuffle_up(ushort(v), d) != 0; }
static inline long enc_shfl_up(long v, ushort d) {
    const uint2 u = as_type<uint2>(v);
    return as_type<long>(uint2(simd_shuffle_up(u.x, d), simd_shuffle_up(u.y, d)));
}
static inline ulong enc_shfl_up(ulong v, ushort d) {
    const uint2 u = as_type<uint2>(v);
    return as_type<ulong>(uint2(simd_shuffle_up(u.x, d), simd_shuffle_up(u.y, d)));
}
static inline bfloat enc_shfl_up(bfloat v, ushort d) {
    return as_type<bfloat>(simd_shuffle_up(as_type<ushort>(v), d));
}""",
}
HELPERS.update(FP8_HELPERS)

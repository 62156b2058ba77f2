#include <metal_stdlib>
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
using namespace metal;

// -a wrapping (INT_MIN / -1 == INT_MIN): in the unsigned type, as MSL leaves signed overflow undefined
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
template <typename T> static inline T enc_urem(T a, T b) { return b == T(0) ? T(0) : T(a % b); }

struct divmod_chain_kernel_args {
    int n;
};

[[max_total_threads_per_threadgroup(128)]]
kernel void divmod_chain_kernel(
    device int* out_ptr [[buffer(0)]],
    constant divmod_chain_kernel_args& enc_args [[buffer(1)]],
    uint3 enc_pid [[threadgroup_position_in_grid]],
    uint enc_tid [[thread_index_in_threadgroup]],
    uint enc_lane [[thread_index_in_simdgroup]],
    uint enc_warp [[simdgroup_index_in_threadgroup]])
{
    const int n = enc_args.n;
    (void)enc_lane; (void)enc_warp;
    // L0 = blocked<shape=[256], spt=[2], tpw=[32], wpc=[4], order=[0]>: 2 elements per thread
    const int L0_b0 = ((int(enc_warp) / 1) % 4) * 64 + ((int(enc_lane) / 1) % 32) * 2;
    const int v2 = int(enc_pid.x);
    const int v3 = 256;
    const int v4 = as_type<int>(uint(v2) * uint(v3));
    int v7[2];
    for (int e = 0; e < 2; ++e) v7[e] = as_type<int>(uint(v4) + uint((L0_b0 + (e))));
    bool v9[2];
    for (int e = 0; e < 2; ++e) v9[e] = (v7[e] < n);
    const int v10 = 4099;
    int v12[2];
    for (int e = 0; e < 2; ++e) v12[e] = as_type<int>(uint(v7[e]) * uint(v10));
    const int v15 = 65536;
    int v17[2];
    for (int e = 0; e < 2; ++e) v17[e] = enc_sdiv(v12[e], v15);
    const int v18 = 6;
    int v20[2];
    for (int e = 0; e < 2; ++e) v20[e] = enc_srem(v17[e], v18);
    const int v21 = 65536;
    int v23[2];
    for (int e = 0; e < 2; ++e) v23[e] = enc_srem(v12[e], v21);
    const int v24 = 4096;
    int v26[2];
    for (int e = 0; e < 2; ++e) v26[e] = enc_sdiv(v23[e], v24);
    int v27[2];
    for (int e = 0; e < 2; ++e) v27[e] = as_type<int>(uint(v20[e]) + uint(v26[e]));
    for (int e = 0; e < 2; ++e) if (v9[e]) *(out_ptr + v7[e]) = v27[e];
}

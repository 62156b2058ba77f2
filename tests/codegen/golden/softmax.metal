#include <metal_stdlib>
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
using namespace metal;

// fp32 division by a divisor many elements share (compiler/passes/reciprocal_division.py): a thread takes
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
}

static inline void enc_combine1(thread float& enc_a0, float enc_b0) {
    const float v18 = fmax(enc_a0, enc_b0);
    const auto enc_y0 = v18;
    enc_a0 = enc_y0;
}

static inline void enc_combine4(thread float& enc_a0, float enc_b0) {
    const float v25 = (enc_a0 + enc_b0);
    const auto enc_y0 = v25;
    enc_a0 = enc_y0;
}

struct softmax_kernel_args {
    int n_rows;
    int n_cols;
    int stride;
};

[[max_total_threads_per_threadgroup(128)]]
kernel void softmax_kernel(
    device const float* x_ptr [[buffer(0)]],
    device float* out_ptr [[buffer(1)]],
    constant softmax_kernel_args& enc_args [[buffer(2)]],
    uint3 enc_pid [[threadgroup_position_in_grid]],
    uint enc_tid [[thread_index_in_threadgroup]],
    uint enc_lane [[thread_index_in_simdgroup]],
    uint enc_warp [[simdgroup_index_in_threadgroup]])
{
    const int n_rows = enc_args.n_rows;
    const int n_cols = enc_args.n_cols;
    const int stride = enc_args.stride;
    threadgroup float enc_smem3[4];  // reduction of %19 across SIMD groups
    threadgroup float enc_smem6[4];  // reduction of %26 across SIMD groups
    (void)enc_lane; (void)enc_warp;
    // L0 = blocked<shape=[1024], spt=[4], tpw=[32], wpc=[4], order=[0]>: 8 elements per thread
    const int L0_b0 = ((int(enc_warp) / 1) % 4) * 128 + ((int(enc_lane) / 1) % 32) * 4;
    const int v5 = int(enc_pid.x);
    bool v8[8];
    for (int e = 0; e < 8; ++e) v8[e] = ((L0_b0 + ((e) % 4) + ((e) / 4) * 512) < n_cols);
    const int v9 = as_type<int>(uint(v5) * uint(stride));
    const auto v10 = (x_ptr + v9);
    const float v13 = as_type<float>(0xff800000u);
    float v15[8];
    for (int e = 0; e < 8; ++e) v15[e] = v8[e] ? *(v10 + (L0_b0 + ((e) % 4) + ((e) / 4) * 512)) : v13;
    float r2[8];
    for (int e = 0; e < 8; ++e) {
        if (!((e) == 0)) continue;
        float r2_t[8];
        for (int k = 0; k < 8; ++k) { r2_t[k] = v15[e + k * 1]; }
        for (int k = 0; k < 8; k += 2) enc_combine1(r2_t[k], r2_t[k + 1]);
        for (int k = 0; k < 8; k += 4) enc_combine1(r2_t[k], r2_t[k + 2]);
        for (int k = 0; k < 8; k += 8) enc_combine1(r2_t[k], r2_t[k + 4]);
        r2[e] = r2_t[0];
    }
    for (int e = 0; e < 8; ++e) { if (!((e) == 0)) continue; r2[e] = simd_max(r2[e]); }
    if (((int(enc_lane) / 1) % 32) == 0 && ((int(enc_warp) / 1) % 4) < 4) for (int e = 0; e < 8; ++e) if ((e) == 0) {
        enc_smem3[((int(enc_warp) / 1) % 4) * 1 + 0] = r2[e];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int e = 0; e < 8; ++e) {
        if (!((e) == 0)) continue;
        const int row = 0;
        float r2_w[4];
        for (int k = 0; k < 4; ++k) { r2_w[k] = enc_smem3[k * 1 + row]; }
        for (int k = 0; k < 4; k += 2) enc_combine1(r2_w[k], r2_w[k + 1]);
        for (int k = 0; k < 4; k += 4) enc_combine1(r2_w[k], r2_w[k + 2]);
        r2[e] = r2_w[0];
    }
    for (int e = 0; e < 8; ++e) { const int b = e - (e) * 1; r2[e] = r2[b]; }
    const float v19 = r2[0];
    float v21[8];
    for (int e = 0; e < 8; ++e) v21[e] = (v15[e] - v19);
    float v22[8];
    for (int e = 0; e < 8; ++e) v22[e] = precise::exp(v21[e]);
    float r5[8];
    for (int e = 0; e < 8; ++e) {
        if (!((e) == 0)) continue;
        float r5_t[8];
        for (int k = 0; k < 8; ++k) { r5_t[k] = v22[e + k * 1]; }
        for (int k = 0; k < 8; k += 2) enc_combine4(r5_t[k], r5_t[k + 1]);
        for (int k = 0; k < 8; k += 4) enc_combine4(r5_t[k], r5_t[k + 2]);
        for (int k = 0; k < 8; k += 8) enc_combine4(r5_t[k], r5_t[k + 4]);
        r5[e] = r5_t[0];
    }
    for (int e = 0; e < 8; ++e) { if (!((e) == 0)) continue; r5[e] = simd_sum(r5[e]); }
    if (((int(enc_lane) / 1) % 32) == 0 && ((int(enc_warp) / 1) % 4) < 4) for (int e = 0; e < 8; ++e) if ((e) == 0) {
        enc_smem6[((int(enc_warp) / 1) % 4) * 1 + 0] = r5[e];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int e = 0; e < 8; ++e) {
        if (!((e) == 0)) continue;
        const int row = 0;
        float r5_w[4];
        for (int k = 0; k < 4; ++k) { r5_w[k] = enc_smem6[k * 1 + row]; }
        for (int k = 0; k < 4; k += 2) enc_combine4(r5_w[k], r5_w[k + 1]);
        for (int k = 0; k < 4; k += 4) enc_combine4(r5_w[k], r5_w[k + 2]);
        r5[e] = r5_w[0];
    }
    for (int e = 0; e < 8; ++e) { const int b = e - (e) * 1; r5[e] = r5[b]; }
    const float v26 = r5[0];
    const float v33 = enc_recip(v26);
    float v28[8];
    bool slow7 = false;
    for (int e = 0; e < 8; ++e) slow7 = slow7 | !(fabs(v22[e]) <= enc_div_limit(v26, v33));
    if (slow7) {
        for (int e = 0; e < 8; ++e) v28[e] = enc_div_recip(v22[e], v26, v33);
    } else {
        for (int e = 0; e < 8; ++e) v28[e] = v22[e] * v33;
    }
    const int v29 = as_type<int>(uint(v5) * uint(stride));
    const auto v30 = (out_ptr + v29);
    for (int e = 0; e < 8; ++e) if (v8[e]) *(v30 + (L0_b0 + ((e) % 4) + ((e) / 4) * 512)) = v28[e];
}

#include <metal_stdlib>
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
using namespace metal;

struct add_kernel_args {
    int n;
};

[[max_total_threads_per_threadgroup(128)]]
kernel void add_kernel(
    device const float* x_ptr [[buffer(0)]],
    device const float* y_ptr [[buffer(1)]],
    device float* out_ptr [[buffer(2)]],
    constant add_kernel_args& enc_args [[buffer(3)]],
    uint3 enc_pid [[threadgroup_position_in_grid]],
    uint enc_tid [[thread_index_in_threadgroup]],
    uint enc_lane [[thread_index_in_simdgroup]],
    uint enc_warp [[simdgroup_index_in_threadgroup]])
{
    const int n = enc_args.n;
    (void)enc_lane; (void)enc_warp;
    // L0 = blocked<shape=[1024], spt=[4], tpw=[32], wpc=[4], order=[0]>: 8 elements per thread
    const int L0_b0 = ((int(enc_warp) / 1) % 4) * 128 + ((int(enc_lane) / 1) % 32) * 4;
    const int v4 = int(enc_pid.x);
    const int v5 = 1024;
    const int v6 = as_type<int>(uint(v4) * uint(v5));
    int v9[8];
    for (int e = 0; e < 8; ++e) v9[e] = as_type<int>(uint(v6) + uint((L0_b0 + ((e) % 4) + ((e) / 4) * 512)));
    bool v11[8];
    for (int e = 0; e < 8; ++e) v11[e] = (v9[e] < n);
    const float v14 = 0.0f;
    float v16[8];
    for (int e = 0; e < 8; ++e) v16[e] = v11[e] ? *(x_ptr + v9[e]) : v14;
    const float v19 = 0.0f;
    float v21[8];
    for (int e = 0; e < 8; ++e) v21[e] = v11[e] ? *(y_ptr + v9[e]) : v19;
    float v24[8];
    for (int e = 0; e < 8; ++e) v24[e] = (v16[e] + v21[e]);
    for (int e = 0; e < 8; ++e) if (v11[e]) *(out_ptr + v9[e]) = v24[e];
}

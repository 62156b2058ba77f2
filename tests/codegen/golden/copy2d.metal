#include <metal_stdlib>
#pragma METAL fp math_mode(safe)
#pragma METAL fp contract(off)
using namespace metal;

struct copy2d_kernel_args {
    int M;
    int N;
    int stride_xm;
    int stride_xn;
    int stride_om;
    int stride_on;
};

[[max_total_threads_per_threadgroup(128)]]
kernel void copy2d_kernel(
    device const half* x_ptr [[buffer(0)]],
    device half* out_ptr [[buffer(1)]],
    constant copy2d_kernel_args& enc_args [[buffer(2)]],
    uint3 enc_pid [[threadgroup_position_in_grid]],
    uint enc_tid [[thread_index_in_threadgroup]],
    uint enc_lane [[thread_index_in_simdgroup]],
    uint enc_warp [[simdgroup_index_in_threadgroup]])
{
    const int M = enc_args.M;
    const int N = enc_args.N;
    const int stride_xm = enc_args.stride_xm;
    const int stride_xn = enc_args.stride_xn;
    const int stride_om = enc_args.stride_om;
    const int stride_on = enc_args.stride_on;
    (void)enc_lane; (void)enc_warp;
    // L0 = blocked<shape=[32, 64], spt=[1, 8], tpw=[4, 8], wpc=[4, 1], order=[1, 0]>: 16 elements per thread
    const int L0_b0 = ((int(enc_warp) / 1) % 4) * 4 + ((int(enc_lane) / 8) % 4) * 1;
    const int L0_b1 = 0 * 64 + ((int(enc_lane) / 1) % 8) * 8;
    const int v8 = int(enc_pid.x);
    const int v9 = int(enc_pid.y);
    const int v10 = 32;
    const int v11 = as_type<int>(uint(v8) * uint(v10));
    int v14[16];
    for (int e = 0; e < 16; ++e) v14[e] = as_type<int>(uint(v11) + uint((L0_b0 + (((e) / 8) / 1) * 16)));
    const int v15 = 64;
    const int v16 = as_type<int>(uint(v9) * uint(v15));
    int v19[16];
    for (int e = 0; e < 16; ++e) v19[e] = as_type<int>(uint(v16) + uint((L0_b1 + ((e) % 8))));
    bool v22[16];
    for (int e = 0; e < 16; ++e) v22[e] = (v14[e] < M);
    bool v25[16];
    for (int e = 0; e < 16; ++e) v25[e] = (v19[e] < N);
    bool v28[16];
    for (int e = 0; e < 16; ++e) v28[e] = (v22[e] & v25[e]);
    int v31[16];
    for (int e = 0; e < 16; ++e) v31[e] = as_type<int>(uint(v14[e]) * uint(stride_xm));
    int v36[16];
    for (int e = 0; e < 16; ++e) v36[e] = as_type<int>(uint(v19[e]) * uint(stride_xn));
    const half v40 = static_cast<half>(0.0f);
    half v42[16];
    for (int e = 0; e < 16; ++e) v42[e] = v28[e] ? *((x_ptr + v31[e]) + v36[e]) : v40;
    int v45[16];
    for (int e = 0; e < 16; ++e) v45[e] = as_type<int>(uint(v14[e]) * uint(stride_om));
    int v50[16];
    for (int e = 0; e < 16; ++e) v50[e] = as_type<int>(uint(v19[e]) * uint(stride_on));
    const half v54 = static_cast<half>(2.0f);
    half v56[16];
    for (int e = 0; e < 16; ++e) v56[e] = (v42[e] * v54);
    for (int e = 0; e < 16; ++e) if (v28[e]) *((out_ptr + v45[e]) + v50[e]) = v56[e];
}

// A CUDA stand-in for checking the GPU proxy's output without nvcc or a GPU:
//   clang++ -std=c++20 -fsyntax-only -x c++ -include cuda_stub.h -I include FILE.cu
// It declares (never defines) the CUDA keywords, builtin variables and device functions that
// metal_cuda.cuh and the generated wrappers use, so the C++ front end type-checks the rewritten MSL.
#pragma once
#define __CUDACC__ 1
#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#include <cmath>
#include <cstring>

struct enc_stub_uint3 { unsigned x, y, z; };
extern const enc_stub_uint3 threadIdx, blockIdx, blockDim, gridDim;

void __syncthreads();
void __syncwarp(unsigned mask);
void __threadfence();
void __threadfence_block();
unsigned __activemask();
unsigned __ballot_sync(unsigned mask, int pred);
int __all_sync(unsigned mask, int pred);
int __any_sync(unsigned mask, int pred);
template <class T> T __shfl_sync(unsigned mask, T v, int lane, int width = 32);
template <class T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32);
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32);
template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32);

template <class T> T atomicAdd(T* p, T v);
template <class T> T atomicSub(T* p, T v);
template <class T> T atomicExch(T* p, T v);
template <class T> T atomicMin(T* p, T v);
template <class T> T atomicMax(T* p, T v);
template <class T> T atomicAnd(T* p, T v);
template <class T> T atomicOr(T* p, T v);
template <class T> T atomicXor(T* p, T v);
template <class T> T atomicCAS(T* p, T cmp, T v);

float __int_as_float(int);
float __uint_as_float(unsigned);
unsigned __float_as_uint(float);
int __mulhi(int, int);
unsigned __umulhi(unsigned, unsigned);
long long __mul64hi(long long, long long);
unsigned long long __umul64hi(unsigned long long, unsigned long long);
int __popc(unsigned);
int __popcll(unsigned long long);
int __clz(int);
int __clzll(long long);
int __ffs(int);
int __ffsll(long long);
float __expf(float);
float __exp10f(float);
float __logf(float);
float __log2f(float);
float __log10f(float);
float __sinf(float);
float __cosf(float);
float __tanf(float);
float __powf(float, float);
float __fdividef(float, float);
float rsqrtf(float);
float exp10f(float);
float sinpif(float);
float cospif(float);

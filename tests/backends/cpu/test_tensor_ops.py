"""Hand-written MSL corpus: Metal 4 tensors and MetalPerformancePrimitives matmul2d, each vs NumPy.

Run through ``enceladus.compile_shader`` (the cpu backend here); ``test_worked_example_gxx`` also
builds the worked code-generator example with g++. Nothing here ran on Apple hardware.
"""

from __future__ import annotations

import numpy as np
import pytest

import enceladus
from enceladus.backends.cpu import KernelLaunchError, MSLCompileError
from enceladus.language import dtypes as D

RNG = np.random.default_rng(7)
HEADER = """#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
"""


def _mat(shape: tuple[int, int], dtype) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def _f32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32)


def _line(src: str, text: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if text in ln)


# Apple's basic example: half x half -> float into device memory, dynamic K, edge-checked slices.
HALF_DEVICE = (
    HEADER
    + """
kernel void gemm(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                 constant int& M [[buffer(3)]], constant int& N [[buffer(4)]], constant int& K [[buffer(5)]],
                 uint2 tgid [[threadgroup_position_in_grid]]) {
  auto tA = tensor<device half, dextents<int32_t, 2>, tensor_inline>(A, dextents<int32_t, 2>(K, M));
  auto tB = tensor<device half, dextents<int32_t, 2>, tensor_inline>(B, dextents<int32_t, 2>(N, K));
  auto tC = tensor<device float, dextents<int32_t, 2>, tensor_inline>(C, dextents<int32_t, 2>(N, M));
  constexpr auto desc = matmul2d_descriptor(64, 32, static_cast<int>(dynamic_extent));
  matmul2d<desc, execution_simdgroups<4>> op;
  auto mA = tA.slice(0, tgid.y * 64);
  auto mB = tB.slice(tgid.x * 32, 0);
  auto mC = tC.slice(tgid.x * 32, tgid.y * 64);
  op.run(mA, mB, mC);
}
"""
)


def test_half_half_float_device_destination() -> None:
    lib = enceladus.compile_shader(HALF_DEVICE)
    m, n, k = 100, 70, 48
    a, b = _mat((m, k), np.float16), _mat((k, n), np.float16)
    c = np.full((m, n), np.nan, np.float32)
    lib.gemm(
        a,
        b,
        c,
        m,
        n,
        k,
        threadgroups=((n + 31) // 32, (m + 63) // 64, 1),
        threads_per_threadgroup=(128, 1, 1),
    )
    np.testing.assert_allclose(c, _f32(a) @ _f32(b), rtol=1e-5, atol=1e-5)


# float x float -> float, execution_simdgroups<1>, static k = 32 over three K steps accumulating
# into C in device memory (multiply_accumulate on a bias already in C), static slices.
FLOAT_SG1 = (
    HEADER
    + """
kernel void gemm_acc(device float* A [[buffer(0)]], device float* B [[buffer(1)]], device float* C [[buffer(2)]],
                     constant int& M [[buffer(3)]], constant int& N [[buffer(4)]], constant int& K [[buffer(5)]],
                     uint2 tgid [[threadgroup_position_in_grid]]) {
  tensor<device float, dextents<int32_t, 2>, tensor_inline> tA(A, dextents<int32_t, 2>(K, M));
  tensor<device float, dextents<int32_t, 2>, tensor_inline> tB(B, dextents<int32_t, 2>(N, K));
  tensor<device float, dextents<int32_t, 2>, tensor_inline> tC(C, dextents<int32_t, 2>(N, M));
  constexpr auto desc = matmul2d_descriptor(32, 32, 32, false, false, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<1>> op;
  auto mC = tC.slice<32, 32>(tgid.x * 32, tgid.y * 32);
  #pragma unroll full
  for (int k = 0; k < K; k += 32) {
    auto mA = tA.slice<32, 32>(k, tgid.y * 32);
    auto mB = tB.static_slice<32, 32>(tgid.x * 32, k);
    op.run(mA, mB, mC);
  }
}
"""
)


def test_float_float_float_simdgroups1_accumulates_over_k() -> None:
    lib = enceladus.compile_shader(FLOAT_SG1)
    m, n, k = 64, 96, 96
    a, b = _mat((m, k), np.float32), _mat((k, n), np.float32)
    bias = _mat((m, n), np.float32)
    c = bias.copy()
    lib.gemm_acc(a, b, c, m, n, k, threadgroups=(n // 32, m // 32, 1), threads_per_threadgroup=(32, 1, 1))
    np.testing.assert_allclose(c, bias + a @ b, rtol=1e-5, atol=1e-4)


# Both operands transposed (A stored K x M, B stored N x K), half x half -> half, mode multiply,
# execution_simdgroups<2>, strides given explicitly.
TRANSPOSED = (
    HEADER
    + """
kernel void gemm_tt(device half* At [[buffer(0)]], device half* Bt [[buffer(1)]], device half* C [[buffer(2)]],
                    constant int& M [[buffer(3)]], constant int& N [[buffer(4)]], constant int& K [[buffer(5)]],
                    uint2 tgid [[threadgroup_position_in_grid]]) {
  auto tA = tensor(At, dextents<int32_t, 2>(M, K), array<int32_t, 2>({1, M}));   // (M, K): transposed left
  auto tB = tensor(Bt, dextents<int32_t, 2>{K, N}, array<int32_t, 2>{1, K});     // (K, N): transposed right
  auto tC = tensor(C, dextents<int32_t, 2>(N, M));
  constexpr auto desc = matmul2d_descriptor(32, 32, static_cast<int>(dynamic_extent), true, true);
  matmul2d<desc, execution_simdgroups<2>> op;
  auto mA = tA.slice(tgid.y * 32, 0);
  auto mB = tB.slice(0, tgid.x * 32);
  auto mC = tC.slice(tgid.x * 32, tgid.y * 32);
  op.run(mA, mB, mC);
}
"""
)


def test_transposed_operands_half_destination() -> None:
    lib = enceladus.compile_shader(TRANSPOSED)
    m, n, k = 40, 50, 24
    a, b = _mat((m, k), np.float16), _mat((k, n), np.float16)
    c = np.zeros((m, n), np.float16)
    lib.gemm_tt(
        np.ascontiguousarray(a.T),
        np.ascontiguousarray(b.T),
        c,
        m,
        n,
        k,
        threadgroups=((n + 31) // 32, (m + 31) // 32, 1),
        threads_per_threadgroup=(64, 1, 1),
    )
    ref = (_f32(a) @ _f32(b)).astype(np.float16)  # accumulated in float, rounded once
    np.testing.assert_array_equal(c, ref)


# execution_simdgroup: each SIMD group runs its own 16 x 32 tile into a cooperative tensor.
PER_SIMDGROUP = (
    HEADER
    + """
kernel void gemm_sg(device float* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                    constant int& M [[buffer(3)]], constant int& N [[buffer(4)]], constant int& K [[buffer(5)]],
                    uint sg [[simdgroup_index_in_threadgroup]], uint2 tgid [[threadgroup_position_in_grid]]) {
  auto tA = tensor(A, dextents<int32_t, 2>(K, M));
  auto tB = tensor(B, dextents<int32_t, 2>(N, K));
  auto tC = tensor(C, dextents<int32_t, 2>(N, M));
  constexpr auto desc = matmul2d_descriptor(16, 32, static_cast<int>(dynamic_extent));
  matmul2d<desc, execution_simdgroup> op;
  const int m0 = tgid.y * 32 + sg * 16;
  auto mA = tA.slice(0, m0);
  auto mB = tB.slice(tgid.x * 32, 0);
  auto cT = op.get_destination_cooperative_tensor<__remove_addrspace_t<decltype(mA)>, __remove_addrspace_t<decltype(mB)>, float>();
  op.run(mA, mB, cT);
  auto mC = tC.slice(tgid.x * 32, m0);
  cT.store(mC);
}
"""
)


def test_execution_simdgroup_float_half_float() -> None:
    lib = enceladus.compile_shader(PER_SIMDGROUP)
    m, n, k = 64, 64, 20
    a, b = _mat((m, k), np.float32), _mat((k, n), np.float16)
    c = np.zeros((m, n), np.float32)
    lib.gemm_sg(a, b, c, m, n, k, threadgroups=(n // 32, m // 32, 1), threads_per_threadgroup=(64, 1, 1))
    np.testing.assert_allclose(c, a @ _f32(b), rtol=1e-5, atol=1e-5)


# bfloat x bfloat -> float (macOS 26.1), execution_thread: one thread computes an 8 x 8 tile.
BFLOAT_THREAD = (
    HEADER
    + """
kernel void gemm_bf(device bfloat* A [[buffer(0)]], device bfloat* B [[buffer(1)]], device float* C [[buffer(2)]],
                    uint2 tgid [[threadgroup_position_in_grid]]) {
  auto tA = tensor(A, dextents<int32_t, 2>(16, 16));
  auto tB = tensor(B, dextents<int32_t, 2>(16, 16));
  auto tC = tensor(C, dextents<int32_t, 2>(16, 16));
  matmul2d<matmul2d_descriptor(8, 8), execution_thread> op;
  auto mA = tA.slice(0, tgid.y * 8);
  auto mB = tB.slice(tgid.x * 8, 0);
  auto mC = tC.slice(tgid.x * 8, tgid.y * 8);
  op.run(mA, mB, mC);
}
"""
)


def test_bfloat_execution_thread() -> None:
    lib = enceladus.compile_shader(BFLOAT_THREAD)
    bf = D.bfloat16_numpy()
    a, b = _mat((16, 16), np.float32).astype(bf), _mat((16, 16), np.float32).astype(bf)
    c = np.zeros((16, 16), np.float32)
    lib.gemm_bf(a, b, c, threadgroups=(2, 2, 1), threads_per_threadgroup=(1, 1, 1))
    np.testing.assert_allclose(c, _f32(a) @ _f32(b), rtol=1e-5, atol=1e-5)


# The worked example for the code generator (docs/cpu_backend.md): acc[BM, BN] += A[BM, BK] @ B[BK, BN]
# per K tile, A and B at runtime offsets and row strides in device memory, the accumulator a
# cooperative tensor across the K loop, an epilogue in registers, an edge-checked store.
WORKED = (
    HEADER
    + """
kernel void dot_k_loop(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* C [[buffer(2)]],
                       constant int& M [[buffer(3)]], constant int& N [[buffer(4)]], constant int& K [[buffer(5)]],
                       constant int& stride_am [[buffer(6)]], constant int& stride_bk [[buffer(7)]],
                       constant int& stride_cm [[buffer(8)]], constant float& alpha [[buffer(9)]],
                       uint2 pid [[threadgroup_position_in_grid]]) {
  constexpr int BM = 64, BN = 32, BK = 32;
  const int off_m = int(pid.y) * BM, off_n = int(pid.x) * BN;
  const int rows = min(BM, M - off_m), cols = min(BN, N - off_n);
  using TA = tensor<device half, dextents<int32_t, 2>, tensor_inline>;
  using TB = tensor<device half, dextents<int32_t, 2>, tensor_inline>;
  using TC = tensor<device float, dextents<int32_t, 2>, tensor_inline>;
  constexpr auto desc = matmul2d_descriptor(BM, BN, static_cast<int>(dynamic_extent), false, false, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroups<4>> op;
  auto acc = op.get_destination_cooperative_tensor<TA, TB, float>();
  for (uint16_t i = 0; i < acc.get_capacity(); ++i) acc[i] = 0.0f;
  for (int k = 0; k < K; k += BK) {
    const int kext = min(BK, K - k);
    TA a(A + off_m * stride_am + k, dextents<int32_t, 2>(kext, rows), array<int32_t, 2>{1, stride_am});
    TB b(B + k * stride_bk + off_n, dextents<int32_t, 2>(cols, kext), array<int32_t, 2>{1, stride_bk});
    op.run(a, b, acc);
  }
  for (uint16_t i = 0; i < acc.get_capacity(); ++i) {
    if (!acc.is_valid_element(i)) continue;
    const auto idx = acc.get_multidimensional_index(i);   // (column, row) in the tile
    acc[i] = max(alpha * acc[i], 0.0f) + 0.001f * float(idx[0] + off_n);
  }
  TC c(C + off_m * stride_cm + off_n, dextents<int32_t, 2>(cols, rows), array<int32_t, 2>{1, stride_cm});
  acc.store(c);
}
"""
)


def _worked_args(m: int, n: int, k: int):
    big_a, big_b = _mat((m + 3, k + 9), np.float16), _mat((k + 2, n + 5), np.float16)
    a, b = big_a[2 : 2 + m, 4 : 4 + k], big_b[1 : 1 + k, 3 : 3 + n]  # views: offsets and row strides
    c_big = np.full((m, n + 7), -7.0, np.float32)
    ref = np.maximum(1.5 * (_f32(a) @ _f32(b)), 0.0) + 0.001 * np.arange(n, dtype=np.float32)
    flat_a = big_a.reshape(-1)[2 * (k + 9) + 4 :]
    flat_b = big_b.reshape(-1)[1 * (n + 5) + 3 :]
    args = (flat_a, flat_b, c_big, m, n, k, k + 9, n + 5, n + 7, 1.5)
    launch = {"threadgroups": ((n + 31) // 32, (m + 63) // 64, 1), "threads_per_threadgroup": (128, 1, 1)}
    return args, launch, c_big, ref


@pytest.mark.parametrize("shape", [(64, 32, 64), (77, 45, 75), (130, 70, 33)])
def test_worked_example_cooperative_accumulator_over_k(shape: tuple[int, int, int]) -> None:
    m, n, k = shape
    lib = enceladus.compile_shader(WORKED)
    args, launch, c_big, ref = _worked_args(m, n, k)
    lib.dot_k_loop(*args, **launch)
    np.testing.assert_allclose(c_big[:, :n], ref, rtol=1e-5, atol=1e-4)
    assert (c_big[:, n:] == -7.0).all()  # nothing written past the tile edges


def test_worked_example_gxx(backend) -> None:
    m, n, k = 77, 45, 75
    args, launch, c_big, ref = _worked_args(m, n, k)
    lib = backend.compile(WORKED)
    buffers = {i: a.ctypes.data for i, a in enumerate(args[:3])}
    scalars = np.array(
        [(m, n, k, k + 9, n + 5, n + 7, 1.5)],
        dtype=np.dtype([(f"f{i}", "i4") for i in range(6)] + [("alpha", "f4")]),
    )
    for slot in range(3, 10):
        field = scalars.dtype.names[slot - 3]
        buffers[slot] = scalars[field].ctypes.data
    lib.function("dot_k_loop").launch(launch["threadgroups"], launch["threads_per_threadgroup"], buffers)
    np.testing.assert_allclose(c_big[:, :n], ref, rtol=1e-5, atol=1e-4)


def test_cooperative_load_bias_and_multiply_mode() -> None:
    src = (
        HEADER
        + """
kernel void bias_mm(device half* A [[buffer(0)]], device half* B [[buffer(1)]], device float* bias [[buffer(2)]],
                    device float* C [[buffer(3)]]) {
  auto tA = tensor(A, dextents<int32_t, 2>(32, 32));
  auto tB = tensor(B, dextents<int32_t, 2>(32, 32));
  auto tBias = tensor(bias, dextents<int32_t, 2>(32, 32));
  auto tC = tensor(C, dextents<int32_t, 2>(32, 32));
  constexpr auto desc = matmul2d_descriptor(32, 32, 32);   // mode::multiply: overwrites the destination
  matmul2d<desc, execution_simdgroups<2>> op;
  auto cT = op.get_destination_cooperative_tensor<decltype(tA), decltype(tB), float>();
  for (uint16_t i = 0; i < cT.get_capacity(); ++i) if (cT.get_mask(i)) cT[i] = 1000.0f;
  op.run(tA, tB, cT);
  auto biasT = op.get_destination_cooperative_tensor<decltype(tA), decltype(tB), float>();
  biasT.load(tBias);
  for (uint16_t i = 0; i < cT.get_capacity(); ++i) if (cT.get_mask(i)) cT[i] += biasT[i];
  cT.store(tC);
}
"""
    )
    lib = enceladus.compile_shader(src)
    a, b, bias = _mat((32, 32), np.float16), _mat((32, 32), np.float16), _mat((32, 32), np.float32)
    c = np.zeros((32, 32), np.float32)
    lib.bias_mm(a, b, bias, c, threadgroups=(1, 1, 1), threads_per_threadgroup=(64, 1, 1))
    np.testing.assert_allclose(c, _f32(a) @ _f32(b) + bias, rtol=1e-5, atol=1e-5)


# ---- undefined behaviour made loud ---------------------------------------------------------------

PARTIAL = (
    HEADER
    + """
kernel void partial(device float* A [[buffer(0)]], device float* C [[buffer(1)]],
                    uint t [[thread_index_in_threadgroup]]) {
  auto tA = tensor(A, dextents<int32_t, 2>(32, 32));
  auto tC = tensor(C, dextents<int32_t, 2>(32, 32));
  matmul2d<matmul2d_descriptor(32, 32), execution_simdgroups<4>> op;
  if (t >= 96) return;
  op.run(tA, tA, tC);
}
"""
)


def test_run_by_part_of_the_scope_raises() -> None:
    lib = enceladus.compile_shader(PARTIAL)
    a, c = np.ones((32, 32), np.float32), np.zeros((32, 32), np.float32)
    with pytest.raises(
        KernelLaunchError,
        match=rf"kernel 'partial': matmul2d::run at line {_line(PARTIAL, 'op.run')} is reached by 96 of the "
        r"128 threads of threadgroup \(0,0,0\).*all threads of the execution scope must call run",
    ):
        lib.partial(a, c, threadgroups=(1, 1, 1), threads_per_threadgroup=(128, 1, 1))
    with pytest.raises(
        KernelLaunchError, match=r"execution_simdgroups<4> run by a threadgroup of 64 threads"
    ):
        lib.partial(a, c, threadgroups=(1, 1, 1), threads_per_threadgroup=(64, 1, 1))


def test_execution_simdgroup_needs_all_lanes() -> None:
    src = (
        HEADER
        + """
kernel void lanes(device float* A [[buffer(0)]], device float* C [[buffer(1)]], uint l [[thread_index_in_simdgroup]]) {
  auto tA = tensor(A, dextents<int32_t, 2>(8, 8));
  auto tC = tensor(C, dextents<int32_t, 2>(8, 8));
  matmul2d<matmul2d_descriptor(8, 8), execution_simdgroup> op;
  if (l < 16) op.run(tA, tA, tC);
}
"""
    )
    lib = enceladus.compile_shader(src)
    a, c = np.ones((8, 8), np.float32), np.zeros((8, 8), np.float32)
    line = _line(src, "op.run")
    with pytest.raises(
        KernelLaunchError, match=rf"kernel 'lanes': matmul2d::run \(execution_simdgroup\) \(line {line}\)"
    ):
        lib.lanes(a, c, threadgroups=(1, 1, 1), threads_per_threadgroup=(32, 1, 1))


def test_static_k_past_the_operand_raises() -> None:
    src = FLOAT_SG1.replace("auto mA = tA.slice<32, 32>", "auto mA = tA.slice").replace(
        "auto mB = tB.static_slice<32, 32>", "auto mB = tB.slice"
    )
    lib = enceladus.compile_shader(src)
    m, n, k = 32, 32, 40  # the last K step has 8 elements left: a static k = 32 would read past them
    a, b, c = _mat((m, k), np.float32), _mat((k, n), np.float32), np.zeros((m, n), np.float32)
    with pytest.raises(KernelLaunchError, match=r"static k = 32 on operands with K extents 8 \(left\) and 8"):
        lib.gemm_acc(a, b, c, m, n, k, threadgroups=(1, 1, 1), threads_per_threadgroup=(32, 1, 1))
    # a static slice that claims more than the tensor has is loud too
    lib2 = enceladus.compile_shader(FLOAT_SG1)
    with pytest.raises(KernelLaunchError, match=r"static extents reach past the end"):
        lib2.gemm_acc(a, b, c, m, n, k, threadgroups=(1, 1, 1), threads_per_threadgroup=(32, 1, 1))


# ---- Metal's compile-time rules --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("matmul2d_descriptor(32, 32, 32,", "matmul2d_descriptor(32, 32, 16,"),
            "static k must be a multiple of 32",
        ),
        (
            (
                "tensor<device float, dextents<int32_t, 2>, tensor_inline> tA(A",
                "tensor<device const float, dextents<int32_t, 2>, tensor_inline> tA(A",
            ),
            "const element type",
        ),
        (("device float* C [[buffer(2)]]", "device half* C [[buffer(2)]]"), None),
        (("op.run(mA, mB, mC);", "op.run(mA, tB.slice(0, 0), mC);"),
         "call to .*run|cannot bind non-const lvalue reference"),  # Apple takes T& (clang's and g++'s words)
    ],
    ids=["k16", "const-operand", "float-float-half", "rvalue-operand"],
)
def test_compile_time_rules(edit: tuple[str, str], message: str | None) -> None:
    src = FLOAT_SG1.replace(*edit)
    if "half* C" in src:
        src = src.replace(
            "tensor<device float, dextents<int32_t, 2>, tensor_inline> tC(C",
            "tensor<device half, dextents<int32_t, 2>, tensor_inline> tC(C",
        )
        message = "unsupported \\(left, right, destination\\) element types"
    assert src != FLOAT_SG1
    with pytest.raises(MSLCompileError, match=message):
        enceladus.compile_shader(src)


@pytest.mark.parametrize("debug", [False, True])
def test_checks_catch_an_operand_that_claims_too_much_memory(debug: bool) -> None:
    lib = enceladus.compile_shader(HALF_DEVICE)
    m, n, k = 64, 32, 32
    a, b, c = np.ones((m, k), np.float16), np.ones((k, n), np.float16), np.zeros((m, n), np.float32)
    # K = 4096 makes both operand tensors describe far more memory than their buffers hold: the tensor is
    # checked against its pointer's argument when it is made (default checks and debug mode alike)
    with pytest.raises(KernelLaunchError, match=r"kernel 'gemm', program \(0,0,0\), thread \d+: out-of-bounds "
                                                r"access of 2 bytes through argument 'A' at element index \d+"):
        lib.gemm(a, b, c, m, n, 4096, threadgroups=(1, 1, 1), threads_per_threadgroup=(128, 1, 1), debug=debug)
    lib.gemm(a, b, c, m, n, k, threadgroups=(1, 1, 1), threads_per_threadgroup=(128, 1, 1), debug=True)
    np.testing.assert_array_equal(c, np.full((m, n), k, np.float32))

"""Hand-written MSL corpus: atomics (device and threadgroup) and simdgroup_matrix GEMM."""

from __future__ import annotations

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackend, KernelLaunchError, MSLCompileError

RNG = np.random.default_rng(2)
HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

HISTOGRAM = (
    HEADER
    + """
// Per-threadgroup histogram in threadgroup memory, merged into the global one with device atomics.
kernel void histogram(device const uint* x [[buffer(0)]], device atomic_uint* hist [[buffer(1)]],
                      constant uint& n [[buffer(2)]], device atomic_float* total [[buffer(3)]],
                      device atomic_int* extremes [[buffer(4)]], device atomic_ulong* big [[buffer(5)]],
                      uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]],
                      uint nt [[threads_per_threadgroup]]) {
    threadgroup atomic_uint local[64];
    for (uint b = t; b < 64; b += nt) atomic_store_explicit(&local[b], 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (i < n) {
        atomic_fetch_add_explicit(&local[x[i] % 64], 1u, memory_order_relaxed);
        atomic_fetch_add_explicit(total, 0.5f, memory_order_relaxed);
        atomic_fetch_min_explicit(&extremes[0], int(x[i]) - 500, memory_order_relaxed);
        atomic_fetch_max_explicit(&extremes[1], int(x[i]) - 500, memory_order_relaxed);
        atomic_max_explicit(big, ulong(x[i]) << 40, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint b = t; b < 64; b += nt) {
        uint c = atomic_load_explicit(&local[b], memory_order_relaxed);
        if (c) atomic_fetch_add_explicit(&hist[b], c, memory_order_relaxed);
    }
}
"""
)


def test_histogram_with_atomics(backend: CpuBackend, run) -> None:
    n = 200_003
    x = RNG.integers(0, 1000, n, dtype=np.uint32)
    hist = np.zeros(64, np.uint32)
    total = np.zeros(1, np.float32)
    extremes = np.array([2**31 - 1, -(2**31)], np.int32)
    big = np.zeros(1, np.uint64)
    cnt = np.array([n], np.uint32)
    run(
        backend.compile(HISTOGRAM),
        "histogram",
        ((n + 255) // 256, 1, 1),
        (256, 1, 1),
        x,
        hist,
        cnt,
        total,
        extremes,
        big,
    )
    np.testing.assert_array_equal(hist, np.bincount(x % 64, minlength=64))
    assert total[0] == n * 0.5
    assert list(extremes) == [int(x.min()) - 500, int(x.max()) - 500]
    assert int(big[0]) == int(x.max()) << 40


def test_atomic_counter_contention(backend: CpuBackend, run) -> None:
    src = (
        HEADER
        + """
kernel void count(device atomic_int* c [[buffer(0)]], device int* tickets [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    tickets[i] = atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
    int expected = 0;
    atomic_compare_exchange_weak_explicit(c + 1, &expected, 7, memory_order_relaxed, memory_order_relaxed);
    atomic_exchange_explicit(c + 2, 3, memory_order_relaxed);
}
"""
    )
    c = np.zeros(3, np.int32)
    n = 1 << 18
    tickets = np.zeros(n, np.int32)
    run(backend.compile(src), "count", (n // 64, 1, 1), (64, 1, 1), c, tickets)
    assert c[0] == n and c[1] == 7 and c[2] == 3
    np.testing.assert_array_equal(np.sort(tickets), np.arange(n))


@pytest.mark.parametrize(
    ("decl", "call"),
    [
        ("atomic_float", "atomic_fetch_max_explicit(a, 1.0f, memory_order_relaxed)"),
        ("atomic_ulong", "atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed)"),
        ("atomic_ulong", "atomic_load_explicit(a, memory_order_relaxed)"),
    ],
)
def test_atomic_rejections(backend: CpuBackend, decl: str, call: str) -> None:
    src = HEADER + f"kernel void k(device {decl}* a [[buffer(0)]]) {{ {call}; }}"
    with pytest.raises(MSLCompileError, match="Metal"):
        backend.compile(src)


GEMM = (
    HEADER
    + """
// C = A * B with one SIMD group per 8x8 output tile; A is M x K, B is K x N, row-major.
kernel void gemm(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]],
                 device float* c [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                 uint2 tile [[threadgroup_position_in_grid]], ushort lane [[thread_index_in_simdgroup]]) {
    const uint K = mnk.z, N = mnk.y;
    simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_matrix<T, 8, 8> ma, mb;
    for (uint k = 0; k < K; k += 8) {
        simdgroup_load(ma, a, K, ulong2(k, tile.y * 8));
        simdgroup_load(mb, b, N, ulong2(tile.x * 8, k));
        simdgroup_multiply_accumulate(acc, ma, mb, acc);
    }
    // Store through thread_elements() with the documented lane layout, plus simdgroup_store.
    uint row = 4 * ((lane >> 4) & 1) + 2 * ((lane >> 2) & 1) + ((lane >> 1) & 1);
    uint col = 4 * ((lane >> 3) & 1) + 2 * (lane & 1);
    float2 e = acc.thread_elements();
    uint base = (tile.y * 8 + row) * N + tile.x * 8 + col;
    c[base] = e.x;
    c[base + 1] = e.y;
    simdgroup_store(acc, c + mnk.x * N, N, ulong2(tile.x * 8, tile.y * 8), true);
}
"""
)


@pytest.mark.parametrize("dtype", ["float", "half", "bfloat"])
def test_simdgroup_matrix_gemm(backend: CpuBackend, run, dtype: str) -> None:
    if dtype == "bfloat":
        np_dtype = pytest.importorskip("ml_dtypes").bfloat16
    else:
        np_dtype = {"float": np.float32, "half": np.float16}[dtype]
    m, n, k = 16, 24, 32
    a = RNG.standard_normal((m, k)).astype(np_dtype)
    b = RNG.standard_normal((k, n)).astype(np_dtype)
    c = np.zeros((2 * m, n), np.float32)  # rows m.. receive the transposed store
    mnk = np.array([m, n, k, 0], np.uint32)
    lib = backend.compile(f"#define T {dtype}\n" + GEMM)
    run(lib, "gemm", (n // 8, m // 8, 1), (32, 1, 1), a, b, c, mnk)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c[:m], ref, rtol=1e-5, atol=1e-5)
    # transposed store: 8x8 tile (ty, tx) lands transposed at the same origin
    t = c[m:].copy()
    for ty in range(m // 8):
        for tx in range(n // 8):
            blk = t[ty * 8 : ty * 8 + 8, tx * 8 : tx * 8 + 8]
            np.testing.assert_allclose(
                blk.T, ref[ty * 8 : ty * 8 + 8, tx * 8 : tx * 8 + 8], rtol=1e-5, atol=1e-5
            )


def test_simdgroup_matrix_divergence_raises(backend: CpuBackend, run) -> None:
    src = (
        HEADER
        + """
kernel void bad(device float* x [[buffer(0)]], ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 m;
    if (lane < 16) simdgroup_load(m, x);
    x[lane] = 0.0f;
}
"""
    )
    with pytest.raises(
        KernelLaunchError, match=r"kernel 'bad': simdgroup_load \(line 6\).*uniform control flow"
    ):
        run(backend.compile(src), "bad", (1, 1, 1), (32, 1, 1), np.zeros(64, np.float32))

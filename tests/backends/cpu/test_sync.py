"""Hand-written MSL corpus for the fiber execution model: barriers, SIMD-group functions,
threadgroup memory, partial participation and loud undefined behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from enceladus.backends.cpu import CpuBackend, KernelLaunchError, MSLCompileError

RNG = np.random.default_rng(1)
HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

REDUCE = (
    HEADER
    + """
// Block sum: shuffles within each SIMD group, partials through threadgroup memory, then SIMD group 0.
kernel void block_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                      constant uint& n [[buffer(2)]],
                      uint gid [[thread_position_in_grid]], uint tg [[threadgroup_position_in_grid]],
                      uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                      uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float partial[32];
    float v = gid < n ? x[gid] : 0.0f;
    for (ushort off = 16; off > 0; off >>= 1) v += simd_shuffle_down(v, off);
    if (lane == 0) partial[sg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float p = lane < nsg ? partial[lane] : 0.0f;
        p = simd_sum(p);
        if (lane == 0) out[tg] = p;
    }
}
"""
)


def test_reduction_with_shuffles(backend: CpuBackend, run) -> None:
    n = 100_000
    x = RNG.standard_normal(n, dtype=np.float32)
    groups = (n + 255) // 256
    out = np.zeros(groups, np.float32)
    cnt = np.array([n], np.uint32)
    run(backend.compile(REDUCE), "block_sum", (groups, 1, 1), (256, 1, 1), x, out, cnt)
    ref = np.pad(x, (0, groups * 256 - n)).reshape(groups, 256).sum(axis=1, dtype=np.float64)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


SCAN = (
    HEADER
    + """
// Inclusive prefix sum of one threadgroup (1024 ints): SIMD scans, then a scan of the SIMD totals.
kernel void scan(device const int* x [[buffer(0)]], device int* y [[buffer(1)]],
                 uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]],
                 ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup int totals[32];
    int v = simd_prefix_inclusive_sum(x[i]);
    if (lane == 31) totals[sg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) totals[lane] = simd_prefix_exclusive_sum(totals[lane]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[i] = v + totals[sg];
}
"""
)


def test_prefix_scan(backend: CpuBackend, run) -> None:
    x = RNG.integers(-100, 100, 4096, dtype=np.int32)
    y = np.zeros_like(x)
    run(backend.compile(SCAN), "scan", (4, 1, 1), (1024, 1, 1), x, y)
    np.testing.assert_array_equal(y.reshape(4, 1024), np.cumsum(x.reshape(4, 1024), axis=1))


TRANSPOSE = (
    HEADER
    + """
kernel void transpose(device const float* a [[buffer(0)]], device float* b [[buffer(1)]],
                      constant uint2& shape [[buffer(2)]],
                      uint2 tg [[threadgroup_position_in_grid]], uint2 t [[thread_position_in_threadgroup]]) {
    threadgroup float tile[16][17];   // padded as on a GPU, to avoid bank conflicts
    uint r = tg.y * 16 + t.y, c = tg.x * 16 + t.x;
    if (r < shape.x && c < shape.y) tile[t.y][t.x] = a[r * shape.y + c];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint orow = tg.x * 16 + t.y, ocol = tg.y * 16 + t.x;
    if (orow < shape.y && ocol < shape.x) b[orow * shape.x + ocol] = tile[t.x][t.y];
}
"""
)


def test_tiled_transpose(backend: CpuBackend, run) -> None:
    rows, cols = 50, 37
    a = RNG.standard_normal((rows, cols), dtype=np.float32)
    b = np.zeros((cols, rows), np.float32)
    shape = np.array([rows, cols], np.uint32)
    run(
        backend.compile(TRANSPOSE),
        "transpose",
        ((cols + 15) // 16, (rows + 15) // 16, 1),
        (16, 16, 1),
        a,
        b,
        shape,
    )
    np.testing.assert_array_equal(b, a.T)


SIMD_ALL = (
    HEADER
    + """
kernel void simd_ops(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                     device float* fout [[buffer(2)]],
                     uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    int v = x[i];
    device int* o = out + 16 * i;
    o[0] = simd_sum(v); o[1] = simd_product(v & 3); o[2] = simd_min(v); o[3] = simd_max(v);
    o[4] = simd_and(v); o[5] = simd_or(v); o[6] = simd_xor(v);
    o[7] = simd_prefix_exclusive_sum(v); o[8] = simd_shuffle(v, ushort(31 - lane));
    o[9] = simd_shuffle_up(v, 3); o[10] = simd_shuffle_xor(v, 5); o[11] = simd_shuffle_rotate_down(v, 7);
    o[12] = simd_broadcast(v, 9); o[13] = simd_broadcast_first(v);
    o[14] = int(static_cast<ulong>(simd_ballot(v > 0)) & 0xffffffff);
    o[15] = simd_all(v > -1000) + 2 * simd_any(v > 40);
    fout[i] = simd_sum(float(v) * 0.5f) + float(simd_shuffle_rotate_up(half(v), 1));
}
"""
)


def test_simd_functions(backend: CpuBackend, run) -> None:
    x = RNG.integers(-50, 50, 64, dtype=np.int32)
    out = np.zeros((64, 16), np.int32)
    fout = np.zeros(64, np.float32)
    run(backend.compile(SIMD_ALL), "simd_ops", (1, 1, 1), (64, 1, 1), x, out, fout)
    for s in range(2):
        v = x[32 * s : 32 * s + 32].astype(np.int64)
        o = out[32 * s : 32 * s + 32]
        lane = np.arange(32)
        def wrap(a):
            return ((a + 2**31) % 2**32 - 2**31).astype(np.int32)
        assert (o[:, 0] == v.sum()).all() and (o[:, 1] == wrap(np.prod(v & 3))).all()
        assert (o[:, 2] == v.min()).all() and (o[:, 3] == v.max()).all()
        assert (o[:, 4] == np.bitwise_and.reduce(v)).all() and (o[:, 5] == np.bitwise_or.reduce(v)).all()
        assert (o[:, 6] == np.bitwise_xor.reduce(v)).all()
        np.testing.assert_array_equal(o[:, 7], np.concatenate([[0], np.cumsum(v)[:-1]]))
        np.testing.assert_array_equal(o[:, 8], v[31 - lane])
        np.testing.assert_array_equal(o[:, 9], np.where(lane >= 3, v[np.maximum(lane - 3, 0)], v))
        np.testing.assert_array_equal(o[:, 10], v[lane ^ 5])
        np.testing.assert_array_equal(o[:, 11], v[(lane + 7) % 32])
        assert (o[:, 12] == v[9]).all() and (o[:, 13] == v[0]).all()
        ballot = sum(1 << int(k) for k in np.nonzero(v > 0)[0])
        assert (o[:, 14].astype(np.uint32) == ballot).all()
        assert (o[:, 15] == 1 + 2 * int((v > 40).any())).all()
        np.testing.assert_allclose(fout[32 * s : 32 * s + 32], v.sum() * 0.5 + v[(lane - 1) % 32])


DIVERGENT = (
    HEADER
    + """
kernel void divergent(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    int r = -1;
    if (lane % 3 == 0) r = simd_sum(x[i]);           // active lanes: 0, 3, 6, ...
    else if (lane % 3 == 1) r = simd_prefix_inclusive_sum(x[i]);
    out[i] = r;
}
"""
)


def test_simd_partial_participation(backend: CpuBackend, run) -> None:
    x = RNG.integers(0, 100, 32, dtype=np.int32)
    out = np.zeros(32, np.int32)
    run(backend.compile(DIVERGENT), "divergent", (1, 1, 1), (32, 1, 1), x, out)
    lane = np.arange(32)
    m0, m1 = lane % 3 == 0, lane % 3 == 1
    np.testing.assert_array_equal(out[m0], x[m0].sum())
    np.testing.assert_array_equal(out[m1], np.cumsum(x[m1]))
    np.testing.assert_array_equal(out[lane % 3 == 2], -1)


EDGE = (
    HEADER
    + """
kernel void edge(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                 uint n [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                 uint t [[thread_index_in_threadgroup]]) {
    threadgroup uint seen[64];
    seen[t] = 1;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint c = 0;
    for (uint k = 0; k < n; ++k) c += seen[k];
    out[2 * i] = c;
    out[2 * i + 1] = simd_sum(1u);
}
"""
)


def test_dispatch_threads_partial_edge_group(backend: CpuBackend, run) -> None:
    out = np.zeros(2 * 109, np.uint32)
    run(backend.compile(EDGE), "edge", None, (64, 1, 1), out, threads=(109, 1, 1))
    o = out.reshape(109, 2)
    np.testing.assert_array_equal(o[:64, 0], 64)
    np.testing.assert_array_equal(o[64:, 0], 45)  # the 45-thread edge group
    np.testing.assert_array_equal(o[:, 1], [32] * 96 + [13] * 13)


RETURNED = (
    HEADER
    + """
kernel void early_exit(device int* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup int buf[128];
    if (t >= 100) return;                 // returned threads no longer take part in barriers
    buf[t] = int(t);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = buf[99 - t];
}
"""
)


def test_barrier_after_some_threads_returned(backend: CpuBackend, run) -> None:
    out = np.full(128, -1, np.int32)
    run(backend.compile(RETURNED), "early_exit", (1, 1, 1), (128, 1, 1), out)
    np.testing.assert_array_equal(out[:100], 99 - np.arange(100))
    assert (out[100:] == -1).all()


DEADLOCK = (
    HEADER
    + """
kernel void split_barrier(device int* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    if (t < 16) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    } else {
        threadgroup_barrier(mem_flags::mem_device);
    }
    out[t] = 1;
}
"""
)


def test_divergent_barrier_raises(backend: CpuBackend, run) -> None:
    out = np.zeros(64, np.int32)
    with pytest.raises(
        KernelLaunchError,
        match=r"kernel 'split_barrier': threadgroup \([01],0,0\).*threadgroup_barrier at line 6",
    ):
        run(backend.compile(DEADLOCK), "split_barrier", (2, 1, 1), (32, 1, 1), out)
    # The runtime recovers: the next launch works.
    run(backend.compile(RETURNED), "early_exit", (1, 1, 1), (128, 1, 1), np.zeros(128, np.int32))


TG_PARAM = (
    HEADER
    + """
kernel void reverse(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                    threadgroup float* scratch [[threadgroup(0)]],
                    uint i [[thread_position_in_grid]], uint t [[thread_index_in_threadgroup]],
                    uint n [[threads_per_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
    scratch[t] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[i] = scratch[n - 1 - t];
}
"""
)


def test_threadgroup_parameter(backend: CpuBackend, run) -> None:
    x = RNG.standard_normal(1024, dtype=np.float32)
    y = np.zeros_like(x)
    run(backend.compile(TG_PARAM), "reverse", (8, 1, 1), (128, 1, 1), x, y, threadgroup_memory={0: 128 * 4})
    np.testing.assert_array_equal(y.reshape(8, 128), x.reshape(8, 128)[:, ::-1])
    with pytest.raises(KernelLaunchError, match="needs a length"):
        run(backend.compile(TG_PARAM), "reverse", (8, 1, 1), (128, 1, 1), x, y)
    with pytest.raises(KernelLaunchError, match="32768-byte"):
        run(backend.compile(TG_PARAM), "reverse", (8, 1, 1), (128, 1, 1), x, y, threadgroup_memory={0: 40000})


def test_threadgroup_memory_limit(backend: CpuBackend, run) -> None:
    src = (
        HEADER
        + """
kernel void big(device float* x [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float a[6000];
    threadgroup float b[3000];
    a[t] = 1.0f; b[t] = 2.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    x[t] = a[t] + b[t];
}
"""
    )
    with pytest.raises(KernelLaunchError, match=r"kernel 'big'.*threadgroup memory exceeds.*'b'"):
        run(backend.compile(src), "big", (1, 1, 1), (32, 1, 1), np.zeros(32, np.float32))


def test_simd_rejects_long_and_bool(backend: CpuBackend) -> None:
    for ty in ("long", "ulong", "bool"):
        src = HEADER + f"kernel void k(device {ty}* x [[buffer(0)]]) {{ x[0] = simd_sum(x[0]); }}"
        with pytest.raises(MSLCompileError, match="bool, long and ulong are not allowed"):
            backend.compile(src)

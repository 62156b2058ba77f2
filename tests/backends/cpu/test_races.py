"""Debug mode on the cpu backend: threadgroup-memory race kinds, device asserts, and a cost proportional to
the bytes a kernel touches (arrays are never copied)."""

import resource

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.backends.cpu import KernelLaunchError

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void write_write(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float slot[1];
    slot[0] = float(t);              // every thread writes a different value: a write-write race
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = slot[0];
}
kernel void same_value(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float slot[1];
    slot[0] = 7.0f;                  // one value from every thread: not a race
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = slot[0];
}
kernel void read_after_write(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float tile[64];
    tile[t] = float(t);
    out[t] = tile[t == 0 ? 0 : t - 1];  // the neighbour's value, no barrier between the write and the read
}
kernel void uninitialised(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float tile[64];
    if (t < 32) tile[t] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = tile[t];                // threads 32..63 read what nobody wrote
}
kernel void ordered(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float tile[64];
    tile[t] = float(t);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = tile[63 - t];
}
kernel void write_after_read(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float tile[64];
    tile[t] = float(t);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const float v = tile[(t + 1) % 64];
    tile[t] = 2.0f * v;              // thread t - 1 read tile[t] since the barrier: a write after read
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = tile[t];
}
kernel void write_after_read_ordered(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]]) {
    threadgroup float tile[64];
    tile[t] = float(t);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const float v = tile[(t + 1) % 64];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    tile[t] = 2.0f * v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = tile[t];
}
kernel void matrix_load_then_overwrite(device float* out [[buffer(0)]], uint t [[thread_index_in_threadgroup]],
                                       uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float tile[64];
    tile[t] = float(t);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 m;
    simdgroup_load(m, tile, 8);      // every lane reads its two elements of the 8x8 tile
    tile[t] = 0.0f;                  // overwritten with no barrier: the matrix load may see either value
    out[t] = m.thread_elements()[0];
}
kernel void read16(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    out[i] = x[i * 4096];
}
"""


@pytest.fixture(scope="module")
def lib():
    return enceladus.compile_shader(SRC)


def _run(lib, name, out):
    getattr(lib, name)(out, threads=(64,), threads_per_threadgroup=(64,), debug=True)


def test_write_write_race(lib):
    with pytest.raises(KernelLaunchError, match=r"kernel 'write_write'.*race on 'slot': thread 1 writes byte 0 of it, "
                                                r"which thread 0 also wrote since the last threadgroup_barrier, with "
                                                r"another value"):
        _run(lib, "write_write", np.zeros(64, np.float32))
    out = np.zeros(64, np.float32)
    _run(lib, "same_value", out)
    assert (out == 7).all()


def test_read_after_write_without_barrier(lib):
    with pytest.raises(KernelLaunchError, match=r"race on 'tile': thread 1 reads byte 0 of it, which thread 0 "
                                                r"wrote since the last threadgroup_barrier"):
        _run(lib, "read_after_write", np.zeros(64, np.float32))
    out = np.zeros(64, np.float32)
    _run(lib, "ordered", out)
    np.testing.assert_array_equal(out, np.arange(64)[::-1])


def test_write_after_read_without_barrier(lib):
    with pytest.raises(KernelLaunchError, match=r"race on 'tile': thread 1 writes byte 4 of it, which thread 0 read "
                                                r"since the last threadgroup_barrier \(write-after-read race"):
        _run(lib, "write_after_read", np.zeros(64, np.float32))
    out = np.zeros(64, np.float32)
    _run(lib, "write_after_read_ordered", out)
    np.testing.assert_array_equal(out, 2 * ((np.arange(64) + 1) % 64))


def test_write_after_a_matrix_load_without_barrier(lib):
    # simdgroup_load's reads are reported too (each lane's two elements of the tile; lane 0 holds row 0, columns 0
    # and 1), and lanes of one SIMD group are ordered only by a barrier, as for element accesses
    with pytest.raises(KernelLaunchError, match=r"race on 'tile': thread 1 writes byte 4 of it, which thread 0 read "
                                                r"since the last threadgroup_barrier"):
        _run(lib, "matrix_load_then_overwrite", np.zeros(64, np.float32))


def test_read_of_uninitialised_threadgroup_memory(lib):
    with pytest.raises(KernelLaunchError, match=r"read of uninitialised threadgroup memory: thread 32 reads byte 128 "
                                                r"of 'tile'"):
        _run(lib, "uninitialised", np.zeros(64, np.float32))


def test_debug_cost_follows_the_bytes_touched(lib):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    big = np.zeros(1 << 28, np.float32)  # 1 GiB, not touched: calloc'd pages cost nothing until written
    out = np.zeros(16, np.float32)
    lib.read16(big, out, threads=(16,), debug=True)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert (out == 0).all()
    assert grown < 100 * 1024, f"a debug launch reading 16 elements grew the process by {grown} KiB"


@enceladus.jit
def checked_sqrt(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x >= 0, "negative input")
    tl.store(out_ptr + offs, tl.sqrt(x))


def test_device_assert_in_debug_mode():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    checked_sqrt[(1,)](x, out, BLOCK=64, debug=True)
    np.testing.assert_allclose(out, np.sqrt(x))
    x[5] = -1
    with pytest.raises(AssertionError, match="negative input"):
        checked_sqrt[(1,)](x, out, BLOCK=64, debug=True)

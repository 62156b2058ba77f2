"""Debug mode: the default access checks plus threadgroup-memory race detection."""

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.backends.cpu import CpuBackend, KernelLaunchError

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void shift_read(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    out[i] = x[i + 1];
}
kernel void write_before(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[int(i) - 1024] = 1.0f;  // 4 KiB before the start
}
kernel void racy(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                 uint t [[thread_index_in_threadgroup]]) {
    threadgroup float tile[64];
    tile[t] = x[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    tile[t] = tile[t] * 2.0f;
    out[t] = tile[63 - t];          // no barrier since the writes above: a race
}
kernel void safe(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                 threadgroup float* tile [[threadgroup(0)]], uint t [[thread_index_in_threadgroup]]) {
    tile[t] = x[t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[t] = tile[63 - t];
}
kernel void racy_param(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       threadgroup float* tile [[threadgroup(0)]], uint t [[thread_index_in_threadgroup]]) {
    tile[t] = x[t];
    out[t] = tile[63 - t];
}
"""


@pytest.fixture(scope="module")
def lib():
    return enceladus.compile_shader(SRC)


def test_out_of_bounds_read_names_kernel_buffer_threadgroup(lib):
    x = np.arange(64, dtype=np.float32)
    out = np.full(64, -1, np.float32)
    with pytest.raises(enceladus.LaunchError, match=r"kernel 'shift_read', program \(1,0,0\), thread 31: "
                                                    r"out-of-bounds read of 4 bytes through argument 'x' at element "
                                                    r"index 64 \(byte offset 256\)"):
        lib.shift_read(x, out, threads=(64,), threads_per_threadgroup=(32,), debug=True)
    assert out[63] == -1  # the failing thread stopped before its store
    lib.shift_read(x, out, threads=(63,), debug=True)  # the process is fine and in-bounds launches work
    np.testing.assert_array_equal(out[:63], x[1:])


def test_out_of_bounds_write_before_start(lib):
    out = np.zeros(16, np.float32)
    with pytest.raises(KernelLaunchError, match="out-of-bounds access of 4 bytes through argument 'out' at element "
                                                "index -1024"):
        lib.write_before(out, threads=(16,), debug=True)


def test_env_var_enables_debug(lib, monkeypatch):
    monkeypatch.setenv("ENCELADUS_DEBUG", "1")
    with pytest.raises(KernelLaunchError, match="out-of-bounds"):
        lib.shift_read(np.zeros(32, np.float32), np.zeros(32, np.float32), threads=(32,))


def test_race_on_static_threadgroup_array(lib):
    with pytest.raises(KernelLaunchError, match=r"kernel 'racy', threadgroup \(0,0,0\): threadgroup-memory race "
                                                r"on 'tile': thread \d+ reads"):
        lib.racy(np.zeros(64, np.float32), np.zeros(64, np.float32), threads=(64,), threads_per_threadgroup=(64,),
                 debug=True)


def test_race_on_threadgroup_parameter_and_no_false_positive(lib):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    lib.safe(x, out, threads=(64,), threads_per_threadgroup=(64,), threadgroup_memory={0: 256}, debug=True)
    np.testing.assert_array_equal(out, x[::-1])
    # thread 0 reads tile[63] before thread 63 ran: reported as a read of memory no thread has written yet
    with pytest.raises(KernelLaunchError, match="race on 'tile'|uninitialised threadgroup memory.*of 'tile'"):
        lib.racy_param(x, out, threads=(64,), threads_per_threadgroup=(64,), threadgroup_memory={0: 256},
                       debug=True)


def test_backend_api_checks_buffers_of_known_size():
    fn = CpuBackend().compile(SRC).function("shift_read")
    x = np.zeros(16, np.float32)
    out = np.zeros(8, np.float32)
    with pytest.raises(KernelLaunchError, match="through argument 'x' at element index 8"):
        fn.launch((1, 1, 1), (8, 1, 1), {0: x.ctypes.data, 1: out.ctypes.data}, debug=True,
                  extents={0: (x.ctypes.data, x.ctypes.data + 32, 4)}, buffer_sizes={1: 32})
    # without a size the backend cannot know the extent: the buffer is not checked
    fn.launch((1, 1, 1), (8, 1, 1), {0: x.ctypes.data, 1: out.ctypes.data})


@enceladus.jit(debug=True)
def unmasked_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_jit_debug_catches_a_missing_mask():
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(128, np.float32)
    with pytest.raises(enceladus.LaunchError, match="unmasked_copy.*argument 'x_ptr'"):
        unmasked_copy[(1,)](x, out, BLOCK=128)
    x2 = np.arange(128, dtype=np.float32)
    unmasked_copy[(1,)](x2, out, BLOCK=128)
    np.testing.assert_array_equal(out, x2)

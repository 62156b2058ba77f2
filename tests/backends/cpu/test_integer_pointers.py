"""Pointers made from integer addresses on the checked cpu backend: checked against the launch's arguments and
the live ``enceladus.Tensor`` allocations; an address in memory Enceladus does not know (a NumPy array that is not
an argument, a torch CPU ``data_ptr()``) is allowed with one RuntimeWarning per kernel line, for ``@jit`` and
``compile_shader`` kernels alike."""

import gc
import warnings

import numpy as np
import pytest

import enceladus
import enceladus.language as tl
from enceladus.backends.cpu import KernelLaunchError
from paths import needs_cpu

pytestmark = needs_cpu

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void read_addr(constant ulong& addr [[buffer(0)]], device float* out [[buffer(1)]],
                      constant int& off [[buffer(2)]], device const float* bound [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
    device const float* p = (device const float*)addr;
    out[i] = p[int(i) + off] + 0.0f * bound[0];
}
kernel void write_addr(constant ulong& addr [[buffer(0)]], constant int& off [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    device float* p = (device float*)addr;
    p[int(i) + off] = 7.0f;
}
"""


@pytest.fixture(scope="module")
def lib():
    return enceladus.compile_shader(SRC)


def test_address_of_a_launch_argument_is_checked_against_it(lib):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(16, np.float32)
    lib.read_addr(x.ctypes.data, out, 8, x, threads=(16,))
    np.testing.assert_array_equal(out, x[8:24])
    with pytest.raises(KernelLaunchError, match=r"read_addr.*out-of-bounds read of 4 bytes through argument "
                                                r"'bound' at element index 64(.|\n)*MSL line 8"):
        lib.read_addr(x.ctypes.data, out, 56, x, threads=(16,))


def test_address_of_a_live_tensor_is_checked_against_it(lib):
    t = enceladus.tensor(np.arange(32, dtype=np.float32))
    enceladus.synchronize()
    other = np.zeros(1, np.float32)
    out = np.zeros(8, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known allocation: no warning
        lib.read_addr(t.data_ptr(), out, 24, other, threads=(8,))
    np.testing.assert_array_equal(out, np.arange(24, 32, dtype=np.float32))
    with pytest.raises(KernelLaunchError, match=r"out-of-bounds read of 4 bytes through argument "
                                                r"'enceladus.Tensor memory at 0x[0-9a-f]+' at element index 32 "):
        lib.read_addr(t.data_ptr(), out, 25, other, threads=(8,))
    # a view's address lies in its Tensor's allocation; a write before it is reported, the data is untouched
    v = t[8:]
    with pytest.raises(KernelLaunchError, match=r"write_addr.*out-of-bounds (write|access) of 4 bytes through argument "
                                                r"'enceladus.Tensor memory at 0x[0-9a-f]+' at element index -1 "):
        lib.write_addr(t.data_ptr(), -1, threads=(1,))  # no array argument: queued on the stream
        enceladus.synchronize()
    lib.write_addr(v.data_ptr(), 0, threads=(1,))
    expected = np.arange(32, dtype=np.float32)
    expected[8] = 7
    np.testing.assert_array_equal(t.numpy(), expected)


def test_unknown_memory_is_allowed_with_one_warning_per_line(lib):
    hidden = np.arange(100, 164, dtype=np.float32)  # not an argument, not a Tensor: unknown to Enceladus
    out = np.zeros(16, np.float32)
    with pytest.warns(RuntimeWarning, match=r"kernel 'read_addr' at MSL line 7: a pointer made from an integer "
                                            r"address points into memory Enceladus does not know"):
        lib.read_addr(hidden.ctypes.data, out, 0, np.zeros(1, np.float32), threads=(16,))
    np.testing.assert_array_equal(out, hidden[:16])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same line warns once
        lib.read_addr(hidden.ctypes.data, out, 16, np.zeros(1, np.float32), threads=(16,))
    np.testing.assert_array_equal(out, hidden[16:32])


def test_a_freed_tensor_is_unknown_memory():
    from enceladus.backends.cpu.memory import LIVE

    t = enceladus.tensor(np.arange(8, dtype=np.float32))
    enceladus.synchronize()
    address = t.data_ptr()
    assert any(a <= address < a + n for a, n in LIVE.items())
    del t
    gc.collect()
    assert not any(a <= address < a + n for a, n in LIVE.items())


@enceladus.jit
def gather_rows(ptrs, out_ptr, n, BLOCK: tl.constexpr):
    # as Triton tutorial 08: each program loads one address and reads a block of the memory it points to
    pid = tl.program_id(0)
    base = tl.load(ptrs + pid).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + offs, tl.load(base + offs, mask=offs < n))


def test_jit_kernel_reads_a_live_tensor_through_its_address():
    a = enceladus.tensor(np.arange(16, dtype=np.float32))
    b = enceladus.tensor(np.arange(100, 116, dtype=np.float32))
    enceladus.synchronize()
    ptrs = np.array([a.data_ptr(), b.data_ptr()], np.int64)
    out = np.zeros(32, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Tensors are known memory: no warning
        gather_rows[(2,)](ptrs, out, 16, BLOCK=16)
    np.testing.assert_array_equal(out, np.concatenate([a.numpy(), b.numpy()]))
    with pytest.raises(enceladus.LaunchError, match=r"gather_rows.*out-of-bounds (read|access) of 4 bytes through argument "
                                                    r"'enceladus.Tensor memory at 0x[0-9a-f]+' at element index 16 "
                                                    r"(.|\n)*test_integer_pointers.py"):
        gather_rows[(2,)](ptrs, np.zeros(64, np.float32), 32, BLOCK=32)
